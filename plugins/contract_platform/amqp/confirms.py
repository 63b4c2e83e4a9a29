"""Which consumed deliveries may be acknowledged: a delivery is settled only once its publish is confirmed.

Pure bookkeeping, no pika: the relay tells it what it published for which delivery and what the broker
answered; ``settle()`` says which ``basic.ack`` / ``basic.nack`` frames to send.

- Each consumed delivery is republished exactly once (to its target or to a parking lot), so publish
  sequence numbers and delivery tags map one to one. Delivery tags on a channel are 1, 2, 3, ...
- A delivery becomes *done* when the broker confirms (``basic.ack``) its publish, or *refused* when the
  broker nacks it or returns it as unroutable (``basic.return`` comes before that publish's ack).
- A publisher with no deliveries at all uses its publish sequence numbers as the tags.
- ``settle()`` walks up from the last settled tag while tags are done or refused: a run of done tags is
  acknowledged with one ``ack(last, multiple=True)``; a refused tag is nacked with requeue, alone, so it is
  delivered again and nothing is lost. A tag still waiting for its confirm stops the walk, so nothing is
  ever acknowledged before its republication was confirmed.
- A consumer that republishes only some deliveries (a guard dead-letters the invalid ones with their reasons)
  tells the tracker about the others: ``done(tag)``, handled here and acknowledged in the same runs, or
  ``settled_elsewhere(tag)``, already nacked or rejected by the caller, which the walk
  passes over without ever ending an acknowledgement at it. For such a caller a REQUEUE frame means "the
  republication was refused"; what it sends then is its own choice (the guard rejects without requeue).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["ConfirmTracker", "Settle", "SettleKind"]


class SettleKind(StrEnum):
    ACK = "ack"  # basic.ack(tag, multiple=True): every delivery up to tag was republished and confirmed
    REQUEUE = "requeue"  # basic.nack(tag, multiple=False, requeue=True): its republication was refused


@dataclass(frozen=True)
class Settle:
    kind: SettleKind
    delivery_tag: int
    count: int  # deliveries this frame settles


@dataclass
class _InFlight:
    delivery_tag: int
    message_id: str | None
    label: str
    returned: bool = False


class ConfirmTracker:
    """Publishes in flight, keyed by publish sequence number, and the acknowledgement frontier."""

    def __init__(self) -> None:
        self._in_flight: dict[int, _InFlight] = {}
        self._order: deque[int] = deque()  # sequences in publish order (may hold ones already answered)
        self._by_message_id: dict[str | None, set[int]] = {}
        # delivery tag -> confirmed or done (True) / refused (False) / settled elsewhere (None), not yet walked past
        self._outcome: dict[int, bool | None] = {}
        self._settled_up_to = 0
        self.confirmed: Counter[str] = Counter()  # label given to ``published`` -> publishes the broker confirmed
        self.refused = 0

    @property
    def in_flight(self) -> int:
        """Publishes not yet confirmed or refused."""
        return len(self._in_flight)

    @property
    def unsettled(self) -> int:
        """Deliveries not yet acknowledged or requeued (in flight, or answered but behind one that is)."""
        return len(self._in_flight) + len(self._outcome)

    @property
    def settled_up_to(self) -> int:
        return self._settled_up_to

    def published(self, sequence: int, delivery_tag: int, message_id: str | None, label: str) -> None:
        """Publish ``sequence`` republishes delivery ``delivery_tag``; ``label`` (a park reason...) counts it."""
        if sequence in self._in_flight:
            raise ValueError(f"publish sequence {sequence} is already in flight")
        self._in_flight[sequence] = _InFlight(delivery_tag, message_id, label)
        self._order.append(sequence)
        self._by_message_id.setdefault(message_id, set()).add(sequence)

    def done(self, delivery_tag: int) -> None:
        """Delivery ``delivery_tag`` needed no publish: acknowledge it with the runs around it, in order."""
        self._outcome[delivery_tag] = True

    def settled_elsewhere(self, delivery_tag: int) -> None:
        """The caller answered delivery ``delivery_tag`` itself (``basic.nack``/``basic.reject``): the walk passes
        over it, and no acknowledgement ends at it (the broker would refuse an ack of a tag it no longer holds)."""
        self._outcome[delivery_tag] = None

    def returned(self, message_id: str | None) -> int:
        """A publish came back unroutable; its confirm will follow and must count as a refusal.

        The return names the message, not its sequence number, so every publish in flight with that
        messageId is marked (a duplicate in flight is merely requeued too). When none matches, every
        publish in flight is marked: requeueing too much is safe, acknowledging a lost message is not.
        Returns how many publishes were marked.
        """
        sequences = self._by_message_id.get(message_id) or set(self._in_flight)
        for sequence in sequences:
            self._in_flight[sequence].returned = True
        return len(sequences)

    def answered(self, sequence: int, *, multiple: bool, ok: bool) -> int:
        """The broker acked (``ok``) or nacked publish ``sequence`` (and every earlier one if ``multiple``)."""
        if multiple:
            sequences = []
            while self._order and self._order[0] <= sequence:
                sequences.append(self._order.popleft())
        else:
            sequences = [sequence]
        count = 0
        for number in sequences:
            entry = self._in_flight.pop(number, None)
            if entry is None:
                continue
            ids = self._by_message_id[entry.message_id]
            ids.discard(number)
            if not ids:
                del self._by_message_id[entry.message_id]
            confirmed = ok and not entry.returned
            self._outcome[entry.delivery_tag] = confirmed
            if confirmed:
                self.confirmed[entry.label] += 1
            else:
                self.refused += 1
            count += 1
        while self._order and self._order[0] not in self._in_flight:  # drop the ones answered one by one
            self._order.popleft()
        return count

    def settle(self) -> list[Settle]:
        """The frames to send now, in order; each delivery is settled once."""
        return list(self._settle())

    def _settle(self) -> Iterator[Settle]:
        run_end, run_length = 0, 0
        tag = self._settled_up_to + 1
        while tag in self._outcome:
            outcome = self._outcome.pop(tag)
            if outcome is None:
                pass  # settled by the caller: a later ack(multiple) may pass it, never end at it
            elif outcome:
                run_end, run_length = tag, run_length + 1
            else:
                if run_length:
                    yield Settle(SettleKind.ACK, run_end, run_length)
                    run_end, run_length = 0, 0
                yield Settle(SettleKind.REQUEUE, tag, 1)
            self._settled_up_to = tag
            tag += 1
        if run_length:
            yield Settle(SettleKind.ACK, run_end, run_length)

    def reset(self) -> None:
        """Forget everything: the channel is gone and the broker requeues whatever it had not been told."""
        self._in_flight.clear()
        self._order.clear()
        self._by_message_id.clear()
        self._outcome.clear()
        self._settled_up_to = 0
