"""The JSON Schema compatibility engine: schema diff -> typed changes -> verdict by mode and policy.

::

    changes = diff_schemas(old, new, policy=Policy.STRICT)        # list[Change], each with backward/forward
    verdict = check_compatibility(old, new, mode=Mode.BACKWARD)    # Verdict(compatible, changes judged)
    verdict = check_history([("1.0.0", v1), ("1.1.0", v2)], new, mode=Mode.FULL_TRANSITIVE)
    required_bump(changes)                                          # "major" | "minor" | "patch"
    check_semver("1.1.0", "1.2.0", changes)                         # problems as sentences

``backward``: readers on NEW read data written under OLD (OLD ⊆ NEW). ``forward``: readers on OLD read
data written under NEW (NEW ⊆ OLD). Rule ids and their directions: :class:`RuleId`, ``rules.RULES``.
"""

from __future__ import annotations

from .model import Change, Mode, Policy, ReportedChange, RuleId, Verdict
from .verdict import check_compatibility, check_history, check_semver, history_diffs, judge_changes, required_bump
from .walker import diff_schemas

__all__ = [
    "Change",
    "Mode",
    "Policy",
    "ReportedChange",
    "RuleId",
    "Verdict",
    "check_compatibility",
    "check_history",
    "check_semver",
    "history_diffs",
    "judge_changes",
    "diff_schemas",
    "required_bump",
]
