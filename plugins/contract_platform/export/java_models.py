"""Typed Java models of contract versions (``contractctl export models --lang java``): records for JDK 17.

Written by this module from the typed schema of each version (``export.typed_schema``), not by a generator:
the output must compile with plain ``javac`` and no jar, and check its constraints in the compact constructor.
AsyncAPI Modelina's Java writes classes with getters and setters and states constraints as Jakarta Validation
annotations (a jar, and a validator to run them); jsonschema2pojo is a Java tool whose records and checks also
lean on annotations. So each version is one file, ``InvoiceIssuedV2.java``:

- ``public record InvoiceIssuedV2(Metadata metadata, InvoiceIssuedV2Payload payload)`` with the payload record and
  every nested object (a ``$ref`` once, by its definition's name; ``allOf`` merged into one record) as records
  nested in it; components named as the JSON fields, so Jackson 2.12+ maps them by name. A JSON name that is
  no Java identifier (``x-y``, ``class``) is sanitized and its JSON name said in the javadoc (no annotations
  without a jar: map it with a ``PropertyNamingStrategy`` or a mix-in).
- Types: ``String``, ``Long`` (integer), ``BigDecimal`` (number), ``Boolean``, ``List<T>``, a record, or
  ``Map<String, Object>`` for an object without properties. Values stay as written: decimal strings and
  date-times are ``String``. ``oneOf``/``anyOf`` is the one type its branches share (``Map<String, Object>``
  when each is an object), else ``Object``: a sealed interface needs Jackson's annotations to read, so the
  platform's guard checks which branch matches. ``allOf`` is one record of every part's fields.
- The compact constructor checks what Java holds: required (non-null unless the type admits ``null``),
  ``pattern`` (``java.util.regex``, searched as JSON Schema does), lengths in code points, ranges (every draft's
  exclusive forms), ``enum``/``const`` values (an enum with a ``passthrough`` policy has no list in the typed
  schema, so any value passes), item counts; each failure is a ``ContractChecks.Violation`` naming the field,
  never its value. Left to the guard: ``format`` beyond its pattern, ``uniqueItems``, ``multipleOf``, closed
  models (set Jackson's ``FAIL_ON_UNKNOWN_PROPERTIES`` as the model's ``additionalProperties`` says), unions.
- ``Builder`` per record: code that builds a message through it keeps compiling when a minor adds an optional
  field (the canonical constructor gains a parameter); a removed or renamed field is a compile error naming it.
- Constants ``MESSAGE_TYPE``, ``VERSION``, ``SCHEMA_VERSION``, ``EXCHANGE``, ``ROUTING_KEY``, ``CATALOG_REVISION``;
  descriptions as javadoc; ``ContractRegistry.TYPES`` maps messageType -> envelope record class.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from contract_platform.errors import SchemaError, UsageError
from contract_platform.export.typed_schema import TypedVersion

__all__ = ["HEADER", "java_files"]

HEADER = "// Auto-generated - DO NOT EDIT"
_KEYWORDS = frozenset(
    [
        "abstract",
        "assert",
        "boolean",
        "break",
        "byte",
        "case",
        "catch",
        "char",
        "class",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extends",
        "final",
        "finally",
        "float",
        "for",
        "goto",
        "if",
        "implements",
        "import",
        "instanceof",
        "int",
        "interface",
        "long",
        "native",
        "new",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "short",
        "static",
        "strictfp",
        "super",
        "switch",
        "synchronized",
        "this",
        "throw",
        "throws",
        "transient",
        "try",
        "void",
        "volatile",
        "while",
        "true",
        "false",
        "null",
        "_",
        "var",
        "yield",
        "record",
        "sealed",
        "permits",
        "non-sealed",
    ]
)
# a record component may not be named like Object's no-argument methods (JLS 8.10.1)
_OBJECT_METHODS = frozenset({"clone", "finalize", "getClass", "hashCode", "notify", "notifyAll", "toString", "wait"})
_SCALARS = {"string": "String", "integer": "Long", "number": "BigDecimal", "boolean": "Boolean"}
# a nested record of these names would hide the type the file uses (a property "map" of object type, say)
_TAKEN_TYPES = frozenset(
    {"BigDecimal", "Boolean", "Builder", "ContractChecks", "ContractRegistry", "List", "Long", "Map", "Object"}
    | {"Pattern", "Record", "Set", "String", "Override", "Integer", "Number", "Class", "System", "Math"}
)

_CHECKS = """
/** The constraint checks of the generated records' compact constructors; a failure names the field, not its value. */
public final class ContractChecks {
    private ContractChecks() {}

    /** A value the contract refuses: {@link #field()} is where (``payload.currency``), the message says why. */
    public static final class Violation extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        private final String field;

        public Violation(String field, String problem) {
            super(field + ": " + problem);
            this.field = field;
        }

        public String field() {
            return field;
        }
    }

    public static void required(Object value, String field) {
        if (value == null) throw new Violation(field, "required");
    }

    public static void pattern(String value, Pattern pattern, String field) {
        if (!pattern.matcher(value).find()) throw new Violation(field, "does not match " + pattern.pattern());
    }

    public static void length(String value, long min, long max, String field) {
        long n = value.codePointCount(0, value.length());
        if (min >= 0 && n < min) throw new Violation(field, "shorter than " + min);
        if (max >= 0 && n > max) throw new Violation(field, "longer than " + max);
    }

    public static void atLeast(Number value, String bound, boolean exclusive, String field) {
        int c = new BigDecimal(value.toString()).compareTo(new BigDecimal(bound));
        if (c < 0 || (exclusive && c == 0)) throw new Violation(field, (exclusive ? "not above " : "below ") + bound);
    }

    public static void atMost(Number value, String bound, boolean exclusive, String field) {
        int c = new BigDecimal(value.toString()).compareTo(new BigDecimal(bound));
        if (c > 0 || (exclusive && c == 0)) throw new Violation(field, (exclusive ? "not below " : "above ") + bound);
    }

    public static void among(Object value, Set<String> allowed, String field) {
        if (!allowed.contains(String.valueOf(value))) throw new Violation(field, "not one of " + new TreeSet<>(allowed));
    }

    public static void items(List<?> value, long min, long max, String field) {
        if (min >= 0 && value.size() < min) throw new Violation(field, "fewer than " + min + " items");
        if (max >= 0 && value.size() > max) throw new Violation(field, "more than " + max + " items");
    }
}
"""


def java_files(versions: Sequence[TypedVersion], *, revision: str, package: str) -> dict[str, str]:
    """File name -> text: one record file per version, ``ContractChecks.java`` and ``ContractRegistry.java``."""
    if not all(
        re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", part) and part not in _KEYWORDS for part in package.split(".")
    ):
        raise UsageError(
            f"--java-package {package!r} is no Java package name; use dotted identifiers (com.acme.contracts)"
        )
    head = _header(package, revision, "the constraint checks of the generated records")
    files = {
        "ContractChecks.java": head + "import java.math.BigDecimal;\nimport java.util.List;\nimport java.util.Set;\n"
        "import java.util.TreeSet;\nimport java.util.regex.Pattern;\n" + _CHECKS
    }
    for typed in versions:
        files[f"{typed.envelope_class}.java"] = _Version(typed).source(
            _header(package, revision, _title(typed)), revision
        )
    entries = ",\n".join(
        f"            Map.entry({_string(t.message_type)}, {t.envelope_class}.class)" for t in versions
    )
    files["ContractRegistry.java"] = (
        _header(package, revision, "REGISTRY: messageType -> the envelope record of every exported version")
        + "import java.util.Map;\n\n/** messageType -> generated envelope record of every exported version. */\n"
        + "public final class ContractRegistry {\n    private ContractRegistry() {}\n\n"
        + "    public static final Map<String, Class<? extends Record>> TYPES = Map.ofEntries(\n"
        + (entries + "\n" if entries else "")
        + "    );\n}\n"
    )
    return files


def _title(typed: TypedVersion) -> str:
    return f"{typed.message_type} {typed.version} ({typed.exchange} / {typed.routing_key})"


def _header(package: str, revision: str, what: str) -> str:
    return "\n".join(
        [
            HEADER,
            f"// {_comment(what)}",
            f"// from the contract catalogue at revision {_comment(revision)}",
            "// Regenerate with `contractctl export models --lang java`; edits here are lost.",
            f"package {package};",
            "",
            "",
        ]
    )


@dataclass
class _Record:
    name: str
    schema: dict[str, Any]
    label: str  # where its fields are, for messages: payload.lines[]


@dataclass
class _Version:
    """One version's records, named and rendered (module docstring)."""

    typed: TypedVersion
    records: list[_Record] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    by_ref: dict[str, str] = field(default_factory=dict)
    patterns: int = 0

    def source(self, head: str, revision: str) -> str:
        typed = self.typed
        self.names = {typed.envelope_class, *_TAKEN_TYPES}
        root = self._flat(typed.schema)
        body = self._record(typed.envelope_class, root, "", nested=False)
        inserted = [
            f"    public static final int {name} = {value};"
            if isinstance(value, int)
            else f"    public static final String {name} = {_string(value)};"
            for name, value in typed.constants(revision).items()
        ]
        opening = next(i for i, line in enumerate(body) if line.startswith("public record "))
        body[opening + 1 : opening + 1] = [*inserted, ""]
        nested: list[str] = []
        done = 0
        while done < len(self.records):  # rendering a record may name more
            record = self.records[done]
            nested += ["", *self._record(record.name, record.schema, record.label, nested=True)]
            done += 1
        body[-1:-1] = [f"    {line}" if line else "" for line in nested]
        imports = [
            "java.math.BigDecimal",
            "java.util.List",
            "java.util.Map",
            "java.util.Set",
            "java.util.regex.Pattern",
        ]
        return head + "".join(f"import {name};\n" for name in imports) + "\n" + "\n".join(body) + "\n"

    # -- schemas ------------------------------------------------------------------------------------------------

    def _resolve(self, ref: str) -> dict[str, Any]:
        node: Any = self.typed.schema
        for part in ref.removeprefix("#").strip("/").split("/"):
            if not part:
                continue
            key = part.replace("~1", "/").replace("~0", "~")
            node = node[int(key)] if isinstance(node, list) else node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            raise SchemaError(self.typed.schema_file, ref, f"{self.typed.message_type}: $ref {ref} leads nowhere")
        return node

    def _flat(self, schema: Any) -> dict[str, Any]:
        """``schema`` with its ``$ref`` followed and its ``allOf`` merged into one object schema."""
        if not isinstance(schema, dict):
            return {}
        merged = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
        parts = [self._flat(self._resolve(schema["$ref"]))] if isinstance(schema.get("$ref"), str) else []
        parts += [self._flat(part) for part in schema.get("allOf", []) if isinstance(part, dict)]
        for part in parts:
            for key, value in part.items():
                if key == "properties":  # in the order first named; the schema that names a field first wins
                    fields = dict(merged.get("properties", {}))
                    for name, sub in value.items():
                        fields.setdefault(name, sub)
                    merged["properties"] = fields
                elif key == "required":
                    merged["required"] = [*merged.get("required", []), *value]
                else:
                    merged.setdefault(key, value)
        return merged

    def _kinds(self, schema: dict[str, Any]) -> tuple[list[str], bool]:
        """The JSON types ``schema`` admits (besides null) and whether it admits null."""
        kind = schema.get("type")
        kinds = list(kind) if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
        if not kinds and "const" in schema:
            kinds = [_json_kind(schema["const"])]
        elif not kinds and isinstance(schema.get("enum"), list):
            kinds = sorted({_json_kind(value) for value in schema["enum"]})
        elif not kinds and "properties" in schema:
            kinds = ["object"]
        elif not kinds:
            branches = [self._flat(b) for key in ("oneOf", "anyOf") for b in schema.get(key, [])]
            found = [self._kinds(b) for b in branches]
            kinds = sorted({k for ks, _null in found for k in ks})
            return kinds, any(null for _ks, null in found) or "null" in kinds
        return [k for k in kinds if k != "null"], "null" in kinds

    def _java_type(self, schema: Any, hint: str, label: str) -> str:
        original = schema if isinstance(schema, dict) else {}
        flat = self._flat(original)
        kinds, _nullable = self._kinds(flat)
        if len(kinds) != 1:
            return "Object"
        kind = kinds[0]
        if kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            items = flat.get("items")
            return (
                f"List<{self._java_type(items, hint + 'Item', label + '[]') if isinstance(items, dict) else 'Object'}>"
            )
        if kind != "object" or not flat.get("properties"):
            return "Map<String, Object>"
        ref = original.get("$ref")
        if isinstance(ref, str) and not original.get("allOf") and ref in self.by_ref:
            return self.by_ref[ref]
        title = flat.get("title")
        base = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and not original.get("allOf") else hint
        if isinstance(title, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", title):
            base = title
        name = self._fresh(_pascal(base))
        if isinstance(ref, str) and not original.get("allOf"):
            self.by_ref[ref] = name
        self.records.append(_Record(name, flat, label))
        return name

    def _fresh(self, base: str) -> str:
        name, n = base, 2
        while name in self.names:
            name, n = f"{base}{n}", n + 1
        self.names.add(name)
        return name

    # -- records ------------------------------------------------------------------------------------------------

    def _record(self, name: str, schema: dict[str, Any], label: str, *, nested: bool) -> list[str]:
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        components = []  # (java name, json name, type, flat schema, required, nullable)
        taken: set[str] = set()
        for json_name, sub in properties.items():
            java = _identifier(json_name, taken)
            where = f"{label}.{json_name}" if label else json_name
            kind = self._java_type(sub, _pascal(json_name), where)
            flat = self._flat(sub)
            components.append((java, json_name, kind, flat, json_name in required, self._kinds(flat)[1]))
        doc = [_comment(str(schema.get("description", "")).strip()) or f"The record {name}."]
        if schema.get("additionalProperties") is False:
            doc.append("A closed model: the contract refuses a field it does not name (the guard checks it).")
        else:
            doc.append("An open model: a later minor may add fields; read it with FAIL_ON_UNKNOWN_PROPERTIES off.")
        for java, json_name, _kind, flat, is_required, _null in components:
            said = _comment(str(flat.get("description", "")).strip())
            named = f" (JSON name: {_comment(json.dumps(json_name))})" if java != json_name else ""
            doc.append(f"@param {java} {said or json_name}{named}{'' if is_required else ' (optional)'}")
        lines = ["/**", *[f" * {line}" for line in doc], " */"]
        params = ", ".join(f"{kind} {java}" for java, _j, kind, _f, _r, _n in components)
        modifier = "public static record" if nested else "public record"
        lines.append(f"{modifier} {name}({params}) {{")
        fields: list[str] = []
        checks: list[str] = []
        for java, json_name, kind, flat, is_required, nullable in components:
            where = f"{label}.{json_name}" if label else json_name
            checks += self._checks(java, kind, flat, where, fields, required=is_required and not nullable)
        lines += [f"    {line}" for line in fields]
        if fields:
            lines.append("")
        lines.append(f"    public {name} {{")
        lines += [f"        {line}" for line in checks]
        lines += ["    }", ""]
        lines += self._builder(name, components)
        lines.append("}")
        return lines

    def _checks(
        self, value: str, kind: str, schema: dict[str, Any], where: str, fields: list[str], *, required: bool
    ) -> list[str]:
        label = _string(where)
        out = [f"ContractChecks.required({value}, {label});"] if required else []
        inner: list[str] = []
        if kind == "String":
            if isinstance(schema.get("pattern"), str):
                self.patterns += 1
                constant = f"PATTERN_{self.patterns}"
                fields.append(
                    f"private static final Pattern {constant} = Pattern.compile({_string(schema['pattern'])});"
                )
                inner.append(f"ContractChecks.pattern({value}, {constant}, {label});")
            low, high = schema.get("minLength"), schema.get("maxLength")
            if isinstance(low, int) or isinstance(high, int):
                inner.append(f"ContractChecks.length({value}, {_int(low)}, {_int(high)}, {label});")
        if kind in ("Long", "BigDecimal"):
            inner += _bounds(value, schema, label)
        allowed = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(allowed, list) and kind in ("String", "Long", "BigDecimal", "Boolean"):
            values = ", ".join(_string(_text(v)) for v in allowed if v is not None)
            inner.append(f"ContractChecks.among({value}, Set.of({values}), {label});")
        if kind.startswith("List<"):
            low, high = schema.get("minItems"), schema.get("maxItems")
            if isinstance(low, int) or isinstance(high, int):
                inner.append(f"ContractChecks.items({value}, {_int(low)}, {_int(high)}, {label});")
            items = schema.get("items")
            item_kind = kind[5:-1]
            if isinstance(items, dict):
                item = f"item{where.count('[]')}"
                per_item = self._checks(item, item_kind, self._flat(items), where + "[]", fields, required=False)
                if per_item:
                    inner += [f"for ({item_kind} {item} : {value}) {{", *[f"    {x}" for x in per_item], "}"]
        if inner:
            out += [f"if ({value} != null) {{", *[f"    {line}" for line in inner], "}"]
        return out

    def _builder(self, name: str, components: list[tuple[str, str, str, dict[str, Any], bool, bool]]) -> list[str]:
        lines = [
            "    /** Builds a value field by field: code that uses it compiles on after a minor adds an optional field. */",
            "    public static Builder builder() {",
            "        return new Builder();",
            "    }",
            "",
            "    /** Sets the fields by name; {@link #build()} checks them. */",
            "    public static final class Builder {",
        ]
        lines += [f"        private {kind} {java};" for java, _j, kind, _f, _r, _n in components]
        for java, _j, kind, _f, _r, _n in components:
            lines += [
                "",
                f"        public Builder {java}({kind} {java}) {{",
                f"            this.{java} = {java};",
                "            return this;",
                "        }",
            ]
        arguments = ", ".join(java for java, *_rest in components)
        lines += [
            "",
            f"        public {name} build() {{",
            f"            return new {name}({arguments});",
            "        }",
            "    }",
        ]
        return lines


def _bounds(value: str, schema: dict[str, Any], label: str) -> list[str]:
    out = []
    for bound, exclusive, method in (
        ("minimum", "exclusiveMinimum", "atLeast"),
        ("maximum", "exclusiveMaximum", "atMost"),
    ):
        limit, strict = schema.get(bound), schema.get(exclusive)
        if _number(limit):
            out.append(
                f"ContractChecks.{method}({value}, {_string(_text(limit))}, {str(strict is True).lower()}, {label});"
            )
        if _number(strict):
            out.append(f"ContractChecks.{method}({value}, {_string(_text(strict))}, true, {label});")
    return out


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else "object" if isinstance(value, dict) else "array"


def _text(value: Any) -> str:
    """A JSON value as Java's ``String.valueOf`` writes it (``true``, ``2``, ``ISSUED``)."""
    return value if isinstance(value, str) else json.dumps(value)


def _int(value: Any) -> str:
    return f"{value}L" if isinstance(value, int) and not isinstance(value, bool) else "-1L"


def _pascal(name: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    joined = "".join(w[:1].upper() + w[1:] for w in words) or "Value"
    return joined if joined[0].isalpha() else f"V{joined}"


def _identifier(json_name: str, taken: set[str]) -> str:
    """A Java name for the JSON field ``json_name``: itself where Java allows it."""
    name = re.sub(r"[^A-Za-z0-9_$]", "_", json_name) or "field"
    if name[0].isdigit():
        name = f"_{name}"
    if name in _KEYWORDS or name in _OBJECT_METHODS:
        name = f"{name}_"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name)
    return name


def _string(text: str) -> str:
    """A Java string literal, ASCII only."""
    out = []
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif 32 <= ord(char) < 127:
            out.append(char)
        else:
            out.append("".join(f"\\u{unit:04x}" for unit in _units(char)))
    return '"' + "".join(out) + '"'


def _units(char: str) -> list[int]:
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _comment(text: str) -> str:
    """``text`` safe in a Java comment: javac reads ``\\u`` escapes even there, and ``*/`` ends a comment."""
    safe = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\\", "&#92;")
    return " ".join(safe.replace("*/", "*&#47;").replace("@", "&#64;").split())
