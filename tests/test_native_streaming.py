"""The ``spark-streaming`` contender (benchmarks/native_streaming.py): where Spark runs the query as
a native stream triggered at each time point, its result at every time point equals ``spark.sql``
over the rows arrived by then; where Spark refuses the query, the contender says why in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.native_streaming import NativeStreaming, NativeStreamingError
from scenarios import copy_scenario
from scenarios.sales_returns.generate import generate
from tempura.runtime import compare_results
from tempura.scheduler import load_spec
from tempura.scheduler.spec import Spec

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("fast_spark")]

SPEC = """name: {name}
query: |
  {query}
sources:
  sales: {{path: data/sales, format: parquet, arrival: {{column: arrived_at}}{changes}}}
  categories: {{path: data/categories, format: parquet, arrival: {{by: file}}}}
schedule: {{start: "2026-11-22T00:00:00", every: {every}, points: {points}, deliver: every}}
objective: {{preset: deadline}}
"""

# an aggregate over a stream joined with a static table: complete output mode
REVENUE_BY_GROUP = ("SELECT grp, SUM(price) AS revenue, COUNT(*) AS sales FROM sales "
                    "JOIN categories ON sales.category = categories.category GROUP BY grp")
# no aggregate: append output mode, the result is the union of what each trigger appended
BIG_SALES = ("SELECT o_id, grp, price FROM sales JOIN categories ON sales.category = categories.category "
             "WHERE price > 400")


@pytest.fixture(scope="module")
def scenario(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sales_returns scenario at a small scale, with a static table of category groups."""
    spec = copy_scenario("sales_returns", tmp_path_factory.mktemp("native"))
    generate(spark, spec.parent, 0.002)
    spark.range(20).selectExpr("concat('c', id) AS category", "concat('g', id % 3) AS grp") \
        .write.mode("overwrite").parquet(str(spec.parent / "data" / "categories"))
    return spec


def write_spec(scenario: Path, name: str, query: str, points: int = 4, every: str = "6h", changes: str = "") -> Spec:
    path = scenario.parent / f"{name}.yaml"
    path.write_text(SPEC.format(name=name, query=query, points=points, every=every, changes=changes))
    return load_spec(path)


def reference(spark: Any, spec: Spec, index: int) -> list[tuple[Any, ...]]:
    """``spark.sql(query)`` over the sources' rows arrived by ``t_index`` (static tables whole)."""
    cycle = spec.cycle(0)
    assert cycle is not None
    end = cycle.time_points.values[index - 1]
    for name, source in spec.sources.items():
        frame = spark.read.parquet(spec.location(name))
        column = source.arrival.column
        if column is not None:
            frame = frame.where(f"{column} > TIMESTAMP '{cycle.origin}' AND {column} <= TIMESTAMP '{end}'")
        frame.createOrReplaceTempView(name)
    return [tuple(r) for r in spark.sql(spec.sql).collect()]


def test_spark_refuses_the_outer_join_of_two_streams_in_sales_returns(spark: Any, scenario: Path, tmp_path: Path) -> None:
    contender = NativeStreaming(spark, load_spec(scenario), tmp_path)
    reason = contender.unsupported()
    assert reason is not None and "\n" not in reason
    assert reason.startswith("Spark refuses the query in complete mode: LeftOuter join between two streaming "
                             "DataFrames/Datasets is not supported in Complete output mode, only in Append output mode"), reason
    assert "in append mode:" in reason and "streaming aggregations without watermark" in reason, reason
    with pytest.raises(NativeStreamingError, match="not run as a native Spark stream: Spark refuses the query"):
        contender.run_point(1)
    assert not (tmp_path / "probe").exists()


@pytest.mark.parametrize("name, query, mode, points, every", [
    ("revenue_by_group", REVENUE_BY_GROUP, "complete", 4, "6h"),
    ("big_sales", BIG_SALES, "append", 2, "12h"),
])
def test_a_query_spark_runs_equals_spark_sql_at_every_time_point(
        spark: Any, scenario: Path, tmp_path: Path, name: str, query: str, mode: str, points: int, every: str) -> None:
    spec = write_spec(scenario, name, query, points, every)
    contender = NativeStreaming(spark, spec, tmp_path)
    assert contender.unsupported() is None
    assert contender.output_mode() == mode
    with pytest.raises(NativeStreamingError, match="t2 cannot run now"):
        contender.run_point(2)
    sales = spark.read.parquet(spec.location("sales"))
    for index in range(1, points + 1):
        point = contender.run_point(index)
        outcome = compare_results(reference(spark, spec, index), [tuple(r) for r in point.read(spark).collect()])
        assert outcome.equal, f"{name} t{index}: {outcome.reason}"
        assert point.batches == 1 and point.cpu_seconds > 0 and point.query.jobs > 0
        start = spec.cycle(0).time_points.values[index - 2] if index > 1 else spec.cycle(0).origin  # type: ignore[union-attr]
        arrived = sales.where(f"arrived_at > TIMESTAMP '{start}' AND arrived_at <= TIMESTAMP '{point.time}'").count()
        assert point.landed["sales"] == arrived
        assert point.rows_in == arrived  # the stream's rows: the static table is not a stream
        assert ("categories" in point.landed) == (index == 1)
    assert len(point.folders) == (1 if mode == "complete" else points)
    with pytest.raises(NativeStreamingError, match="the cycle is done"):
        contender.run_point(points + 1)


def test_change_data_is_reported_without_asking_spark(spark: Any, scenario: Path, tmp_path: Path) -> None:
    spec = write_spec(scenario, "cdc", "SELECT category, COUNT(*) AS n FROM sales GROUP BY category",
                      changes=", changes: {op_column: category}")
    reason = NativeStreaming(spark, spec, tmp_path).unsupported()
    assert reason is not None and reason.startswith("source 'sales' carries change data (op column 'category')"), reason
    assert not (tmp_path / "probe").exists()
