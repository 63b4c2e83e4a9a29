"""From changes to answers: compatibility under a mode (pairwise or against a history) and semver.

Semver within one major version: a change the contract's mode does not allow is *breaking* and
needs a new major (a new messageType ``….v<N+1>``); any other change that alters what is accepted
(a new optional field, a widened enum, a relaxed bound) needs at least a minor bump; annotation-only
changes need a patch. ``mode`` defaults to BACKWARD, the catalogue's default; pass FULL to count
a change incompatible in either direction as breaking. NONE judges like BACKWARD here: semver still
tells consumers whether they can read data written before.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from contract_platform.catalog.schemas import DEFAULT_DIALECT

from .model import Change, Mode, Policy, ReportedChange, Verdict
from .rules import ANNOTATION_RULES
from .walker import diff_schemas

__all__ = ["check_compatibility", "check_history", "check_semver", "history_diffs", "judge_changes", "required_bump"]

Bump = Literal["major", "minor", "patch"]
_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


def judge_changes(mode: Mode, groups: Sequence[tuple[str | None, list[Change]]]) -> Verdict:
    """The verdict under ``mode`` on changes already found, each group against the version its label names."""
    reported = [
        ReportedChange(c.rule, c.path, mode.accepts(c.backward, c.forward), c.message, label)
        for label, changes in groups
        for c in changes
    ]
    return Verdict(mode, all(r.compatible for r in reported), reported)


def check_compatibility(
    old: Mapping[str, Any] | bool,
    new: Mapping[str, Any] | bool,
    *,
    mode: Mode,
    policy: Policy = Policy.STRICT,
    default_dialect: str = DEFAULT_DIALECT,
) -> Verdict:
    """May NEW replace OLD under ``mode``? NONE is always compatible; its changes are still listed.
    ``default_dialect`` reads a schema with neither ``$schema`` nor a draft's own keywords."""
    changes = diff_schemas(old, new, policy=policy, default_dialect=default_dialect)
    return judge_changes(Mode(mode), [(None, changes)])


def check_history(
    history: Sequence[tuple[str, Mapping[str, Any] | bool]],
    new: Mapping[str, Any] | bool,
    *,
    mode: Mode,
    policy: Policy = Policy.STRICT,
    default_dialect: str = DEFAULT_DIALECT,
) -> Verdict:
    """NEW against the versions before it (oldest first, one major): the latest only, or all of them
    for ``*_TRANSITIVE`` modes. Each reported change names the version it was found against."""
    diffs = history_diffs(history, new, mode=mode, policy=policy, default_dialect=default_dialect)
    return judge_changes(Mode(mode), diffs)


def history_diffs(
    history: Sequence[tuple[str, Mapping[str, Any] | bool]],
    new: Mapping[str, Any] | bool,
    *,
    mode: Mode,
    policy: Policy = Policy.STRICT,
    default_dialect: str = DEFAULT_DIALECT,
) -> list[tuple[str, list[Change]]]:
    """What ``check_history`` judges: NEW diffed once against each version ``mode`` compares it with (the latest
    last), as ``(label, changes)``: a caller that needs the changes themselves (the semver check, the replay's
    narrowing) takes them from here instead of diffing again."""
    targets = history if Mode(mode).transitive else history[-1:]
    return [
        (label, diff_schemas(schema, new, policy=policy, default_dialect=default_dialect)) for label, schema in targets
    ]


def _breaks(change: Change, mode: Mode) -> bool:
    judge = Mode.BACKWARD if mode is Mode.NONE else mode
    return not judge.accepts(change.backward, change.forward)


def required_bump(changes: Sequence[Change], *, mode: Mode = Mode.BACKWARD) -> Bump:
    """The smallest version bump ``changes`` need: major (breaking), minor (additive), patch (annotations)."""
    if any(_breaks(c, Mode(mode)) for c in changes):
        return "major"
    if any(c.rule not in ANNOTATION_RULES for c in changes):
        return "minor"
    return "patch"


def _parse(version: str) -> tuple[int, int, int] | None:
    match = _VERSION.match(version) if isinstance(version, str) else None
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def check_semver(
    old_version: str,
    new_version: str,
    changes: Sequence[Change],
    *,
    mode: Mode = Mode.BACKWARD,
    breaking_allowed: bool = False,
) -> list[str]:
    """Problems with going from ``old_version`` to ``new_version`` given ``changes``, as sentences.

    ``breaking_allowed``: the readers perspective accepted the breaking changes within the major
    (docs/consumer-impact.md); they then need a minor bump, like any change to what is accepted."""
    old, new = _parse(old_version), _parse(new_version)
    bad = [
        f"version {v!r} is not MAJOR.MINOR.PATCH (e.g. 1.2.0)"
        for v, p in ((old_version, old), (new_version, new))
        if p is None
    ]
    if old is None or new is None:
        return bad
    if new < old:
        return [f"version goes backwards: {new_version} is lower than {old_version}"]
    if new[0] > old[0]:
        return []
    needed = required_bump(changes, mode=mode)
    if needed == "major" and breaking_allowed:
        needed = "minor"
    if needed == "major":
        breaking = [c for c in changes if _breaks(c, Mode(mode))]
        listed = "; ".join(f"{c.rule} at {c.path or '/'}" for c in breaking[:5])
        return [
            f"{len(breaking)} change(s) break {Mode(mode)} compatibility inside major version {old[0]} ({listed}); "
            f"publish them as a new major version {old[0] + 1}.0.0 with its own messageType instead"
        ]
    if needed == "minor" and new[:2] == old[:2]:
        rules = ", ".join(sorted({str(c.rule) for c in changes if c.rule not in ANNOTATION_RULES}))
        return [
            f"{new_version} bumps only the patch version, but the schema changed what it accepts ({rules}); use at least {old[0]}.{old[1] + 1}.0"
        ]
    if changes and new == old:
        return [
            f"version {new_version} is unchanged although the schema changed; use at least {old[0]}.{old[1]}.{old[2] + 1}"
        ]
    return []
