"""How verbs print: human text by default, one JSON document with ``--format json``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from contract_platform.errors import printable

__all__ = ["emit_json", "err", "out", "table"]


def out(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def err(line: str) -> None:
    sys.stderr.write(line + "\n")


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")


def table(headers: list[str], rows: Iterable[list[Any]]) -> None:
    """A plain aligned text table (no colours: output goes to CI logs and pull requests).

    Cells may hold names other clients chose (queues, connections): each is shown ``printable``, so a
    row stays one line and no control or bidirectional character reaches the terminal."""
    rows = [[("" if v is None else printable(str(v))) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    out("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    out("  ".join("-" * w for w in widths))
    for row in rows:
        out("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
