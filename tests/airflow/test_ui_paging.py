"""The Contracts page and its JSON over an estate of generated contracts: pages, the findings filter, counts.

The app runs in process, mounted at /contracts as the api-server mounts it, over the real catalogue
plus 130 generated contracts (``tests.support.ui_seed.write_estate_catalog``) and a registry with
30 days of their history (``seed_estate``); every request carries a real Airflow JWT.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support import ui_seed as seed

pytestmark = pytest.mark.airflow

REPO = Path(__file__).resolve().parents[2]
ESTATE = 130
RUN_ID = "manual__paging"


@pytest.fixture(scope="module")
def estate(airflow_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[seed.EstateContract]]:
    work = tmp_path_factory.mktemp("ui-paging")
    url = f"sqlite:///{work / 'registry.db'}"
    plan = seed.write_estate_catalog(work / "contracts", ESTATE, source=REPO / "contracts")
    seed.seed_registry(url, RUN_ID)
    seed.seed_estate(url, plan)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONTRACT_REGISTRY_URL", url)
        mp.setenv("CONTRACT_CATALOG", str(work / "contracts"))
        yield plan


@pytest.fixture(scope="module")
def client(estate: list[seed.EstateContract]) -> Iterator[Any]:
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from contract_platform_airflow.ui import create_app

    root = FastAPI()
    root.mount("/contracts", create_app())
    with TestClient(root) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def auth(airflow_db: Path) -> dict[str, str]:
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    token = create_auth_manager().generate_jwt(SimpleAuthManagerUser(username="admin", role="admin"))
    return {"Authorization": f"Bearer {token}"}


def _api(client: Any, auth: dict[str, str], **params: Any) -> dict[str, Any]:
    response = client.get("/contracts/api/contracts", params=params, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


def _page(client: Any, auth: dict[str, str], query: str = "") -> str:
    response = client.get(f"/contracts/{query}", headers=auth)
    assert response.status_code == 200, response.text
    return response.text


def _shown(html: str) -> list[str]:
    return re.findall(r'data-message-type="([^"]+)"', html)


def _expected_findings(estate: list[seed.EstateContract]) -> set[str]:
    """What the seed made: a failed latest quality run, a refused step, and the real catalogue's one mismatch
    (whose latest quality also failed) and the deprecated invoice-issued v1 (its retirement audit failed)."""
    made = {c.message_type for c in estate if c.quality_fails or c.mismatched}
    return made | {seed.MISMATCHED, seed.MIGRATED_FROM}


def test_the_api_pages_through_every_version_once(client, auth, estate) -> None:
    total = ESTATE + len(seed.VERSIONS)
    first = _api(client, auth)
    assert (first["total"], first["matching"], first["page"], first["perPage"]) == (total, total, 1, 50)
    assert first["pages"] == 3 and len(first["contracts"]) == 50
    seen = [c["messageType"] for page in (1, 2, 3) for c in _api(client, auth, page=page)["contracts"]]
    assert len(seen) == total and sorted(seen) == seen  # messageType order, none twice, none left out
    assert {c.message_type for c in estate} <= set(seen) and set(seed.VERSIONS) <= set(seen)
    last = _api(client, auth, page=99)  # past the end: the last page, saying so
    assert last["page"] == 3 and [c["messageType"] for c in last["contracts"]] == seen[100:]
    assert _api(client, auth, per_page=7, page=2)["contracts"] == _api(client, auth, per_page=14)["contracts"][7:]


@pytest.mark.parametrize("params", [{"page": 0}, {"per_page": 0}, {"per_page": 501}, {"page": "two"}])
def test_bad_paging_parameters_are_a_422(client, auth, params) -> None:
    assert client.get("/contracts/api/contracts", params=params, headers=auth).status_code == 422


def test_the_findings_filter_keeps_versions_with_failed_evidence_refusals_or_blockers(client, auth, estate) -> None:
    found = _api(client, auth, findings="true", per_page=500)
    shown = {c["messageType"]: c for c in found["contracts"]}
    assert set(shown) == _expected_findings(estate)
    assert found["matching"] == len(shown) and found["total"] == ESTATE + len(seed.VERSIONS)
    refused = next(c for c in estate if c.mismatched)
    assert any(f.startswith("refused: ") for f in shown[refused.message_type]["findings"])
    failing = next(c for c in estate if c.quality_fails and not c.mismatched)
    assert shown[failing.message_type]["findings"] == ["envelope_quality fail"]
    assert shown[seed.MIGRATED_FROM]["retirement"]["blockers"] == shown[seed.MIGRATED_FROM]["findings"]
    clean = _api(client, auth, per_page=500)["contracts"]
    assert all(not c["findings"] for c in clean if c["messageType"] not in shown)


def test_filters_search_and_findings_combine_with_paging(client, auth, estate) -> None:
    stock = [c.message_type for c in estate if c.domain == "stock"]
    both = _api(client, auth, domain="stock", q="recorded", per_page=10, page=2)
    assert both["matching"] == len(stock) and both["pages"] == -(-len(stock) // 10)
    assert [c["messageType"] for c in both["contracts"]] == sorted(stock)[10:20]
    failing_stock = sorted(mt for mt in stock if mt in _expected_findings(estate))
    mixed = _api(client, auth, domain="stock", findings="true")
    assert [c["messageType"] for c in mixed["contracts"]] == failing_stock


def test_the_page_counts_rows_and_links_pages_keeping_the_filters(client, auth, estate) -> None:
    total = ESTATE + len(seed.VERSIONS)
    html = _page(client, auth, "?page=2")
    assert f"51–100 of {total}" in html and "page 2 of 3" in html
    rows = _shown(html)
    assert rows == [c["messageType"] for c in _api(client, auth, page=2)["contracts"]]
    assert 'href="/contracts/?page=3"' in html and 'href="/contracts/"' in html  # next, and previous = page 1

    query = "?q=recorded&domain=travel&findings=true&sort=messageType&order=desc&per_page=5"
    filtered = _page(client, auth, query)
    expected = sorted((c.message_type for c in estate if c.domain == "travel"), reverse=True)
    expected = [mt for mt in expected if mt in _expected_findings(estate)]
    assert _shown(filtered) == expected[:5]
    assert f"1–5 of {len(expected)}" in filtered
    nxt = re.search(r'<a class="next" rel="next" href="([^"]+)"', filtered)
    assert nxt is not None
    link = nxt.group(1).replace("&amp;", "&")
    for kept in ("q=recorded", "domain=travel", "findings=true", "order=desc", "per_page=5", "page=2"):
        assert kept in link
    assert _shown(_page(client, auth, link.removeprefix("/contracts/"))) == expected[5:10]
    assert 'name="findings" value="true" checked' in filtered
    assert "Open findings or blockers" in filtered and "retirement blockers" in filtered  # the help text


def test_a_filter_that_matches_nothing_says_so(client, auth) -> None:
    html = _page(client, auth, "?q=no-such-contract-anywhere")
    assert _shown(html) == [] and "0 of 0" in html and "No contract matches these filters." in html


def test_the_contract_page_shows_the_latest_quality_run_expectation_by_expectation(client, auth, estate) -> None:
    failing = next(c for c in estate if c.quality_fails and not c.mismatched)
    html = _page(client, auth, f"c/{failing.message_type}")
    section = html[html.index('<section id="quality">') : html.index('<section id="migration">')]
    outcomes = dict(re.findall(r'data-expectation="([^"]+)">.*?verdict-(?:pass|fail)">(met|missed)<', section, re.S))
    assert outcomes == {"published-after-occurred": "missed", "message-id-unique": "met"}
    assert "m-late-0, m-late-1, m-late-2" in section and "tenant-id-present" in section
    listed = _page(client, auth, f"?q={failing.message_type}")
    assert f'href="/contracts/c/{failing.message_type}#quality"' in listed  # the catalogue's verdict links there
