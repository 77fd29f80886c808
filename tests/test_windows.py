"""Window functions, differentially against ``spark.sql`` on small tables with NULLs, ties and
empty partitions: ranking, aggregates with and without ORDER BY and frames, LAG/LEAD, windows
over an aggregate's output, several partitions in one block, and filters over a window's
output. Each query runs as bound and as the cost-based optimizer plans it (join hints and
all)."""

from __future__ import annotations

import re
from typing import Iterator

import pytest
import yaml

from sparkcompare import assert_plans_equal_spark
from tempura.algebra import LogicalPlan, Window
from tempura.api import Session
from tempura.optimizer.explain import format_physical

pytestmark = pytest.mark.spark

# k: partition key (with a NULL partition), o: a unique order within each partition, v: values
# with ties and NULLs
W_ROWS = [
    (1, 1, 10, "a"),
    (1, 2, 10, "b"),
    (1, 3, None, "a"),
    (1, 4, 30, None),
    (2, 1, 5, "b"),
    (2, 2, 7, "b"),
    (None, 1, 8, "c"),
    (None, 2, 8, "a"),
    (3, 1, None, None),
]


@pytest.fixture(scope="module")
def session(spark, tmp_path_factory: pytest.TempPathFactory) -> Session:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("windows")
    spark.createDataFrame(W_ROWS, "k int, o int, v bigint, s string").write.parquet(str(base / "w"))
    path = base / "catalog.yaml"
    path.write_text(yaml.safe_dump({"tables": {"w": {"path": "w", "format": "parquet"}}}))
    return Session(path, spark=spark)


QUERIES = [
    # ranking; ties on v make RANK and DENSE_RANK differ, NULLs sort first ascending
    "SELECT k, o, v, RANK() OVER (PARTITION BY k ORDER BY v) AS r, DENSE_RANK() OVER (PARTITION BY k ORDER BY v) AS d "
    "FROM w",
    "SELECT k, o, ROW_NUMBER() OVER (PARTITION BY k ORDER BY o DESC) AS n FROM w",
    "SELECT k, o, v, RANK() OVER (ORDER BY v DESC NULLS LAST) AS r FROM w",
    "SELECT k, o, NTILE(2) OVER (PARTITION BY k ORDER BY o) AS half, PERCENT_RANK() OVER (PARTITION BY k ORDER BY o) AS p, "
    "CUME_DIST() OVER (PARTITION BY k ORDER BY v) AS c FROM w",
    # aggregates over a whole partition, a running frame (RANGE by default), ROWS frames
    "SELECT k, o, SUM(v) OVER (PARTITION BY k) AS total, COUNT(*) OVER (PARTITION BY k) AS n, "
    "AVG(v) OVER (PARTITION BY k) AS mean, MIN(s) OVER (PARTITION BY k) AS first_s FROM w",
    "SELECT k, o, v, SUM(v) OVER (PARTITION BY k ORDER BY v) AS running FROM w",
    "SELECT k, o, SUM(v) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS pair, "
    "MAX(v) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS rest FROM w",
    "SELECT k, o, v, COUNT(v) OVER (PARTITION BY k ORDER BY v RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) AS near FROM w",
    "SELECT k, o, SUM(v) OVER () AS everything, COUNT(*) OVER (ORDER BY k NULLS LAST) AS upto FROM w",
    # LAG and LEAD, with offsets and defaults; FIRST_VALUE and LAST_VALUE
    "SELECT k, o, LAG(v) OVER (PARTITION BY k ORDER BY o) AS prev, LEAD(v, 2, -1) OVER (PARTITION BY k ORDER BY o) AS next2 "
    "FROM w",
    "SELECT k, o, FIRST_VALUE(s) OVER (PARTITION BY k ORDER BY o) AS fs, "
    "LAST_VALUE(s) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS ls FROM w",
    # a computed partition, two partitions stacked, a window in an expression and in ORDER BY
    "SELECT k, o, SUM(v) OVER (PARTITION BY k % 2) AS parity_sum, RANK() OVER (PARTITION BY s ORDER BY o) AS r FROM w",
    "SELECT k, o, v - AVG(v) OVER (PARTITION BY k) AS off_mean FROM w ORDER BY k NULLS LAST, o",
    "SELECT k, o, RANK() OVER (PARTITION BY k ORDER BY o DESC) AS r FROM w ORDER BY r, k NULLS FIRST",
    # ORDER BY an expression over select-list aliases (one of them a window's)
    "SELECT k AS part, o, RANK() OVER (PARTITION BY k ORDER BY o) AS r FROM w "
    "ORDER BY CASE WHEN r = 1 THEN part END NULLS LAST, part NULLS FIRST, o",
    # windows over an aggregate's output
    "SELECT s, SUM(v) AS total, RANK() OVER (ORDER BY SUM(v) DESC NULLS LAST) AS r FROM w GROUP BY s",
    "SELECT k, s, SUM(v) AS total, AVG(SUM(v)) OVER (PARTITION BY k) AS mean, "
    "SUM(SUM(v)) OVER (PARTITION BY k ORDER BY s) AS running FROM w GROUP BY k, s HAVING COUNT(*) > 0",
    # top N per partition: a ranking filter over a derived table, with a filter on the partition
    "SELECT * FROM (SELECT k, o, v, RANK() OVER (PARTITION BY k ORDER BY v DESC NULLS LAST) AS r FROM w) AS x "
    "WHERE r <= 2 AND k IS NOT NULL",
    "SELECT DISTINCT k, SUM(v) OVER (PARTITION BY k) AS total FROM w",
    "SELECT k, COUNT(*) AS n FROM (SELECT k, LAG(o) OVER (PARTITION BY k ORDER BY o) AS p FROM w) AS x "
    "WHERE p IS NULL GROUP BY k",
    # over an empty input
    "SELECT k, RANK() OVER (PARTITION BY k ORDER BY o) AS r FROM w WHERE v > 1000",
]


@pytest.mark.parametrize("text", QUERIES)
def test_equals_spark(session: Session, text: str) -> None:
    assert_plans_equal_spark(session, text)


def test_window_plans_and_explains(session: Session) -> None:
    """Calls with the same partition share one operator, which the physical plan clusters by
    that column; ``explain`` and ``explain --stats`` show it with its estimate."""
    text = "SELECT k, RANK() OVER (PARTITION BY k ORDER BY v) AS r, SUM(v) OVER (PARTITION BY k) AS t FROM w"
    query = session.plan(text)
    windows = [n for n in _walk(query.plan) if isinstance(n, Window)]
    assert len(windows) == 1 and len(windows[0].calls) == 2
    assert windows[0].partition_keys == (query.plan.schema.names[0],)
    physical = format_physical(session.optimize(text).physical)
    window_at = physical.index("Window [")
    assert "Exchange hashpartitioning(k)" in physical[window_at:], physical
    lines = session.explain_stats(text).splitlines()
    window_line = next(line for line in lines if "Window [" in line)
    scan_line = next(line for line in lines if "Scan w" in line)
    rows = re.search(r"\(rows[=≈](\S+)", window_line)
    scanned = re.search(r"\(rows[=≈](\S+)", scan_line)
    assert rows is not None and scanned is not None and rows.group(1) == scanned.group(1), lines  # every row, once


def _walk(plan: LogicalPlan) -> Iterator[LogicalPlan]:
    yield plan
    for child in plan.inputs:
        yield from _walk(child)
