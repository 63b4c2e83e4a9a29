"""The platform team's page in the Airflow UI: FastAPI + Jinja2 glue over the view models in ``ui/views/`` (one module per page)."""

from contract_platform_airflow.ui.app import create_app

__all__ = ["create_app"]
