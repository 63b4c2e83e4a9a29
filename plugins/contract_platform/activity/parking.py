"""Broker events the store refuses for themselves: what the recorder parks, and the gap it records for them.

The recorder never stops on one event (``recorder._Segment._one_by_one``): the events of a batch the store
refused are tried one at a time (all of them twice when every one failed and a trivial read still answered,
else the store is down and the recorder reconnects). An event the store refuses for itself is

- recorded as a gap at its moment, whose reason names the event (its kind, vhost and queue), why the store
  refused it and where it was parked: a check over that moment is not clean, since a reader may be missing;
- published into ``<queue>.parked`` (``queues.parked_queue``): the event as the recorder parsed it, in headers
  (no body), with ``x-park-reason``; bounded (the newest ``PARKED_MAX`` stay), for a person to look at.

Everything here is text a client may have chosen: reasons are ``printable`` (one line, escapes), and a header
value that is not UTF-8 (``surrogateescape``) goes as the very bytes the broker gave.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from contract_platform.activity.continuity import moment
from contract_platform.errors import ContractPlatformError, clipped, printable
from contract_platform.evidence.records import BrokerEvent

__all__ = ["PARKED_MAX", "REASON_HEADER", "Refused", "gap_reasons", "parked_headers", "refusal"]

PARKED_MAX = 10_000  # messages <queue>.parked keeps: the newest (drop-head)
REASON_HEADER = "x-park-reason"
_REASON = 500  # characters of a refusal kept
_VALUE = 4096  # characters of one parked header value (a content frame holds all of them)
_NAMED = 10  # events named in one gap's reason

Refused = tuple[BrokerEvent, str]  # an event and why the store refused it (``refusal``)


def refusal(exc: BaseException) -> str:
    """Why the store refused an event, on one line: a platform error's message, else the exception's type too."""
    text = str(exc) if isinstance(exc, ContractPlatformError) else f"{type(exc).__name__}: {exc}"
    return clipped(printable(text), _REASON)


def gap_reasons(refused: Sequence[Refused], parked: str) -> dict[datetime, str]:
    """One gap per moment of the refused events, its reason naming each (the first ``_NAMED``)."""
    by_moment: dict[datetime, list[Refused]] = {}
    for item in refused:
        by_moment.setdefault(item[0].at, []).append(item)
    reasons = {}
    for at, items in by_moment.items():
        named = "; ".join(_named(event, why) for event, why in items[:_NAMED])
        more = f"; and {len(items) - _NAMED} more" if len(items) > _NAMED else ""
        what = "a broker event" if len(items) == 1 else f"{len(items)} broker events"
        reasons[at] = f"the store refused {what} at {moment(at)}, parked in {printable(parked)}: {named}{more}"
    return reasons


def _named(event: BrokerEvent, why: str) -> str:
    queue = event.get("queue") or (event.get("name") if event.kind.startswith(("queue.", "binding.")) else None)
    where = f" of queue {printable(queue)} in vhost {printable(event.vhost)}" if queue is not None else ""
    return f"{event.kind}{where} ({why})"


def parked_headers(event: BrokerEvent, why: str) -> dict[str, Any]:
    """The parked message's headers: the event's fields as the recorder parsed them, its kind, moment and key."""
    headers: dict[str, Any] = {
        REASON_HEADER: why,
        "x-park-event": event.kind,
        "x-park-at": event.at.isoformat(),
        "x-park-key": event.key,
        "vhost": _value(event.vhost),
    }
    for name, value in sorted(event.fields.items()):
        if value is not None:
            headers[name] = _value(value)
    return headers


def _value(text: str) -> str | bytes:
    if len(text) > _VALUE:
        text = f"{text[:_VALUE]}... ({len(text) - _VALUE:,} more characters cut)"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # not UTF-8 as the broker gave it: the very bytes
        return text.encode("utf-8", "surrogateescape")
    return text
