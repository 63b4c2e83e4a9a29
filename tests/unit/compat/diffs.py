"""What the compat tests read of ``diff_schemas``: the rules a schema change fires and its two directions."""

from __future__ import annotations

from typing import Any

from contract_platform.compat import Policy, RuleId, diff_schemas

__all__ = ["directions_of", "rules_of"]


def rules_of(old: Any, new: Any, policy: Policy = Policy.STRICT) -> list[RuleId]:
    return [c.rule for c in diff_schemas(old, new, policy=policy)]


def directions_of(old: Any, new: Any, policy: Policy = Policy.STRICT) -> tuple[bool, bool]:
    """(backward, forward): whether every change keeps old data valid, and whether it keeps new data valid."""
    changes = diff_schemas(old, new, policy=policy)
    return all(c.backward for c in changes), all(c.forward for c in changes)
