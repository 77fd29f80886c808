"""Differential checks of one query: its bound plan and its optimized plan (with the join hints)
each give ``spark.sql``'s rows, against one reference run."""

from __future__ import annotations

from typing import Any


def assert_plans_equal_spark(session: Any, text: str) -> None:
    """``session.plan(text)`` and ``session.optimize(text)``, run on Spark, equal ``spark.sql(text)``."""
    from tempura.runtime import compare_results, execute

    expected = [tuple(r) for r in session.spark.sql(text).collect()]
    query = session.plan(text)
    actual = [tuple(r) for r in execute(query, session.spark).collect()]
    outcome = compare_results(expected, actual, query.ordered, query.order_keys)
    assert outcome.equal, f"bound plan: {outcome.reason}\n{query.plan}"
    planned = session.optimize(text)
    optimized = [tuple(r) for r in execute(planned.query, session.spark, planned.hints).collect()]
    outcome = compare_results(expected, optimized, planned.query.ordered, planned.query.order_keys)
    assert outcome.equal, f"optimized plan: {outcome.reason}\n{planned.query.plan}"
