"""``tempura bench cardinality``: estimated against true cardinalities on TPC-H, beside Spark's CBO.

For every TPC-H query and every node of tempura's plan, three numbers:

- tempura's estimate (from statistics collected by ``ANALYZE``);
- the true row count, from running the node's subplan SQL on Spark (``SELECT COUNT(*)``). A
  cross join's true count is the product of its inputs' (running it would only multiply them);
- Spark's own estimate for the same subplan: the analysed tables, ``spark.sql.cbo.enabled`` and
  ``planStats``, read from the optimized logical plan's statistics. Spark gives none for some
  operators; those nodes are compared only where both have an estimate.

Each estimate's q-error is ``max(est/act, act/est)``, with 0 rows counted as 1. The report gives
median, p90, p95 and max for tempura over all nodes, for both on the comparable nodes, and per
operator, as JSON and a PNG chart of the two q-error distributions.
"""

from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from tempura import tpch
from tempura.algebra import Join, JoinKind
from tempura.api import Session
from tempura.optimizer.explain import ExplainNode, subplan_sql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

Progress = Callable[[str], None]


@dataclass
class NodeResult:
    query: str
    node: int
    operator: str
    algorithm: str
    estimate: float
    actual: float
    spark_estimate: float | None
    q_error: float
    spark_q_error: float | None
    seconds: float
    cross_join: bool = False


def q_error(estimate: float, actual: float) -> float:
    """``max(est/act, act/est)``, with zero rows counted as one."""
    est, act = max(estimate, 1.0), max(actual, 1.0)
    return max(est / act, act / est)


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0–100), linear between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary(values: Iterable[float]) -> dict[str, float]:
    data = list(values)
    if not data:
        return {"count": 0}
    return {
        "count": len(data),
        "median": statistics.median(data),
        "p90": percentile(data, 90),
        "p95": percentile(data, 95),
        "max": max(data),
    }


def spark_estimate(spark: SparkSession, sql: str) -> float | None:
    """Spark's CBO row-count estimate for ``sql`` (``None`` when it has none)."""
    stats = spark.sql(sql)._jdf.queryExecution().optimizedPlan().stats()
    count = stats.rowCount()
    if count.isEmpty():
        return None
    value = count.get()
    return float(value if isinstance(value, (int, float)) else str(value.toString()))


def _count(spark: SparkSession, sql: str) -> float:
    return float(spark.sql(f"SELECT COUNT(*) AS n FROM ({sql}) AS t").collect()[0][0])


def measure_query(spark: SparkSession, session: Session, name: str) -> list[NodeResult]:
    query = session.plan(tpch.query_text(name))
    nodes = session.explainer().nodes(query.plan)
    actuals: dict[int, float] = {}
    results: list[NodeResult] = []
    for node in reversed(nodes):  # children before parents
        results.append(_measure_node(spark, name, node, actuals))
    results.reverse()
    return results


def _measure_node(spark: SparkSession, query: str, node: ExplainNode, actuals: dict[int, float]) -> NodeResult:
    started = time.perf_counter()
    sql = subplan_sql(node.plan)
    plan = node.plan
    cross = isinstance(plan, Join) and plan.kind is JoinKind.CROSS
    if cross:
        left, right = node.children
        actual = actuals[left] * actuals[right]
    else:
        actual = _count(spark, sql)
    actuals[node.id] = actual
    theirs = spark_estimate(spark, sql)
    return NodeResult(
        query,
        node.id,
        node.operator,
        node.algorithm,
        node.rows,
        actual,
        theirs,
        q_error(node.rows, actual),
        None if theirs is None else q_error(theirs, actual),
        time.perf_counter() - started,
        cross,
    )


def prepare(scale: float, workdir: Path, spark: SparkSession, progress: Progress) -> Session:
    """TPC-H data at ``scale`` (generated once), analysed, with Spark's CBO switched on and the
    analysed tables (not temporary views) behind the table names."""
    data = workdir / f"tpch-sf{scale:g}"
    catalog = data / tpch.CATALOG_FILE
    if not catalog.exists():
        progress(f"generating TPC-H scale {scale:g}")
        tpch.generate(scale, data)
    session = Session(catalog, spark=spark, workdir=workdir / f"state-sf{scale:g}")
    progress("analyzing tables (ANALYZE TABLE … FOR ALL COLUMNS, histograms)")
    session.analyze()
    from tempura.stats.collect import STATS_DATABASE

    for table in session.catalog.tables:
        spark.catalog.dropTempView(table)
    spark.sql(f"USE {STATS_DATABASE}")
    for key, value in CBO_CONF.items():
        spark.conf.set(key, value)
    session._registered = True  # the analysed tables serve the names; no temporary views
    return session


BENCH_DRIVER_MEMORY = "8g"

CBO_CONF = {
    "spark.sql.cbo.enabled": "true",
    "spark.sql.cbo.planStats.enabled": "true",
    "spark.sql.cbo.joinReorder.enabled": "true",
    "spark.sql.statistics.histogram.enabled": "true",
}


def run(scale: float, workdir: Path, out: Path, queries: list[str] | None, progress: Progress) -> dict[str, Any]:
    from tempura.runtime import get_spark

    # Counting every subplan of TPC-H at scale 1 needs more than the default driver heap.
    spark = get_spark(conf={"spark.driver.memory": BENCH_DRIVER_MEMORY})
    session = prepare(scale, workdir, spark, progress)
    names = queries or tpch.query_names()
    results: list[NodeResult] = []
    started = time.perf_counter()
    for name in names:
        progress(f"{name}: measuring every subplan")
        results.extend(measure_query(spark, session, name))
    report = build_report(scale, results, time.perf_counter() - started)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"cardinality-sf{scale:g}"
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    chart(results, out / f"{stem}.png", scale)
    report["files"] = [str(out / f"{stem}.json"), str(out / f"{stem}.png")]
    return report


def build_report(scale: float, results: list[NodeResult], seconds: float) -> dict[str, Any]:
    comparable = [r for r in results if r.spark_q_error is not None]
    operators: dict[str, list[NodeResult]] = {}
    for r in results:
        operators.setdefault(r.operator, []).append(r)
    return {
        "benchmark": "cardinality",
        "scale": scale,
        "seconds": seconds,
        "nodes": len(results),
        "tempura_all": summary(r.q_error for r in results),
        # Cross joins are estimated as the product of their inputs, exactly as measured: the
        # summary without them shows that they do not flatter the figures.
        "tempura_without_cross_joins": summary(r.q_error for r in results if not r.cross_join),
        "comparable_nodes": len(comparable),
        "tempura_comparable": summary(r.q_error for r in comparable),
        "spark_comparable": summary(r.spark_q_error for r in comparable if r.spark_q_error is not None),
        "by_operator": {
            op: {
                "tempura": summary(r.q_error for r in rs),
                "spark": summary(r.spark_q_error for r in rs if r.spark_q_error is not None),
            }
            for op, rs in sorted(operators.items())
        },
        "worst": [asdict(r) for r in sorted(results, key=lambda r: -r.q_error)[:15]],
        "results": [asdict(r) for r in results],
    }


def chart(results: list[NodeResult], path: Path, scale: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comparable = [r for r in results if r.spark_q_error is not None]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, values in (
        ("tempura, all nodes", [r.q_error for r in results]),
        ("tempura, comparable nodes", [r.q_error for r in comparable]),
        ("Spark CBO, comparable nodes", [r.spark_q_error or 1.0 for r in comparable]),
    ):
        ordered = sorted(values)
        if ordered:
            left.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=label)
    left.set_xscale("log")
    left.set_xlabel("q-error (log scale)")
    left.set_ylabel("share of subplans with q-error ≤ x")
    left.set_title(f"TPC-H sf {scale:g}: q-error distribution")
    left.grid(True, which="both", alpha=0.3)
    left.legend(loc="lower right")
    operators = sorted({r.operator for r in results})
    data = [[math.log10(r.q_error) for r in results if r.operator == op] for op in operators]
    right.boxplot(data, tick_labels=operators, vert=True)
    right.set_ylabel("log10 q-error (tempura)")
    right.set_title("tempura q-error by operator")
    right.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
