"""Reason codes: the stable strings, their order of precedence, and which ones are only counted."""

from __future__ import annotations

from contract_platform.validation import Reason, reasons

ORDER = [
    "MALFORMED",
    "UNCHECKABLE",
    "ENVELOPE_INVALID",
    "UNKNOWN_TYPE",
    "PAYLOAD_INVALID",
    "HEADER_MISMATCH",
    "ROUTING_MISMATCH",
    "DUPLICATE",
    "CONFLICTING_DUPLICATE",
    "OUT_OF_ORDER",
    "OVERSIZE",
    "PII_IN_HEADERS",
    "RETIRED_TYPE",
    "DEPRECATED_TYPE",
]


def test_codes_are_these_strings_in_this_order():
    assert [str(r) for r in Reason] == ORDER
    assert [r.rank for r in Reason] == list(range(len(ORDER)))
    assert all(Reason.by_rank(r.rank) is r for r in Reason)


def test_only_duplicate_and_deprecated_are_counted_not_invalid():
    assert {r for r in Reason if not r.invalid} == {Reason.DUPLICATE, Reason.DEPRECATED_TYPE}


def test_the_docstring_table_documents_every_code_in_order():
    table = [
        line.split()[0] for line in (reasons.__doc__ or "").splitlines() if line.split() and line.split()[0] in ORDER
    ]
    assert table == ORDER
