"""Assets the platform's DAGs produce and are scheduled on."""

from airflow.sdk import Asset

# One event per changed contract version (extra: messageType, fingerprint).
CONTRACT_CATALOG = Asset(name="contract_catalog", uri="contracts://catalog", group="contracts")
