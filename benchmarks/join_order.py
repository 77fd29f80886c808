"""``tempura bench join-order``: TPC-H or TPC-DS queries written in a bad join order, four planners.

The TPC-H queries (``queries/join_order/``) are Q2, Q3, Q5, Q7, Q8, Q9, Q10, Q11, Q18 and Q21
with the FROM lists rewritten adversarially: big tables first, tables without a predicate
between them side by side. The TPC-DS queries (``queries/join_order_tpcds/``, ``--suite tpcds``)
are the star joins Q13, Q17, Q19, Q25, Q26, Q27, Q29, Q48, Q85 and Q91, rewritten the same way:
the FROM list starts with the biggest table that has a table without a predicate to it (in a
single-fact star, a dimension: the fact joins every dimension), and each next table is the biggest
left without a predicate to the one before it (the biggest left when every one has). Contenders,
on the same analysed tables:

- ``spark-written``: Spark as written, CBO off: its rule-based ``ReorderJoin`` excluded too, so
  the tables are joined left-deep in FROM order, with a cross product wherever two adjacent
  tables have no predicate between them;
- ``spark-rules``: Spark's defaults with CBO off: ``ReorderJoin`` moves a table forward only to
  avoid a cross product, the written order otherwise;
- ``spark-cbo``: Spark with ``spark.sql.cbo.enabled`` and ``spark.sql.cbo.joinReorder.enabled``
  on, with table and column statistics from ``ANALYZE``;
- ``tempura``: tempura's plan, run with its join order and join hints (Spark's reordering and
  AQE off).

Spark's other settings are its defaults (adaptive execution on for the Spark contenders).
Each query runs once per contender to warm up, then ``repeat`` rounds in which the contenders
run one after the other, in an order that rotates each round. A run still going after
``timeout`` seconds is cancelled; a contender whose warm-up was cancelled is not run again on
that query, and its time is reported as the timeout, a lower bound (``timed_out``), as are the
ratios over it. ``spark-written`` is not run at all when one of its cross products would make
more than ``max_cross_rows`` rows by Spark's own estimate (``not_run`` gives the product): such a
run cannot finish within any timeout worth waiting for and may take the driver's memory with it;
its time is the timeout, a lower bound, as for a cancelled run. A Spark contender that fails
(not tempura) is reported the same way, with its error's first line (``failed``). A query's written order *has a cross product* when Spark's physical plan for
``spark-written`` holds a ``CartesianProduct`` or a ``BroadcastNestedLoopJoin``; it is *bad* when
one of those cross products multiplies rows: both its inputs have more than one row by Spark's
own estimate (the written order's logical plan costed with the analysed statistics). A cross
product with one row, such as ``nation`` filtered on its name, costs no more than a join. The
report gives each contender's median time, the ratios to tempura, their geometric means,
tempura's optimization time and memo size, and whether each result equals Spark's; as JSON and a
PNG chart.
"""
from __future__ import annotations

import json
import math
import statistics
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from benchmarks.cardinality import BENCH_DRIVER_MEMORY, SUITES, Progress, prepare, tables_read, timed_collect
from tempura.api import Session
from tempura.errors import TempuraError
from tempura.runtime import SparkPlanning, compare_results, execute

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

QUERY_DIR = Path(__file__).parent / "queries" / "join_order"
QUERIES = ["q02", "q03", "q05", "q07", "q08", "q09", "q10", "q11", "q18", "q21"]
# TPC-DS: ten of its star joins, rewritten the same way
# (``queries/join_order_tpcds/``).
TPCDS_QUERY_DIR = Path(__file__).parent / "queries" / "join_order_tpcds"
TPCDS_QUERIES = ["q13", "q17", "q19", "q25", "q26", "q27", "q29", "q48", "q85", "q91"]
SUITE_QUERIES = {"tpch": QUERIES, "tpcds": TPCDS_QUERIES}
SUITE_QUERY_DIRS = {"tpch": QUERY_DIR, "tpcds": TPCDS_QUERY_DIR}
CONTENDERS = ["spark-written", "spark-rules", "spark-cbo", "tempura"]
REFERENCES = ("spark-rules", "spark-cbo", "spark-written")  # the first that finished gives the rows to compare

SPARK_CONF = {
    "spark-written": {
        "spark.sql.cbo.enabled": "false",
        "spark.sql.cbo.joinReorder.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.ReorderJoin",
    },
    "spark-rules": {
        "spark.sql.cbo.enabled": "false",
        "spark.sql.cbo.joinReorder.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.optimizer.excludedRules": "",
    },
    "spark-cbo": {
        "spark.sql.cbo.enabled": "true",
        "spark.sql.cbo.planStats.enabled": "true",
        "spark.sql.cbo.joinReorder.enabled": "true",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.optimizer.excludedRules": "",
    },
    "tempura": {"spark.sql.cbo.enabled": "false", **SparkPlanning().conf()},
}


def query_text(name: str, suite: str = "tpch") -> str:
    """The adversarially ordered text of query ``name`` of ``suite``."""
    if name not in SUITE_QUERIES[suite]:
        known = ", ".join(SUITE_QUERIES[suite])
        raise TempuraError(f"unknown {SUITES[suite].title} join-order query: {name} (known: {known})")
    return (SUITE_QUERY_DIRS[suite] / f"{name}.sql").read_text(encoding="utf-8")


MAX_CROSS_ROWS = 1e10
"""Above this many rows (Spark's estimate) a cross product of the written order is not run."""


def run(scale: float, workdir: Path, out: Path, queries: list[str] | None, repeat: int, timeout: float, progress: Progress,
        suite: str = "tpch", data: Path | None = None, max_cross_rows: float = MAX_CROSS_ROWS) -> dict[str, Any]:
    from tempura.runtime import get_spark

    chosen = SUITES[suite]
    names = queries or SUITE_QUERIES[suite]
    texts = {name: query_text(name, suite) for name in names}
    spark = get_spark(conf={"spark.driver.memory": BENCH_DRIVER_MEMORY})
    # TPC-H analyses every table, as it always has; TPC-DS only those its queries read.
    tables = None if suite == "tpch" else tables_read(list(texts.values()))
    session = prepare(scale, workdir, spark, progress, chosen, data, tables)
    results = []
    for name in names:
        progress(f"{name}: planning and running {repeat} alternating rounds")
        results.append(measure(spark, session, name, repeat, timeout, texts[name], max_cross_rows))
    report = build_report(scale, repeat, results, chosen.title)
    out.mkdir(parents=True, exist_ok=True)
    stem = chosen.stem("join-order", scale)
    (out / f"{stem}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    chart(report, out / f"{stem}.png")
    report["files"] = [str(out / f"{stem}.json"), str(out / f"{stem}.png")]
    return report


def measure(spark: SparkSession, session: Session, name: str, repeat: int, timeout: float,
            text: str | None = None, max_cross_rows: float = MAX_CROSS_ROWS) -> dict[str, Any]:
    text = query_text(name) if text is None else text
    planned = session.optimize(text)
    bound = planned.query
    sides = written_cross_product_rows(spark, text)
    largest = max((cross_rows(pair) for pair in sides), default=0.0)
    not_run = {"spark-written": f"a cross product of {largest:.3g} estimated rows"} if largest > max_cross_rows else {}
    failed: dict[str, str] = {}

    def frame(contender: str) -> Callable[[], DataFrame]:
        def make() -> DataFrame:
            for key, value in SPARK_CONF[contender].items():
                spark.conf.set(key, value)
            if contender == "tempura":
                return execute(bound, spark, planned.hints, SparkPlanning())
            return spark.sql(text)

        return make

    times: dict[str, list[float]] = {c: [] for c in CONTENDERS}
    rows: dict[str, list[tuple[Any, ...]] | None] = {}
    for contender in CONTENDERS:  # warm-up, and the rows to compare
        if contender in not_run:
            seconds, rows[contender] = timeout, None
        else:
            try:
                seconds, rows[contender] = timed_collect(spark, frame(contender), timeout)
            except Exception as error:  # noqa: BLE001 - a Spark contender's failure is reported, not raised
                if contender == "tempura":
                    raise
                failed[contender] = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
                seconds, rows[contender] = timeout, None
        if rows[contender] is None:
            times[contender] = [seconds]  # cancelled: the timeout, a lower bound, and no more runs
    running = [c for c in CONTENDERS if rows[c] is not None]
    for round_ in range(repeat):
        shift = round_ % len(running) if running else 0
        for contender in running[shift:] + running[:shift]:
            seconds, _ = timed_collect(spark, frame(contender), timeout)
            times[contender].append(seconds)
    reference = next((rows[c] for c in REFERENCES if rows[c] is not None), None)
    equal = {}
    for contender in CONTENDERS:
        got = rows[contender]
        if got is not None and got is not reference:
            equal[contender] = reference is not None and compare_results(reference, got, bound.ordered, bound.order_keys).equal
    return {
        "query": name,
        "times": times,
        "median": {c: statistics.median(v) for c, v in times.items()},
        "timed_out": {c: rows[c] is None for c in CONTENDERS},
        "not_run": not_run,
        "failed": failed,
        "equal_to_spark": equal,
        "optimization_seconds": planned.report.seconds,
        "memo_groups": planned.report.groups,
        "memo_expressions": planned.report.expressions,
        "physical_alternatives": planned.report.alternatives,
        "tempura_joins": [n.operator + (" " + n.details.rsplit("build=", 1)[1] if "build=" in n.details else "")
                          for n in planned.physical.walk() if "Join" in n.operator],
        "written_order_cross_product": written_joins(spark, text),
        "written_cross_product_rows": sides,
        "written_order_bad": any(multiplies_rows(pair) for pair in sides),
    }


def written_joins(spark: SparkSession, text: str) -> bool:
    """Whether Spark, joining in written order, plans a cross product (a nested-loop join or a
    cartesian product) for the query."""
    with spark_conf(spark, SPARK_CONF["spark-written"] | {"spark.sql.adaptive.enabled": "false"}):
        plan = spark.sql(text)._jdf.queryExecution().executedPlan().toString()
    return "CartesianProduct" in plan or "BroadcastNestedLoopJoin" in plan


@contextmanager
def spark_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` in the session's SQL conf for the block; each key's earlier value (or its
    absence) restored after."""
    earlier = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, before in earlier.items():
            if before is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, before)


def written_cross_product_rows(spark: SparkSession, text: str) -> list[list[float | None]]:
    """The estimated rows of both inputs of every cross product (an inner join without a
    condition) of the written order's logical plan, by Spark's cost-based statistics on the
    analysed tables (``None``: Spark has no estimate). Spark's reordering stays off, so the plan
    keeps the written order."""
    costed = {"spark.sql.cbo.enabled": "true", "spark.sql.cbo.planStats.enabled": "true"}
    with spark_conf(spark, SPARK_CONF["spark-written"] | costed):
        plan = spark.sql(text)._jdf.queryExecution().optimizedPlan()
        found: list[list[float | None]] = []
        pending = [plan]
        while pending:
            node = pending.pop()
            children = node.children()
            pending.extend(children.apply(i) for i in range(children.size()))
            if node.nodeName() == "Join" and node.condition().isEmpty() and node.joinType().toString() in ("Inner", "Cross"):
                found.append([_estimated_rows(node.left()), _estimated_rows(node.right())])
        return found


def _estimated_rows(node: Any) -> float | None:
    count = node.stats().rowCount()
    if not count.isDefined():
        return None
    value = count.get()  # a Scala BigInt, which Py4J hands over as a Python int
    return float(value if isinstance(value, (int, float)) else value.toString())


def cross_rows(sides: list[float | None]) -> float:
    """The rows a cross product makes by the estimates of its inputs (0 when one is unknown)."""
    return 0.0 if any(rows is None for rows in sides) else math.prod(rows for rows in sides if rows is not None)


def multiplies_rows(sides: list[float | None]) -> bool:
    """A cross product multiplies rows unless one input is known to have at most one row."""
    return not any(rows is not None and rows <= 1 for rows in sides)


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(max(v, 1e-9)) for v in values) / len(values)) if values else float("nan")


RATIOS = {"written": "spark-written", "rules": "spark-rules", "cbo": "spark-cbo"}


def build_report(scale: float, repeat: int, results: list[dict[str, Any]], suite: str = "TPC-H") -> dict[str, Any]:
    for r in results:
        m = r["median"]
        for short, contender in RATIOS.items():
            r[f"ratio_{short}_to_tempura"] = m[contender] / m["tempura"]
    bad = [r for r in results if r["written_order_bad"]]
    report: dict[str, Any] = {
        "benchmark": "join-order",
        "suite": suite,
        "scale": scale,
        "repeat": repeat,
        "contenders": CONTENDERS,
        "spark_conf": SPARK_CONF,
        "geomean_seconds": {c: geomean([r["median"][c] for r in results]) for c in CONTENDERS},
    }
    for short in RATIOS:
        report[f"geomean_ratio_{short}_to_tempura"] = geomean([r[f"ratio_{short}_to_tempura"] for r in results])
    report |= {
        "cross_product_queries": [r["query"] for r in results if r["written_order_cross_product"]],
        "bad_written_order_queries": [r["query"] for r in bad],
        "geomean_ratio_written_to_tempura_bad_order": geomean([r["ratio_written_to_tempura"] for r in bad]),
        "min_ratio_written_to_tempura_bad_order": min((r["ratio_written_to_tempura"] for r in bad), default=float("nan")),
        "timed_out": {c: [r["query"] for r in results if r.get("timed_out", {}).get(c)] for c in CONTENDERS},
        "not_run": {r["query"]: r["not_run"] for r in results if r.get("not_run")},
        "failed": {r["query"]: r["failed"] for r in results if r.get("failed")},
        "max_optimization_seconds": max((r["optimization_seconds"] for r in results), default=0.0),
        "all_equal": all(all(r["equal_to_spark"].values()) for r in results),
        "queries": results,
    }
    return report


def chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    queries = report["queries"]
    names = [q["query"] for q in queries]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.2
    for i, contender in enumerate(CONTENDERS):
        xs = [j + (i - 1.5) * width for j in range(len(names))]
        bars = left.bar(xs, [q["median"][contender] for q in queries], width, label=contender)
        for bar, q in zip(bars, queries):
            if q.get("timed_out", {}).get(contender):
                bar.set_hatch("//")  # cancelled at the timeout: a lower bound
    left.set_xticks(range(len(names)), names)
    left.set_yscale("log")
    left.set_ylabel("median seconds (log)")
    left.set_title(f"{report.get('suite', 'TPC-H')}, adversarial FROM order, scale {report['scale']:g} (hatched: timed out)")
    left.legend()
    positions = list(range(len(names)))
    for i, (short, label) in enumerate((("written", "written / tempura"), ("rules", "Spark rules / tempura"),
                                        ("cbo", "Spark CBO / tempura"))):
        right.bar([x + (i - 1) * 0.27 for x in positions], [q[f"ratio_{short}_to_tempura"] for q in queries], 0.27, label=label)
    right.axhline(1.0, color="black", linewidth=0.8)
    right.set_xticks(positions, names)
    right.set_yscale("log")
    right.set_title("time ratio to tempura (above 1: tempura faster)")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
