"""``load_catalog`` is the one way in: without a folder it loads the one ``$CONTRACT_CATALOG`` names, and a
contract that leaves a setting out gets the model's default, the same as a contract built in code."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Contract, ValidationSettings
from contract_platform.errors import CatalogError

QA = "quote/quote-approved/v1"


def test_without_a_folder_the_catalogue_comes_from_the_environment(monkeypatch, catalog_copy: Path) -> None:
    (catalog_copy / "order").rename(catalog_copy.parent / "order-elsewhere")  # this copy differs from contracts/
    monkeypatch.setenv("CONTRACT_CATALOG", str(catalog_copy))

    catalog = load_catalog()

    assert catalog.root == catalog_copy.resolve()
    assert not any(contract.domain == "order" for contract in catalog)


def test_a_missing_folder_from_the_environment_says_where_it_came_from(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CONTRACT_CATALOG", str(tmp_path / "nowhere"))

    with pytest.raises(CatalogError) as caught:
        load_catalog()

    [problem] = caught.value.problems
    assert problem.file == str(tmp_path / "nowhere")
    assert "does not exist" in problem.message and "CONTRACT_CATALOG" in problem.message


def test_settings_left_out_take_the_models_defaults(catalog_copy: Path) -> None:
    contract_file = catalog_copy / QA / "contract.yaml"
    raw = yaml.safe_load(contract_file.read_text())
    for key in ("limits", "validation"):
        raw.pop(key, None)
    contract_file.write_text(yaml.safe_dump(raw, sort_keys=False))

    contract = load_catalog(catalog_copy).contracts["quote.quote-approved.v1"]

    assert contract.max_body_bytes == Contract.max_body_bytes
    assert contract.validation == ValidationSettings()
