"""The platform team's page in the Airflow UI: FastAPI + Jinja2 glue over ``contract_platform.views``."""

from contract_platform_airflow.ui.app import create_app

__all__ = ["create_app"]
