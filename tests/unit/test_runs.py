"""One run id becomes one file name in every DAG (reports, quarantines, parity files): contract_platform.runs."""

from __future__ import annotations

import pytest

from contract_platform.runs import run_file_name


@pytest.mark.parametrize(
    ("run_id", "name"),
    [
        ("scheduled__2026-11-26T00:00:00+00:00", "scheduled__2026-11-26T00_00_00_00_00"),
        ("manual__2026-07-01T10:30:00.123+00:00", "manual__2026-07-01T10_30_00.123_00_00"),
        ("asset_triggered__2026-11-26T10:00:00.5+00:00", "asset_triggered__2026-11-26T10_00_00.5_00_00"),
        ("my run/with slashes", "my_run_with_slashes"),
        ("..", "_.."),  # never the parent folder
        (".hidden", "_.hidden"),
        ("../../etc/passwd", "_.._.._etc_passwd"),
        ("ünïcode", "_n_code"),
        (None, "manual"),
        ("", "manual"),
    ],
)
def test_a_run_id_becomes_one_harmless_path_component(run_id: str | None, name: str) -> None:
    assert run_file_name(run_id) == name
    assert "/" not in name and name not in (".", "..")


def test_run_ids_that_differ_give_different_names_when_only_a_safe_character_differs() -> None:
    assert run_file_name("manual__a-1") != run_file_name("manual__a_1")
    assert run_file_name("a:b") != run_file_name("a::b")  # one for one: not collapsed
