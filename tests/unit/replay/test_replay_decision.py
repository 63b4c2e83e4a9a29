"""Replay's decision table, the narrowing classification, the contract setting and the record judge."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from tests.support.contracts import build_contract, catalog_of, invoice_envelope

from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import ReplaySettings
from contract_platform.compat import Mode, diff_schemas
from contract_platform.errors import CatalogError
from contract_platform.replay.decision import Decision, Rejections, StaticVerdict, breaks_only_by_narrowing, decide
from contract_platform.replay.judge import MASK, ReplayJudge, ReplayPlan, Tally

STRING = {"type": "string"}


def schema(**keywords: object) -> dict[str, object]:
    return {"type": "object", "properties": {"id": {"type": "string", **keywords}}}


@pytest.mark.parametrize(
    ("old", "new", "mode", "expected"),
    [
        (schema(pattern="^a"), schema(pattern="^ab"), "BACKWARD", True),  # pattern-changed: cannot decide
        (schema(), schema(maxLength=5), "BACKWARD", True),  # max-length-added: narrows
        (schema(enum=["a", "b"]), schema(enum=["a"]), "BACKWARD_TRANSITIVE", True),  # enum-value-removed
        (schema(format="email"), schema(format="uri"), "NONE", True),  # judged as BACKWARD
        (schema(pattern="^a"), schema(pattern="^ab"), "FULL", False),  # breaks forward too
        (schema(maxLength=5), schema(), "FORWARD", False),  # a widening
        (schema(), schema(maxLength=5), "FORWARD", False),  # compatible under FORWARD: nothing breaks
        (schema(maxLength=5), schema(maxLength=9), "BACKWARD", False),  # compatible: nothing to accept
        ({"type": "object"}, {"type": "array"}, "BACKWARD", True),  # type-changed is B=n F=n
    ],
)
def test_breaking_only_by_narrowing(old, new, mode, expected):
    assert breaks_only_by_narrowing(diff_schemas(old, new), Mode(mode)) is expected


def test_a_widening_beside_a_narrowing_under_full_is_never_decided_by_traffic():
    old = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5}, "b": STRING}}
    new = {"type": "object", "properties": {"a": STRING, "b": {"type": "string", "maxLength": 5}}}
    assert not breaks_only_by_narrowing(diff_schemas(old, new), Mode.FULL)


OPT_IN = ReplaySettings(tightening="evidence", min_messages=100)
STATIC = ReplaySettings(min_messages=100)
ARCHIVE = "the archive"


@pytest.mark.parametrize(
    ("settings", "static", "narrowing", "seen", "expected"),
    [
        (STATIC, StaticVerdict.COMPATIBLE, False, [(200, 0)], Decision.CONFIRMED),
        (STATIC, StaticVerdict.COMPATIBLE, False, [(200, 1)], Decision.REFUSED),
        (ReplaySettings(threshold=0.01), StaticVerdict.COMPATIBLE, False, [(200, 2)], Decision.CONFIRMED),
        (ReplaySettings(threshold=0.01), StaticVerdict.COMPATIBLE, False, [(200, 3)], Decision.REFUSED),
        (STATIC, StaticVerdict.COMPATIBLE, False, [(99, 0)], Decision.UNKNOWN),
        (STATIC, StaticVerdict.COMPATIBLE, False, [(10, 0), (5, 1)], Decision.REFUSED),  # a queue's messages
        (OPT_IN, StaticVerdict.BREAKING, True, [(100, 0)], Decision.ACCEPTED_ON_EVIDENCE),
        (OPT_IN, StaticVerdict.BREAKING, True, [(60, 0), (40, 0)], Decision.ACCEPTED_ON_EVIDENCE),
        (OPT_IN, StaticVerdict.BREAKING, True, [(99, 0)], Decision.UNKNOWN),
        (OPT_IN, StaticVerdict.BREAKING, True, [(10_000, 1)], Decision.REFUSED),
        (
            ReplaySettings(tightening="evidence", threshold=0.5),
            StaticVerdict.BREAKING,
            True,
            [(9, 1)],
            Decision.REFUSED,
        ),
        (OPT_IN, StaticVerdict.BREAKING, False, [(10_000, 0)], Decision.NOT_APPLICABLE),
        (STATIC, StaticVerdict.BREAKING, True, [(10_000, 0)], Decision.NOT_APPLICABLE),
        (STATIC, StaticVerdict.BREAKING, True, [(10_000, 30)], Decision.REFUSED),  # today's verdict, with where
    ],
)
def test_decision_table(settings, static, narrowing, seen, expected):
    rows = [Rejections(ARCHIVE if i == 0 else f"queue q{i}", n, r) for i, (n, r) in enumerate(seen)]
    assert decide(settings, static, narrowing, rows).decision is expected


def test_a_refusal_by_queued_messages_names_the_queue():
    rows = [Rejections(ARCHIVE, 0, 0), Rejections("queue billing.work.dlq", 4, 2)]
    decision = decide(STATIC, StaticVerdict.COMPATIBLE, False, rows)
    assert decision.refuses and "2 of 4 messages in queue billing.work.dlq rejected (50.00%)" in decision.reasons


@pytest.mark.parametrize(
    ("settings", "static", "narrowing", "expected"),
    [
        (STATIC, StaticVerdict.COMPATIBLE, False, Decision.UNKNOWN),  # would be confirmed
        (OPT_IN, StaticVerdict.BREAKING, True, Decision.UNKNOWN),  # would be accepted on evidence
        (STATIC, StaticVerdict.BREAKING, True, Decision.NOT_APPLICABLE),  # today's verdict either way
    ],
)
def test_unreadable_queued_messages_are_never_counted_as_accepted(settings, static, narrowing, expected):
    rows = [Rejections(ARCHIVE, 10_000, 0), Rejections("queue billing.work", 3, 0, 2, "MALFORMED: not UTF-8")]
    decision = decide(settings, static, narrowing, rows)
    assert decision.decision is expected
    if expected is Decision.UNKNOWN:
        assert "2 messages in queue billing.work could not be read, so were not judged (MALFORMED: not UTF-8)" in (
            decision.reasons
        )


def test_a_refusal_stands_beside_unreadable_messages():
    rows = [Rejections(ARCHIVE, 100, 0), Rejections("queue billing.work", 4, 2, 1, "MALFORMED")]
    assert decide(STATIC, StaticVerdict.COMPATIBLE, False, rows).refuses


def test_unknown_says_how_many_messages_of_how_many():
    decision = decide(STATIC, StaticVerdict.COMPATIBLE, False, [Rejections(ARCHIVE, 7, 0)])
    assert decision.reasons == ["replay: no evidence (7 of 100 messages)"]


# -- the contract setting ------------------------------------------------------------------------


def set_compatibility(root: Path, value: object) -> Path:
    contract_file = root / "order" / "order-created" / "v1" / "contract.yaml"
    raw = yaml.safe_load(contract_file.read_text(encoding="utf-8"))
    raw["compatibility"] = value
    contract_file.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return root


@pytest.fixture()
def catalogue(tmp_path: Path, catalog_dir: Path) -> Path:
    return Path(shutil.copytree(catalog_dir, tmp_path / "contracts"))


def test_the_mode_string_keeps_todays_defaults(catalog_dir: Path):
    contract = load_catalog(catalog_dir).get("order.order-created.v1")
    assert contract is not None and contract.compatibility == "BACKWARD" and contract.replay == ReplaySettings()


def test_the_object_form_gives_mode_and_replay_settings(catalogue: Path):
    value = {"mode": "FULL", "tightening": "evidence", "window": "30d", "minMessages": 10_000, "threshold": 0.02}
    contract = load_catalog(set_compatibility(catalogue, value)).get("order.order-created.v1")
    assert contract is not None and contract.compatibility == "FULL"
    assert contract.replay == ReplaySettings("evidence", timedelta(days=30), 10_000, 0.02)


def test_the_object_form_defaults_to_backward(catalogue: Path):
    contract = load_catalog(set_compatibility(catalogue, {"tightening": "evidence"})).get("order.order-created.v1")
    assert contract is not None and contract.compatibility == "BACKWARD" and contract.replay.min_messages == 1


@pytest.mark.parametrize(
    ("value", "pointer"),
    [
        ({"minMessages": 0}, "/compatibility"),
        ({"threshold": 1.5}, "/compatibility"),
        ({"window": "a month"}, "/compatibility/window"),
        ({"tightening": "sometimes"}, "/compatibility"),
        ({"mode": "BACKWARD", "windows": "7d"}, "/compatibility"),
    ],
)
def test_a_bad_object_form_is_refused_with_its_place(catalogue: Path, value: object, pointer: str):
    with pytest.raises(CatalogError) as caught:
        load_catalog(set_compatibility(catalogue, value))
    assert any(p.pointer.startswith(pointer) for p in caught.value.problems)


# -- the judge: one record engine, two versions ----------------------------------------------------

LOOSE = {"type": "object", "properties": {"invoiceId": {"type": "string", "pattern": "^inv-[0-9]+$"}}}
STRICT = {"type": "object", "properties": {"invoiceId": {"type": "string", "pattern": "^inv-[0-9]{6,}$"}}}


def record_line(envelope: dict[str, object], contract) -> bytes:  # type: ignore[no-untyped-def]
    from benchmarks.generate_archive import archive_record

    return json.dumps(archive_record(contract, envelope, "2026-07-01T10:15:32Z")).encode("utf-8")


def test_rejected_only_when_the_current_version_accepts_what_the_candidate_rejects():
    candidate = build_contract(payload_schema=STRICT)
    catalog = catalog_of(candidate, envelope_schema=True)
    judge = ReplayJudge(catalog, ReplayPlan(candidate.message_type, candidate.message_type, current_schema=LOOSE))
    tally = Tally()
    lines = [
        record_line(invoice_envelope(100_000), candidate),  # inv-110000: both accept
        record_line(invoice_envelope(5), candidate),  # inv-10005: only the current accepts -> rejected
        record_line(invoice_envelope(0, invoiceId="INV-1"), candidate),  # both reject -> already invalid
    ]
    assert all(judge.replay(line, tally) for line in lines)
    assert (tally.replayed, tally.rejected, tally.already_invalid) == (3, 1, 1)
    assert tally.top_pointers() == [{"pointer": "/payload/invoiceId", "keyword": "pattern", "count": 1}]


def test_other_message_types_are_not_counted_and_pii_message_ids_are_masked():
    candidate = build_contract(payload_schema=STRICT)
    catalog = catalog_of(candidate, build_contract("billing.invoice-issued.v2"), envelope_schema=True)
    plan = ReplayPlan(candidate.message_type, candidate.message_type, current_schema=LOOSE, mask_ids=True)
    judge, tally = ReplayJudge(catalog, plan), Tally()
    other = build_contract("billing.invoice-issued.v2")
    assert not judge.replay(record_line(invoice_envelope(5, other.message_type), other), tally)
    assert judge.replay(record_line(invoice_envelope(5), candidate), tally)
    assert tally.replayed == 1 and tally.samples == [MASK]


def test_a_record_of_the_version_whose_body_cannot_be_read_is_unreadable_with_the_reason_not_dropped():
    candidate = build_contract(payload_schema=STRICT)
    catalog = catalog_of(candidate, envelope_schema=True)
    judge, tally = ReplayJudge(catalog, ReplayPlan(candidate.message_type, candidate.message_type, LOOSE)), Tally()
    record = json.loads(record_line(invoice_envelope(100_000), candidate))
    unreadable = [dict(record, body="[" * 5_000 + "]" * 5_000), dict(record, body=None, bodyBase64="//4=")]
    assert all(judge.replay(json.dumps(line).encode(), tally) for line in unreadable)
    assert judge.replay(record_line(invoice_envelope(100_000), candidate), tally)
    assert (tally.replayed, tally.unreadable) == (1, 2)
    reasons = [r["reason"] for r in Tally.from_json(tally.to_json()).unreadable_shown()]
    assert len(reasons) == 2 and all(reason.startswith("MALFORMED: ") for reason in reasons)


def test_tallies_of_partitions_add_up_through_json():
    left, right = Tally(3, 1, 0), Tally(5, 2, 1)
    left.reject([("/payload/a", "pattern")], "m-1")
    right.reject([("/payload/a", "pattern"), ("/payload/b", "maxLength")], "m-2")
    total = Tally.from_json(left.to_json()).merge(Tally.from_json(right.to_json()))
    assert (total.replayed, total.rejected, total.already_invalid) == (8, 5, 1)
    assert total.top_pointers()[0] == {"pointer": "/payload/a", "keyword": "pattern", "count": 2}
    assert total.samples == ["m-1", "m-2"]


def test_a_version_accepted_on_evidence_no_longer_carries_its_compatibility_problems():
    from contract_platform.replay.run import problems_after_replay

    summaries = [
        {"step": "lint", "problems": ["a.b.v1: lint problem"]},
        {"step": "compatibility", "problems": ["a.b.v1: pattern changed", "c.d.v1: type changed"]},
        {"step": "replay", "problems": ["e.f.v1: replay refuses it: 3 of 100 messages"], "lifted": ["a.b.v1"]},
    ]
    assert problems_after_replay(summaries) == [
        "a.b.v1: lint problem",
        "c.d.v1: type changed",
        "e.f.v1: replay refuses it: 3 of 100 messages",
    ]


def test_the_contract_page_says_when_a_narrowing_may_pass_on_evidence(catalogue: Path):
    from contract_platform.docs.markdown import render_contract_page

    setting = {"tightening": "evidence", "window": "30d", "minMessages": 10_000}
    catalog = load_catalog(set_compatibility(catalogue, setting))
    page = render_contract_page(catalog.contracts["order.order-created.v1"], catalog)
    other = render_contract_page(catalog.contracts["billing.invoice-issued.v1"], catalog)
    assert "at least 10000 messages over 30d" in page and "Tightening" not in other
