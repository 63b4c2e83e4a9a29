"""The dual_publish_migration trigger form offers exactly the modes its plan accepts.

The DAG lists the modes itself (parsing it must not import the migration engine); the plan
(``contract_platform.migration.plan``) is where a mode is checked, so the two must agree or the form
offers a choice that fails the run.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.airflow


def test_the_forms_modes_are_the_modes_a_plan_accepts(dagbag) -> None:
    from contract_platform.migration.plan import MODES

    form = dagbag.get_dag("dual_publish_migration").params.get_param("mode")

    assert tuple(form.schema["enum"]) == MODES
    assert form.value in MODES
