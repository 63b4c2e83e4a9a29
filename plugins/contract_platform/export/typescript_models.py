"""Typed TypeScript models of contract versions (``contractctl export models --lang typescript``), one file per version.

The types are written by json-schema-to-typescript (npm), run by Node on the typed schema of each version
(``export.typed_schema``); the type guards are this module's, from the same schema. Why not AsyncAPI Modelina:
its TypeScript output gives every open object a field ``additionalProperties?: Map<string, any>`` that no JSON
message holds (a ``JSON.parse``'d envelope is not of that type), and it installs some 200 MB for one generator.
json-schema-to-typescript writes plain interfaces of the JSON as sent: ``oneOf``/``anyOf`` as unions, ``allOf``
as intersections, ``$ref`` as named interfaces, ``enum``/``const`` as literal types, nullable types
``X | null``, descriptions as JSDoc. An open model's interface names its fields and no index signature
(``_declared`` says why); its guard still accepts the fields a later minor adds. Nothing is fetched when
exporting: both npm packages are installed by ``scripts/install-asyncapi-parser`` into ``.cache/asyncapi``
(or the folder ``CONTRACT_NODE_MODULES`` names), and remote references are not followed.

A type says the shape; it checks nothing at run time. So each file has a guard, ``isInvoiceIssuedV2(x: unknown):
x is InvoiceIssuedV2`` (and ``isInvoiceIssuedV2Payload``), and ``problemsOfInvoiceIssuedV2(x)``, the JSON pointers
that fail. They run the typed schema through ``contract_guard.ts`` (written once per folder): required fields,
types (``integer`` is a whole number), ``enum``, ``const``, ``pattern`` (ECMA-262, as the guard reads it),
lengths in code points, ranges (every draft's exclusive forms), ``multipleOf``, item and property counts,
``uniqueItems``, closed models, ``$ref``, ``allOf``/``oneOf``/``anyOf``/``not``, ``if``/``then``/``else``. What it
leaves to the platform's guard: ``format`` beyond the shape the typed schema gives it as a pattern (30 February),
and the envelope rules across fields.

Each file starts with ``// Auto-generated - DO NOT EDIT`` and the catalogue revision, and exports
``MESSAGE_TYPE``, ``VERSION``, ``SCHEMA_VERSION``, ``EXCHANGE``, ``ROUTING_KEY``, ``CATALOG_REVISION`` and
``SCHEMA``; ``index.ts`` exports every version as a namespace and ``REGISTRY`` (messageType -> guard).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contract_platform.errors import SchemaError, UsageError
from contract_platform.export.typed_schema import TypedVersion, subschemas

__all__ = ["GUARD_MODULE", "HEADER", "node_modules", "typescript_files"]

HEADER = "// Auto-generated - DO NOT EDIT"
GUARD_MODULE = "contract_guard"
_INSTALL = "scripts/install-asyncapi-parser"

# Reads {"modules": DIR, "schemas": {name: schema}} on stdin, prints {name: declarations} (or {"error": ...}).
_DRIVER = r"""
const path = require("path");
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const request = JSON.parse(input);
  const { compile } = require(path.join(request.modules, "json-schema-to-typescript"));
  const options = {
    bannerComment: "", additionalProperties: false, unknownAny: true, strictIndexSignatures: false,
    declareExternallyReferenced: true, enableConstEnums: false, format: true, ignoreMinAndMaxItems: true,
    $refOptions: { resolve: { external: false, http: false, file: false } },
  };
  const out = {};
  try {
    for (const [name, schema] of Object.entries(request.schemas)) out[name] = await compile(schema, name, options);
  } catch (err) {
    process.stdout.write(JSON.stringify({ error: String(err && err.message ? err.message : err) }));
    process.exit(1);
  }
  process.stdout.write(JSON.stringify({ declarations: out }));
});
"""

_GUARD = r"""/** The run-time check behind every generated type guard: the typed schema's constraints on a value.
 * ``problems(schema, value)`` is the JSON pointers (and why) where ``value`` fails, ``[]`` when it holds. */

export type Schema = boolean | { readonly [keyword: string]: unknown };
type Json = { readonly [key: string]: unknown };

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => equal(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && equal(a[k], b[k]));
  }
  return false;
}

function typeOk(type: unknown, value: unknown): boolean {
  switch (type) {
    case "string": return typeof value === "string";
    case "integer": return typeof value === "number" && isFinite(value) && Math.floor(value) === value;
    case "number": return typeof value === "number" && isFinite(value);
    case "boolean": return typeof value === "boolean";
    case "null": return value === null;
    case "array": return Array.isArray(value);
    case "object": return isObject(value);
    default: return true;
  }
}

function resolve(root: Schema, ref: string): Schema {
  let node: unknown = root;
  for (const part of ref.replace(/^#\/?/, "").split("/").filter((p) => p !== "")) {
    const key = decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");
    node = isObject(node) || Array.isArray(node) ? (node as Json)[key] : undefined;
  }
  if (typeof node !== "boolean" && !isObject(node)) throw new Error("unresolvable $ref " + ref);
  return node;
}

function codePoints(text: string): number {
  return text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, "_").length;
}

function num(schema: Json, key: string): number | undefined {
  const value = schema[key];
  return typeof value === "number" ? value : undefined;
}

function numeric(s: Json, v: number, at: string, out: string[]): void {
  const min = num(s, "minimum");
  const max = num(s, "maximum");
  const xmin = s["exclusiveMinimum"] === true ? min : num(s, "exclusiveMinimum");
  const xmax = s["exclusiveMaximum"] === true ? max : num(s, "exclusiveMaximum");
  if (min !== undefined && s["exclusiveMinimum"] !== true && v < min) out.push(at + ": below the minimum " + min);
  if (max !== undefined && s["exclusiveMaximum"] !== true && v > max) out.push(at + ": above the maximum " + max);
  if (xmin !== undefined && v <= xmin) out.push(at + ": not above " + xmin);
  if (xmax !== undefined && v >= xmax) out.push(at + ": not below " + xmax);
  const step = num(s, "multipleOf");
  if (step !== undefined && Math.abs(v / step - Math.round(v / step)) > 1e-9) out.push(at + ": not a multiple of " + step);
}

function text(s: Json, v: string, at: string, out: string[]): void {
  const length = codePoints(v);
  const min = num(s, "minLength");
  const max = num(s, "maxLength");
  if (min !== undefined && length < min) out.push(at + ": shorter than " + min);
  if (max !== undefined && length > max) out.push(at + ": longer than " + max);
  if (typeof s["pattern"] === "string" && !new RegExp(s["pattern"], "u").test(v)) {
    out.push(at + ": does not match " + s["pattern"]);
  }
}

function list(s: Json, v: readonly unknown[], root: Schema, at: string, out: string[]): void {
  const min = num(s, "minItems");
  const max = num(s, "maxItems");
  if (min !== undefined && v.length < min) out.push(at + ": fewer than " + min + " items");
  if (max !== undefined && v.length > max) out.push(at + ": more than " + max + " items");
  if (s["uniqueItems"] === true && v.some((x, i) => v.slice(0, i).some((y) => equal(x, y)))) out.push(at + ": items repeat");
  const tuple = Array.isArray(s["prefixItems"]) ? s["prefixItems"] : Array.isArray(s["items"]) ? s["items"] : [];
  const rest = Array.isArray(s["items"]) ? s["additionalItems"] : s["items"];
  v.forEach((item, i) => {
    const schema = i < tuple.length ? tuple[i] : rest;
    if (typeof schema === "boolean" || isObject(schema)) check(schema, item, root, at + "/" + i, out);
  });
}

function object(s: Json, v: Json, root: Schema, at: string, out: string[]): void {
  const required = Array.isArray(s["required"]) ? s["required"] : [];
  for (const name of required) if (typeof name === "string" && !(name in v)) out.push(at + "/" + name + ": required");
  const properties = isObject(s["properties"]) ? s["properties"] : {};
  const patterns = isObject(s["patternProperties"]) ? s["patternProperties"] : {};
  const count = Object.keys(v).length;
  const min = num(s, "minProperties");
  const max = num(s, "maxProperties");
  if (min !== undefined && count < min) out.push(at + ": fewer than " + min + " properties");
  if (max !== undefined && count > max) out.push(at + ": more than " + max + " properties");
  for (const key of Object.keys(v)) {
    const where = at + "/" + key.replace(/~/g, "~0").replace(/\//g, "~1");
    let known = false;
    if (Object.prototype.hasOwnProperty.call(properties, key)) {
      known = true;
      check(properties[key] as Schema, v[key], root, where, out);
    }
    for (const pattern of Object.keys(patterns)) {
      if (new RegExp(pattern, "u").test(key)) {
        known = true;
        check(patterns[pattern] as Schema, v[key], root, where, out);
      }
    }
    const extra = s["additionalProperties"];
    if (!known && extra === false) out.push(where + ": not a field of this closed model");
    else if (!known && isObject(extra)) check(extra, v[key], root, where, out);
  }
}

function check(schema: Schema, value: unknown, root: Schema, at: string, out: string[]): void {
  if (schema === true) return;
  if (schema === false) {
    out.push(at + ": no value is allowed here");
    return;
  }
  const s = schema;
  if (typeof s["$ref"] === "string") check(resolve(root, s["$ref"]), value, root, at, out);
  const types = Array.isArray(s["type"]) ? s["type"] : s["type"] === undefined ? [] : [s["type"]];
  if (types.length > 0 && !types.some((t) => typeOk(t, value))) {
    out.push(at + ": not of type " + types.join(" or "));
    return;
  }
  if ("const" in s && !equal(s["const"], value)) out.push(at + ": not the constant " + JSON.stringify(s["const"]));
  if (Array.isArray(s["enum"]) && !s["enum"].some((e) => equal(e, value))) out.push(at + ": not one of the enum");
  if (typeof value === "number") numeric(s, value, at, out);
  if (typeof value === "string") text(s, value, at, out);
  if (Array.isArray(value)) list(s, value, root, at, out);
  if (isObject(value)) object(s, value, root, at, out);
  const passes = (branch: unknown): boolean => {
    const found: string[] = [];
    check(branch as Schema, value, root, at, found);
    return found.length === 0;
  };
  if (Array.isArray(s["allOf"])) for (const branch of s["allOf"]) check(branch as Schema, value, root, at, out);
  if (Array.isArray(s["anyOf"]) && !s["anyOf"].some(passes)) out.push(at + ": matches none of anyOf");
  if (Array.isArray(s["oneOf"]) && s["oneOf"].filter(passes).length !== 1) out.push(at + ": matches not exactly one of oneOf");
  if (s["not"] !== undefined && passes(s["not"])) out.push(at + ": matches what is excluded (not)");
  if (s["if"] !== undefined) {
    const next = passes(s["if"]) ? s["then"] : s["else"];
    if (next !== undefined) check(next as Schema, value, root, at, out);
  }
}

export function problems(schema: Schema, value: unknown, root: Schema = schema): string[] {
  const out: string[] = [];
  check(schema, value, root, "", out);
  return out;
}
"""


def node_modules() -> Path:
    """Where json-schema-to-typescript and typescript are installed (module docstring)."""
    named = os.environ.get("CONTRACT_NODE_MODULES")
    if named:
        return Path(named)
    return Path(__file__).resolve().parents[3] / ".cache" / "asyncapi" / "node_modules"


def typescript_files(versions: Sequence[TypedVersion], *, revision: str) -> dict[str, str]:
    """File name -> text: one ``.ts`` per version, ``contract_guard.ts`` and ``index.ts``."""
    declarations = _declarations(versions)
    files = {f"{GUARD_MODULE}.ts": _header(revision, "the run-time check of the type guards") + _GUARD}
    for typed in versions:
        files[f"{typed.module}.ts"] = _version_file(typed, declarations[typed.module], revision)
    files["index.ts"] = _index(versions, revision)
    return files


def _declarations(versions: Sequence[TypedVersion]) -> dict[str, str]:
    modules = node_modules()
    node = shutil.which("node")
    if node is None or not (modules / "json-schema-to-typescript" / "package.json").is_file():
        missing = "node is not on PATH" if node is None else f"json-schema-to-typescript is not in {modules}"
        raise UsageError(
            f"export models --lang typescript: {missing}; install Node.js 18+ and run {_INSTALL} "
            "(or name the node_modules folder with CONTRACT_NODE_MODULES)"
        )
    request = {"modules": str(modules), "schemas": {typed.module: _declared(typed.schema) for typed in versions}}
    try:
        result = subprocess.run(
            [node, "-e", _DRIVER], input=json.dumps(request), capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"export models --lang typescript: node did not run: {exc}") from exc
    try:
        answer = json.loads(result.stdout)
    except ValueError:
        answer = {"error": result.stderr.strip()[-2000:] or f"node exited {result.returncode}"}
    if "error" in answer or result.returncode != 0:
        names = ", ".join(typed.message_type for typed in versions)
        raise SchemaError(
            versions[0].schema_file if len(versions) == 1 else "",
            "",
            f"no TypeScript types generated for {names}: {answer.get('error')}",
        )
    declarations: dict[str, str] = answer["declarations"]
    return declarations


def _declared(schema: dict[str, Any]) -> dict[str, Any]:
    """What the types are written from: ``schema`` without ``additionalProperties: true`` where an object names
    its fields. Such a type has no ``[k: string]: unknown`` index, so code reading a field a new major removed
    or renamed fails to compile, naming it, instead of reading ``unknown``. The guard still lets added fields
    through (it checks ``SCHEMA``, the typed schema as it is), and an object without fields stays a map."""
    declared = copy.deepcopy(schema)
    stack: list[Any] = [declared]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("additionalProperties") is True and isinstance(node.get("properties"), dict) and node["properties"]:
            del node["additionalProperties"]
        stack.extend(subschemas(node))
    return declared


def _header(revision: str, what: str) -> str:
    return "\n".join(
        [
            HEADER,
            f"// {what}",
            f"// from the contract catalogue at revision {revision}",
            "// Regenerate with `contractctl export models --lang typescript`; edits here are lost.",
            "",
        ]
    )


def _version_file(typed: TypedVersion, declarations: str, revision: str) -> str:
    envelope, payload = typed.envelope_class, typed.payload_class
    for name in (envelope, payload):
        if f"export interface {name} " not in declarations and f"export type {name} " not in declarations:
            raise SchemaError(
                typed.schema_file,
                "",
                f"the generated types of {typed.message_type} have no {name}: a definition or title of the payload "
                "schema takes that name; rename it",
            )
    lines = [
        _header(revision, f"{typed.message_type} {typed.version} ({typed.exchange} / {typed.routing_key})"),
        f'import {{ problems }} from "./{GUARD_MODULE}";',
        f'import type {{ Schema }} from "./{GUARD_MODULE}";',
        "",
        declarations.strip(),
        "",
    ]
    lines += [
        f"export const {name} = {json.dumps(value)} as const;" for name, value in typed.constants(revision).items()
    ]
    lines += [
        "",
        "/** The typed schema the guards check (the envelope standard with this version's payload). */",
        f"export const SCHEMA: Schema = {json.dumps(typed.schema, indent=2, ensure_ascii=False)};",
        'const PAYLOAD_SCHEMA: Schema = { $ref: "#/properties/payload" };',
        "",
        f"/** The JSON pointers where ``x`` is not a {typed.message_type} envelope (and why); [] when it is one. */",
        f"export function problemsOf{envelope}(x: unknown): string[] {{",
        "  return problems(SCHEMA, x);",
        "}",
        "",
        f"/** ``x`` is a {typed.message_type} envelope: every constraint TypeScript can check at run time holds. */",
        f"export function is{envelope}(x: unknown): x is {envelope} {{",
        "  return problems(SCHEMA, x).length === 0;",
        "}",
        "",
        f"/** ``x`` is a {typed.message_type} payload. */",
        f"export function is{payload}(x: unknown): x is {payload} {{",
        "  return problems(PAYLOAD_SCHEMA, x, SCHEMA).length === 0;",
        "}",
        "",
    ]
    return "\n".join(lines)


def _index(versions: Sequence[TypedVersion], revision: str) -> str:
    lines = [_header(revision, "every exported version, and REGISTRY: messageType -> type guard")]
    ordered = sorted(versions, key=lambda typed: typed.module)
    lines += [f'import * as {typed.module} from "./{typed.module}";' for typed in ordered]
    lines += ["", "export {", *[f"  {typed.module}," for typed in ordered], "};", ""]
    lines += ["export const REGISTRY: { readonly [messageType: string]: (x: unknown) => boolean } = {"]
    lines += [f"  {json.dumps(t.message_type)}: {t.module}.is{t.envelope_class}," for t in ordered]
    lines += ["};", ""]
    return "\n".join(lines)
