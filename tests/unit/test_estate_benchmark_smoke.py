"""benchmarks/estate.py's estate is what its figures claim: a lint-clean catalogue in git, one commit, that
``check --against HEAD`` reads (a tiny estate, nothing timed)."""

from __future__ import annotations

import subprocess

from benchmarks.estate import generate_catalog

from contract_platform.catalog import load_catalog
from contract_platform.catalog.model import Status
from contract_platform.lint import Severity, lint_catalog


def test_the_generated_estate_loads_lint_clean_and_is_committed(tmp_path):
    root = tmp_path / "contracts"
    types = generate_catalog(root, 5, deprecated=2)

    catalog = load_catalog(root)
    assert sorted(types) == sorted(c.message_type for c in catalog) and len(set(types)) == 5
    assert not [f for f in lint_catalog(catalog) if f.severity in (Severity.ERROR, Severity.WARNING)]
    deprecated = [c for c in catalog if c.status is Status.DEPRECATED]
    assert len(deprecated) == 2 and all(c.superseded_by in catalog and c.sunset for c in deprecated)
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True)
    assert status.returncode == 0 and status.stdout == ""  # everything committed: HEAD is the base
