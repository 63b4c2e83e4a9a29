"""The Airflow plugin: the contracts app on the api-server, a "Contracts" nav entry, and run/task links.

Airflow mounts ``fastapi_apps`` without authentication; the app checks the Airflow token itself
(``ui.auth``). ``external_views`` with ``url_route`` render inside the Airflow UI (an iframe):
the nav entry at ``/plugin/contracts``, and a "Contracts" tab on DAG runs, task instances and tasks
that shows the contracts that run acted on (``{DAG_ID}``/``{RUN_ID}``/``{TASK_ID}`` filled in by the UI).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from contract_platform_airflow.ui import create_app
from contract_platform_airflow.ui.deps import MOUNT

__all__ = ["ContractPlatformPlugin"]

URL_PREFIX = MOUNT  # /contracts

app = create_app()


class ContractPlatformPlugin(AirflowPlugin):
    name = "contract_platform"
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": "Contract Lifecycle Platform"}]
    external_views = [
        {
            "name": "Contracts",
            "href": f"{URL_PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "contracts",
        },
        {
            "name": "Contracts",
            "href": f"{URL_PREFIX}/runs/{{DAG_ID}}/{{RUN_ID}}",
            "destination": "dag_run",
            "url_route": "contracts-run",
        },
        {
            "name": "Contracts",
            "href": f"{URL_PREFIX}/runs/{{DAG_ID}}/{{RUN_ID}}",
            "destination": "task_instance",
            "url_route": "contracts-task-instance",
        },
        {
            "name": "Contracts",
            "href": f"{URL_PREFIX}/dags/{{DAG_ID}}/tasks/{{TASK_ID}}",
            "destination": "task",
            "url_route": "contracts-task",
        },
    ]
