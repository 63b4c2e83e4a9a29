"""Assets the platform's DAGs produce and are scheduled on."""

from airflow.sdk import Asset

# Changed contract versions, in batches (extra: messageTypes, count; messageType and fingerprint for one).
CONTRACT_CATALOG = Asset(name="contract_catalog", uri="contracts://catalog", group="contracts")
