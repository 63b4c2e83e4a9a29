"""A generated estate: ``n`` new contract versions, copies of ``order.order-created.v1`` under new names.

``generate_catalog(root, n)`` writes a catalogue the platform loads and lints clean: the repository's
envelope, and ``n`` versions ``estate<D>.item<I>-created.v1`` (50 per domain, one exchange per domain),
each declared *experimental* so that ``contract_change`` provisions its topology (two consumer queues
with their dead-letter, parking-lot and retry queues). Used by the real-scheduler estate test
(``tests/e2e/test_airflow_scheduler.py``) and ``benchmarks/estate_airflow.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["PER_DOMAIN", "generate_catalog", "message_types"]

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "contracts" / "order" / "order-created" / "v1"
PER_DOMAIN = 50
# What names the template inside its files, and what each copy's name is built from.
TYPE, ROUTING_KEY, EXCHANGE = "order.order-created.v1", "order.order.created.v1", "order.events"


def _names(index: int) -> tuple[str, str, str, str]:
    """(domain, folder name, messageType, routing key) of the ``index``-th version."""
    domain, name = f"estate{index // PER_DOMAIN:03d}", f"item{index:05d}-created"
    return domain, name, f"{domain}.{name}.v1", f"{domain}.item{index:05d}.created.v1"


def message_types(n: int) -> list[str]:
    return [_names(i)[2] for i in range(n)]


def generate_catalog(root: Path, n: int, deprecated: int = 0) -> list[str]:
    """Write a catalogue of ``n`` versions at ``root`` (replaced if present); returns their messageTypes.

    ``deprecated`` is accepted for the shared signature and must be 0 here: every version is new.
    """
    if deprecated:
        raise ValueError("this generator writes new (experimental) versions only")
    if root.exists():
        shutil.rmtree(root)
    (root / "envelope").mkdir(parents=True)
    shutil.copytree(REPO / "contracts" / "envelope", root / "envelope", dirs_exist_ok=True)
    template = {
        path.relative_to(TEMPLATE): path.read_text("utf-8") for path in sorted(TEMPLATE.rglob("*")) if path.is_file()
    }
    written = []
    for index in range(n):
        domain, name, message_type, routing_key = _names(index)
        folder = root / domain / name / "v1"
        for relative, text in template.items():
            text = (
                text.replace(TYPE, message_type).replace(ROUTING_KEY, routing_key).replace(EXCHANGE, f"{domain}.events")
            )
            if relative.name == "contract.yaml":
                text = text.replace("status: active", "status: experimental")
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, "utf-8")
        written.append(message_type)
    return written
