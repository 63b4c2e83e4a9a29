"""Which versions a change reaches (``catalog.selection``), from the paths a pull request changed."""

from __future__ import annotations

import pytest

from contract_platform.catalog.selection import changes_of, select

INV1 = "billing.invoice-issued.v1"
INV2 = "billing.invoice-issued.v2"
ORDER = "order.order-created.v1"


def test_a_changed_major_re_checks_the_other_majors_of_its_family(catalog):
    selection = select(catalog, changes_of("main", ["billing/invoice-issued/v1/payload.schema.json"]))
    assert dict(selection.reasons) == {INV1: ("changed",), INV2: (f"linked to {INV1}",)}
    assert selection.describe() == (
        f"1 of {len(catalog)} versions changed since main, 1 linked to them re-checked; "
        f"{len(catalog) - 2} unchanged not re-checked"
    )


def test_a_version_whose_successor_changed_is_re_checked(catalog):
    selection = select(catalog, changes_of("main", ["billing/invoice-issued/v2/contract.yaml"]))
    assert selection.reasons[INV1] == (f"linked to {INV2}",)  # supersededBy: billing.invoice-issued.v2


@pytest.mark.parametrize("path", ["envelope/envelope.v1.schema.json", "catalog.yaml"])
def test_a_shared_file_re_checks_everything(catalog, path):
    selection = select(catalog, changes_of("main", [path, "order/order-created/v1/contract.yaml"]))
    assert selection.everything and selection.shared == (path,)
    assert selection.describe() == f"{len(catalog)} of {len(catalog)} versions re-checked: {path} changed since main"


def test_files_of_no_version_select_nothing(catalog):
    selection = select(catalog, changes_of("main", ["README.md", "order/README.md", "order/order-created/notes.md"]))
    assert len(selection) == 0 and not selection.removed
    assert selection.to_dict()["unchanged"] == len(catalog)


def test_a_version_folder_gone_is_removed_not_selected(catalog):
    selection = select(catalog, changes_of("main", ["order/order-created/v2/contract.yaml"]))
    assert selection.removed == ("order.order-created.v2",)
    assert dict(selection.reasons) == {ORDER: ("linked to order.order-created.v2",)}


def test_no_changes_given_means_every_version(catalog):
    selection = select(catalog, None)
    assert selection.everything and selection.ref is None
    assert selection.describe() == f"{len(catalog)} of {len(catalog)} versions checked (all)"
