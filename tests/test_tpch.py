"""TPC-H at scale 0.01: each query bound to algebra, printed back as Spark SQL, run on Spark, and
compared with ``spark.sql`` of the original text (run once per query, as Spark plans it)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

from tempura import tpch
from tempura.algebra import Query, validate_plan
from tempura.api import Session
from tempura.optimizer.explain import format_physical
from tempura.memo import PhysicalPlan
from tempura.stats import TableStats
from tempura.rules.logical import normalize
from tempura.runtime import compare_results, execute

pytestmark = pytest.mark.spark

Rows = list[tuple[Any, ...]]


@pytest.fixture(scope="module")
def session(spark: object, tpch_catalog: Path) -> Session:
    return Session(tpch_catalog, spark=spark)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def spark_result(spark: Any) -> Callable[[str], list[tuple[Any, ...]]]:
    """``spark.sql`` of a TPC-H query as Spark plans it, run once per query for the module's tests."""
    from tempura.runtime import spark_rows

    found: dict[str, list[tuple[Any, ...]]] = {}

    def of(name: str) -> list[tuple[Any, ...]]:
        if name not in found:
            found[name] = spark_rows(spark.sql(tpch.query_text(name)))
        return found[name]

    return of


def test_declared_schema_matches_generated_files(session: Session) -> None:
    for name in tpch.TABLES:
        frame = session.catalog.table(name).reader(session.spark)
        actual = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
        assert actual == tpch.SCHEMA[name], name


@pytest.mark.parametrize("name", tpch.query_names())
def test_query_equals_spark(session: Session, spark_result: Callable[[str], Rows], name: str) -> None:
    text = tpch.query_text(name)
    query = session.plan(text)
    generated = session.spark_sql(text)
    assert generated.strip() != text.strip()
    expected = spark_result(name)
    actual = [tuple(r) for r in execute(query, session.spark).collect()]
    assert expected, f"{name} returns no rows at scale 0.01, so the comparison would prove little"
    outcome = compare_results(expected, actual, query.ordered, query.order_keys)
    assert outcome.equal, f"{name}: {outcome.reason}\n{generated}"


@pytest.mark.parametrize("name", tpch.query_names())
def test_normalized_query_equals_spark(session: Session, spark_result: Callable[[str], Rows], name: str) -> None:
    """With predicates pushed down (and comma joins turned into inner joins), still Spark's result."""
    text = tpch.query_text(name)
    query = session.plan(text)
    plan = normalize(query.plan)
    validate_plan(plan)
    expected = spark_result(name)
    actual = [tuple(r) for r in execute(Query(plan, query.names, query.ordered, query.order_keys), session.spark).collect()]
    outcome = compare_results(expected, actual, query.ordered, query.order_keys)
    assert outcome.equal, f"{name}: {outcome.reason}\n{plan}"


JOIN_OPERATORS = ("BroadcastHashJoin", "ShuffledHashJoin", "SortMergeJoin", "BroadcastNestedLoopJoin", "CartesianProduct")


def spark_joins_and_scans(frame: object) -> tuple[list[tuple[str, str]], list[str], int]:
    """The joins (algorithm, build side) and scanned tables of Spark's executed plan, in the
    order the plan prints them (pre-order, left before right), and how many range exchanges (a
    global sort's) it runs. Exchange reuse is off while the plan is made, so that a repeated
    subplan prints in full rather than as a reference, and a scan's location is printed whole
    (Spark shortens it past 100 characters, which a deep temporary directory exceeds)."""
    spark = frame.sparkSession  # type: ignore[attr-defined]
    spark.conf.set("spark.sql.exchange.reuse", "false")
    spark.conf.set("spark.sql.maxMetadataStringLength", "10000")
    try:
        text = frame._jdf.queryExecution().executedPlan().toString()  # type: ignore[attr-defined]
    finally:
        spark.conf.unset("spark.sql.exchange.reuse")
        spark.conf.unset("spark.sql.maxMetadataStringLength")
    joins: list[tuple[str, str]] = []
    scans: list[str] = []
    ranges = 0
    for line in text.splitlines():
        ranges += bool(re.search(r"Exchange rangepartitioning", line))
        op = next((o for o in JOIN_OPERATORS if re.search(rf"\b{o}\b", line)), None)
        if op is not None:
            build = re.search(r"Build(Left|Right)", line)
            joins.append((op, build.group(1).lower() if build else ""))
        scan = re.search(r"FileScan .*Location: [^\[]*\[[^\]]*?/([A-Za-z_]+)(?:\.parquet)?/?[\],]", line)
        if scan:
            scans.append(scan.group(1))
    return joins, scans, ranges


def planned_joins_and_scans(plan: PhysicalPlan) -> tuple[list[tuple[str, str]], list[str], int]:
    """:func:`spark_joins_and_scans` of the memo's plan: a sort in one task (``Sort single``, the
    ``COALESCE(1)`` hint) must run without the range exchange of a global sort."""
    joins: list[tuple[str, str]] = []
    scans: list[str] = []
    ranges = 0
    for node in plan.walk():
        if node.operator in JOIN_OPERATORS:
            build = node.details.rsplit("build=", 1)[1] if "build=" in node.details else ""
            joins.append((node.operator, build))
        elif node.operator == "Scan":
            scans.append(node.details.split(" ", 1)[0])
        elif node.operator == "Sort" and node.details.startswith("global"):
            ranges += 1
    return joins, scans, ranges


@pytest.fixture(scope="module")
def planned_session(spark: object, tpch_catalog: Path, tmp_path_factory: pytest.TempPathFactory) -> Session:
    """A session whose estimator sees the statistics of TPC-H at scale 0.01."""
    session = Session(tpch_catalog, spark=spark, workdir=tmp_path_factory.mktemp("work"))  # type: ignore[arg-type]
    stats = json.loads((Path(__file__).parent / "testdata" / "stats" / "tpch-sf0.01.json").read_text())
    for table, value in stats.items():
        session.stats.inject(table, TableStats.from_json(value))
    return session


@pytest.mark.parametrize("name", tpch.query_names())
def test_optimized_query_equals_spark_and_runs_as_planned(planned_session: Session, spark_result: Callable[[str], Rows],
                                                          name: str) -> None:
    """The memo's plan gives Spark's result, and Spark runs it as planned: the same joins with
    the same algorithms and build sides, over the tables in the same order, and a range exchange
    for each global sort (none for a sort in one task)."""
    session = planned_session
    text = tpch.query_text(name)
    planned = session.optimize(text)
    expected = spark_result(name)
    frame = execute(planned.query, session.spark, planned.hints)
    ran = spark_joins_and_scans(frame)  # before running: the executed plan is made once
    actual = [tuple(r) for r in frame.collect()]
    outcome = compare_results(expected, actual, planned.query.ordered, planned.query.order_keys)
    assert outcome.equal, f"{name}: {outcome.reason}\n{format_physical(planned.physical)}"
    assert ran == planned_joins_and_scans(planned.physical), format_physical(planned.physical)
    assert planned.report.seconds < 30  # a guard against a runaway search, not a timing claim


@pytest.mark.parametrize("name", ["q03", "q05", "q08", "q10", "q18", "q21"])
@pytest.mark.parametrize(
    "disabled",
    [
        ("broadcast-hash-join",),
        ("broadcast-hash-join", "shuffled-hash-join"),
        ("broadcast-hash-join", "sort-merge-join"),
        ("join-reorder",),
    ],
    ids=lambda d: "no-" + "+".join(d),
)
def test_forced_algorithms_equal_spark(planned_session: Session, spark_result: Callable[[str], Rows], name: str,
                                      disabled: tuple[str, ...]) -> None:
    """Other physical plans of the same queries — shuffled hash joins, sort-merge joins, the
    rule-based join exploration — give Spark's result too, and run as planned."""
    session = planned_session
    text = tpch.query_text(name)
    planned = session.optimize(text, disabled)
    algorithms = {n.operator for n in planned.physical.walk() if n.operator in JOIN_OPERATORS}
    for rule, operator in (("broadcast-hash-join", "BroadcastHashJoin"), ("shuffled-hash-join", "ShuffledHashJoin"),
                           ("sort-merge-join", "SortMergeJoin")):
        if rule in disabled:
            assert operator not in algorithms
    expected = spark_result(name)
    frame = execute(planned.query, session.spark, planned.hints)
    ran = spark_joins_and_scans(frame)
    outcome = compare_results(expected, [tuple(r) for r in frame.collect()], planned.query.ordered, planned.query.order_keys)
    assert outcome.equal, f"{name}: {outcome.reason}\n{format_physical(planned.physical)}"
    assert ran == planned_joins_and_scans(planned.physical), format_physical(planned.physical)
