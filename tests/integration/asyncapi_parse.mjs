// Parse an AsyncAPI document with the ecosystem's own parser (@asyncapi/parser 3.x) and print
// what it found as one JSON object on stdout:
//   {"parser": "<version>", "document": true|false, "diagnostics": [{code, severity, message, path}]}
// severity as in @stoplight/types: 0 error, 1 warning, 2 information, 3 hint.
// Usage: node asyncapi_parse.mjs <document.json|yaml> <node_modules folder that holds @asyncapi/parser>
// Exit status: 0 when it parsed without errors, 1 when there are errors, 2 on bad usage.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [file, modules] = process.argv.slice(2);
if (!file || !modules) {
  process.stderr.write("usage: node asyncapi_parse.mjs DOCUMENT NODE_MODULES\n");
  process.exit(2);
}
// Resolve the parser from the given node_modules (it is not installed next to this script).
const require = createRequire(path.join(path.resolve(modules), "..", "package.json"));
const { Parser } = require("@asyncapi/parser");
const { version } = require("@asyncapi/parser/package.json");

const text = readFileSync(file, "utf8");
const parser = new Parser();
const { document, diagnostics } = await parser.parse(text, { source: pathToFileURL(path.resolve(file)).href });
const found = diagnostics.map((d) => ({
  code: String(d.code),
  severity: d.severity,
  message: d.message,
  path: d.path.join("/"),
}));
process.stdout.write(JSON.stringify({ parser: version, document: Boolean(document), diagnostics: found }) + "\n");
process.exit(found.some((d) => d.severity === 0) || !document ? 1 : 0);
