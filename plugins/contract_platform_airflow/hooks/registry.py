"""The registry store as an Airflow connection (``contract_registry_default``).

The connection's URI is any SQLAlchemy URL (``postgresql+psycopg2://user:pw@host/db``); without a
connection the platform's own default applies ($CONTRACT_REGISTRY_URL, else SQLite under the
data folder). Credentials are read only in ``get_url``/``get_conn``.
"""

from __future__ import annotations

import logging
from typing import Any

from airflow.sdk import BaseHook

from contract_platform import settings

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
        except Exception:  # the connection is optional: not defined means the embedded default
            url = settings.registry_url()
            log.info("connection %s not defined; using %s", self.registry_conn_id, settings.redact_url(url))
            return url
        extra = conn.extra_dejson or {}
        if extra.get("url"):
            return str(extra["url"])
        uri = conn.get_uri()
        scheme, _, rest = uri.partition("://")
        return f"{_SCHEMES.get(scheme, scheme)}://{rest}"

    def get_conn(self) -> Any:
        from contract_platform.store import Registry

        return Registry.open(self.get_url())
