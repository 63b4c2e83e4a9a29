"""Sample traffic: realistic envelopes made from a contract's valid fixtures.

Used by the main job's producer, by tests and by benchmarks, so all of them publish the same kind
of traffic: fresh messageIds, occurredAt <= publishedAt <= now, several messages per partition
key with increasing sequence numbers, and the contract's metadata (type, versions, producer: the owner
service of an event, the callers of a command in turn).
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from contract_platform.catalog.documents import resolve_pointer
from contract_platform.catalog.model import Contract
from contract_platform.catalog.pointers import split_pointer

__all__ = ["sample_envelopes"]


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _set(document: dict[str, Any], pointer: str, value: Any) -> None:
    tokens = split_pointer(pointer)
    parent = resolve_pointer(document, "/" + "/".join(tokens[:-1])) if len(tokens) > 1 else document
    if isinstance(parent, dict):
        parent[tokens[-1]] = value


def sample_envelopes(
    contract: Contract,
    count: int,
    *,
    now: datetime | None = None,
    keys: int | None = None,
    seed: int | None = None,
) -> Iterator[dict[str, Any]]:
    """``count`` valid envelopes of ``contract``, oldest first, ending just before ``now``.

    With ``ordering``, messages are spread over ``keys`` partition keys (default count // 4, at
    least 1) and each key's sequence increases by one per message. The keys are new to each call (a
    batch tag in the key), as new aggregates would be: a second batch never restarts an earlier
    batch's sequences, which the archive validation would rightly call OUT_OF_ORDER.
    """
    fixtures = [f.document for f in contract.fixtures if f.valid]
    if not fixtures:
        raise ValueError(f"{contract.message_type} has no valid fixtures to make traffic from")
    rng = random.Random(seed)
    moment = (now or datetime.now(UTC)) - timedelta(seconds=count + 5)
    key_count = max(1, keys if keys is not None else count // 4)
    batch = f"{rng.getrandbits(32):08x}"
    sequences: dict[str, int] = {}
    for index in range(count):
        envelope = copy.deepcopy(fixtures[index % len(fixtures)])
        metadata = envelope["metadata"]
        occurred = moment + timedelta(seconds=index, milliseconds=rng.randint(0, 400))
        metadata.update(
            messageId=str(uuid.uuid4()),
            messageType=contract.message_type,
            schemaVersion=contract.major,
            messageVersion=contract.version,
            occurredAt=_iso(occurred),
            publishedAt=_iso(occurred + timedelta(milliseconds=rng.randint(5, 300))),
            correlationId=str(uuid.uuid4()),
            traceId=uuid.uuid4().hex,
        )
        if contract.producers:  # a command without callers keeps its fixture's producer
            metadata["producer"] = contract.producers[index % len(contract.producers)]
        if contract.kind == "event" and not metadata.get("causationId"):
            metadata["causationId"] = str(uuid.uuid4())
        if contract.ordering is not None:
            key = f"{contract.name}-{batch}-{index % key_count:05d}"
            sequences[key] = sequences.get(key, 0) + 1
            _set(envelope, contract.ordering.key, key)
            _set(envelope, contract.ordering.sequence, sequences[key])
        yield envelope
