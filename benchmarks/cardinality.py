"""``tempura bench cardinality``: estimated against true cardinalities on TPC-H or TPC-DS, beside
Spark's CBO.

For every query of the suite (the 22 TPC-H queries, or the 99 TPC-DS queries) and every node of
tempura's plan, three numbers:

- tempura's estimate (from statistics collected by ``ANALYZE``);
- the true row count, from running the node's subplan SQL on Spark (``SELECT COUNT(*)``). A
  cross join's true count is the product of its inputs' (running it would only multiply them);
- Spark's own estimate for the same subplan: the analysed tables, ``spark.sql.cbo.enabled`` and
  ``planStats``, read from the optimized logical plan's statistics. Spark gives none for some
  operators; those nodes are compared only where both have an estimate.

Each estimate's q-error is ``max(est/act, act/est)``, with 0 rows counted as 1. The report gives
median, p90, p95 and max for tempura over all nodes, for both on the comparable nodes, and per
operator, as JSON and a PNG chart of the two q-error distributions.

The time is bounded: a node whose count runs longer than the node timeout is cancelled, and a
query's nodes left when its time budget is spent are not counted; either way the node is skipped
and the report counts it (a cross join over a skipped input is skipped too). Queries not started
when the run's time budget (if any) is spent are listed as not reached; the JSON is rewritten
after every query. A query tempura refuses (an unsupported construct) is skipped and listed with
tempura's one-line reason.
"""

from __future__ import annotations

import json
import math
import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from tempura import tpcds, tpch
from tempura.algebra import Join, JoinKind
from tempura.api import Session
from tempura.errors import TempuraError
from tempura.optimizer.explain import ExplainNode, subplan_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Suite:
    """A benchmark suite: its tables' data, its queries, and the names of its files."""

    name: str
    title: str
    query_names: Callable[[], list[str]]
    query_text: Callable[[str], str]
    generate: Callable[[float, Path], Path]
    catalog_file: str

    def stem(self, benchmark: str, scale: float) -> str:
        """The result files' name: TPC-H keeps the names it always had, other suites add theirs."""
        suffix = "" if self.name == "tpch" else f"-{self.name}"
        return f"{benchmark}{suffix}-sf{scale:g}"


SUITES = {
    "tpch": Suite("tpch", "TPC-H", tpch.query_names, tpch.query_text, tpch.generate, tpch.CATALOG_FILE),
    "tpcds": Suite("tpcds", "TPC-DS", tpcds.query_names, tpcds.query_text, tpcds.generate, tpcds.CATALOG_FILE),
}

NODE_TIMEOUT = 120.0  # seconds one node's count may run
QUERY_TIMEOUT = 600.0  # seconds all of one query's counts may take


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


class Cancelled(Exception):
    """A Spark job cancelled at its time limit."""


class InputSkipped(Exception):
    """A cross join whose true count needs an input that was not counted."""


def timed_collect(spark: SparkSession, frame: Callable[[], DataFrame], timeout: float) -> tuple[float, list[tuple[Any, ...]] | None]:
    """Seconds to build and collect a DataFrame, and its rows (``None`` after ``timeout``)."""
    group = f"tempura-bench-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, "tempura benchmark", interruptOnCancel=True)
    timer = threading.Timer(timeout, lambda: spark.sparkContext.cancelJobGroup(group))
    timer.start()
    started = time.perf_counter()
    try:
        rows = [tuple(r) for r in frame().collect()]
    except Exception:  # cancelled by the timer
        if time.perf_counter() - started < timeout:
            raise
        return timeout, None
    finally:
        timer.cancel()
    return time.perf_counter() - started, rows


def _count(spark: SparkSession, sql: str, timeout: float) -> float:
    _, rows = timed_collect(spark, lambda: spark.sql(f"SELECT COUNT(*) AS n FROM ({sql}) AS t"), timeout)
    if rows is None:
        raise Cancelled(f"count cancelled after {timeout:g} s")
    return float(rows[0][0])


@dataclass
class SkippedNode:
    """A node without a true count: cancelled at the node timeout, left when the query's time
    budget was spent, a cross join over such a node, or a count Spark failed."""

    query: str
    node: int
    operator: str
    reason: str


@dataclass
class Measurement:
    """What one query gave: its measured nodes, the nodes skipped, and why the query was skipped
    (tempura refused it or failed to plan it), if it was."""

    results: list[NodeResult] = field(default_factory=list)
    skipped: list[SkippedNode] = field(default_factory=list)
    refused: str | None = None


def measure_query(spark: SparkSession, session: Session, name: str, text: str | None = None,
                  node_timeout: float = NODE_TIMEOUT, query_timeout: float = QUERY_TIMEOUT,
                  counted: dict[str, float] | None = None) -> Measurement:
    """Every node of ``name``'s plan (``text``, TPC-H's query by default) measured, children first.

    ``counted`` holds true counts by subplan SQL, shared between queries: the same subplan (a
    dimension filtered the same way) is counted once.
    """
    measurement = Measurement()
    try:
        query = session.plan(tpch.query_text(name) if text is None else text)
        nodes = session.explainer().nodes(query.plan)
    except TempuraError as error:
        measurement.refused = str(error).splitlines()[0] if str(error) else type(error).__name__
        return measurement
    actuals: dict[int, float] = {}
    counts = {} if counted is None else counted
    deadline = time.perf_counter() + query_timeout
    for node in reversed(nodes):  # children before parents
        if time.perf_counter() > deadline:
            measurement.skipped.append(SkippedNode(name, node.id, node.operator, "query time budget spent"))
            continue
        try:
            measurement.results.append(_measure_node(spark, name, node, actuals, node_timeout, counts))
        except Cancelled as error:
            measurement.skipped.append(SkippedNode(name, node.id, node.operator, f"timeout: {error}"))
        except InputSkipped:
            measurement.skipped.append(SkippedNode(name, node.id, node.operator, "cross join over a skipped input"))
        except Exception as error:  # noqa: BLE001 - Spark failed on the subplan: counted as skipped, named
            first = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
            measurement.skipped.append(SkippedNode(name, node.id, node.operator, f"error: {first.strip()[:200]}"))
    measurement.results.reverse()
    return measurement


def _measure_node(spark: SparkSession, query: str, node: ExplainNode, actuals: dict[int, float],
                  timeout: float = NODE_TIMEOUT, counted: dict[str, float] | None = None) -> NodeResult:
    started = time.perf_counter()
    sql = subplan_sql(node.plan)
    plan = node.plan
    cross = isinstance(plan, Join) and plan.kind is JoinKind.CROSS
    counts = {} if counted is None else counted
    if cross:
        left, right = node.children
        if left not in actuals or right not in actuals:
            raise InputSkipped
        actual = actuals[left] * actuals[right]
    elif sql in counts:
        actual = counts[sql]
    else:
        actual = counts[sql] = _count(spark, sql, timeout)
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


def tables_read(texts: list[str]) -> list[str]:
    """The tables the query texts read (only theirs need statistics)."""
    import sqlglot
    from sqlglot import exp

    found: set[str] = set()
    for text in texts:
        tree = sqlglot.parse_one(text, read="spark")
        ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
        found.update(t.name for t in tree.find_all(exp.Table) if t.name not in ctes)
    return sorted(found)


def prepare(scale: float, workdir: Path, spark: SparkSession, progress: Progress, suite: Suite = SUITES["tpch"],
            data: Path | None = None, tables: list[str] | None = None) -> Session:
    """The suite's data at ``scale`` (generated once into the workdir, or the folder ``data``
    holding its ``catalog.yaml``, only read), analysed (``tables``, or all), with Spark's CBO
    switched on and the analysed tables (not temporary views) behind the table names. Tables
    already analysed in this Spark session, with fresh statistics in the workdir, are not
    analysed again."""
    if data is None:
        folder = workdir / f"{suite.name}-sf{scale:g}"
        catalog = folder / suite.catalog_file
        if not catalog.exists():
            progress(f"generating {suite.title} scale {scale:g}")
            suite.generate(scale, folder)
    else:
        catalog = data / suite.catalog_file
        if not catalog.exists():
            raise TempuraError(f"--data {data}: no {suite.catalog_file} there (make one with tempura {suite.name}-gen)")
    state = f"state-sf{scale:g}" if suite.name == "tpch" else f"state-{suite.name}-sf{scale:g}"
    session = Session(catalog, spark=spark, workdir=workdir / state)
    from tempura.stats.collect import STATS_DATABASE

    def analysed(table: str) -> bool:
        """Analysed in this Spark session (Spark's CBO needs its own statistics) and stored fresh."""
        stats = session.stats.lookup(table)
        return stats.source != "default" and not stats.stale and spark.catalog.tableExists(f"{STATS_DATABASE}.{table}")

    missing = [t for t in (tables or sorted(session.catalog.tables)) if not analysed(t)]
    if missing:
        progress(f"analyzing {len(missing)} tables (ANALYZE TABLE … FOR ALL COLUMNS, histograms)")
        session.analyze(missing)

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


def run(scale: float, workdir: Path, out: Path, queries: list[str] | None, progress: Progress, suite: str = "tpch",
        data: Path | None = None, node_timeout: float = NODE_TIMEOUT, query_timeout: float = QUERY_TIMEOUT,
        budget: float | None = None) -> dict[str, Any]:
    from tempura.runtime import get_spark

    chosen = SUITES[suite]
    # Counting every subplan of TPC-H at scale 1 needs more than the default driver heap.
    spark = get_spark(conf={"spark.driver.memory": BENCH_DRIVER_MEMORY})
    names = queries or chosen.query_names()
    # TPC-H analyses every table, as it always has; TPC-DS only those its queries read.
    tables = None if suite == "tpch" else tables_read([chosen.query_text(name) for name in names])
    session = prepare(scale, workdir, spark, progress, chosen, data, tables)
    results: list[NodeResult] = []
    skipped: list[SkippedNode] = []
    refused: dict[str, str] = {}
    counted: dict[str, float] = {}
    measured_queries: list[str] = []
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    stem = chosen.stem("cardinality", scale)

    def report_so_far() -> dict[str, Any]:
        report = build_report(scale, results, time.perf_counter() - started, skipped, refused, chosen.title)
        not_reached = [n for n in names if n not in measured_queries]
        return report | {"queries": measured_queries, "not_reached": not_reached, "node_timeout": node_timeout,
                         "query_timeout": query_timeout, "budget": budget}

    for name in names:
        if budget is not None and time.perf_counter() - started > budget:
            progress(f"{name}: not measured, the run's time budget is spent")
            continue
        progress(f"{name}: measuring every subplan")
        measured = measure_query(spark, session, name, chosen.query_text(name), node_timeout, query_timeout, counted)
        if measured.refused is not None:
            progress(f"{name}: skipped, tempura refuses it: {measured.refused}")
            refused[name] = measured.refused
        measured_queries.append(name)
        results.extend(measured.results)
        skipped.extend(measured.skipped)
        # Written after every query, so that a long run stopped early still leaves its figures.
        (out / f"{stem}.json").write_text(json.dumps(report_so_far(), indent=1), encoding="utf-8")
    report = report_so_far()
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    chart(results, out / f"{stem}.png", scale, chosen.title)
    report["files"] = [str(out / f"{stem}.json"), str(out / f"{stem}.png")]
    return report


def build_report(scale: float, results: list[NodeResult], seconds: float, skipped: list[SkippedNode] | None = None,
                 refused: dict[str, str] | None = None, suite: str = "TPC-H") -> dict[str, Any]:
    comparable = [r for r in results if r.spark_q_error is not None]
    operators: dict[str, list[NodeResult]] = {}
    for r in results:
        operators.setdefault(r.operator, []).append(r)
    skipped = skipped or []
    reasons: dict[str, int] = {}
    for s in skipped:
        kind = s.reason.split(":", 1)[0]
        reasons[kind] = reasons.get(kind, 0) + 1
    return {
        "benchmark": "cardinality",
        "suite": suite,
        "scale": scale,
        "seconds": seconds,
        "nodes": len(results),
        "refused_queries": dict(refused or {}),
        "skipped_nodes": len(skipped),
        "skipped_by_reason": reasons,
        "skipped": [asdict(s) for s in skipped],
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


def chart(results: list[NodeResult], path: Path, scale: float, suite: str = "TPC-H") -> None:
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
    left.set_title(f"{suite} sf {scale:g}: q-error distribution")
    left.grid(True, which="both", alpha=0.3)
    left.legend(loc="lower right")
    operators = sorted({r.operator for r in results})
    data = [[math.log10(r.q_error) for r in results if r.operator == op] for op in operators]
    right.boxplot(data, tick_labels=operators)
    right.set_ylabel("log10 q-error (tempura)")
    right.set_title("tempura q-error by operator")
    right.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
