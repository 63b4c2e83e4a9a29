"""The platform's release: the distribution's name and the version installed.

The version is ``pyproject.toml``'s ``[project] version``, raised with every release; CHANGELOG.md says what
each release asks of a team that upgrades (docs/upgrading.md, step by step). What runs reads it from the
installed package's metadata, so it is the version that was installed, not the one a checkout declares
(an editable install reads its checkout's version only once reinstalled: ``pip install -e . --no-deps``).
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "installed_version"]

DISTRIBUTION = "contract-lifecycle-platform"  # the distribution's name, as pyproject.toml gives it


def installed_version() -> str | None:
    """The installed distribution's version; None when the code runs from a tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version  # only when asked: contractctl starts without it

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None
