"""A window relative to now, ``WHERE sold_at > now() - INTERVAL 7 HOURS`` over the arrival
column, is a range query (:func:`tempura.sql.clock.now_window`): it is maintained like one under
every method, not recomputed, and every delivery equals ``spark.sql`` of the query as written
over that time point's snapshot with the clock at the point. Windows that are not one (``>=``,
a month, another column, a second reading of the clock) stay recomputed."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest

from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner
from tempura.sql.clock import now_window
from tempura.standing import METHODS, StandingQuery

START = dt.datetime(2026, 11, 20)
QUERY = ("SELECT category, COUNT(*) AS n, SUM(price) AS revenue FROM sales s\n"
         "WHERE s.sold_at > now() - INTERVAL 7 HOURS AND price > 5 GROUP BY category")
SALES = "category STRING, price INT, sold_at TIMESTAMP"


def sales() -> list[tuple[Any, ...]]:
    rng = random.Random(11)
    rows = [(rng.choice("abcd"), rng.randrange(1, 100), START + dt.timedelta(minutes=rng.randrange(1, 24 * 60)))
            for _ in range(300)]
    # nothing from 11:00 to 18:00: the window at t3 (18:00) is empty
    return [r for r in rows if not START + dt.timedelta(hours=11) < r[2] <= START + dt.timedelta(hours=18)]


def spec_file(folder: Path, query: str = QUERY) -> Path:
    (folder / "data" / "sales").mkdir(parents=True, exist_ok=True)
    body = "\n".join("  " + line for line in query.splitlines())
    (folder / "spec.yaml").write_text(
        f"name: recent\nquery: |\n{body}\nsources:\n  sales:\n    path: data/sales\n    arrival: {{column: sold_at}}\n"
        "    schema: {category: string, price: int, sold_at: timestamp}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 6h\n  points: 4\n  deliver: every\n")
    return folder / "spec.yaml"


@pytest.mark.parametrize("query, length", [
    (QUERY, dt.timedelta(hours=7)),
    ("SELECT * FROM sales WHERE now() - INTERVAL '2 days' < sold_at", dt.timedelta(days=2)),
    ("SELECT * FROM sales WHERE sold_at > current_timestamp() - INTERVAL 90 MINUTES", dt.timedelta(minutes=90)),
])
def test_a_window_relative_to_now_is_found(query: str, length: dt.timedelta) -> None:
    window = now_window(query, "spark", {"sales": "sold_at"})
    assert window is not None and window.length == length and "now" not in window.sql.lower()
    assert "current_timestamp" not in window.sql.lower()


@pytest.mark.parametrize("query", [
    "SELECT * FROM sales WHERE sold_at >= now() - INTERVAL 7 HOURS",  # [t - 7h, t]: not the range's (t - 7h, t]
    "SELECT * FROM sales WHERE sold_at > now() - INTERVAL 1 MONTH",  # no fixed length
    "SELECT * FROM sales WHERE price > now() - INTERVAL 1 HOUR",  # not the arrival column
    "SELECT now() AS at, * FROM sales WHERE sold_at > now() - INTERVAL 7 HOURS",  # the clock read again
    "SELECT * FROM sales s JOIN sales t ON s.price = t.price WHERE s.sold_at > now() - INTERVAL 7 HOURS",
])
def test_what_is_not_a_range_stays_recomputed(query: str) -> None:
    assert now_window(query, "spark", {"sales": "sold_at"}) is None


def test_the_spec_takes_the_window_as_its_range_and_validate_says_so(tmp_path: Path) -> None:
    spec = load_spec(spec_file(tmp_path))
    assert spec.window == dt.timedelta(hours=7) and spec.model.schedule.range is not None
    assert spec.model.schedule.range.slide == dt.timedelta(hours=6)
    assert spec.sql.startswith("SELECT category") and "now()" in spec.sql  # the user's text, as written
    assert "now()" not in spec.planning_sql and "price > 5" in spec.planning_sql
    found = StandingQuery(tmp_path / "spec.yaml").validate()
    assert not found.problems, found.problems
    assert any("maintained as a range query over the last 7h" in n and "line 4, column 9" in n for n in found.notes), found.notes
    assert not any("recomputed at every time point" in n for n in found.notes), found.notes
    short = load_spec(spec_file(tmp_path / "short", QUERY.replace("7 HOURS", "5 HOURS")))
    assert short.window is None  # shorter than the step: recomputed


def expected(spark: Any, at: dt.datetime) -> list[tuple[Any, ...]]:
    """The query as written over the rows landed by ``at``, with the clock at ``at``."""
    spark.createDataFrame([s for s in sales() if s[2] <= at], SALES).createOrReplaceTempView("sales")
    return [tuple(r) for r in spark.sql(QUERY.replace("now()", f"TIMESTAMP '{at}'")).collect()]


@pytest.mark.spark
@pytest.mark.usefixtures("fast_spark")
@pytest.mark.parametrize("method", METHODS)
def test_every_method_maintains_the_window(method: str, spark: Any, tmp_path: Path) -> None:
    path = spec_file(tmp_path)
    spark.createDataFrame(sales(), SALES).coalesce(1).write.mode("overwrite").parquet(str(tmp_path / "data" / "sales"))
    runner = Runner(load_spec(path), spark, tmp_path / "work", method, simulate=True)
    results = runner.run_cycle()
    assert [r.index for r in results] == [1, 2, 3, 4]
    totals = []
    for result in results:
        assert result.delivered is not None
        got = [tuple(r) for r in spark.read.parquet(result.delivered).collect()]
        want = expected(spark, result.time)
        outcome = compare_results(want, got)
        assert outcome.equal, f"{method} t{result.index}: {outcome.reason}"
        totals.append(sum(r[1] for r in want))
    assert totals[2] == 0 < totals[1] and totals[3] > 0  # the window empties over the quiet interval
