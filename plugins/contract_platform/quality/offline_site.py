"""Great Expectations' Data Docs site, made to open without a network.

GX's page templates load 16 scripts and stylesheets from CDNs (bootstrap, jQuery, popper.js,
bootstrap-table and its filter-control extension, bootstrap-datepicker, bootstrap-dark, Font
Awesome, vega, vega-lite, vega-embed) and its logo from S3: opened on a machine without internet, a
page shows unstyled text and none of its tables or charts work. The platform ships copies of
exactly those files (``quality/assets/``, the packages and versions GX's templates name, from the
npm registry, with their licences; ``assets/README.md`` lists them and says how to refresh them),
and after every build ``make_offline(site)`` copies them into ``<site>/static/vendor/`` and points
every page's references at them with relative links, so the folder can be moved, zipped or mailed.
GX's logo comes from the copy GX itself puts in ``<site>/static/images/``.

A reference a page loads from the network (a script, a stylesheet, an image, a CSS ``url()``) that
has no copy in ``CDN_FILES`` is left as it is and reported: a warning names it and says how to add
it, and ``OfflineSite.unknown`` lists it. Links a person follows (``<a href>``: GX's documentation,
its newsletter) are no loads and stay. ``tests/unit/quality/test_offline_site.py`` fails when a GX
upgrade references a file this table does not have.

Rewriting is idempotent: a page already rewritten has nothing left to replace, and files already in
``static/vendor/`` are not copied again. Nothing here imports Great Expectations, Airflow or PySpark.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "ASSETS",
    "CDN_FILES",
    "PACKAGES",
    "SITE_FILES",
    "VENDOR_FOLDER",
    "OfflineSite",
    "Package",
    "external_references",
    "loaded_references",
    "make_offline",
]

log = logging.getLogger(__name__)

ASSETS = Path(__file__).with_name("assets")  # the vendored copies, shipped as package data
VENDOR_FOLDER = PurePosixPath("static", "vendor")  # where a site gets them, relative to its root


@dataclass(frozen=True)
class Package:
    """One npm package version, vendored under ``assets/<folder>/`` with its own file layout."""

    name: str
    version: str
    license: str  # SPDX expression, as the package's package.json says
    license_file: str  # in the folder
    files: tuple[str, ...]  # paths inside the npm package: what the pages load, and what that loads (fonts)

    @property
    def folder(self) -> str:
        """``npm pack``'s name for it, without ``.tgz``: ``bootstrap-4.3.1``, ``fortawesome-fontawesome-free-6.6.0``."""
        return f"{self.name.lstrip('@').replace('/', '-')}-{self.version}"

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


_FA_FONTS = ("fa-brands-400", "fa-regular-400", "fa-solid-900", "fa-v4compatibility")

BOOTSTRAP = Package("bootstrap", "4.3.1", "MIT", "LICENSE", ("dist/css/bootstrap.min.css", "dist/js/bootstrap.min.js"))
BOOTSTRAP_TABLE = Package(
    "bootstrap-table",
    "1.19.1",
    "MIT",
    "LICENSE",
    (
        "dist/bootstrap-table.min.css",
        "dist/bootstrap-table.min.js",
        "dist/extensions/filter-control/bootstrap-table-filter-control.min.js",
    ),
)
BOOTSTRAP_TABLE_FILTER_CSS = Package(  # GX's templates take the filter-control stylesheets from 1.19.0
    "bootstrap-table",
    "1.19.0",
    "MIT",
    "LICENSE",
    (
        "dist/extensions/filter-control/bootstrap-table-filter-control.css",
        "dist/extensions/filter-control/bootstrap-table-filter-control.min.css",
    ),
)
DATEPICKER = Package(
    "bootstrap-datepicker",
    "1.9.0",
    "Apache-2.0",
    "LICENSE",
    ("dist/css/bootstrap-datepicker.min.css", "dist/js/bootstrap-datepicker.min.js"),
)
BOOTSTRAP_DARK = Package(
    "@forevolve/bootstrap-dark", "1.1.0", "MIT", "LICENSE", ("dist/css/bootstrap-prefers-dark.min.css",)
)
FONT_AWESOME = Package(  # all.min.css loads the woff2 fonts (its first choice; every current browser reads woff2)
    "@fortawesome/fontawesome-free",
    "6.6.0",
    "CC-BY-4.0 AND OFL-1.1 AND MIT",
    "LICENSE.txt",
    ("css/all.min.css", *(f"webfonts/{font}.woff2" for font in _FA_FONTS)),
)
JQUERY = Package("jquery", "3.7.1", "MIT", "LICENSE.txt", ("dist/jquery.min.js",))
POPPER = Package("popper.js", "1.12.9", "MIT", "LICENSE", ("dist/umd/popper.min.js",))
# GX loads vega@5, vega-lite@5 and vega-embed@6 without a minor version: the CDN serves the latest
# of each major, which these were when vendored (the package's "jsdelivr" file, what the CDN serves).
VEGA = Package("vega", "5.33.1", "BSD-3-Clause", "LICENSE", ("build/vega.min.js",))
VEGA_LITE = Package("vega-lite", "5.23.0", "BSD-3-Clause", "LICENSE", ("build/vega-lite.min.js",))
VEGA_EMBED = Package("vega-embed", "6.29.0", "BSD-3-Clause", "LICENSE", ("build/vega-embed.min.js",))

PACKAGES: tuple[Package, ...] = (
    BOOTSTRAP,
    BOOTSTRAP_TABLE,
    BOOTSTRAP_TABLE_FILTER_CSS,
    DATEPICKER,
    BOOTSTRAP_DARK,
    FONT_AWESOME,
    JQUERY,
    POPPER,
    VEGA,
    VEGA_LITE,
    VEGA_EMBED,
)

_UNPKG, _JSDELIVR, _CDNJS = (
    "https://unpkg.com",
    "https://cdn.jsdelivr.net/npm",
    "https://cdnjs.cloudflare.com/ajax/libs",
)

# Every URL GX's templates load (great_expectations/render/view/templates/), as they write it -> its copy.
CDN_FILES: Mapping[str, tuple[Package, str]] = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": (BOOTSTRAP, "dist/css/bootstrap.min.css"),
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": (BOOTSTRAP, "dist/js/bootstrap.min.js"),
    f"{_UNPKG}/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": (BOOTSTRAP_TABLE, "dist/bootstrap-table.min.css"),
    f"{_UNPKG}/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": (BOOTSTRAP_TABLE, "dist/bootstrap-table.min.js"),
    f"{_UNPKG}/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js": (
        BOOTSTRAP_TABLE,
        "dist/extensions/filter-control/bootstrap-table-filter-control.min.js",
    ),
    f"{_UNPKG}/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css": (
        BOOTSTRAP_TABLE_FILTER_CSS,
        "dist/extensions/filter-control/bootstrap-table-filter-control.css",
    ),
    f"{_UNPKG}/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css": (
        BOOTSTRAP_TABLE_FILTER_CSS,
        "dist/extensions/filter-control/bootstrap-table-filter-control.min.css",
    ),
    f"{_CDNJS}/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css": (
        DATEPICKER,
        "dist/css/bootstrap-datepicker.min.css",
    ),
    f"{_CDNJS}/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js": (
        DATEPICKER,
        "dist/js/bootstrap-datepicker.min.js",
    ),
    f"{_JSDELIVR}/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css": (  # its minified build
        BOOTSTRAP_DARK,
        "dist/css/bootstrap-prefers-dark.min.css",
    ),
    f"{_CDNJS}/font-awesome/6.6.0/css/all.min.css": (FONT_AWESOME, "css/all.min.css"),
    "https://code.jquery.com/jquery-3.7.1.min.js": (JQUERY, "dist/jquery.min.js"),
    f"{_CDNJS}/popper.js/1.12.9/umd/popper.min.js": (POPPER, "dist/umd/popper.min.js"),
    f"{_JSDELIVR}/vega@5": (VEGA, "build/vega.min.js"),
    f"{_JSDELIVR}/vega-lite@5": (VEGA_LITE, "build/vega-lite.min.js"),
    f"{_JSDELIVR}/vega-embed@6": (VEGA_EMBED, "build/vega-embed.min.js"),
}

_GX_IMAGES = "https://great-expectations-web-assets.s3.us-east-2.amazonaws.com"
# GX's logo, from S3 (with a time and the context's id in the query): the copy GX puts into every site.
# The dark colour scheme's logo (full_logo_dark.png) has no copy in GX's package: the light one stands in.
SITE_FILES: Mapping[str, PurePosixPath] = {
    f"{_GX_IMAGES}/logo-long.png": PurePosixPath("static", "images", "logo-long.png"),
    f"{_GX_IMAGES}/full_logo_dark.png": PurePosixPath("static", "images", "logo-long.png"),
}

HOW_TO_ADD = (
    "add its npm package to PACKAGES and the URL to CDN_FILES in contract_platform/quality/offline_site.py, "
    "then run scripts/refresh_data_docs_assets.py (plugins/contract_platform/quality/assets/README.md)"
)

# Tags whose attributes load something, and those attributes; <link> loads only for some rel values.
_TAG = re.compile(r"<(script|link|img|source|iframe|embed|audio|video|track|object|input)\b[^>]*>", re.I)
_ATTRIBUTE = re.compile(r"""(\s(?:src|href|data|poster)\s*=\s*)(["'])([^"']*)\2""", re.I)
_REL = re.compile(r"""\srel\s*=\s*["']([^"']*)["']""", re.I)
_LOADING_RELS = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest", "apple-touch-icon"}
_SRI = re.compile(r"""\s(?:integrity\s*=\s*(["'])[^"']*\1|crossorigin(?:\s*=\s*(["'])[^"']*\2)?)""", re.I)
_CSS_URL = re.compile(r"""(url\(\s*)(["']?)([^"')\s]+)\2(\s*\))""", re.I)
_CSS_IMPORT = re.compile(r"""(@import\s+)(["'])([^"']+)\2""", re.I)
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)  # http(s)://, any scheme://, or //host


@dataclass(frozen=True)
class OfflineSite:
    """What ``make_offline`` did to one site."""

    site: Path
    pages: int  # HTML pages read
    rewritten: int  # pages changed this time
    copied: int  # vendored files copied into <site>/static/vendor this time
    unknown: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # URL left as is -> pages (site-relative)

    @property
    def complete(self) -> bool:
        return not self.unknown


def _local_target(url: str) -> PurePosixPath | None:
    """Where ``url``'s copy is in a site (relative to its root), or None when the platform has none."""
    for candidate in (url, urlunsplit(urlsplit(url)._replace(query="", fragment=""))):
        if candidate in CDN_FILES:
            package, path = CDN_FILES[candidate]
            return VENDOR_FOLDER / package.folder / path
        if candidate in SITE_FILES:
            return SITE_FILES[candidate]
    return None


def _loads(tag: str) -> bool:
    if tag[1:5].lower() != "link":
        return True
    rel = _REL.search(tag)
    return rel is not None and bool(_LOADING_RELS & set(rel.group(1).lower().split()))


class _Page:
    """One page's text being rewritten; ``prefix`` leads from the page's folder to the site root."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.unknown: set[str] = set()

    def link(self, url: str) -> str | None:
        target = _local_target(url)
        if target is None:
            self.unknown.add(url)
            return None
        return f"{self.prefix}{target}"

    def tag(self, match: re.Match[str]) -> str:
        tag = match.group(0)
        if not _loads(tag):
            return tag
        changed = False

        def attribute(found: re.Match[str]) -> str:
            nonlocal changed
            url = found.group(3).strip()
            local = self.link(url) if _EXTERNAL.match(url) else None
            if local is None:
                return found.group(0)
            changed = True
            return f"{found.group(1)}{found.group(2)}{local}{found.group(2)}"

        tag = _ATTRIBUTE.sub(attribute, tag)
        # integrity/crossorigin pin the CDN's bytes (the copies are the same bytes: the unit test checks the
        # hashes), but a file:// page cannot make the CORS request they ask for, and the browser would refuse.
        return _SRI.sub("", tag) if changed else tag

    def css(self, match: re.Match[str]) -> str:
        """``url(...)`` or ``@import "..."``: the URL is group 3, between the quotes of group 2."""
        url = match.group(3)
        local = self.link(url) if _EXTERNAL.match(url) else None
        if local is None:
            return match.group(0)
        start, end = match.span(3)
        whole = match.group(0)
        return whole[: start - match.start()] + local + whole[end - match.start() :]

    def rewrite(self, text: str) -> str:
        text = _TAG.sub(self.tag, text)
        text = _CSS_URL.sub(self.css, text)
        return _CSS_IMPORT.sub(self.css, text)


def loaded_references(text: str) -> set[str]:
    """Every URL an HTML text loads (not the links a reader follows): resource tags, CSS ``url()``, ``@import``."""
    found: set[str] = set()
    for match in _TAG.finditer(text):
        if _loads(match.group(0)):
            found.update(a.group(3).strip() for a in _ATTRIBUTE.finditer(match.group(0)))
    found.update(m.group(3) for m in _CSS_URL.finditer(text))
    found.update(m.group(3) for m in _CSS_IMPORT.finditer(text))
    return found


def external_references(text: str) -> set[str]:
    """The URLs of ``loaded_references`` that come from the network (``scheme://`` or ``//host``)."""
    return {url for url in loaded_references(text) if _EXTERNAL.match(url)}


def _copy_vendored(site: Path) -> int:
    """The vendored files (and their licences, and the README saying where they come from) into the site."""
    copied = 0
    wanted = [(ASSETS / "README.md", site / VENDOR_FOLDER / "README.md")]
    for package in PACKAGES:
        for path in (*package.files, package.license_file):
            wanted.append((ASSETS / package.folder / path, site / VENDOR_FOLDER / package.folder / path))
    for source, target in wanted:
        if target.is_file() and target.stat().st_size == source.stat().st_size:
            continue  # the folder names the version: the same size is the same file
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied += 1
    return copied


def make_offline(site: Path) -> OfflineSite:
    """Point every page of the Data Docs site in ``site`` (the ``local_site`` folder) at local copies.

    Copies the vendored files into ``<site>/static/vendor/``, rewrites each HTML page's CDN references to
    relative links, and warns once per URL that has no copy (``OfflineSite.unknown``). Raises ``OSError``
    when the site cannot be read or written.
    """
    if not site.is_dir():  # nothing built (no type judged): nothing to point anywhere
        return OfflineSite(site=site, pages=0, rewritten=0, copied=0)
    copied = _copy_vendored(site)
    pages = rewritten = 0
    unknown: dict[str, list[str]] = {}
    vendor = site / VENDOR_FOLDER
    for path in sorted(site.rglob("*.html")):
        if path.is_relative_to(vendor):
            continue
        pages += 1
        depth = len(path.parent.relative_to(site).parts)
        page = _Page("../" * depth)
        text = path.read_text(encoding="utf-8")
        new = page.rewrite(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            rewritten += 1
        for url in page.unknown:
            unknown.setdefault(url, []).append(path.relative_to(site).as_posix())
    for url, where in sorted(unknown.items()):
        log.warning(
            "Data Docs %s: %s loads %s from the network and the platform has no offline copy of it, so it will "
            "not load without internet; to add one, %s",
            site,
            where[0] if len(where) == 1 else f"{where[0]} (and {len(where) - 1} more pages)",
            url,
            HOW_TO_ADD,
        )
    return OfflineSite(
        site=site,
        pages=pages,
        rewritten=rewritten,
        copied=copied,
        unknown={url: tuple(where) for url, where in unknown.items()},
    )
