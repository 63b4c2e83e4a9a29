"""``redact_url``: the only way a URL reaches a log, a report or the UI; no credential survives it."""

from __future__ import annotations

import pytest

from contract_platform.settings import redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("amqp://guest:s3cret@127.0.0.1:5672/%2F", "amqp://guest:***@127.0.0.1:5672/%2F"),
        (
            "postgresql://app@db/registry?password=s3cret&sslmode=require",
            "postgresql://app@db/registry?password=***&sslmode=require",
        ),
        ("postgresql://db/registry?user=app&sslpassword=s3cret", "postgresql://db/registry?user=app&sslpassword=***"),
        ("amqps://mq/vh?pwd=s3cret;pass=s3cret", "amqps://mq/vh?pwd=***;pass=***"),
        ("https://api/x?access_token=s3cret&page=2", "https://api/x?access_token=***&page=2"),
        ("https://api/x?API_KEY=s3cret&Client_Secret=s3cret", "https://api/x?API_KEY=***&Client_Secret=***"),
        ("https://api/x#token=s3cret", "https://api/x#token=***"),
        ("postgresql://u:p%40ss@db/r?secret=s3cret", "postgresql://u:***@db/r?secret=***"),
        ("sqlite:////srv/data/registry.db", "sqlite:////srv/data/registry.db"),
        ("https://api/x?page=2&sort=name", "https://api/x?page=2&sort=name"),
    ],
)
def test_passwords_and_credential_parameters_are_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "s3cret" not in redact_url(url)
