"""Sample messageIds of the envelopes an expectation found unexpected, with one Spark filter per expectation.

Asking Great Expectations for ``unexpected_index_list`` doubles the Spark work of a run; the rows
an expectation rejects are simple to state, so they are stated here once per GX type, with GX's
semantics (missing values are not judged, except by the not-null check). A GX type without a
condition here is a bug that raises, not a silent "no samples".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import reduce
from typing import Any

from contract_platform.quality.report import SAMPLES
from contract_platform.quality.suite import BETWEEN, IN_SET, NOT_NULL, PAIR_GREATER, REGEX, UNIQUE, ExpectationSpec

__all__ = ["UNEXPECTED", "sample_message_ids", "unexpected_rows"]


def _not_null(F: Any, kw: Mapping[str, Any]) -> Any:
    return F.col(kw["column"]).isNull()


def _unique(F: Any, kw: Mapping[str, Any]) -> Any:
    from pyspark.sql import Window

    column = F.col(kw["column"])
    return column.isNotNull() & (F.count(F.lit(1)).over(Window.partitionBy(column)) > 1)


def _in_set(F: Any, kw: Mapping[str, Any]) -> Any:
    column = F.col(kw["column"])
    return column.isNotNull() & ~column.isin(list(kw["value_set"]))


def _regex(F: Any, kw: Mapping[str, Any]) -> Any:
    column = F.col(kw["column"])
    return column.isNotNull() & ~column.rlike(kw["regex"])


def _between(F: Any, kw: Mapping[str, Any]) -> Any:
    column = F.col(kw["column"])
    outside = F.lit(False)
    if kw.get("min_value") is not None:
        outside = outside | (column < F.lit(kw["min_value"]))
    if kw.get("max_value") is not None:
        outside = outside | (column > F.lit(kw["max_value"]))
    return column.isNotNull() & outside


def _pair_greater(F: Any, kw: Mapping[str, Any]) -> Any:
    a, b = F.col(kw["column_A"]), F.col(kw["column_B"])
    ok = a >= b if kw.get("or_equal") else a > b
    return a.isNotNull() & b.isNotNull() & ~ok


UNEXPECTED: Mapping[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    NOT_NULL: _not_null,
    UNIQUE: _unique,
    IN_SET: _in_set,
    REGEX: _regex,
    BETWEEN: _between,
    PAIR_GREATER: _pair_greater,
}


def unexpected_rows(spec: ExpectationSpec) -> Any:
    """The Spark condition that is true for the rows ``spec`` counts as unexpected."""
    from pyspark.sql import functions as F

    try:
        condition = UNEXPECTED[spec.gx_type]
    except KeyError:
        raise KeyError(f"no unexpected-rows condition for {spec.gx_type} ({spec.id}): add one to UNEXPECTED") from None
    return condition(F, spec.kwargs)


def sample_message_ids(frame: Any, specs: Sequence[ExpectationSpec]) -> dict[str, tuple[str, ...]]:
    """Up to ``SAMPLES`` messageIds per spec of rows it rejects, in one Spark job; ids without samples left out."""
    if not specs:
        return {}
    from pyspark.sql import functions as F

    picked = [
        frame.select(F.col("messageId"), unexpected_rows(spec).alias("unexpected"))  # a window needs a select
        .where(F.col("unexpected") & F.col("messageId").isNotNull())
        .select(F.lit(spec.id).alias("id"), F.col("messageId"))
        .distinct()
        .orderBy("messageId")
        .limit(SAMPLES)
        for spec in specs
    ]
    found: dict[str, list[str]] = {}
    for row in reduce(lambda left, right: left.unionByName(right), picked).collect():
        found.setdefault(row["id"], []).append(row["messageId"])
    return {spec.id: tuple(sorted(found[spec.id])) for spec in specs if spec.id in found}
