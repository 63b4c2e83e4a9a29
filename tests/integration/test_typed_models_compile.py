"""Generated TypeScript and Java models, checked by their compilers (``contractctl export models``).

TypeScript: ``tsc --noEmit --strict`` accepts the types of the catalogue and of the catalogue with every schema
shape in every draft (``tests/unit/export/test_python_models.py`` builds it); compiled and run on Node, the type
guards accept every valid fixture, and an invalid fixture the guard lets through is one the platform's guard
refuses (which one is recorded per fixture). Java: ``javac`` (JDK 17, no jar) compiles the records, and a Main
builds a valid invoice and gets the constraint failure of an invalid one, naming the field. Evolution: code
written against 2.0's types still compiles against 2.1's (an optional field added), and the same code moved to
v3 (a required field renamed) does not, the compiler naming the field.

Node tools (json-schema-to-typescript, typescript) live in ``.cache/asyncapi``, installed by
``scripts/install-asyncapi-parser`` (run here when they are missing). Skipped only when node, npm or javac is
not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.support.cli import run_cli
from tests.support.contracts import ENVELOPE_SCHEMA_FILE, REPO_ROOT, write_contract
from tests.unit.export.test_python_models import SHAPE_DEFECTS, write_shapes_catalog

from contract_platform.catalog.loading import load_catalog
from contract_platform.catalog.model import Catalog
from contract_platform.client.bundle import bundle_from_document
from contract_platform.client.guard import Guard, Rejection
from contract_platform.client.testkit import delivery_of
from contract_platform.export.bundle import export_bundle
from contract_platform.export.models import export_models, write_models
from contract_platform.export.typescript_models import HEADER, node_modules

INSTALL_SCRIPT = REPO_ROOT / "scripts" / "install-asyncapi-parser"

# Reads [[messageType, document], ...] on stdin; prints whether each passes its version's guard.
RUN_GUARDS = """
const { REGISTRY } = require(process.argv[1]);
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const cases = JSON.parse(input);
  process.stdout.write(JSON.stringify(cases.map(([type, doc]) => REGISTRY[type](doc))));
});
"""


@pytest.fixture(scope="module")
def tsc() -> Path:
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not found on PATH: install Node.js 18+ with npm to type-check the TypeScript models")
    modules = node_modules()
    if not all((modules / name / "package.json").exists() for name in ("typescript", "json-schema-to-typescript")):
        result = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, f"{INSTALL_SCRIPT} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    return modules / "typescript" / "bin" / "tsc"


@pytest.fixture(scope="module")
def javac() -> str:
    found = shutil.which("javac")
    if found is None or shutil.which("java") is None:
        pytest.skip("javac or java not found on PATH: install a JDK 17+ to compile the Java models")
    return found


def compile_ts(tsc: Path, folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    files = sorted(str(path) for path in folder.rglob("*.ts"))
    command = ["node", str(tsc), "--noEmit", "--strict", *extra, *files]  # the compiler's defaults otherwise
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=folder)


def compile_java(javac: str, folder: Path, classes: Path) -> subprocess.CompletedProcess[str]:
    files = sorted(str(path) for path in folder.rglob("*.java"))
    return subprocess.run(
        [javac, "-Xlint:none", "-d", str(classes), *files], capture_output=True, text=True, timeout=300
    )


def export(catalog: Catalog, language: str, out: Path, *types: str) -> None:
    write_models(export_models(catalog, language=language, message_types=types or list(catalog.contracts)), out)


def refused_by(catalog: Catalog, guards: dict[str, bool]) -> dict[str, str]:
    """``<messageType>/<fixture>`` -> ``type`` (its TypeScript guard) or ``guard`` (the platform's)."""
    bundle = bundle_from_document(export_bundle(catalog, message_types=list(catalog.contracts)))
    platform = Guard(bundle, reads=set(catalog.contracts))
    verdicts = {}
    for contract in catalog:
        for fixture in contract.fixtures:
            where = f"{contract.message_type}/{fixture.name}"
            if fixture.valid:
                assert guards[where], f"{where}: a valid fixture fails its TypeScript guard"
            elif not guards[where]:
                verdicts[where] = "type"
            else:
                assert isinstance(platform.inspect(*delivery_of(fixture.document)), Rejection), (
                    f"{where}: nobody refused it"
                )
                verdicts[where] = "guard"
    return verdicts


def run_guards(tsc: Path, models: Path, catalog: Catalog) -> dict[str, bool]:
    """Every fixture of ``catalog`` through its version's guard, compiled to JavaScript and run on Node."""
    js = models.parent / f"{models.name}-js"
    emitted = subprocess.run(
        ["node", str(tsc), "--strict", "--target", "es2019", "--module", "commonjs", "--outDir", str(js),
         *sorted(str(p) for p in models.glob("*.ts"))],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert emitted.returncode == 0, emitted.stdout[-3000:]
    cases = [(c.message_type, f.document) for c in catalog for f in c.fixtures]
    names = [f"{c.message_type}/{f.name}" for c in catalog for f in c.fixtures]
    result = subprocess.run(
        ["node", "-e", RUN_GUARDS, str(js / "index.js")],
        input=json.dumps(cases), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(zip(names, json.loads(result.stdout), strict=True))


def test_the_catalogues_typescript_type_checks_and_its_guards_judge_every_fixture(
    tsc, tmp_path, capsys, record_property
):
    catalog = load_catalog(REPO_ROOT / "contracts")
    models = tmp_path / "models"
    code, _out, err = run_cli(
        capsys, "export", "models", "--lang", "typescript", "--catalog", str(REPO_ROOT / "contracts"),
        *[arg for t in catalog.contracts for arg in ("--type", t)], "--out", str(models),
    )  # fmt: skip
    assert code == 0, err

    checked = compile_ts(tsc, models)

    assert checked.returncode == 0, checked.stdout[-3000:]
    text = (models / "billing_invoice_issued_v2.ts").read_text()
    assert text.splitlines()[0] == HEADER
    assert "revision git:" in text.splitlines()[2] or "revision sha256:" in text.splitlines()[2]
    assert "Invoiced amount before tax in minor units" in text  # descriptions as doc comments
    assert 'export const ROUTING_KEY = "billing.invoice.issued.v2" as const;' in text
    verdicts = refused_by(catalog, run_guards(tsc, models, catalog))
    for where, who in verdicts.items():
        record_property(f"refused-by:{where}", who)
    assert set(verdicts) == {f"{c.message_type}/{f.name}" for c in catalog for f in c.fixtures if not f.valid}
    assert set(verdicts.values()) == {"type"}  # every defect of the catalogue's invalid fixtures is the guard's own


def test_every_shape_in_every_draft_type_checks_and_its_guard_refuses_the_defects(tsc, tmp_path, record_property):
    catalog = load_catalog(write_shapes_catalog(tmp_path / "catalog"))
    models = tmp_path / "models"
    export(catalog, "typescript", models)

    checked = compile_ts(tsc, models)

    assert checked.returncode == 0, checked.stdout[-3000:]
    verdicts = refused_by(catalog, run_guards(tsc, models, catalog))
    for where, who in verdicts.items():
        record_property(f"refused-by:{where}", who)
    expected = {f"{t}/{defect}.json": who for t in catalog.contracts for defect, (_c, who) in SHAPE_DEFECTS.items()}
    assert verdicts == expected


MAIN = """
import contracts.ContractChecks;
import contracts.ContractRegistry;
import contracts.InvoiceIssuedV2;

public class Main {
    public static void main(String[] args) {
        InvoiceIssuedV2.InvoiceIssuedV2Payload payload = InvoiceIssuedV2.InvoiceIssuedV2Payload.builder()
            .invoiceId("inv-10001").orderId("ord-1").customerId("c-1").amountMinorUnits(12995L)
            .currencyExponent(2L).currency("EUR").status("ISSUED").issuedAt("2026-07-01T10:15:30Z")
            .dueDate("2026-07-31").aggregateVersion(1L).billingEmail("a@example.com").build();
        System.out.println("valid " + payload.invoiceId() + " " + InvoiceIssuedV2.ROUTING_KEY + " "
            + ContractRegistry.TYPES.get(InvoiceIssuedV2.MESSAGE_TYPE).getSimpleName());
        String[][] defects = {{"currency", "eur"}, {"status", "LOST"}, {"currencyExponent", "5"}, {"invoiceId", null}};
        for (String[] defect : defects) {
            try {
                InvoiceIssuedV2.InvoiceIssuedV2Payload.Builder b = InvoiceIssuedV2.InvoiceIssuedV2Payload.builder()
                    .invoiceId("inv-10001").orderId("ord-1").customerId("c-1").amountMinorUnits(12995L)
                    .currencyExponent(2L).currency("EUR").status("ISSUED").issuedAt("2026-07-01T10:15:30Z")
                    .dueDate("2026-07-31").aggregateVersion(1L).billingEmail("a@example.com");
                switch (defect[0]) {
                    case "currency" -> b.currency(defect[1]);
                    case "status" -> b.status(defect[1]);
                    case "currencyExponent" -> b.currencyExponent(Long.valueOf(defect[1]));
                    default -> b.invoiceId(null);
                }
                b.build();
                System.out.println("accepted " + defect[0]);
            } catch (ContractChecks.Violation violation) {
                System.out.println("refused " + violation.field());
            }
        }
    }
}
"""


def test_the_catalogues_java_records_compile_and_check_their_constraints(javac, tmp_path):
    catalog = load_catalog(REPO_ROOT / "contracts")
    export(catalog, "java", tmp_path / "src" / "contracts")
    (tmp_path / "src" / "Main.java").write_text(MAIN)
    classes = tmp_path / "classes"

    compiled = compile_java(javac, tmp_path / "src", classes)

    assert compiled.returncode == 0, compiled.stderr[-3000:]
    ran = subprocess.run(["java", "-cp", str(classes), "Main"], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split("\n")[:5] == [
        "valid inv-10001 billing.invoice.issued.v2 InvoiceIssuedV2",
        "refused payload.currency",
        "refused payload.status",
        "refused payload.currencyExponent",
        "refused payload.invoiceId",
    ]
    text = (tmp_path / "src" / "contracts" / "InvoiceIssuedV2.java").read_text()
    assert text.splitlines()[0] == HEADER and "Invoiced amount before tax in minor units" in text


def test_every_shape_in_every_draft_compiles_as_java_records(javac, tmp_path):
    catalog = load_catalog(write_shapes_catalog(tmp_path / "catalog"))
    export(catalog, "java", tmp_path / "src")

    compiled = compile_java(javac, tmp_path / "src", tmp_path / "classes")

    assert compiled.returncode == 0, compiled.stderr[-3000:]
    assert len(list((tmp_path / "classes" / "contracts").glob("Shapes*V1.class"))) == len(catalog.contracts)


# -- evolution at compile time --------------------------------------------------------------------------------


def evolution_schema(*, amount: str = "amountMinorUnits", with_note: bool = False) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "invoiceId": {"type": "string", "pattern": "^inv-[0-9]+$", "description": "The invoice."},
        amount: {"type": "integer", "description": "Amount in minor units."},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "ISO 4217 code."},
    }
    if with_note:
        properties["note"] = {"type": "string", "maxLength": 200, "description": "Added in 2.1: optional."}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Invoice",
        "type": "object",
        "required": ["invoiceId", amount, "currency"],
        "properties": properties,
    }


def evolution_catalog(root: Path, major: int, version: str, schema: dict[str, Any]) -> Catalog:
    """A catalogue of one contract, billing.invoice-issued.v<major> at ``version`` with ``schema``."""
    (root / "envelope").mkdir(parents=True)
    (root / "envelope" / "envelope.v1.schema.json").write_bytes(ENVELOPE_SCHEMA_FILE.read_bytes())
    write_contract(
        root,
        f"billing.invoice-issued.v{major}",
        version=version,
        description="An invoice was issued.",
        routing_key=f"billing.invoice.issued.v{major}",
        schema=schema,
    )
    return load_catalog(root)


# What a service writes against 2.0: it reads the fields and builds a payload.
TS_SERVICE = """
import { isInvoiceIssuedV2, InvoiceIssuedV2Payload } from "./models/billing_invoice_issued_v2";

export function book(message: unknown): string {
  if (!isInvoiceIssuedV2(message)) return "refused";
  const amount: number = message.payload.amountMinorUnits;
  return message.payload.invoiceId + " " + amount;
}

export const made: InvoiceIssuedV2Payload = { invoiceId: "inv-1", amountMinorUnits: 12995, currency: "EUR" };
"""

JAVA_SERVICE = """
import contracts.InvoiceIssuedV2;

public class Booking {
    static String book(InvoiceIssuedV2 message) {
        return message.payload().invoiceId() + " " + message.payload().amountMinorUnits();
    }

    static InvoiceIssuedV2.InvoiceIssuedV2Payload make() {
        return InvoiceIssuedV2.InvoiceIssuedV2Payload.builder()
            .invoiceId("inv-1").amountMinorUnits(12995L).currency("EUR").build();
    }
}
"""


def moved_to_v3(code: str) -> str:
    """The service's code moved to v3 by its import alone: what a team does first when the major changes."""
    return code.replace("InvoiceIssuedV2", "InvoiceIssuedV3").replace("invoice_issued_v2", "invoice_issued_v3")


STEPS = {
    "2.0": (2, "2.0.0", evolution_schema()),
    "2.1": (2, "2.1.0", evolution_schema(with_note=True)),
    "3.0": (3, "3.0.0", evolution_schema(amount="netAmountMinorUnits")),
}


def test_a_minor_compiles_against_the_previous_minors_code_and_a_breaking_change_does_not(tsc, javac, tmp_path):
    results = {}
    for step, (major, version, schema) in STEPS.items():
        catalog = evolution_catalog(tmp_path / step / "catalog", major, version, schema)
        service = tmp_path / step / "ts"
        export(catalog, "typescript", service / "models")
        (service / "service.ts").write_text(moved_to_v3(TS_SERVICE) if major == 3 else TS_SERVICE)
        java = tmp_path / step / "java"
        export(catalog, "java", java / "contracts")
        (java / "Booking.java").write_text(moved_to_v3(JAVA_SERVICE) if major == 3 else JAVA_SERVICE)
        results[step] = (compile_ts(tsc, service), compile_java(javac, java, tmp_path / step / "classes"))

    # 2.1 holds the added field (the test would prove nothing if 2.1 generated 2.0 again) ...
    assert "note?: string" in (tmp_path / "2.1" / "ts" / "models" / "billing_invoice_issued_v2.ts").read_text()
    assert "String note" in (tmp_path / "2.1" / "java" / "contracts" / "InvoiceIssuedV2.java").read_text()
    # ... and the code written for 2.0 compiles against 2.0 and 2.1
    for step in ("2.0", "2.1"):
        ts, java = results[step]
        assert ts.returncode == 0, f"{step}: {ts.stdout[-3000:]}"
        assert java.returncode == 0, f"{step}: {java.stderr[-3000:]}"
    # the renamed required field fails both compiles, and each compiler names it
    ts, java = results["3.0"]
    assert ts.returncode != 0 and java.returncode != 0
    assert "service.ts" in ts.stdout and "Property 'amountMinorUnits' does not exist" in ts.stdout, ts.stdout
    assert "amountMinorUnits" in java.stderr and "Booking.java" in java.stderr, java.stderr


ODD_NAMES = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "title": "Odd",
    "type": "object",
    "required": ["class", "x-rate", "hashCode", "2fa", "lines", "map"],
    "properties": {
        "class": {"type": "string", "enum": ["A", "B"], "description": "A Java keyword as a JSON name."},
        "x-rate": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "description": "Above 0 (draft-04)."},
        "hashCode": {"type": "integer", "enum": [1, 2], "description": "Object's method name."},
        "2fa": {"type": "boolean", "description": "Starts with a digit."},
        "map": {  # an object named like a type the file uses
            "type": "object",
            "properties": {"list": {"type": "array", "items": {"type": "string", "maxLength": 3}}},
        },
        "lines": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["sku"],
                "properties": {"sku": {"type": "string", "pattern": "^[A-Z]+$", "description": "*/ \\u00e9 <b>"}},
            },
        },
    },
}

ODD_MAIN = """
import contracts.ContractChecks;
import contracts.InvoiceIssuedV2;
import java.math.BigDecimal;
import java.util.List;

public class OddMain {
    static InvoiceIssuedV2.InvoiceIssuedV2Payload odd(String sku, String rate) {
        return InvoiceIssuedV2.InvoiceIssuedV2Payload.builder().class_("A").x_rate(new BigDecimal(rate)).hashCode_(2L)._2fa(true)
            .map(new InvoiceIssuedV2.Map2(List.of("abc")))
            .lines(List.of(InvoiceIssuedV2.LinesItem.builder().sku(sku).build())).build();
    }

    public static void main(String[] args) {
        System.out.println("valid " + odd("AB", "0.5").class_());
        for (String[] bad : new String[][] {{"ab", "0.5"}, {"AB", "0"}}) {
            try {
                odd(bad[0], bad[1]);
                System.out.println("accepted");
            } catch (ContractChecks.Violation violation) {
                System.out.println("refused " + violation.field());
            }
        }
    }
}
"""


def test_json_names_that_are_no_java_identifiers_compile_sanitized_and_keep_their_checks(javac, tmp_path):
    catalog = evolution_catalog(tmp_path / "catalog", 2, "2.0.0", ODD_NAMES)
    export(catalog, "java", tmp_path / "src" / "contracts")
    (tmp_path / "src" / "OddMain.java").write_text(ODD_MAIN)

    compiled = compile_java(javac, tmp_path / "src", tmp_path / "classes")

    assert compiled.returncode == 0, compiled.stderr[-3000:]
    ran = subprocess.run(["java", "-cp", str(tmp_path / "classes"), "OddMain"], capture_output=True, text=True)
    assert ran.stdout.split("\n")[:3] == ["valid A", "refused payload.lines[].sku", "refused payload.x-rate"]
    text = (tmp_path / "src" / "contracts" / "InvoiceIssuedV2.java").read_text()
    assert '(JSON name: "x-rate")' in text and '(JSON name: "class")' in text
