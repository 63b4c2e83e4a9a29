"""A sample service as a team writes it with ``contract_platform.client``: the accounting service books issued
invoices. Its own type (``Invoice``), its handler (idempotent by messageId, the contract's idempotencyKey), and a
business rule of its own (credit notes are booked by hand: ``Reject``). Nothing here knows about schemas."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contract_platform.client import Bundle, Dispatcher, GuardedConsumer, Message, Reject

INVOICE_V2 = "billing.invoice-issued.v2"


@dataclass(frozen=True)
class Invoice:
    """The service's own view of an issued invoice (what the type registry decodes an envelope into)."""

    invoice_id: str
    order_id: str
    amount_minor_units: int
    currency_exponent: int
    currency: str
    status: str

    @classmethod
    def from_envelope(cls, envelope: dict[str, Any]) -> Invoice:
        payload = envelope["payload"]
        return cls(
            payload["invoiceId"],
            payload["orderId"],
            payload["amountMinorUnits"],
            payload["currencyExponent"],
            payload["currency"],
            payload["status"],
        )


@dataclass
class Ledger:
    """The accounting ledger: one entry per invoice, each message booked once."""

    entries: dict[str, Invoice] = field(default_factory=dict)
    booked: set[str] = field(default_factory=set)  # messageIds already booked

    def book(self, message: Message[Invoice]) -> None:
        if message.message_id in self.booked:
            return  # a redelivery or a duplicate: already booked
        invoice = message.body
        if invoice.amount_minor_units < 0:
            raise Reject("credit notes are booked by hand")
        self.entries[invoice.invoice_id] = invoice
        self.booked.add(message.message_id)

    def snapshot(self) -> tuple[dict[str, Invoice], frozenset[str]]:
        return dict(self.entries), frozenset(self.booked)


def dispatcher(bundle: Bundle, ledger: Ledger) -> Dispatcher:
    """What the service reads, and into which of its types: v2 (v1 arrives migrated on read)."""
    return Dispatcher(bundle).on(INVOICE_V2, ledger.book, decode=Invoice.from_envelope)


def consumer(bundle: Bundle, url: str, ledger: Ledger, queues: list[str]) -> GuardedConsumer:
    return GuardedConsumer(bundle, url, queues=queues).on(INVOICE_V2, ledger.book, decode=Invoice.from_envelope)
