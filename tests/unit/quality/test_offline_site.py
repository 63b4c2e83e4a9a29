"""The Data Docs site opens offline: every CDN file GX's templates load has a vendored copy, and the rewritten
pages load nothing from the network.

The pages here are made from GX's installed templates themselves (their ``<link>`` and ``<script>`` lines,
its default stylesheet with the logo's ``url()``, the logo as GX renders it), at the depths GX writes them,
without importing GX; ``tests/spark/test_envelope_quality.py`` checks a site GX really built, in a browser.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import logging
import re
import tomllib
from pathlib import Path, PurePosixPath

import pytest

from contract_platform.quality import offline_site
from contract_platform.quality.offline_site import (
    ASSETS,
    CDN_FILES,
    PACKAGES,
    SITE_FILES,
    VENDOR_FOLDER,
    external_references,
    loaded_references,
    make_offline,
)

REPO = Path(__file__).resolve().parents[3]
_GX_SPEC = importlib.util.find_spec("great_expectations")  # finds the package without importing it
assert _GX_SPEC is not None and _GX_SPEC.origin is not None
GX_VIEW = Path(_GX_SPEC.origin).parent / "render" / "view"
TEMPLATES = GX_VIEW / "templates"
STYLES = GX_VIEW / "static" / "styles"
URL = re.compile(r"""https?://[^\s"'<>(){}]+""")
S3_LOGO = (
    "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/logo-long.png"
    "?d=20260101T000000.000000Z&dataContextId=5a1b2c3d-0000-4000-8000-000000000000"
)
UNKNOWN = "https://cdn.example.org/chart-helpers@2/dist/helpers.min.js"


def _sources() -> dict[str, str]:
    """GX's page templates and stylesheets, by name."""
    files = [*sorted(TEMPLATES.glob("*.j2")), *sorted(STYLES.glob("*.css"))]
    assert files, f"no templates under {TEMPLATES}"
    return {path.name: path.read_text(encoding="utf-8") for path in files}


def _is_followed_link(url: str, text: str) -> bool:
    """An ``<a href>`` (HTML) or ``[text](url)`` (Markdown): a link a reader follows, nothing a page loads."""
    quoted = re.escape(url)
    return bool(
        re.search(rf"""<a\b[^>]*\shref=["']{quoted}["']""", text) or re.search(rf"(?<!!)\[[^\]]*\]\({quoted}\)", text)
    )


def _loaded_through_a_variable(url: str, text: str) -> list[str]:
    """``{% set images = "https://host/" %}`` then ``images + "logo.png"``: the URLs loaded, ``https://host/logo.png``."""
    names = re.findall(rf"""{{%-?\s*set\s+(\w+)\s*=\s*["']{re.escape(url)}["']""", text)
    return [url + file for name in names for file in re.findall(rf"""\b{name}\s*\+\s*["']([^"']+)["']""", text)]


def test_every_url_gx_templates_load_has_a_vendored_copy() -> None:
    """When a Great Expectations upgrade loads a new or another version of a file, this fails, naming it."""
    missing: list[str] = []
    loaded: set[str] = set()
    for name, text in _sources().items():
        for url in sorted(set(URL.findall(text))):
            if _is_followed_link(url, text):
                continue
            through = _loaded_through_a_variable(url, text)
            for full in through or [url]:
                loaded.add(full)
                if full not in CDN_FILES and full not in SITE_FILES:
                    missing.append(f"{name}: {full}")
    assert not missing, (
        "Great Expectations' templates load files the platform has no offline copy of; "
        f"{offline_site.HOW_TO_ADD}:\n  " + "\n  ".join(missing)
    )
    assert set(CDN_FILES) <= loaded, f"no template loads these any more: {sorted(set(CDN_FILES) - loaded)}"


def test_the_vendored_files_are_byte_for_byte_what_gx_pins_with_integrity_hashes() -> None:
    pinned = re.findall(
        r"""<script\s+src="([^"]+)"\s+integrity="(sha\d+)-([^"]+)\"""", (TEMPLATES / "js_script_imports.j2").read_text()
    )
    assert len(pinned) == 2  # popper.js and bootstrap.min.js
    for url, algorithm, digest in pinned:
        package, path = CDN_FILES[url]
        data = (ASSETS / package.folder / path).read_bytes()
        assert base64.b64encode(hashlib.new(algorithm, data).digest()).decode() == digest, url


def test_the_assets_folder_holds_the_table_its_licences_and_readme_and_nothing_else() -> None:
    expected = {PurePosixPath("README.md")} | {
        PurePosixPath(package.folder, path) for package in PACKAGES for path in (*package.files, package.license_file)
    }
    found = {PurePosixPath(path.relative_to(ASSETS).as_posix()) for path in ASSETS.rglob("*") if path.is_file()}
    assert found == expected
    assert {(package, path) for package, path in CDN_FILES.values()} <= {
        (package, path) for package in PACKAGES for path in package.files
    }
    readme = (ASSETS / "README.md").read_text(encoding="utf-8")
    for package in PACKAGES:
        assert f"`{package.spec}`" in readme, package.spec
        assert all(part.split(" ")[0] in readme for part in package.license.split(" AND ")), package.license
    total = sum((ASSETS / str(path)).stat().st_size for path in expected)
    assert total < 2_500_000, f"the vendored files grew to {total:,} bytes"


def test_what_the_vendored_stylesheets_load_is_vendored_too() -> None:
    """Font Awesome's ``@font-face`` rules name a woff2 first (what browsers take) and a ttf: the woff2s are here."""
    for package in PACKAGES:
        for path in package.files:
            if not path.endswith(".css"):
                continue
            css = ASSETS / package.folder / path
            text = css.read_text(encoding="utf-8")
            for declaration in re.findall(r"src:([^;}]+)", text):
                first = re.search(r"url\(([^)]+)\)", declaration)
                assert first is not None and (css.parent / first.group(1).strip("'\"")).is_file(), (css, declaration)
            others = {
                url
                for url in re.findall(r"url\(['\"]?([^'\")]+)", text)
                if not url.startswith("data:") and not url.endswith(".ttf")
            }
            assert all((css.parent / url).is_file() for url in others), (css, others)


def test_the_wheel_ships_every_asset() -> None:
    """``pyproject.toml``'s package data covers the folder, so an installed platform has the files too."""
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    root = REPO / "plugins" / "contract_platform"
    shipped = {path for pattern in package_data["package-data"]["contract_platform"] for path in root.glob(pattern)}
    assert {path for path in ASSETS.rglob("*") if path.is_file()} <= shipped


def _head(*templates: str) -> str:
    """The ``<link>`` and ``<script src>`` lines of GX's templates, as they render (they hold no Jinja)."""
    lines = []
    for name in templates:
        for line in (TEMPLATES / name).read_text(encoding="utf-8").splitlines():
            if re.search(r"<link\b|<script\b[^>]*\ssrc=", line):
                lines.append(line.strip())
    return "\n".join(lines)


def _gx_styles() -> str:
    css = (STYLES / "data_docs_default_styles.css").read_text(encoding="utf-8")
    return "\n".join(line for line in css.splitlines() if not line.lstrip().startswith("{%"))


def _page(head: str, body: str = "") -> str:
    return (
        f"<!DOCTYPE html><html><head>\n{head}\n<style>{_gx_styles()}</style></head><body>"
        f'<nav><a href="#"><img class="NO-CACHE" src="{S3_LOGO}" alt="Great Expectations"/></a></nav>'
        f"{body}"
        '<footer><a href="https://greatexpectations.io/newsletter?utm_source=datadocs">Subscribe</a></footer>'
        "</body></html>"
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A Data Docs site as GX lays it out: the index, a suite's page and a validation page, and GX's images."""
    site = tmp_path / "local_site"
    images = site / "static" / "images"
    images.mkdir(parents=True)
    (images / "logo-long.png").write_bytes(b"\x89PNG GX's own logo")
    (images / "favicon.ico").write_bytes(b"ico")
    pages = _head("page.j2", "js_script_imports.j2")
    (site / "index.html").write_text(
        _page(_head("index_page.j2", "js_script_imports.j2"), '<a href="expectations/e/q/v1.html">suite</a>'),
        encoding="utf-8",
    )
    suite = site / "expectations" / "envelope_quality" / "order" / "order-created" / "v1.html"
    suite.parent.mkdir(parents=True)
    suite.write_text(_page(pages), encoding="utf-8")
    validation = site / "validations" / "envelope_quality" / "order" / "order-created" / "v1" / "__none__"
    validation = validation / "20260101T000000.000000Z" / "envelopes-whole.html"
    validation.parent.mkdir(parents=True)
    validation.write_text(_page(pages, '<table data-toggle="table"></table>'), encoding="utf-8")
    return site


def _pages(site: Path) -> list[Path]:
    return [path for path in site.rglob("*.html") if not path.is_relative_to(site / VENDOR_FOLDER)]


def test_the_rewritten_pages_load_nothing_from_the_network_and_every_file_they_load_is_there(site: Path) -> None:
    before = {path: external_references(path.read_text(encoding="utf-8")) for path in _pages(site)}
    assert all(len(urls) >= 16 for urls in before.values())  # 15 CDN files and the logo (twice with its url())

    done = make_offline(site)

    assert (done.pages, done.rewritten, dict(done.unknown)) == (3, 3, {})
    for path in _pages(site):
        text = path.read_text(encoding="utf-8")
        assert external_references(text) == set(), path
        for url in loaded_references(text):
            assert (path.parent / url).resolve().is_file(), f"{path.relative_to(site)} loads {url}: not there"
            assert (path.parent / url).resolve().is_relative_to(site.resolve())  # the folder moves as one
        assert "integrity=" not in text and "crossorigin" not in text  # file:// cannot make a CORS request
        assert 'href="https://greatexpectations.io/newsletter?utm_source=datadocs"' in text  # a link, not a load
    validation = next(site.glob("validations/**/*.html")).read_text(encoding="utf-8")
    assert 'src="../../../../../../../static/vendor/jquery-3.7.1/dist/jquery.min.js"' in validation
    assert 'src="../../../../../../../static/images/logo-long.png"' in validation  # no time, no context id
    assert (site / VENDOR_FOLDER / "README.md").is_file()
    assert all((site / VENDOR_FOLDER / p.folder / p.license_file).is_file() for p in PACKAGES)


def test_rewriting_again_changes_and_copies_nothing(site: Path) -> None:
    make_offline(site)
    texts = {path: path.read_text(encoding="utf-8") for path in _pages(site)}
    again = make_offline(site)
    assert (again.pages, again.rewritten, again.copied, again.complete) == (3, 0, 0, True)
    assert {path: path.read_text(encoding="utf-8") for path in _pages(site)} == texts


def test_a_page_gx_rebuilt_after_the_first_rewrite_is_rewritten_and_the_others_are_left(site: Path) -> None:
    make_offline(site)
    (site / "index.html").write_text(_page(_head("index_page.j2", "js_script_imports.j2")), encoding="utf-8")
    again = make_offline(site)
    assert (again.rewritten, again.copied) == (1, 0)
    assert external_references((site / "index.html").read_text(encoding="utf-8")) == set()


def test_a_cdn_url_without_a_vendored_copy_is_left_and_reported_with_how_to_add_it(
    site: Path, caplog: pytest.LogCaptureFixture
) -> None:
    index = site / "index.html"
    index.write_text(
        index.read_text(encoding="utf-8").replace("</head>", f'<script src="{UNKNOWN}"></script></head>'),
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger=offline_site.__name__):
        done = make_offline(site)
    assert dict(done.unknown) == {UNKNOWN: ("index.html",)} and not done.complete
    assert external_references(index.read_text(encoding="utf-8")) == {UNKNOWN}  # the rest is local
    [warning] = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert UNKNOWN in warning and "index.html" in warning and "no offline copy" in warning
    assert "CDN_FILES" in warning and "scripts/refresh_data_docs_assets.py" in warning


def test_a_site_not_built_is_left_alone(tmp_path: Path) -> None:
    done = make_offline(tmp_path / "local_site")
    assert (done.pages, done.copied, done.complete) == (0, 0, True) and not (tmp_path / "local_site").exists()


def test_a_link_that_is_not_a_load_and_a_local_reference_stay_as_they_are(tmp_path: Path) -> None:
    page = (
        '<link rel="canonical" href="https://example.org/docs/"><link rel="stylesheet" href="static/own.css">'
        '<a href="https://cdn.jsdelivr.net/npm/vega@5">vega</a><img src="data:image/png;base64,AAAA">'
    )
    (tmp_path / "index.html").write_text(page, encoding="utf-8")
    done = make_offline(tmp_path)
    assert done.complete and (tmp_path / "index.html").read_text(encoding="utf-8") == page
    assert external_references(page) == set() and loaded_references(page) == {
        "static/own.css",
        "data:image/png;base64,AAAA",
    }
