"""Headless Chromium with no network, for the pages a user opens from disk, and what a page asked the network for.

``offline_chromium(user_data)`` resolves no host name and sends everything else to a proxy that is not
there, so only ``file://`` and loopback answer; its performance log records every request.
``open_page(driver, url)`` loads a page and returns the requests it made (its own document's, not
Chromium's new-tab page's) with the error of each that failed. Needs Debian's ``chromium`` and
``chromium-driver``; ``CHROMIUM_MISSING`` is the skip reason when they are not installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
CHROMIUM_MISSING = "needs /usr/bin/chromium and /usr/bin/chromedriver: apt-get install -y chromium chromium-driver"
OFFLINE_FLAGS = (
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)


def chromium_installed() -> bool:
    return CHROMIUM.exists() and CHROMEDRIVER.exists()


def chromium(user_data: str, *flags: str, width: int, height: int, logs: bool = False) -> Any:
    """The machine's headless Chromium with ``flags`` besides the ones every test needs; ``logs``: its network
    and console are logged."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-dev-shm-usage",
        f"--user-data-dir={user_data}",
        f"--window-size={width},{height}",
        *flags,
    ):
        options.add_argument(argument)
    if logs:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def offline_chromium(user_data: str, *, width: int = 1400, height: int = 1000) -> Any:
    """A headless Chromium that reaches nothing but this machine, logging its network and console."""
    return chromium(user_data, *OFFLINE_FLAGS, width=width, height=height, logs=True)


@dataclass(frozen=True)
class Request:
    url: str
    failed: str | None  # Chromium's error text (net::ERR_...), None when it loaded

    @property
    def local(self) -> bool:
        return self.url.startswith(("file:", "data:"))


def _requests(driver: Any, document: str) -> list[Request]:
    sent: dict[str, str] = {}
    failed: dict[str, str] = {}
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message.get("params", {})
        if message["method"] == "Network.requestWillBeSent" and params.get("documentURL", "").startswith(document):
            sent[params["requestId"]] = params["request"]["url"]
        elif message["method"] == "Network.loadingFailed":
            failed[params["requestId"]] = params.get("errorText") or "failed"
    return [Request(url, failed.get(request_id)) for request_id, url in sent.items()]


def open_page(driver: Any, page: Path) -> list[Request]:
    """Load ``page`` from disk, wait for its fonts, and return every request it made, in order."""
    driver.get_log("performance")  # what came before (the new-tab page at start) is not this page's
    driver.get_log("browser")
    driver.get(page.as_uri())
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1]; document.fonts.ready.then(() => done());"
    )
    return _requests(driver, "file:")


def script_errors(driver: Any) -> list[str]:
    """The console's JavaScript errors since the page was opened (a missing local file is the network's)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry.get("source") == "javascript"]


def screenshot(driver: Any, path: Path, *, full_page: bool = True, width: int = 1400) -> Path:
    """Save a PNG at ``path``; ``full_page`` grows the window to the page's height (at most 8000 px) first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if full_page:
        height = min(int(driver.execute_script("return document.documentElement.scrollHeight")), 8000)
        driver.set_window_size(width, max(height, 800))
    driver.save_screenshot(str(path))
    driver.set_window_size(width, 1000)
    return path
