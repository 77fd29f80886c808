"""Time and chance in a standing query, on Spark. ``current_timestamp()``, ``now()`` and
``current_date()`` are the time point being computed: a window relative to now, run long after
its time points (these tests run in December 2026, the schedule is in November), delivers at
each point what ``spark.sql`` gives over that point's snapshot with the clock at the point
(computed here from the raw rows). Such a query is recomputed at every point: ``auto`` and
``batch`` run it, the incremental methods are refused in one line. ``rand()`` is refused in one
line naming the call and its position, unless the spec asks for recompute."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pytest

from tempura.errors import TempuraError
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.runner import Runner
from tempura.standing import StandingQuery

START = dt.datetime(2026, 11, 20)
WINDOW = ("SELECT category, current_date() AS day, COUNT(*) AS n, SUM(price) AS revenue FROM sales\n"
          "WHERE sold_at > now() - INTERVAL 7 HOURS GROUP BY category")
SALES = "category STRING, price INT, sold_at TIMESTAMP"


def sales() -> list[tuple[Any, ...]]:
    rng = random.Random(5)
    return [(rng.choice("abc"), rng.randrange(1, 100), START + dt.timedelta(minutes=rng.randrange(1, 24 * 60)))
            for _ in range(400)]


def job(spark: Any, folder: Path, query: str, extra: str = "") -> Path:
    spark.createDataFrame(sales(), SALES).coalesce(1).write.mode("overwrite").parquet(str(folder / "data" / "sales"))
    body = "\n".join("  " + line for line in query.splitlines())
    (folder / "spec.yaml").write_text(
        f"name: window\nquery: |\n{body}\nsources:\n  sales:\n    path: data/sales\n    arrival: {{column: sold_at}}\n"
        f"schedule:\n  start: '{START.isoformat()}'\n  every: 6h\n  points: 4\n  deliver: every\n{extra}")
    return folder / "spec.yaml"


def expected(spark: Any, index: int) -> list[tuple[Any, ...]]:
    """The query over the rows landed by ``t_index``, with the clock at ``t_index``: its text with
    the time point's literal in place of ``now()`` and ``current_date()``."""
    now = START + dt.timedelta(hours=6 * index)
    spark.createDataFrame([s for s in sales() if s[2] <= now], SALES).createOrReplaceTempView("sales")
    text = WINDOW.replace("now()", f"TIMESTAMP '{now}'").replace("current_date()", f"DATE '{now.date()}'")
    return [tuple(r) for r in spark.sql(text).collect()]


@pytest.mark.spark
@pytest.mark.parametrize("method", ["auto", "batch"])
def test_now_is_the_time_point_whenever_the_run_happens(method: str, spark: Any, tmp_path: Path) -> None:
    spec = load_spec(job(spark, tmp_path, WINDOW))
    results = Runner(spec, spark, tmp_path / "work", method, simulate=True).run_cycle()
    assert [r.index for r in results] == [1, 2, 3, 4]
    counts = []
    for result in results:
        assert result.delivered is not None
        got = spark.read.parquet(result.delivered)
        want = expected(spark, result.index)
        outcome = compare_results(want, [tuple(r) for r in got.collect()])
        assert outcome.equal, f"{method} t{result.index}: {outcome.reason}"
        assert got.schema["day"].dataType.simpleString() == "date"
        counts.append(sum(r[2] for r in want))
    assert all(0 < n < 400 for n in counts), counts  # a window that moves: never empty, never everything
    assert dt.datetime.now() > START + dt.timedelta(days=2)  # the wall clock's window would hold no row


def test_the_reference_stops_the_clock_at_the_time_point() -> None:
    from tempura.sql.clock import sql_at_time

    text = sql_at_time("SELECT now() AS a, current_date() AS b, localtimestamp() AS c", "spark",
                       dt.datetime(2026, 11, 20, 6, 30))
    assert text == ("SELECT CAST('2026-11-20 06:30:00' AS TIMESTAMP) AS a, CAST('2026-11-20' AS DATE) AS b, "
                    "CAST('2026-11-20 06:30:00' AS TIMESTAMP_NTZ) AS c")


@pytest.mark.spark
def test_an_incremental_method_is_refused_in_one_line(spark: Any, tmp_path: Path) -> None:
    spec = load_spec(job(spark, tmp_path, WINDOW))
    with pytest.raises(TempuraError) as raised:
        Runner(spec, spark, tmp_path / "work", "ivm", simulate=True).run_cycle()
    message = str(raised.value)
    # positions in the spec file: the query is a literal block from line 3, indented by two
    assert ("method ivm: the query reads the clock (current_date() at line 3, column 20, now() at line 4, column 19)"
            in message), message
    assert "recomputed at every time point" in message and "\n" not in message


def test_validate_says_the_query_is_recomputed(tmp_path: Path) -> None:
    (tmp_path / "data" / "sales").mkdir(parents=True)
    query = f"{WINDOW.splitlines()[0]} WHERE sold_at > now() GROUP BY category"
    (tmp_path / "spec.yaml").write_text(
        f"name: window\nquery: {query}\n"
        "sources:\n  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n    schema: {category: string, "
        "price: int, sold_at: timestamp}\nschedule:\n  start: '2026-11-20T00:00:00'\n  every: 6h\n  points: 2\n")
    found = StandingQuery(tmp_path / "spec.yaml").validate()
    assert not found.problems, found.problems
    assert query.index("now()") + 1 == 105  # in the query; in the file, after "query: " on line 2
    assert any("reads the clock (current_date() at line 2, column 25, now() at line 2, column 112)" in n
               and "recomputed at every time point" in n for n in found.notes), found.notes


CHANCE = "SELECT category, COUNT(*) AS n FROM sales WHERE rand() < 0.5 GROUP BY category"


def test_chance_is_refused_naming_the_call(tmp_path: Path) -> None:
    (tmp_path / "data" / "sales").mkdir(parents=True)
    (tmp_path / "spec.yaml").write_text(
        f"name: sample\nquery: {CHANCE}\nsources:\n  sales:\n    path: data/sales\n    arrival: {{column: sold_at}}\n"
        "    schema: {category: string, price: int, sold_at: timestamp}\n"
        "schedule:\n  start: '2026-11-20T00:00:00'\n  every: 6h\n  points: 2\n")
    found = StandingQuery(tmp_path / "spec.yaml").validate()
    assert len(found.problems) == 1, found.problems
    assert "query: rand() gives another value at every run" in found.problems[0]
    assert "nondeterministic: recompute" in found.problems[0] and f"line 2, column {CHANCE.index('rand()') + 8}: query: " in found.problems[0]


@pytest.mark.spark
def test_chance_the_spec_allows_is_recomputed(spark: Any, tmp_path: Path) -> None:
    spec = load_spec(job(spark, tmp_path, CHANCE, "nondeterministic: recompute\n"))
    with pytest.raises(TempuraError, match="method ivm: the query reads chance"):
        Runner(spec, spark, tmp_path / "work" / "ivm", "ivm", simulate=True).run_cycle()
    results = Runner(spec, spark, tmp_path / "work" / "auto", "auto", simulate=True).run_cycle()
    assert [r.index for r in results] == [1, 2, 3, 4]
    for result in results:
        assert result.delivered is not None and result.manifest is not None
        landed = sum(1 for s in sales() if s[2] <= START + dt.timedelta(hours=6 * result.index))
        total = sum(r["n"] for r in spark.read.parquet(result.delivered).collect())
        assert 0 < total < landed, (result.index, total, landed)  # a sample of what landed, drawn anew
