"""Files -> ``Catalog``: the only reader of ``contracts/``.

``load_catalog`` collects every problem it can find (unknown keys, wrong types, missing files,
invalid schemas, unresolvable ``$ref``, folder and messageType that disagree, duplicate
messageTypes) and raises one ``CatalogError`` that lists them all, each with file and pointer.
Rules about *good* contracts (naming, tense, money fields...) are the linter's, not the loader's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from contract_platform import settings
from contract_platform.catalog.documents import DocumentProblem, pointer_from_path, read_json, read_yaml
from contract_platform.catalog.model import (
    MAX_DEDUP_WINDOW,
    Catalog,
    Consumer,
    Contract,
    Fixture,
    Hold,
    Kind,
    Ordering,
    Owner,
    Pii,
    QualitySettings,
    ReplaySettings,
    Retention,
    RetirementSettings,
    Status,
    TopologySettings,
    Transport,
    ValidationSettings,
)
from contract_platform.catalog.schemas import (
    DEFAULT_DIALECT,
    DRAFTS,
    catalogue_registry,
    pin_dialect,
    read_dialect,
    schema_problems,
)
from contract_platform.durations import parse_duration
from contract_platform.errors import CatalogError, Problem

__all__ = [
    "CATALOG_SETTINGS_PATH",
    "ENVELOPE_SCHEMA_PATH",
    "catalog_default_dialect",
    "contract_from_documents",
    "load_catalog",
    "load_contract_schema",
]

ENVELOPE_SCHEMA_PATH = Path("envelope") / "envelope.v1.schema.json"
CATALOG_SETTINGS_PATH = Path("catalog.yaml")  # optional catalogue-wide settings (contracts/README.md)
_CATALOG_SETTINGS = ("defaultDialect",)
_MESSAGE_TYPE = re.compile(r"^([a-z][a-z0-9-]*)\.([a-z][a-z0-9-]*)\.v([1-9][0-9]*)$")
_SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


@cache
def load_contract_schema() -> dict[str, Any]:
    """The JSON Schema of contract.yaml, shipped with the package (the format's one definition)."""
    text = resources.files("contract_platform.catalog").joinpath("contract.schema.json").read_text("utf-8")
    return dict(json.loads(text))


@cache
def _contract_validator() -> Any:
    """contract.yaml's validator, built once: it is asked about every contract of the catalogue."""
    return Draft202012Validator(load_contract_schema(), registry=catalogue_registry())  # retrieves nothing


def catalog_default_dialect(root: str | Path, problems: list[Problem] | None = None) -> str:
    """``defaultDialect`` of ``<root>/catalog.yaml`` (2020-12 without the file or the key): the draft a
    schema is read in when neither ``$schema`` nor its keywords say (catalog.schemas.read_dialect).
    A bad file is a ``CatalogError``, or joins ``problems`` when given."""
    path = Path(root) / CATALOG_SETTINGS_PATH
    found: list[Problem] = []
    dialect = DEFAULT_DIALECT
    try:
        present = path.is_file()
    except OSError:
        present = False
    if present:
        try:
            raw = read_yaml(path)
        except DocumentProblem as exc:
            raw, found = None, [exc.problem]
        if raw is not None and not isinstance(raw, dict):
            found.append(
                Problem(str(path), "", "catalog.yaml must be a mapping of settings, e.g. defaultDialect: draft-07")
            )
        elif isinstance(raw, dict):
            for key in sorted(set(raw) - set(_CATALOG_SETTINGS)):
                found.append(
                    Problem(str(path), f"/{key}", f"unknown key {key!r}; allowed: {', '.join(_CATALOG_SETTINGS)}")
                )
            value = raw.get("defaultDialect", DEFAULT_DIALECT)
            if value in DRAFTS:
                dialect = value
            else:
                found.append(
                    Problem(
                        str(path),
                        "/defaultDialect",
                        f"{value!r} is not a supported draft; use one of {', '.join(DRAFTS)}",
                    )
                )
    if found and problems is None:
        raise CatalogError(found)
    if problems is not None:
        problems.extend(found)
    return dialect


def load_catalog(
    root: str | Path | None = None,
    *,
    default_dialect: str | None = None,
    verify: Callable[[str], bool] | None = None,
) -> Catalog:
    """Load and shape-check every contract under ``root``; raise ``CatalogError`` listing every problem.

    The one way the CLI, the DAGs, the Spark jobs and the UI load a catalogue. ``root``: the folder that
    holds ``envelope/``; without one, ``$CONTRACT_CATALOG`` or ``./contracts`` (``settings.catalog_dir``).
    ``default_dialect`` (a draft name) overrides the catalogue's ``defaultDialect`` (``catalog.yaml``).
    ``verify`` (the messageType its folder names -> bool): whose payload schema is checked against its
    draft's metaschema and contract.yaml against its format, the costly part of loading; by default every
    one. A pull-request check (``catalog.selection``) verifies the versions it re-checks and takes the
    others as they were at the base (a contract that does not build is still reported)."""
    given = root is not None
    root = Path(root) if root is not None else settings.catalog_dir()
    try:
        is_folder = root.is_dir()
    except OSError as exc:  # a name too long for the file system, a loop of links...
        raise CatalogError(Problem(str(root), "", f"cannot be read as a catalogue folder: {exc.strerror}")) from exc
    if not is_folder:
        how = "" if given else " (none was given: $CONTRACT_CATALOG, else ./contracts)"
        raise CatalogError(
            Problem(
                str(root),
                "",
                f"catalogue folder does not exist{how}; pass the folder that holds envelope/ or set CONTRACT_CATALOG",
            )
        )
    problems: list[Problem] = []
    dialect = catalog_default_dialect(root, problems)
    if default_dialect is not None:
        dialect = default_dialect
    envelope = _load_envelope(root, problems, dialect)
    contracts: dict[str, Contract] = {}
    first_seen: dict[str, Path] = {}
    for contract_file in _listed(root, "*/*/v*/contract.yaml"):
        folder = contract_file.parent
        checked = verify is None or verify(".".join(folder.relative_to(root).parts))
        declared, contract = _load_contract(root, folder, problems, dialect, verify_schema=checked)
        if declared is None:
            continue
        if declared in first_seen:
            problems.append(
                Problem(
                    str(contract_file),
                    "/messageType",
                    f"duplicate messageType {declared!r}: also declared in {first_seen[declared] / 'contract.yaml'}",
                )
            )
            continue
        first_seen[declared] = contract_file.parent
        if contract is not None:
            contracts[declared] = contract
    _find_strays(root, problems)
    if problems:
        raise CatalogError(problems)
    return Catalog(root=root, envelope_schema=envelope, contracts=contracts, default_dialect=dialect)


LISTING_ATTEMPTS = 3


def _listed(root: Path, pattern: str) -> list[Path]:
    """``root.glob(pattern)``, sorted. A folder that vanishes while it is listed (``--catalog /`` meets processes
    leaving ``/proc``: gone, or ``EINVAL`` from a dying process's folders) makes the listing start again; a folder
    that keeps failing or changing under it is bad input, named with what the system said."""
    reason = ""
    for _ in range(LISTING_ATTEMPTS):
        try:
            return sorted(root.glob(pattern))
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    raise CatalogError(
        [
            Problem(
                str(root),
                "",
                f"could not be listed ({reason}, {LISTING_ATTEMPTS} times): pass a catalogue folder",
            )
        ]
    )


def _load_envelope(root: Path, problems: list[Problem], dialect: str) -> dict[str, Any]:
    path = root / ENVELOPE_SCHEMA_PATH
    try:
        schema = read_json(path)
    except DocumentProblem as exc:
        problems.append(exc.problem)
        return {}
    found = schema_problems(str(path), schema, default=dialect)
    problems.extend(found)
    return pin_dialect(schema, dialect) if isinstance(schema, dict) and not found else {}


def _find_strays(root: Path, problems: list[Problem]) -> None:
    """Version folders without a contract.yaml would otherwise be ignored in silence."""
    for folder in _listed(root, "*/*/v*"):
        if folder.is_dir() and not (folder / "contract.yaml").exists():
            problems.append(
                Problem(str(folder / "contract.yaml"), "", "file is missing: every version folder needs one")
            )


def _load_contract(
    root: Path, folder: Path, problems: list[Problem], dialect: str = DEFAULT_DIALECT, *, verify_schema: bool = True
) -> tuple[str | None, Contract | None]:
    """(the messageType it declares, the contract if it loaded without problems).

    Without ``verify_schema`` (a version a pull-request check takes as it was: ``load_catalog(verify=...)``)
    neither the payload schema's metaschema nor contract.yaml's shape is checked; a contract whose shape
    does not build is loaded again the whole way, which says what is wrong and where."""
    if not verify_schema:
        found: list[Problem] = []
        try:
            declared, contract = _load_contract_as(root, folder, found, dialect, trusted=True)
        except (KeyError, TypeError, ValueError, AttributeError):
            pass
        else:
            problems.extend(found)
            return declared, contract
    return _load_contract_as(root, folder, problems, dialect, trusted=False)


def _load_contract_as(
    root: Path, folder: Path, problems: list[Problem], dialect: str, *, trusted: bool
) -> tuple[str | None, Contract | None]:
    contract_file = folder / "contract.yaml"
    try:
        raw = read_yaml(contract_file)
    except DocumentProblem as exc:
        problems.append(exc.problem)
        return None, None
    shape = [] if trusted and isinstance(raw, dict) else _shape_problems(str(contract_file), raw)
    if shape:
        problems.extend(shape)
        declared = raw.get("messageType") if isinstance(raw, dict) else None
        return (declared if isinstance(declared, str) else None), None
    before = len(problems)
    _check_identity(root, folder, raw, problems)
    _check_callers(str(contract_file), raw, problems)
    payload_schema, reading = _load_payload_schema(folder, problems, dialect, verify=not trusted)
    fixtures = _load_fixtures(folder, problems)
    migration = _load_migration(folder, problems)
    contract = _build(str(contract_file), folder, raw, payload_schema, fixtures, migration, problems)
    contract = replace(contract, dialect=reading)
    return raw["messageType"], (contract if len(problems) == before else None)


def contract_from_documents(
    origin: str,
    raw: Any,
    payload_schema: Any,
    *,
    fixtures: tuple[Fixture, ...] = (),
    migration: dict[str, Any] | None = None,
    dialect: str = DEFAULT_DIALECT,
) -> Contract:
    """One contract version from documents already in memory (a contract bundle's), checked as ``load_catalog``
    checks the files: contract.yaml's format, messageType and version, callers, and the payload schema against
    its draft's metaschema, with its ``$ref`` s local. Nothing is read from disk or network: a consumer's
    ``readerSchema`` (a file beside contract.yaml, for consumer-impact analysis) is not carried over.

    ``origin`` names where the documents come from in problems (``bundle.json#/contracts/<type>``); every
    problem found is raised at once as a ``CatalogError``."""
    problems: list[Problem] = []
    file = f"{origin}/contract"
    shape = _shape_problems(file, raw)
    if shape:
        raise CatalogError(shape)
    message_type = raw["messageType"]
    if not _MESSAGE_TYPE.match(message_type):
        problems.append(Problem(file, "/messageType", f"{message_type!r} is not <domain>.<name>.v<MAJOR>"))
    if not _SEMVER.match(raw["version"]):
        problems.append(Problem(file, "/version", f"{raw['version']!r} is not MAJOR.MINOR.PATCH (e.g. 1.0.0)"))
    _check_callers(file, raw, problems)
    schema_file = f"{origin}/payloadSchema"
    found = schema_problems(schema_file, payload_schema, default=dialect)
    problems.extend(found)
    if problems:
        raise CatalogError(problems)
    reading = read_dialect(payload_schema, dialect)
    consumers = [
        {key: value for key, value in consumer.items() if key != "readerSchema"}
        for consumer in raw.get("consumers", [])
    ]
    plain = {**raw, "consumers": consumers} if "consumers" in raw else raw
    pinned = {"not": {}} if payload_schema is False else pin_dialect(payload_schema, dialect)
    contract = _build(
        file, Path(origin), plain, pinned if isinstance(pinned, dict) else {}, fixtures, migration, problems
    )
    if problems:
        raise CatalogError(problems)
    return replace(contract, dialect=reading.describe() if reading is not None else "")


def _shape_problems(file: str, raw: Any) -> list[Problem]:
    if not isinstance(raw, dict):
        return [Problem(file, "", "contract.yaml must be a mapping of keys (see contracts/README.md)")]
    found = []
    for error in _contract_validator().iter_errors(raw):
        pointer = pointer_from_path(error.absolute_path)
        if error.validator == "additionalProperties":
            allowed = sorted(error.schema.get("properties", {}))
            unknown = sorted(set(error.instance) - set(allowed))
            message = f"unknown key(s) {', '.join(unknown)}; allowed here: {', '.join(allowed)}"
        elif error.validator == "required":
            message = error.message.replace("is a required property", "is required")
        else:
            message = error.message
        found.append(Problem(file, pointer, message))
    return found


def _check_identity(root: Path, folder: Path, raw: dict[str, Any], problems: list[Problem]) -> None:
    file = str(folder / "contract.yaml")
    message_type = raw["messageType"]
    match = _MESSAGE_TYPE.match(message_type)
    expected = ".".join(folder.relative_to(root).parts)
    if match is None:
        problems.append(
            Problem(
                file, "/messageType", f"{message_type!r} is not <domain>.<name>.v<MAJOR> (lower case, e.g. {expected})"
            )
        )
    elif message_type != expected:
        problems.append(
            Problem(file, "/messageType", f"{message_type!r} disagrees with its folder, which says {expected!r}")
        )
    if not _SEMVER.match(raw["version"]):
        problems.append(Problem(file, "/version", f"{raw['version']!r} is not MAJOR.MINOR.PATCH (e.g. 1.0.0)"))


def _check_callers(file: str, raw: dict[str, Any], problems: list[Problem]) -> None:
    """``callers`` name who may send a command; an event's only producer is its owner service."""
    if "callers" in raw and raw["kind"] == Kind.EVENT:
        problems.append(
            Problem(
                file,
                "/callers",
                f"an event is sent by its owner service {raw['owner']['service']!r}, not by callers; "
                "remove callers (they name who may send a command)",
            )
        )


def _load_payload_schema(
    folder: Path, problems: list[Problem], dialect: str, *, verify: bool = True
) -> tuple[dict[str, Any], str]:
    """(the schema, with the ``$schema`` of the draft it is read in; that reading described for people).
    Without ``verify`` a JSON object is taken as the schema it was when last checked (no metaschema check)."""
    path = folder / "payload.schema.json"
    try:
        schema = read_json(path)
    except DocumentProblem as exc:
        problems.append(exc.problem)
        return {}, ""
    found = schema_problems(str(path), schema, default=dialect) if verify or not isinstance(schema, dict) else []
    problems.extend(found)
    reading = read_dialect(schema, dialect)
    described = reading.describe() if reading is not None else ""
    if schema is False and not found:
        return {"not": {}}, described  # the boolean schema false, as an object schema that also accepts nothing
    # true accepts everything, as {} does
    return (pin_dialect(schema, dialect) if isinstance(schema, dict) and not found else {}), described


def _load_fixtures(folder: Path, problems: list[Problem]) -> tuple[Fixture, ...]:
    fixtures = []
    for valid in (True, False):
        for path in sorted((folder / "fixtures" / ("valid" if valid else "invalid")).glob("*.json")):
            try:
                fixtures.append(Fixture(path=path, valid=valid, document=read_json(path)))
            except DocumentProblem as exc:
                problems.append(exc.problem)
    return tuple(fixtures)


def _load_migration(folder: Path, problems: list[Problem]) -> dict[str, Any] | None:
    path = folder / "migration.yaml"
    if not path.exists():
        return None
    try:
        spec = read_yaml(path)
    except DocumentProblem as exc:
        problems.append(exc.problem)
        return None
    if not isinstance(spec, dict):
        problems.append(Problem(str(path), "", "migration.yaml must be a mapping with from, to and payload"))
        return None
    return spec


def _dedup_window(file: str, validation: dict[str, Any], problems: list[Problem]) -> Any:
    """``validation.dedupWindow``: a duration up to ``MAX_DEDUP_WINDOW`` (default 24h)."""
    if "dedupWindow" not in validation:
        return ValidationSettings().dedup_window
    window = _duration(file, "/validation/dedupWindow", validation["dedupWindow"], problems)
    if window is not None and not timedelta(0) < window <= MAX_DEDUP_WINDOW:
        problems.append(
            Problem(
                file,
                "/validation/dedupWindow",
                f"{validation['dedupWindow']!r} is outside 1s to {MAX_DEDUP_WINDOW.days}d: incremental archive"
                " validation reads that many days of earlier copies; write a shorter window",
            )
        )
        return None
    return window


def _duration(file: str, pointer: str, text: str, problems: list[Problem]) -> Any:
    try:
        return parse_duration(text)
    except ValueError as exc:
        problems.append(Problem(file, pointer, str(exc)))
        return None


def _compatibility_mode(value: Any) -> str:
    """The mode of ``compatibility:``, written as a mode or as an object (``mode`` defaults to BACKWARD)."""
    return str(value.get("mode", "BACKWARD")) if isinstance(value, dict) else str(value)


def _replay_settings(file: str, value: Any, problems: list[Problem]) -> ReplaySettings:
    """The replay settings of ``compatibility:`` as an object (docs/replay.md); a mode alone keeps the defaults."""
    defaults = ReplaySettings()
    if not isinstance(value, dict):
        return defaults
    window = _duration(file, "/compatibility/window", value["window"], problems) if "window" in value else None
    return ReplaySettings(
        tightening=str(value.get("tightening", defaults.tightening)),
        window=window or defaults.window,
        min_messages=int(value.get("minMessages", defaults.min_messages)),
        threshold=float(value.get("threshold", defaults.threshold)),
    )


def _date(file: str, pointer: str, text: str, problems: list[Problem]) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        problems.append(Problem(file, pointer, f"{text!r} is not a date; write YYYY-MM-DD"))
        return None


def _build(
    file: str,
    folder: Path,
    raw: dict[str, Any],
    payload_schema: dict[str, Any],
    fixtures: tuple[Fixture, ...],
    migration: dict[str, Any] | None,
    problems: list[Problem],
) -> Contract:
    retention = {
        k: _duration(file, f"/retention/{k}", raw["retention"][k], problems) for k in ("queue", "dlq", "archive")
    }
    holds = tuple(
        Hold(
            kind=h["kind"], until=_date(file, f"/holds/{i}/until", h["until"], problems) or date.min, reason=h["reason"]
        )
        for i, h in enumerate(raw.get("holds", []))
    )
    quality_raw = raw.get("quality", {})
    topology_raw = raw.get("topology", {})
    retirement_raw = raw.get("retirement", {})
    validation_raw = raw.get("validation", {})
    defaults_r = RetirementSettings()
    defaults_q = QualitySettings()
    defaults_t = TopologySettings()
    defaults_v = ValidationSettings()
    return Contract(
        message_type=raw["messageType"],
        kind=Kind(raw["kind"]),
        version=raw["version"],
        status=Status(raw["status"]),
        description=raw["description"],
        owner=Owner(**raw["owner"]),
        transport=Transport(exchange=raw["transport"]["exchange"], routing_key=raw["transport"]["routingKey"]),
        compatibility=_compatibility_mode(raw["compatibility"]),
        compatibility_policy=raw.get("compatibilityPolicy", "strict"),
        idempotency_key=raw["idempotencyKey"],
        pii=Pii(contains_pii=raw["pii"]["containsPii"], fields=tuple(raw["pii"]["fields"])),
        retention=Retention(**retention),
        directory=folder,
        payload_schema=payload_schema,
        ordering=Ordering(**raw["ordering"]) if "ordering" in raw else None,
        consumers=tuple(_consumer(folder, c) for c in raw.get("consumers", [])),
        callers=tuple(raw.get("callers", [])),
        superseded_by=raw.get("supersededBy"),
        sunset=_date(file, "/sunset", raw["sunset"], problems) if "sunset" in raw else None,
        holds=holds,
        tenancy_required=raw.get("tenancy", {}).get("required", False),
        max_body_bytes=raw.get("limits", {}).get("maxBodyBytes", Contract.max_body_bytes),
        quality=QualitySettings(
            clock_skew=_duration(file, "/quality/clockSkew", quality_raw["clockSkew"], problems)
            if "clockSkew" in quality_raw
            else defaults_q.clock_skew,
            mostly=dict(quality_raw.get("mostly", {})),
        ),
        replay=_replay_settings(file, raw["compatibility"], problems),
        validation=ValidationSettings(
            invalid_rate_target=validation_raw.get("invalidRateTarget", defaults_v.invalid_rate_target),
            window_days=validation_raw.get("windowDays", defaults_v.window_days),
            dedup_window=_dedup_window(file, validation_raw, problems),
        ),
        topology=TopologySettings(
            queue_type=topology_raw.get("queueType", defaults_t.queue_type),
            retry_delays=tuple(
                _duration(file, f"/topology/retryDelays/{i}", d, problems)
                for i, d in enumerate(topology_raw["retryDelays"])
            )
            if "retryDelays" in topology_raw
            else defaults_t.retry_delays,
            remove_on_retire=topology_raw.get("removeOnRetire", False),
        ),
        retirement=RetirementSettings(
            observations=retirement_raw.get("observations", defaults_r.observations),
            observation_span=_duration(file, "/retirement/observationSpan", retirement_raw["observationSpan"], problems)
            if "observationSpan" in retirement_raw
            else defaults_r.observation_span,
            evidence_freshness=_duration(
                file, "/retirement/evidenceFreshness", retirement_raw["evidenceFreshness"], problems
            )
            if "evidenceFreshness" in retirement_raw
            else defaults_r.evidence_freshness,
        ),
        fixtures=fixtures,
        migration=migration,
        raw=raw,
        compatibility_perspective=str(
            raw["compatibility"].get("perspective", "writers") if isinstance(raw["compatibility"], dict) else "writers"
        ),
    )


def inside_folder(folder: Path, relative: str) -> Path | None:
    """``folder / relative`` when it names a place inside ``folder`` (no absolute path, no ``..``, no link
    leading out), else None: the catalogue never reads outside a contract's folder."""
    candidate = Path(relative)
    if candidate.is_absolute() or ".." in candidate.parts or not relative.strip():
        return None
    path = folder / candidate
    try:
        if not path.resolve().is_relative_to(folder.resolve()):
            return None
    except (OSError, RuntimeError):  # a loop of links, a name too long
        return None
    return path


def _consumer(folder: Path, raw: dict[str, Any]) -> Consumer:
    """One ``consumers[]`` entry; its reader schema is read here (the loader reads every file) and judged by the
    linter (``consumer-reader-schema``), so a missing or broken one is a finding, never a load failure."""
    reads = tuple(raw["reads"]) if "reads" in raw else None
    declared = raw.get("readerSchema")
    document: Any = None
    problem: str | None = None
    if declared is not None:
        path = inside_folder(folder, declared)
        if path is None:
            problem = f"{declared!r} is outside the contract folder; put the reader schema beside contract.yaml"
        elif not path.is_file():
            problem = f"{declared!r}: file is missing in {folder}"
        else:
            try:
                document = read_json(path)
            except DocumentProblem as exc:
                problem = f"{declared!r} is not usable JSON: {exc.problem.message}"
    return Consumer(
        service=raw["service"],
        queue=raw["queue"],
        reads=reads,
        reader_schema=declared,
        team=raw.get("team"),
        contact=raw.get("contact"),
        reader_schema_document=document,
        reader_schema_problem=problem,
    )
