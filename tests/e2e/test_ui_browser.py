"""The Contracts page as a person uses it: a real ``airflow api-server``, a login, headless Chromium.

The api-server runs in a subprocess on a free port (started again on another while another process
holds it, ``tests.support.ports``) over this session's Airflow DB, with the
platform's DAGs serialized, SimpleAuthManager with a known admin, and a seeded registry store
whose transitions point at a real ``contract_change`` run triggered through the REST API. Its
catalogue is the real one plus ``ESTATE`` generated contracts with 30 days of history
(``ui_seed.seed_estate``), so the Contracts page has several pages. The envelope quality results
page is opened from disk by a Chromium that can reach nothing but this machine.
Screenshots go to ``test-artifacts/ui/``. Needs Debian's ``chromium`` and ``chromium-driver``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from tests.support.offline_browser import CHROMIUM_MISSING, chromium, chromium_installed, offline_chromium
from tests.support.ports import Holder, free_port, port_holder
from tests.support.quality import quality_report
from tests.support.ui_seed import MISMATCHED, EstateContract, seed_estate, seed_registry, write_estate_catalog
from tests.support.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "ui"
RUN_ID = "manual__ui_e2e"
ESTATE = 120  # generated contracts beside the real catalogue: three pages of 50
USER, PASSWORD = "admin", secrets.token_urlsafe(12)

pytestmark = [
    pytest.mark.airflow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not chromium_installed(), reason=CHROMIUM_MISSING),
]


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    estate: tuple[EstateContract, ...] = ()

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", headers={"Authorization": f"Bearer {self.token}"}, timeout=30)


def _wait_until_healthy(port: int, process: subprocess.Popen[bytes], log: Path, seconds: int = 180) -> bool:
    """True once this api-server answers healthy on ``port``; False if another process holds the port."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        holder = port_holder(port, [process.pid])
        if holder is Holder.ANOTHER:
            return False
        if process.poll() is not None:
            raise RuntimeError(f"airflow api-server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        if holder is Holder.OURS:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/api/v2/monitor/health", timeout=2).status_code == 200:
                    return True
        time.sleep(1)
    raise RuntimeError(f"airflow api-server not healthy after {seconds}s:\n{log.read_text()[-4000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _start_api_server(
    airflow: str, env: dict[str, str], log: Path, attempts: int = 5
) -> tuple[subprocess.Popen[bytes], str]:
    """``airflow api-server`` on a free port, healthy, and its URL; started again on another port while
    another process holds the one it was given (its URL must be set before it starts, so no port 0)."""
    for _ in range(attempts):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env |= {
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API__BASE_URL": url,
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{url}/execution/",
        }
        with log.open("ab") as out:
            process = subprocess.Popen(
                [airflow, "api-server", "-H", "127.0.0.1", "-p", str(port), "-w", "1"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as a whole below, nothing else
            )
        try:
            if _wait_until_healthy(port, process, log):
                return process, url
        except BaseException:
            _stop(process)
            raise
        _stop(process)
    raise RuntimeError(f"another process held each of the {attempts} ports given to the api-server")


@pytest.fixture(scope="module")
def server(airflow_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("ui-e2e")
    passwords = work / "passwords.json"
    passwords.write_text(json.dumps({USER: PASSWORD}))
    registry_url = f"sqlite:///{work / 'registry.db'}"
    estate = write_estate_catalog(work / "contracts", ESTATE, source=REPO / "contracts")
    env = {key: value for key, value in os.environ.items() if key != "AIRFLOW__CORE__UNIT_TEST_MODE"}
    env.pop("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS", None)
    env |= {
        "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(64),
        "CONTRACT_REGISTRY_URL": registry_url,
        "CONTRACT_CATALOG": str(work / "contracts"),
    }
    airflow = str(Path(sys.executable).parent / "airflow")
    reserialize = subprocess.run(
        [airflow, "dags", "reserialize"], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert reserialize.returncode == 0, reserialize.stderr[-3000:]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = ARTIFACTS / "api-server.log"
    log.write_bytes(b"")
    process, url = _start_api_server(airflow, env, log)
    try:
        login = httpx.post(f"{url}/auth/token", json={"username": USER, "password": PASSWORD}, timeout=30)
        assert login.status_code == 201, login.text
        token = login.json()["access_token"]
        trigger = httpx.post(
            f"{url}/api/v2/dags/contract_change/dagRuns",
            headers={"Authorization": f"Bearer {token}"},
            json={"logical_date": None, "dag_run_id": RUN_ID},
            timeout=30,
        )
        assert trigger.status_code == 200, trigger.text
        seed_registry(registry_url, RUN_ID)
        seed_estate(registry_url, estate)
        yield Server(url, token, tuple(estate))
    finally:
        _stop(process)


@pytest.fixture()
def browser(server: Server) -> Iterator[object]:
    with tempfile.TemporaryDirectory(prefix="chromium-") as user_data:
        driver = chromium(user_data, "--disable-quic", "--disable-sync", width=1500, height=1100)
        try:
            yield driver
        finally:
            driver.quit()


def _log_in(driver, server: Server) -> None:  # type: ignore[no-untyped-def]
    driver.get(f"{server.url}/contracts/static/contracts.css")  # a page of the site, so the cookie has a domain
    driver.add_cookie({"name": "_token", "value": server.token, "path": "/", "httpOnly": True})


def _wait_for(driver, css: str, seconds: int = 30):  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds).until(expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css)))


def _screenshot(driver, name: str, *, full_page: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Save ``test-artifacts/ui/<name>.png``; ``full_page`` grows the window to the page's height first."""
    if full_page:
        height = min(int(driver.execute_script("return document.documentElement.scrollHeight")), 8000)
        driver.set_window_size(1500, max(height, 1100))
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    driver.set_window_size(1500, 1100)


def test_anonymous_visitor_is_sent_to_the_airflow_login(server: Server, browser) -> None:
    browser.get(f"{server.url}/contracts/")
    assert "/auth/login" in browser.current_url
    assert "contract-row" not in browser.page_source
    assert httpx.get(f"{server.url}/contracts/api/contracts", timeout=30).status_code == 401


def test_catalogue_contract_page_and_run_link_in_a_browser(server: Server, browser, catalog) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _log_in(browser, server)
    browser.get(f"{server.url}/contracts/")
    _wait_for(browser, "table.catalogue")
    rows = [row.get_attribute("data-message-type") for row in browser.find_elements(By.CSS_SELECTOR, "tr.contract-row")]
    assert len(rows) == 50 and {c.message_type for c in catalog} <= set(rows)  # the real ones sort first
    mismatched = browser.find_elements(By.CSS_SELECTOR, "tr.status-mismatch")
    refused = {c.message_type for c in server.estate if c.mismatched}
    assert [row.get_attribute("data-message-type") for row in mismatched] == [
        mt for mt in rows if mt == MISMATCHED or mt in refused
    ]
    _screenshot(browser, "catalogue")

    Select(browser.find_element(By.NAME, "domain")).select_by_value("billing")  # the inline script submits
    _wait_for(browser, "select[name=domain] option[value=billing][selected]")
    shown = [
        row.get_attribute("data-message-type") for row in browser.find_elements(By.CSS_SELECTOR, "tr.contract-row")
    ]
    assert shown and all(mt.startswith("billing.") for mt in shown)

    browser.get(f"{server.url}/contracts/")
    browser.find_element(By.CSS_SELECTOR, f"tr[data-message-type='{MISMATCHED}'] a.mt").click()
    chart = _wait_for(browser, "svg.chart")
    assert chart.find_elements(By.CSS_SELECTOR, "polyline")
    assert chart.find_elements(By.CSS_SELECTOR, "text.tick")
    browser.execute_script("document.querySelectorAll('#evidence details').forEach(d => d.open = true)")
    _screenshot(browser, "contract", full_page=True)

    links = browser.find_elements(By.CSS_SELECTOR, "#history a.run-link")
    assert links, "every transition of the seeded contract was applied by a contract_change run"
    href = links[0].get_attribute("href")
    assert href == f"{server.url}/dags/contract_change/runs/{quote(RUN_ID, safe='')}"
    assert server.get(href.removeprefix(server.url)).status_code == 200  # the Airflow UI serves the route
    run = server.get(f"/api/v2/dags/contract_change/dagRuns/{quote(RUN_ID, safe='')}")
    assert run.status_code == 200 and run.json()["dag_run_id"] == RUN_ID  # and the run behind it exists
    links[0].click()
    _wait_for(browser, "#root")
    wait_until(lambda: "/dags/contract_change/runs/" in browser.current_url, 30, 0.2, what="the run page's address")
    _wait_for(browser, "#root *")  # the React UI rendered into its root
    _screenshot(browser, "dag-run")


def test_contracts_in_the_airflow_navigation_and_run_tab(server: Server, browser) -> None:
    from selenium.webdriver.common.by import By

    _log_in(browser, server)
    browser.get(f"{server.url}/plugin/contracts")
    frame = _wait_for(browser, "iframe")
    assert frame.get_attribute("src").endswith("/contracts/")
    browser.switch_to.frame(frame)
    _wait_for(browser, "tr.status-mismatch")
    browser.switch_to.default_content()
    _screenshot(browser, "airflow-nav")

    browser.get(f"{server.url}/dags/contract_change/runs/{quote(RUN_ID, safe='')}/plugin/contracts-run")
    frame = _wait_for(browser, "iframe")
    browser.switch_to.frame(frame)
    _wait_for(browser, "a.mt")
    listed = {a.text for a in browser.find_elements(By.CSS_SELECTOR, "a.mt")}
    assert MISMATCHED in listed
    browser.switch_to.default_content()
    _screenshot(browser, "airflow-run-tab")


def _shown(driver) -> list[str]:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    return [row.get_attribute("data-message-type") for row in driver.find_elements(By.CSS_SELECTOR, "tr.contract-row")]


def _range(driver) -> str:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, "#pager-top .range").text


def test_paging_through_the_estate_with_the_findings_filter_and_search(server: Server, browser, catalog) -> None:
    from selenium.webdriver.common.by import By

    total = ESTATE + len(catalog)
    _log_in(browser, server)
    browser.get(f"{server.url}/contracts/")
    _wait_for(browser, "#pager-top")
    assert _range(browser) == f"1–50 of {total}"
    first = _shown(browser)

    browser.find_element(By.CSS_SELECTOR, "#pager-top a.next").click()
    wait_until(lambda: _range(browser) == f"51–100 of {total}", 30, 0.2, what="the second page's range")
    second = _shown(browser)
    assert len(second) == 50 and not set(first) & set(second) and sorted(first + second) == first + second
    assert "page=2" in browser.current_url
    _screenshot(browser, "catalogue-page-2")

    browser.find_element(By.NAME, "findings").click()  # the inline script submits; paging starts again
    wait_until(lambda: "findings=true" in browser.current_url, 30, 0.2, what="the findings filter in the address")
    _wait_for(browser, "input[name=findings][checked]")
    flagged = {c.message_type for c in server.estate if c.quality_fails or c.mismatched}
    with_findings = _shown(browser)
    assert with_findings and "page=" not in browser.current_url
    assert all(mt in flagged or mt.split(".")[0] in {"billing", "order", "quote"} for mt in with_findings)
    assert {mt for mt in with_findings if mt.split(".")[0] in {"stock", "travel", "warehouse", "yard"}} == {
        mt for mt in flagged if mt in with_findings
    }
    matching = len(flagged) + 2  # the real catalogue's refused step and its deprecated v1's retirement blockers
    assert _range(browser) == f"1–{min(50, matching)} of {matching}"
    assert all(
        row.get_attribute("title") for row in browser.find_elements(By.CSS_SELECTOR, "tr.contract-row")
    )  # each row says what its findings are

    search = browser.find_element(By.NAME, "q")
    search.clear()
    search.send_keys("travel")
    browser.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
    wait_until(lambda: "q=travel" in browser.current_url, 30, 0.2, what="the search in the address")
    travel = sorted(mt for mt in flagged if mt.startswith("travel."))
    assert _shown(browser) == travel and _range(browser) == f"1–{len(travel)} of {len(travel)}"
    assert browser.find_elements(By.CSS_SELECTOR, "#pager-top span.next")  # one page: no next link
    assert "findings=true" in browser.current_url  # the filter stayed on
    _screenshot(browser, "catalogue-findings-search")

    browser.get(f"{server.url}/contracts/?q=recorded&per_page=20&page=3")
    _wait_for(browser, "#pager-top")
    estate = sorted(c.message_type for c in server.estate)
    assert _shown(browser) == estate[40:60] and _range(browser) == f"41–60 of {ESTATE}"
    browser.find_element(By.CSS_SELECTOR, "#pager-bottom a.prev").click()
    wait_until(lambda: _range(browser) == f"21–40 of {ESTATE}", 30, 0.2, what="the previous page")
    assert (
        _shown(browser) == estate[20:40]
        and "q=recorded" in browser.current_url
        and "per_page=20" in browser.current_url
    )


def _data_docs_site(root: Path) -> None:
    """A real Great Expectations Data Docs site (pandas, one suite), as GX writes it: its pages load from CDNs
    (the platform's runs point them at local copies, ``quality.offline_site``; ``tests/spark`` opens those)."""
    import great_expectations as gx
    import pandas as pd
    from great_expectations.checkpoint import UpdateDataDocsAction

    context = gx.get_context(mode="file", context_root_dir=str(root))
    batch = (
        context.data_sources.add_pandas("envelopes")
        .add_dataframe_asset("all")
        .add_batch_definition_whole_dataframe("w")
    )
    suite = context.suites.add(
        gx.ExpectationSuite(
            name="envelope_quality.order.order-created.v1",
            expectations=[gx.expectations.ExpectColumnValuesToNotBeNull(column="messageId")],
        )
    )
    validation = context.validation_definitions.add(gx.ValidationDefinition(name=suite.name, data=batch, suite=suite))
    checkpoint = context.checkpoints.add(
        gx.Checkpoint(name=suite.name, validation_definitions=[validation], actions=[UpdateDataDocsAction(name="docs")])
    )
    checkpoint.run(batch_parameters={"dataframe": pd.DataFrame({"messageId": ["m-1", "m-2"]})})


def test_the_quality_results_open_from_disk_without_a_network(tmp_path: Path) -> None:
    """What the main job's summary points to (``quality:``) opens offline and shows every expectation's outcome;
    the Data Docs index links to it, even as GX writes it (before the platform's rewrite, its CDN scripts fail)."""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    from contract_platform.quality.results_page import write_results_page
    from contract_platform.quality.runner import DATA_DOCS_INDEX, results_page_path

    gx_root = tmp_path / "gx"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _data_docs_site(gx_root)
    index = gx_root / DATA_DOCS_INDEX
    assert "cdn.jsdelivr.net" in index.read_text(encoding="utf-8")  # GX's own site: scripts from CDNs
    report = quality_report(str(index), str(gx_root), samples=("m-17", "<script>window.ran = 1</script>"))
    page = write_results_page(report, index.parent)
    assert page == results_page_path(gx_root)  # the path the main job prints as "quality:"

    with tempfile.TemporaryDirectory(prefix="chromium-offline-") as user_data:
        driver = offline_chromium(user_data, width=1500, height=1100)
        try:
            with pytest.raises(WebDriverException, match="ERR_"):  # the network really is out of reach
                driver.get("https://cdn.jsdelivr.net/npm/vega@5")

            driver.get(page.as_uri())
            _wait_for(driver, "#overall")
            outcomes = {
                row.get_attribute("data-expectation"): row.find_element(By.CSS_SELECTOR, ".verdict").text
                for row in driver.find_elements(By.CSS_SELECTOR, "tr.expectation")
            }
            assert outcomes == {
                "message-id-unique": "met",
                "published-after-occurred": "missed",
                "producer-is-owner-service": "could not be evaluated",
            }
            assert driver.find_element(By.ID, "overall").text == "fail"
            missed = driver.find_element(By.CSS_SELECTOR, "tr.missed").text
            assert "m-17, <script>window.ran = 1</script>" in missed  # a sample is shown as text, never run
            assert driver.execute_script("return window.ran === undefined")
            styled = driver.execute_script(
                "return getComputedStyle(document.querySelector('tr.missed td')).backgroundColor"
            )
            assert styled not in ("rgba(0, 0, 0, 0)", "transparent")  # its inline styles applied
            _screenshot(driver, "quality-results-offline", full_page=True)

            driver.get(index.as_uri())  # GX's index: its CDN scripts fail, the link to the results does not
            link = _wait_for(driver, f"a[href='{page.name}']")
            _screenshot(driver, "data-docs-offline")
            link.click()
            wait_until(lambda: driver.current_url.endswith(page.name), 30, 0.2, what="the results page, from the index")
            _wait_for(driver, "tr.expectation.missed")
        finally:
            driver.quit()
