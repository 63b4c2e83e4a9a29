"""How the parallel workers get their tests: the long ones side by side, never one behind another.

``--dist loadgroup`` (``pyproject.toml``) with this scheduler (``tests/conftest.py`` returns it from
``pytest_xdist_make_scheduler``). Each test is a work unit of its own, but for the modules that hold a
module- or class-scoped fixture (``tests.lanes.shared_fixture_modules``): all their tests are one unit, so
the fixture is made once, on one worker. (xdist's ``xdist_group`` marker cannot do it here: xdist 3.8
renames the node ids of grouped tests through an attribute pytest 9 no longer reads.) Units are queued in
collection order, which ``tests.lanes.start_order`` sorts longest first.

xdist's own schedulers deal tests in batches ahead of time (``--dist load`` gave the first worker the
first sixth of the collection: every end-to-end test, one after the other, while the other workers
idled at the end), or hand a worker a second unit from the head of the queue while its first still
runs: a second end-to-end test then waits behind the first. Here a worker that holds a long unit
(``tests.lanes.is_long_unit``) is handed the shortest units left (the queue's tail) to keep it fed; a worker
without one takes the queue's head, the longest unit left.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.lanes import is_long_unit
from xdist.scheduler import LoadGroupScheduling


class LongestFirstScheduling(LoadGroupScheduling):
    def __init__(self, config: pytest.Config, log: Any, shared: frozenset[str]) -> None:
        super().__init__(config, log)
        self.shared = shared
        # The queue keeps the collection's order (longest first); xdist would put the biggest groups first.
        config.option.loadscopereorder = False

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::")[0]
        return module if module in self.shared else nodeid

    def _assign_work_unit(self, node: Any) -> None:
        assert self.workqueue
        busy = any(
            is_long_unit(scope) and not all(unit.values()) for scope, unit in self.assigned_work.get(node, {}).items()
        )
        scope, work_unit = self.workqueue.popitem(last=busy)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, done in work_unit.items() if not done])
