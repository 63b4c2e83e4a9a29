"""What the tests share: contracts built in code, waits on conditions, broker names and I/O, topologies.

Imported one way everywhere, from the repository root (``pythonpath = ["."]`` in pyproject.toml):
``from tests.support.contracts import build_contract``. Benchmarks import it the same way once the
repository root is on ``sys.path`` (docs/contributing.md#test-support).
"""
