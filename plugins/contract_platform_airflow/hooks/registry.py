"""The registry store as an Airflow connection (``contract_registry_default``).

The connection's URI is a ``sqlite:`` or ``postgresql:`` URL (``postgresql+psycopg2://user:pw@host/db``), or its extra
``{"url": ...}`` holds one. Without a connection the platform's own settings apply when they are set
($CONTRACT_REGISTRY_URL, else SQLite under $CONTRACT_PLATFORM_HOME); with neither, the task fails at
once, without retry, naming the connection and how to set it (an Airflow worker must not create an
empty registry under whatever its working directory is). Credentials are read only in
``get_url``/``get_conn``.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

from contract_platform import settings

if TYPE_CHECKING:
    from contract_platform.store import SqlRegistry

log = logging.getLogger(__name__)

_SCHEMES = {"postgres": "postgresql+psycopg2", "postgresql": "postgresql+psycopg2", "sqlite": "sqlite"}


class RegistryHook(BaseHook):
    conn_name_attr = "registry_conn_id"
    default_conn_name = "contract_registry_default"
    conn_type = "generic"
    hook_name = "Contract registry store"

    def __init__(self, registry_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.registry_conn_id = registry_conn_id

    def get_url(self) -> str:
        try:
            conn = self.get_connection(self.registry_conn_id)
        except AirflowNotFoundException:
            if not (os.environ.get("CONTRACT_REGISTRY_URL") or os.environ.get("CONTRACT_PLATFORM_HOME")):
                raise AirflowFailException(
                    f"registry connection {self.registry_conn_id!r} is not defined, nor CONTRACT_REGISTRY_URL or "
                    f"CONTRACT_PLATFORM_HOME: set AIRFLOW_CONN_{self.registry_conn_id.upper()}="
                    """'{"conn_type": "generic", "extra": {"url": "postgresql+psycopg2://USER:PASSWORD@HOST/DB"}}' """
                    "(or a sqlite:/// URL) for every Airflow component (bash scripts/airflow-local does), "
                    "or add it under Admin > Connections"
                ) from None
            url = settings.registry_url()
            log.info("connection %s not defined; using %s", self.registry_conn_id, settings.redact_url(url))
            return url
        extra = conn.extra_dejson or {}
        if extra.get("url"):
            return str(extra["url"])
        uri = conn.get_uri()
        scheme, _, rest = uri.partition("://")
        return f"{_SCHEMES.get(scheme, scheme)}://{rest}"

    def get_conn(self) -> SqlRegistry:
        from contract_platform.store import SqlRegistry

        return SqlRegistry.open(self.get_url())
