"""The contract bundle: the versions one service publishes or consumes, in ONE file the service loads at start-up.

``contractctl export bundle --service NAME --out FILE`` writes it (``contract_platform.export.bundle``);
``load_bundle(FILE)`` reads it. Everything the guards need travels in the file, so loading reads nothing else
(no catalogue, no network; only the library's own installed code and data) and every schema is compiled here,
once, never at the first message::

    {"format": "contract-platform/bundle", "formatVersion": 1, "checksum": "sha256:<hex>",
     "contents": {
       "service": "accounting-service",             # or null for a bundle chosen by message types
       "selection": {"service": ..., "messageTypes": [...]},
       "defaultDialect": "2020-12",
       "envelope": {<the envelope standard's JSON Schema>},
       "contracts": {
         "billing.invoice-issued.v2": {
           "roles": ["consumes"],                   # publishes | consumes | migrated-on-read
           "contract": {<contract.yaml as data>},
           "payloadSchema": {<payload.schema.json>},
           "migration": {<migration.yaml as data>} | null,
           "fixtures": {"valid": {"<name>.json": {...}}, "invalid": {...}}}}}}

``checksum`` is the sha256 of ``contents`` in canonical JSON (``canonical_json``: keys sorted, no spaces,
UTF-8; the frame around it is not covered), so a file whose contents were edited after export is refused;
a file cut short is no longer JSON and is refused before the checksum is read. A bundle that is not JSON,
names another format version, fails its checksum or misses a part raises ``BundleError`` at load, naming the
JSON pointer in the file and how to export a good one. A version whose ``roles`` is ``migrated-on-read`` is one the
service does not read itself but may receive (an older or newer major of a type it consumes): the guard
reads it through the catalogue's ``migration.yaml`` into the version the service asked for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from contract_platform.catalog.loading import contract_from_documents
from contract_platform.catalog.model import Catalog, Contract, Fixture
from contract_platform.catalog.schemas import DEFAULT_DIALECT, DRAFTS, pin_dialect, schema_problems
from contract_platform.envelope.validation import EnvelopeValidator
from contract_platform.errors import BundleError, CatalogError, MigrationSpecError, Problem, printable
from contract_platform.migration import MigrationSpec, check_spec, compile_spec, parse_spec
from contract_platform.migration.inverse import read_backwards
from contract_platform.validation.schemas import FastValidator

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "ROLES",
    "Bundle",
    "MigrationStep",
    "canonical_json",
    "checksum_of",
    "load_bundle",
    "read_bundle_document",
]

FORMAT = "contract-platform/bundle"
FORMAT_VERSION = 1
PUBLISHES, CONSUMES, MIGRATED_ON_READ = "publishes", "consumes", "migrated-on-read"
ROLES = (PUBLISHES, CONSUMES, MIGRATED_ON_READ)
_HOW = "export it again with `contractctl export bundle --service NAME --out FILE` (docs/service-client.md)"


def canonical_json(value: Any) -> bytes:
    """``value`` as the checksum reads it: keys sorted, no insignificant space, UTF-8, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def checksum_of(contents: Any) -> str:
    return "sha256:" + hashlib.sha256(canonical_json(contents)).hexdigest()


@dataclass(frozen=True)
class MigrationStep:
    """One ``migration.yaml`` of the bundle, compiled: a ``source`` envelope in, a ``target`` envelope out."""

    source: Contract
    target: Contract
    spec: MigrationSpec
    file: str

    def migrate(self, envelope: Any) -> dict[str, Any]:
        """``migrate_envelope(spec, envelope, target)``; raises ``MessageNotMigratable``."""
        return compile_spec(self.spec).for_target(self.target)(envelope)


@dataclass(frozen=True)
class Bundle:
    """A loaded bundle: its contracts as a ``Catalog``, their roles, their compiled validators and migrations."""

    where: str  # the file (or a name given for a bundle built in memory)
    checksum: str
    service: str | None
    catalog: Catalog
    roles: Mapping[str, frozenset[str]]
    validator: FastValidator = field(repr=False)  # the platform's validator, jsonschema-rs fast path, compiled
    migrations: Mapping[tuple[str, str], MigrationStep] = field(repr=False)  # (source, target) -> the step
    # (newer, older) -> why the older major's migration.yaml cannot be read backwards (migration.inverse)
    not_backwards: Mapping[tuple[str, str], str] = field(default_factory=dict, repr=False)

    @property
    def message_types(self) -> list[str]:
        return sorted(self.catalog.contracts)

    @property
    def reference(self) -> EnvelopeValidator:
        """The jsonschema library's validator: it explains (pointers, keywords) what the fast path refuses."""
        return self.validator.reference

    def contract(self, message_type: str) -> Contract | None:
        return self.catalog.get(message_type)

    def publishes(self) -> list[str]:
        return [t for t in self.message_types if PUBLISHES in self.roles[t]]

    def consumes(self) -> list[str]:
        return [t for t in self.message_types if CONSUMES in self.roles[t]]

    def route(self, source: str, target: str) -> list[MigrationStep] | None:
        """The migrations that read a ``source`` message as ``target``, fewest steps first: forward through each
        ``migration.yaml``, or backwards through its inverse (``migration.inverse``); None when no chain of them
        goes that way ([] when ``source`` is ``target``)."""
        if source == target:
            return []
        first, last = self.catalog.get(source), self.catalog.get(target)
        if first is None or last is None or first.family != last.family:
            return None
        paths: dict[str, list[MigrationStep]] = {source: []}
        frontier = [source]
        while frontier:
            following: list[str] = []
            for current in frontier:
                for (src, dst), step in sorted(self.migrations.items()):
                    if src == current and dst not in paths:
                        paths[dst] = [*paths[current], step]
                        if dst == target:
                            return paths[dst]
                        following.append(dst)
            frontier = following
        return None

    def fixtures(self, message_type: str, *, valid: bool) -> Iterator[Fixture]:
        contract = self.catalog.get(message_type)
        for fixture in contract.fixtures if contract is not None else ():
            if fixture.valid is valid:
                yield fixture


def read_bundle_document(path: str | Path) -> tuple[str, Any]:
    """(where, the parsed JSON) of a bundle file; ``BundleError`` when it cannot be read or is not JSON."""
    where = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise BundleError(
            f"{printable(where)}: cannot read the contract bundle ({exc.strerror or exc}); {_HOW}"
        ) from exc
    try:
        return where, orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BundleError(
            f"{printable(where)}: not a contract bundle: it is not JSON ({exc}), as a file cut short is not; {_HOW}"
        ) from exc


def load_bundle(path: str | Path) -> Bundle:
    """The bundle in ``path``, checked and compiled; ``BundleError`` says what is wrong, where, and what to do."""
    where, document = read_bundle_document(path)
    return bundle_from_document(document, where)


def bundle_from_document(document: Any, where: str = "<bundle>") -> Bundle:
    """A bundle from its parsed JSON (``load_bundle`` reads the file first; the platform builds one in memory)."""
    contents = _checked_frame(document, where)
    dialect = contents.get("defaultDialect", DEFAULT_DIALECT)
    if dialect not in DRAFTS:
        raise _error(where, "/contents/defaultDialect", f"{dialect!r} is not a supported draft ({', '.join(DRAFTS)})")
    envelope = _required(contents, "envelope", dict, where, "/contents")
    problems = schema_problems(f"{where}#/contents/envelope", envelope, default=dialect)
    if problems:
        raise _problems(where, problems)
    entries = _required(contents, "contracts", dict, where, "/contents")
    if not entries:
        raise _error(where, "/contents/contracts", "holds no contract version: the selection matched nothing")
    contracts: dict[str, Contract] = {}
    roles: dict[str, frozenset[str]] = {}
    for message_type, entry in entries.items():
        at = f"/contents/contracts/{_token(message_type)}"
        contracts[message_type], roles[message_type] = _contract(where, at, message_type, entry, dialect)
    catalog = Catalog(
        root=Path(where), envelope_schema=pin_dialect(envelope, dialect), contracts=contracts, default_dialect=dialect
    )
    validator = FastValidator(catalog)
    migrations, not_backwards = _migrations(where, catalog, validator.reference)
    service = contents.get("service")
    return Bundle(
        where=where,
        checksum=str(document["checksum"]),
        service=service if isinstance(service, str) else None,
        catalog=catalog,
        roles=roles,
        validator=validator,
        migrations=migrations,
        not_backwards=not_backwards,
    )


# -- the checks -----------------------------------------------------------------------------------


def _checked_frame(document: Any, where: str) -> dict[str, Any]:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise _error(where, "/format", f"not a contract bundle ({FORMAT!r} expected, found {found!r}); {_HOW}")
    version = document.get("formatVersion")
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION
        how = (
            "upgrade contract-lifecycle-platform in the service to a release that reads it, or export with the "
            "contractctl of the service's release"
            if newer
            else "export it again with the contractctl of the service's release"
        )
        raise _error(
            where, "/formatVersion", f"format version {version!r}; this library reads version {FORMAT_VERSION}: {how}"
        )
    contents = _required(document, "contents", dict, where, "")
    checksum = document.get("checksum")
    if not isinstance(checksum, str):
        raise _error(where, "/checksum", f"missing: a bundle carries the sha256 of its contents; {_HOW}")
    try:
        actual = checksum_of(contents)
    except (TypeError, ValueError) as exc:
        raise _error(where, "/contents", f"cannot be read as canonical JSON ({exc}); {_HOW}") from exc
    if actual != checksum:
        raise _error(
            where,
            "/checksum",
            f"does not match the contents ({checksum[:19]}... recorded, {actual[:19]}... computed): the contents "
            f"were changed after export; {_HOW}",
        )
    checked: dict[str, Any] = contents
    return checked


def _contract(where: str, at: str, message_type: str, entry: Any, dialect: str) -> tuple[Contract, frozenset[str]]:
    if not isinstance(entry, dict):
        raise _error(where, at, "is not an object with contract, payloadSchema, migration, fixtures and roles")
    raw = _required(entry, "contract", dict, where, at)
    schema = entry.get("payloadSchema")
    if not isinstance(schema, dict | bool):
        raise _error(where, f"{at}/payloadSchema", f"missing or not a JSON Schema; {_HOW}")
    declared_roles = entry.get("roles")
    if not isinstance(declared_roles, list) or not declared_roles or not set(declared_roles) <= set(ROLES):
        raise _error(where, f"{at}/roles", f"must list one or more of {', '.join(ROLES)}")
    migration = entry.get("migration")
    if migration is not None and not isinstance(migration, dict):
        raise _error(where, f"{at}/migration", "is not a migration.yaml document (an object) or null")
    try:
        contract = contract_from_documents(
            f"{where}#{at}", raw, schema, fixtures=_fixtures(where, at, entry), migration=migration, dialect=dialect
        )
    except CatalogError as exc:
        raise _problems(where, exc.problems) from exc
    if contract.message_type != message_type:
        raise _error(where, f"{at}/contract/messageType", f"is {contract.message_type!r}, filed as {message_type!r}")
    return contract, frozenset(declared_roles)


def _fixtures(where: str, at: str, entry: Mapping[str, Any]) -> tuple[Fixture, ...]:
    fixtures = entry.get("fixtures", {})
    if not isinstance(fixtures, dict):
        raise _error(where, f"{at}/fixtures", "is not an object of valid and invalid fixtures")
    found: list[Fixture] = []
    for kind in ("valid", "invalid"):
        documents = fixtures.get(kind, {})
        if not isinstance(documents, dict):
            raise _error(where, f"{at}/fixtures/{kind}", "is not an object of fixture name -> envelope")
        found.extend(Fixture(Path(name), kind == "valid", document) for name, document in sorted(documents.items()))
    return tuple(found)


def _migrations(
    where: str, catalog: Catalog, reference: EnvelopeValidator
) -> tuple[dict[tuple[str, str], MigrationStep], dict[tuple[str, str], str]]:
    """Every migration.yaml whose two versions are both in the bundle, parsed and checked against the fixtures,
    each with its inverse where it reads backwards (``migration.inverse``, checked the same way); and for each
    inverse that does not, why."""
    steps: dict[tuple[str, str], MigrationStep] = {}
    not_backwards: dict[tuple[str, str], str] = {}
    for target in catalog:
        if target.migration is None:
            continue
        file = f"{where}#/contents/contracts/{_token(target.message_type)}/migration"
        try:
            spec = parse_spec(target.migration, file)
        except MigrationSpecError as exc:
            raise _problems(where, exc.problems) from exc
        source = catalog.get(spec.source)
        if source is None:
            continue  # the service never receives the older version: nothing to read through it
        problems = check_spec(spec, source, target, reference)
        if problems:
            raise _problems(where, problems)
        compile_spec(spec)
        steps[(source.message_type, target.message_type)] = MigrationStep(source, target, spec, file)
        backwards = (target.message_type, source.message_type)
        try:
            inverse = read_backwards(spec, target)
        except MigrationSpecError as exc:
            not_backwards[backwards] = _why(exc.problems)
            continue
        problems = check_spec(inverse, target, source, reference)
        if problems:
            not_backwards[backwards] = _why(problems)
            continue
        compile_spec(inverse)
        steps[backwards] = MigrationStep(target, source, inverse, inverse.file)
    return steps, not_backwards


def _why(problems: list[Problem]) -> str:
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{problems[0]}{more}"


def _required(document: Mapping[str, Any], key: str, kind: type, where: str, at: str) -> Any:
    value = document.get(key)
    if not isinstance(value, kind):
        shown = "missing" if value is None else f"a JSON {type(value).__name__}, not an {kind.__name__}"
        raise _error(where, f"{at}/{key}", f"{shown}: the bundle is incomplete; {_HOW}")
    return value


def _token(text: str) -> str:
    return text.replace("~", "~0").replace("/", "~1")


def _error(where: str, pointer: str, message: str) -> BundleError:
    return BundleError(f"{printable(where)}#{printable(pointer)}: {message}")


def _problems(where: str, problems: list[Problem]) -> BundleError:
    head = str(problems[0]) if problems else "the bundle does not load"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return BundleError(f"{head}{more}: the bundle's contracts do not load; {_HOW}")
