"""A small reader of the topic archive: the last few archived messages of one type, PII masked.

Reads ``<archive root>/<exchange>/date=YYYY-MM-DD/*.jsonl[.gz]`` (docs/design.md#archive-record) newest partition
first and stops as soon as it holds ``limit`` records of the type from whole partitions: a sample for
the retirement bundle, not an analysis (that is Spark's job). Fields named by ``pii.fields`` (JSON
pointers into the envelope) are replaced by ``MASK``; a body that is not a JSON envelope cannot be
masked, so it is left out. A record's type is ``archive_record.record_type``, as in every other reader.
"""

from __future__ import annotations

import copy
import gzip
import heapq
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from contract_platform.archive_layout import PARTITION_PREFIX, is_archive_file, is_compressed
from contract_platform.archive_record import record_type
from contract_platform.catalog.model import Contract
from contract_platform.catalog.pointers import split_pointer

__all__ = ["MASK", "last_archived", "mask_pii"]

MASK = "***"


def _envelope(record: dict[str, Any]) -> Any:
    body = record.get("body")
    if not isinstance(body, str):
        return None
    try:
        return json.loads(body)
    except ValueError:
        return None


def mask_pii(record: dict[str, Any], pointers: Sequence[str]) -> dict[str, Any]:
    """A copy of ``record`` whose body has every PII pointer masked (or no body, if it cannot be masked)."""
    masked = copy.deepcopy(record)
    envelope = _envelope(record)
    if not isinstance(envelope, dict):
        if masked.get("body") is not None or masked.get("bodyBase64") is not None:
            masked["body"], masked["bodyBase64"] = None, None
            masked["bodyRemoved"] = "not a JSON envelope, so PII fields could not be masked"
        return masked
    hits = [pointer for pointer in pointers if _mask(envelope, split_pointer(pointer))]
    masked["body"] = json.dumps(envelope, ensure_ascii=False)
    masked["piiMasked"] = hits
    return masked


def _mask(document: Any, tokens: list[str]) -> bool:
    node = document
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    last = tokens[-1]
    if isinstance(node, dict) and last in node:
        node[last] = MASK
        return True
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = MASK
        return True
    return False


def _open(path: Path) -> IO[str]:
    if is_compressed(path.name):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return path.open("r", encoding="utf-8", errors="replace")


def _records(files: Iterable[Path]) -> Iterator[dict[str, Any]]:
    for path in files:
        with _open(path) as lines:
            for line in lines:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a partial last line or a malformed record: not part of a sample
                if isinstance(record, dict):
                    yield record


def last_archived(archive_root: str | Path, contract: Contract, *, limit: int = 20) -> list[dict[str, Any]]:
    """Up to ``limit`` latest archived records of ``contract``'s type, oldest first, PII masked."""
    folder = Path(archive_root) / contract.transport.exchange
    if limit < 1 or not folder.is_dir():
        return []
    partitions = sorted(
        (p for p in folder.glob(f"{PARTITION_PREFIX}*") if p.is_dir()), key=lambda p: p.name, reverse=True
    )
    kept: list[tuple[str, int, dict[str, Any]]] = []  # min-heap on (receivedAt, order) of at most ``limit``
    order = 0
    for partition in partitions:
        files = sorted(p for p in partition.iterdir() if is_archive_file(p.name))
        for record in _records(files):
            if record_type(record) != contract.message_type:
                continue
            order += 1
            item = (str(record.get("receivedAt") or ""), order, record)
            if len(kept) < limit:
                heapq.heappush(kept, item)
            else:
                heapq.heappushpop(kept, item)
        if len(kept) >= limit:
            break  # older partitions hold older records only
    return [mask_pii(record, contract.pii.fields) for _, _, record in sorted(kept, key=lambda item: item[:2])]
