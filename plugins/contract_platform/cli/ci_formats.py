"""Output CI systems read natively: ``--format github`` and ``--format junit`` for ``lint`` and ``check``.

The formats change only what is printed: the verdict and the exit code are text mode's.

**github** prints one GitHub Actions workflow command per finding, which GitHub shows as an
annotation on the pull request's file and line::

    ::error file=contracts/billing/invoice-issued/v1/payload.schema.json,line=12,col=7,title=timestamp-format::...

The finding's JSON pointer is resolved to its line and column in the YAML or JSON file it came from
(``contract_platform.lint.locate``); a pointer that does not resolve is shown at its nearest part that
does, and a file that cannot be read is annotated as a whole (no line). Errors are ``::error``,
warnings ``::warning`` (``::error`` with ``--strict``, where they fail the run), info ``::notice``. A breaking
compatibility change is annotated in the new version's ``payload.schema.json`` at the changed pointer
(a warning when replay or the readers perspective accepted the version), a version problem at ``version`` in
``contract.yaml``, a replay refusal on the schema file; the consumers a change reaches, what each piece of
evidence found of them and which one decided (``replay.statement``, as text mode says it) at ``consumers``. Paths are relative to the working directory,
as GitHub expects when the step runs at the repository root. Data is escaped per GitHub's workflow
command rules (``%``, CR, LF; property values also ``:`` and ``,``), so no value can end a command or
start another one.

**junit** prints one JUnit XML document: ``<testsuites>`` holding ``<testsuite name="contractctl
check">`` (or ``lint``) with one ``<testcase classname="<messageType>" name="<rule>">`` per contract
and lint rule, passing ones included so that CI shows the counts, plus ``compatibility`` for each
version checked against earlier ones and ``replay`` for each version replayed. A finding that fails
the run is a ``<failure>`` (its ``type`` the severity); a warning that does not (no ``--strict``), or
an info finding, leaves its test case passing and is written to that test case's ``<system-out>``, which GitLab,
Jenkins and the common JUnit report actions show with the test. Findings in no contract's folder go
to test cases of ``classname="catalog"``.
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract_platform.errors import printable

if TYPE_CHECKING:
    from contract_platform.catalog.model import Catalog, Contract
    from contract_platform.checks import CheckReport
    from contract_platform.lint.model import Finding
    from contract_platform.replay.run import ReplayResult
    from contract_platform.replay.statement import Statement

__all__ = [
    "CI_FORMATS",
    "Annotation",
    "check_output",
    "escape_data",
    "escape_property",
    "github_command",
    "lint_output",
]

CI_FORMATS = ("github", "junit")
CATALOG_CLASS = "catalog"  # the JUnit classname of findings outside every contract's folder


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped (GitHub's ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as data, and ``:`` and ``,`` too (GitHub's ``escapeProperty``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


@dataclass(frozen=True)
class Annotation:
    level: str  # error | warning | notice
    file: str
    pointer: str | None  # None: the whole file
    title: str
    message: str


def github_command(annotation: Annotation, locator: Any = None) -> str:
    """The ``::error file=...,line=...,col=...,title=...::message`` line of one annotation."""
    from contract_platform.lint.locate import Locator

    locator = locator or Locator()
    properties = [("file", relative_path(annotation.file))]
    location = locator.locate(annotation.file, annotation.pointer) if annotation.pointer is not None else None
    if location is not None:
        properties += [("line", str(location.line)), ("col", str(location.column))]
    properties.append(("title", printable(annotation.title)))
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{annotation.level} {props}::{escape_data(annotation.message)}"


def relative_path(file: str) -> str:
    """``file`` relative to the working directory (GitHub resolves annotation paths from the repository root)."""
    try:
        relative = os.path.relpath(os.path.abspath(file))
    except ValueError:  # another drive
        return printable(file)
    return printable(file if relative.startswith("..") else relative)


# -- findings and results as annotations -----------------------------------------------------------


def _where(pointer: str) -> str:
    return printable(pointer) if pointer else "/"


def _level(finding: Finding, *, strict: bool) -> str:
    from contract_platform.lint.model import Severity

    if finding.fails(strict=strict):
        return "error"
    return "warning" if finding.severity is Severity.WARNING else "notice"


def _finding_annotations(findings: Iterable[Finding], *, strict: bool) -> list[Annotation]:
    return [
        Annotation(
            _level(f, strict=strict),
            f.file,
            f.pointer,
            str(f.rule),
            f"{_where(f.pointer)}: {printable(f.message)}",
        )
        for f in findings
    ]


def _check_annotations(
    catalog: Catalog,
    report: CheckReport,
    replayed: Sequence[ReplayResult],
    statements: Sequence[Statement],
    *,
    strict: bool,
) -> list[Annotation]:
    from contract_platform.replay.statement import DecidedBy

    annotations = _finding_annotations(report.findings, strict=strict)
    for result, statement in zip(report.compatibility, statements, strict=True):
        contract = catalog.contracts.get(result.message_type)
        if contract is None:
            continue
        level = "warning" if statement.ok else "error"  # a breaking change the evidence accepted warns
        if not result.ok:
            against = ", ".join(result.against)
            for change in result.changes:
                if change.get("compatible"):
                    continue
                annotations.append(
                    Annotation(
                        level,
                        str(contract.schema_file),
                        str(change.get("path") or ""),
                        str(change.get("rule") or "compatibility"),
                        f"breaking {result.mode} change against {printable(against)} at "
                        f"{_where(str(change.get('path') or ''))}: {printable(str(change.get('message', '')))}"
                        + (f" ({statement.decided_by} decided: accepted)" if statement.ok else ""),
                    )
                )
            for problem in result.semver_problems:
                annotations.append(
                    Annotation(level, str(contract.contract_file), "/version", "version", printable(problem))
                )
        if statement.broken or (statement.consumers and statement.decided_by is not DecidedBy.STATIC):
            # whom the author must tell, what each piece of evidence found, and which one decided
            said = "\n".join(printable(line.strip()) for line in statement.lines() or [statement.headline])
            annotations.append(Annotation(level, str(contract.contract_file), "/consumers", "consumers", said))
    for replay_result in replayed:
        if not replay_result.decision.refuses:
            continue
        contract = replay_result.target.contract
        annotations.append(
            Annotation(
                "error",
                str(contract.schema_file),
                None,
                "replay",
                "\n".join(printable(line) for line in replay_result.replay_problems()),
            )
        )
    return annotations


def _print_github(annotations: Iterable[Annotation], summary: str) -> None:
    from contract_platform.lint.locate import Locator

    locator = Locator()  # each file read once
    for annotation in annotations:
        sys.stdout.write(github_command(annotation, locator) + "\n")
    sys.stdout.write(summary + "\n")


# -- JUnit -----------------------------------------------------------------------------------------


def _owner(file: str, contracts: Sequence[Contract]) -> str:
    """The messageType whose folder holds ``file`` (``CATALOG_CLASS`` for none)."""
    path = Path(os.path.abspath(file))
    for contract in contracts:
        if path.is_relative_to(os.path.abspath(contract.directory)):
            return contract.message_type
    return CATALOG_CLASS


class _Suite:
    """One ``<testsuite>``: test cases in the order first named, each with failures and output lines."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cases: dict[tuple[str, str], tuple[list[tuple[str, str, str]], list[str]]] = {}

    def case(self, classname: str, name: str) -> tuple[list[tuple[str, str, str]], list[str]]:
        return self.cases.setdefault((classname, name), ([], []))

    def fail(self, classname: str, name: str, kind: str, message: str, detail: str) -> None:
        self.case(classname, name)[0].append((kind, message, detail))

    def note(self, classname: str, name: str, line: str) -> None:
        self.case(classname, name)[1].append(line)

    def document(self) -> bytes:
        failures = sum(1 for failed, _ in self.cases.values() if failed)
        root = ET.Element("testsuites", name="contractctl", tests=str(len(self.cases)), failures=str(failures))
        suite = ET.SubElement(
            root, "testsuite", name=self.name, tests=str(len(self.cases)), failures=str(failures), errors="0"
        )
        suite.set("skipped", "0")
        for (classname, name), (failed, output) in self.cases.items():
            case = ET.SubElement(suite, "testcase", classname=printable(classname), name=printable(name))
            if failed:
                kinds = sorted({kind for kind, _, _ in failed})
                summary = failed[0][1] if len(failed) == 1 else f"{len(failed)} problems; first: {failed[0][1]}"
                element = ET.SubElement(case, "failure", type=",".join(kinds), message=printable(summary))
                element.text = "\n".join(printable(detail) for _, _, detail in failed)
            if output:
                ET.SubElement(case, "system-out").text = "\n".join(printable(line) for line in output)
        ET.indent(root)
        document: bytes = ET.tostring(
            root, encoding="utf-8", xml_declaration=True
        )  # bytes for any encoding but "unicode"
        return document + b"\n"


def _junit_findings(
    suite: _Suite, catalog: Catalog, findings: Iterable[Finding], *, strict: bool, checked: set[str] | None = None
) -> None:
    """A test case per contract (``checked``: only those the run checked) and rule, with the findings."""
    from contract_platform.lint.model import RuleId

    contracts = list(catalog)
    for contract in contracts:
        if checked is not None and contract.message_type not in checked:
            continue
        for rule in RuleId:
            suite.case(contract.message_type, str(rule))
    for finding in findings:
        owner = _owner(finding.file, contracts)
        line = f"{printable(finding.file)}#{_where(finding.pointer)}: {printable(finding.message)}"
        if finding.fails(strict=strict):
            suite.fail(owner, str(finding.rule), str(finding.severity), printable(finding.message), line)
        else:
            suite.note(owner, str(finding.rule), f"{finding.severity}: {line}")


def _write_junit(suite: _Suite) -> None:
    sys.stdout.write(suite.document().decode("utf-8"))


# -- the verbs -------------------------------------------------------------------------------------


def lint_output(fmt: str, catalog: Catalog, findings: Sequence[Finding], *, strict: bool, summary: str) -> None:
    """``contractctl lint --format github|junit``."""
    if fmt == "github":
        _print_github(_finding_annotations(findings, strict=strict), summary)
        return
    suite = _Suite("contractctl lint")
    _junit_findings(suite, catalog, findings, strict=strict)
    _write_junit(suite)


def check_output(
    fmt: str,
    catalog: Catalog,
    report: CheckReport,
    replayed: Sequence[ReplayResult] | None,
    statements: Sequence[Statement],
    *,
    ok: bool,
    strict: bool,
    summary: str,
    checked: set[str] | None = None,
) -> int:
    """``contractctl check --format github|junit``: prints, and returns text mode's exit code.

    ``statements``: what the check says of each compatibility result (``replay.statement``), in their order;
    ``summary``: text mode's last line. ``checked``: the messageTypes the run checked (``check --against``
    selects the versions a change reaches); None: every contract of the catalogue."""
    from contract_platform.replay.statement import DecidedBy

    replayed = list(replayed or [])
    if fmt == "github":
        _print_github(_check_annotations(catalog, report, replayed, statements, strict=strict), summary)
        return 0 if ok else 1
    suite = _Suite("contractctl check")
    _junit_findings(suite, catalog, report.findings, strict=strict, checked=checked)
    for result, statement in zip(report.compatibility, statements, strict=True):
        name = "compatibility"
        suite.case(result.message_type, name)
        lines = [
            f"breaking [{c.get('rule')}] {_where(str(c.get('path') or ''))}: {c.get('message')}"
            for c in result.changes
            if not c.get("compatible")
        ] + [f"version: {problem}" for problem in result.semver_problems]
        lines += [line.strip() for line in statement.lines()]
        if not statement.ok:
            message = f"{result.mode} against {', '.join(result.against)}: {statement.headline}"
            suite.fail(result.message_type, name, "error", message, "\n".join(lines))
        elif not result.ok or statement.decided_by is not DecidedBy.STATIC:
            for line in lines:
                suite.note(result.message_type, name, line)
    for replay_result in replayed:
        suite.case(replay_result.message_type, "replay")
        if replay_result.decision.refuses:
            problems = replay_result.replay_problems()
            suite.fail(replay_result.message_type, "replay", "error", problems[0], "\n".join(problems))
        else:
            suite.note(replay_result.message_type, "replay", f"decision: {replay_result.decision.decision}")
    _write_junit(suite)
    return 0 if ok else 1
