"""Fixtures of the CLI tests."""

from __future__ import annotations

import pytest


@pytest.fixture()
def registry_url(tmp_path, monkeypatch) -> str:
    """A registry store of the test's own, named by ``CONTRACT_REGISTRY_URL`` as a user would."""
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    monkeypatch.setenv("CONTRACT_REGISTRY_URL", url)
    return url
