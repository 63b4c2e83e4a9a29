"""Every DAG of the platform imports cleanly and follows the house policy."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow

DAGS = Path(__file__).resolve().parents[2] / "dags"


@pytest.fixture(scope="module")
def dagbag(airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def test_no_import_errors(dagbag):
    assert dagbag.import_errors == {}
    assert dagbag.dags, "no DAGs found"


def test_dag_id_is_the_file_name(dagbag):
    for dag_id, dag in dagbag.dags.items():
        assert Path(dag.fileloc).stem == dag_id


def test_every_dag_has_tags_owner_retries_and_docs(dagbag):
    for dag_id, dag in dagbag.dags.items():
        assert dag.tags, f"{dag_id} has no tags"
        assert dag.doc_md and len(dag.doc_md) > 80, f"{dag_id} has no doc_md"
        for task in dag.tasks:
            assert task.owner and task.owner != "airflow", f"{dag_id}.{task.task_id} has no owner"
            assert task.retries is not None, f"{dag_id}.{task.task_id} has no retries set"
