"""The lifecycle model: one table of guarded steps, the guards, and reconciliation of declared vs effective.

``reconcile`` plans, ``apply_plan`` applies through the registry (optimistic concurrency), and
``request_transition`` is the manual single step. The CLI, the DAGs and the operators all use these.
"""

from contract_platform.lifecycle.guards import Guard, GuardContext
from contract_platform.lifecycle.reconcile import Plan, Refusal, Step, apply_plan, reconcile, request_transition
from contract_platform.lifecycle.states import TRANSITIONS, check_step, guard_names, next_status

__all__ = [
    "TRANSITIONS",
    "Guard",
    "GuardContext",
    "Plan",
    "Refusal",
    "Step",
    "apply_plan",
    "check_step",
    "guard_names",
    "next_status",
    "reconcile",
    "request_transition",
]
