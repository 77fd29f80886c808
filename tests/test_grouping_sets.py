"""GROUP BY ROLLUP / CUBE / GROUPING SETS and GROUPING() / GROUPING_ID(): differential tests
against ``spark.sql`` on a small table with NULL and duplicate keys (bound plan and optimized
plan), Spark's answers over empty input, and the errors Spark raises too."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from sparkcompare import assert_plans_equal_spark
from tempura.api import Session
from tempura.errors import BindError, UnsupportedQuery
from tempura.runtime import compare_results, execute
from tempura.sql import parse_query

pytestmark = pytest.mark.spark

ROWS = [
    (1, "x", 2.0, 10, "1.50"),
    (1, "x", 2.0, 10, "1.50"),
    (1, None, 3.0, 20, "2.25"),
    (None, "y", 4.0, None, "-1.00"),
    (None, None, None, 40, None),
    (2, "y", 5.0, 50, "0.75"),
    (2, "z", -1.0, 60, "3.00"),
]
SCHEMAS = {"t": {"a": "int", "b": "string", "c": "double", "d": "bigint", "e": "decimal(7,2)"}}


@pytest.fixture(scope="module")
def session(fast_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Session:
    from decimal import Decimal

    base = tmp_path_factory.mktemp("grouping")
    rows = [(a, b, c, d, Decimal(e) if e is not None else None) for a, b, c, d, e in ROWS]
    fast_spark.createDataFrame(rows, "a int, b string, c double, d bigint, e decimal(7,2)").write.parquet(str(base / "t"))
    path = base / "catalog.yaml"
    path.write_text(yaml.safe_dump({"tables": {"t": {"path": "t", "format": "parquet"}}}))
    return Session(path, spark=fast_spark)


QUERIES = [
    # ROLLUP, CUBE, GROUPING SETS with (), and their Hive spellings.
    "SELECT a, b, SUM(c) AS s, COUNT(*) AS n FROM t GROUP BY ROLLUP(a, b)",
    "SELECT a, b, COUNT(*) AS n, MAX(d) AS m, SUM(e) AS se FROM t GROUP BY CUBE(a, b)",
    "SELECT a, b, SUM(d) AS s, GROUPING_ID() AS gid FROM t GROUP BY GROUPING SETS ((a, b), (a), ())",
    "SELECT a, b, COUNT(*) AS n, GROUPING_ID() AS gid FROM t GROUP BY a, b WITH ROLLUP",
    "SELECT a, b, COUNT(*) AS n, GROUPING_ID() AS gid FROM t GROUP BY a, b WITH CUBE",
    "SELECT a, b, COUNT(*) AS n, GROUPING_ID() AS gid FROM t GROUP BY a, b GROUPING SETS ((b), ())",
    # Plain keys beside a rollup, several grouping elements, nested and duplicate sets.
    "SELECT a, b, d, COUNT(*) AS n, GROUPING_ID() AS gid FROM t GROUP BY a, ROLLUP(b, d)",
    "SELECT a, b, GROUPING_ID(b, a) AS gid FROM t GROUP BY ROLLUP(b), a",
    "SELECT a, b, GROUPING_ID() AS gid, COUNT(*) AS n FROM t GROUP BY ROLLUP(a), CUBE(b)",
    "SELECT a, b, GROUPING_ID() AS gid FROM t GROUP BY CUBE(a, b), b",
    "SELECT a, b, GROUPING_ID() AS gid FROM t GROUP BY GROUPING SETS ((a, b), a, ROLLUP(b))",
    "SELECT a, b, GROUPING_ID() AS gid FROM t GROUP BY GROUPING SETS ((b), (a, b))",
    "SELECT a, COUNT(*) AS n FROM t GROUP BY GROUPING SETS (a, CUBE(a, b))",
    "SELECT a, COUNT(*) AS n FROM t GROUP BY GROUPING SETS ((a), (a), ())",
    "SELECT a, COUNT(*) AS n, GROUPING_ID() AS gid FROM t GROUP BY ROLLUP(a, a)",
    "SELECT a, b, d, COUNT(*) AS n FROM t GROUP BY ROLLUP(a, (b, d))",
    "SELECT SUM(c) AS s, GROUPING_ID() AS gid FROM t GROUP BY GROUPING SETS ((), ())",
    "SELECT SUM(c) AS s, GROUPING_ID() AS gid FROM t GROUP BY GROUPING SETS (())",
    "SELECT a, SUM(c) AS s FROM t GROUP BY a, GROUPING SETS (())",
    # Computed keys, keys by alias and by position; aggregates of a key see its real values.
    "SELECT a + 1 AS k, GROUPING(a + 1) AS g, COUNT(*) AS n FROM t GROUP BY CUBE(a + 1)",
    "SELECT UPPER(b) AS ub, SUM(c) AS s FROM t GROUP BY ROLLUP(ub)",
    "SELECT a, b, COUNT(*) AS n FROM t GROUP BY ROLLUP(1, 2)",
    "SELECT a, SUM(a) AS sa, MAX(a) AS ma, COUNT(a) AS ca FROM t GROUP BY ROLLUP(a)",
    "SELECT a * 2 AS a2, b, SUM(d) AS s FROM t GROUP BY ROLLUP(a, b)",
    # GROUPING / GROUPING_ID in the select list, inside expressions, in HAVING and ORDER BY.
    "SELECT a, b, GROUPING(a) AS ga, GROUPING(b) AS gb, GROUPING_ID() AS gid, GROUPING_ID(a, b) AS gid2, "
    "SUM(c) AS s FROM t GROUP BY ROLLUP(a, b)",
    "SELECT SUM(c) / SUM(d) AS ratio, a, b, GROUPING(a) + GROUPING(b) AS lochierarchy, "
    "CASE WHEN GROUPING(b) = 0 THEN a END AS parent FROM t GROUP BY ROLLUP(a, b)",
    "SELECT a, b, COUNT(*) AS n FROM t GROUP BY ROLLUP(a, b) HAVING GROUPING(b) = 1 OR COUNT(*) > 1",
    "SELECT a, COUNT(*) AS n FROM t GROUP BY ROLLUP(a) HAVING a IS NULL",
    "SELECT a, b FROM t GROUP BY CUBE(a, b) HAVING SUM(c) > 2 AND GROUPING_ID() < 3",
    "SELECT a, b, SUM(c) AS s FROM t GROUP BY ROLLUP(a, b) HAVING SUM(c) > (SELECT AVG(c) FROM t)",
    "SELECT a, b, GROUPING(a) AS ga, GROUPING(b) AS gb, SUM(d) AS s FROM t GROUP BY ROLLUP(a, b) "
    "ORDER BY ga, gb, a NULLS LAST, b NULLS LAST",
    "SELECT a, b, SUM(d) AS s FROM t GROUP BY ROLLUP(a, b) ORDER BY GROUPING(a) DESC, GROUPING(b), a, b LIMIT 4",
    "SELECT a, b FROM t GROUP BY CUBE(a, b) ORDER BY SUM(d) DESC NULLS LAST, a NULLS FIRST, b NULLS FIRST LIMIT 5",
    # Cascaded sets: every decomposable call, of every type, rebuilt from the finest set's groups.
    "SELECT a, b, SUM(e) AS se, AVG(e) AS ae, AVG(a) AS aa, AVG(c) AS ac, AVG(d) AS ad, SUM(a) AS sa, "
    "COUNT(c) AS nc, MIN(e) AS mine, MAX(b) AS maxb, MIN(c) AS minc FROM t GROUP BY CUBE(a, b)",
    "SELECT b, SUM(c) AS s, AVG(e) AS ae FROM t WHERE c IS NULL OR c < 3 GROUP BY ROLLUP(b, a)",
    "SELECT a, b, d, SUM(c + d) AS s, MAX(UPPER(b)) AS mb FROM t GROUP BY a, GROUPING SETS ((b, d), (b), ())",
    # DISTINCT aggregates and SELECT DISTINCT.
    "SELECT a, COUNT(DISTINCT b) AS nb, SUM(DISTINCT d) AS sd, COUNT(*) AS n FROM t GROUP BY CUBE(a, b)",
    "SELECT a, COUNT(DISTINCT c) AS nc FROM t GROUP BY GROUPING SETS ((a), ())",
    "SELECT DISTINCT b FROM t GROUP BY ROLLUP(a, b)",
    # Grouping sets under a filter, a join and a CTE read twice.
    "SELECT * FROM (SELECT a, b, COUNT(*) AS n FROM t GROUP BY ROLLUP(a, b)) AS r WHERE r.n > 1 AND r.b IS NULL",
    "WITH r AS (SELECT a, b, SUM(c) AS s FROM t GROUP BY ROLLUP(a, b)) "
    "SELECT r1.a, r1.s, r2.b, r2.s AS s2 FROM r AS r1 JOIN r AS r2 ON r1.a = r2.a WHERE r1.b IS NULL",
]


def _expected(session: Session, text: str) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in session.spark.sql(text).collect()]


@pytest.mark.parametrize("text", QUERIES)
def test_equals_spark(session: Session, text: str) -> None:
    """The bound plan and the optimized plan (with its join hints) each give Spark's rows."""
    assert_plans_equal_spark(session, text)


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        # Spark: grouping sets have no row over empty input, not even the grand total of ()...
        ("SELECT a, SUM(c) AS s FROM t WHERE d > 1000 GROUP BY ROLLUP(a)", 0),
        ("SELECT COUNT(*) AS n FROM t WHERE d > 1000 GROUP BY CUBE(a, b)", 0),
        ("SELECT SUM(c) AS s FROM t WHERE d > 1000 GROUP BY GROUPING SETS ((), ())", 0),
        ("SELECT a, SUM(c) AS s FROM t WHERE d > 1000 GROUP BY a, GROUPING SETS (())", 0),
        # ... except when () is the only set: that is a global aggregate.
        ("SELECT SUM(c) AS s, GROUPING_ID() AS gid FROM t WHERE d > 1000 GROUP BY GROUPING SETS (())", 1),
    ],
)
def test_empty_input(session: Session, text: str, rows: int) -> None:
    expected = _expected(session, text)
    assert len(expected) == rows  # what Spark does, checked once by hand
    query = session.plan(text)
    actual = [tuple(r) for r in execute(query, session.spark).collect()]
    assert compare_results(expected, actual).equal, actual


def test_null_key_is_told_apart_from_rolled_up_null(session: Session) -> None:
    text = "SELECT a, GROUPING(a) AS g, COUNT(*) AS n FROM t GROUP BY ROLLUP(a)"
    rows = {(a, g): n for a, g, n in execute(session.plan(text), session.spark).collect()}
    null_keys = sum(1 for r in ROWS if r[0] is None)
    assert rows[(None, 0)] == null_keys
    assert rows[(None, 1)] == len(ROWS)
    assert len(rows) == len({r[0] for r in ROWS}) + 1


@pytest.mark.parametrize("text", [
    "SELECT a, b, e, GROUPING(a) AS ga, GROUPING_ID() AS gid, SUM(e) AS se, COUNT(DISTINCT b) AS nb "
    "FROM t GROUP BY ROLLUP(a, b, e)",
    # cascaded: every call is rebuilt from partial states, in Spark's own type
    "SELECT a, b, GROUPING_ID() AS gid, SUM(e) AS se, AVG(e) AS ae, AVG(a) AS aa, AVG(c) AS ac, SUM(a) AS sa, "
    "SUM(c) AS sc, COUNT(b) AS nb, COUNT(*) AS n, MIN(e) AS mine, MAX(b) AS maxb, MIN(d) AS mind FROM t GROUP BY CUBE(a, b)",
])
def test_result_types_are_sparks(session: Session, text: str) -> None:
    expected = [f.dataType for f in session.spark.sql(text).schema.fields]
    actual = [f.dataType for f in execute(session.plan(text), session.spark).schema.fields]
    assert actual == expected


def test_user_names_are_kept(session: Session) -> None:
    query = session.plan("SELECT a AS k, b, GROUPING(a) AS ga, COUNT(*) AS n FROM t GROUP BY CUBE(k, b)")
    assert query.names == ("k", "b", "ga", "n")


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("SELECT a, GROUPING(a) FROM t GROUP BY a", BindError, "needs GROUP BY ROLLUP, CUBE or GROUPING SETS"),
        ("SELECT GROUPING_ID() FROM t", BindError, "needs GROUP BY ROLLUP, CUBE or GROUPING SETS"),
        ("SELECT a, GROUPING(c) FROM t GROUP BY CUBE(a)", BindError, "is not a grouping column"),
        ("SELECT GROUPING_ID(b, a) FROM t GROUP BY ROLLUP(a, b)", BindError, "must be the grouping columns"),
        ("SELECT GROUPING_ID(a) FROM t GROUP BY ROLLUP(a, b)", BindError, "must be the grouping columns"),
        ("SELECT a, c FROM t GROUP BY ROLLUP(a, b)", BindError, "must appear in GROUP BY"),
        ("SELECT COUNT(*) FROM t GROUP BY CUBE(a, b, c, d, e, a, b)", UnsupportedQuery, "more than 64 grouping sets"),
        ("SELECT COUNT(*) FROM t GROUP BY CUBE(" + ", ".join(["a", "b", "c", "d", "e"] * 8) + ")", UnsupportedQuery,
         "more than 64 grouping sets"),
        ("SELECT COUNT(*) FROM t GROUP BY a, b, c, d, e, a, b WITH CUBE", UnsupportedQuery, "more than 64 grouping sets"),
        ("SELECT COUNT(*) FROM t GROUP BY ROLLUP(a, b, c), ROLLUP(a, b, c), ROLLUP(d, e), ROLLUP(a, b)", UnsupportedQuery,
         "more than 64 grouping sets"),
    ],
)
def test_errors_name_their_position(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as raised:
        parse_query(text, SCHEMAS)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
    assert raised.value.line == 1 and raised.value.column is not None  # type: ignore[attr-defined]


ROLLUP_Q01 = """
select l_returnflag, l_linestatus, grouping_id() as gid, sum(l_quantity) as sum_qty,
       avg(l_discount) as avg_disc, count(distinct l_shipmode) as modes, count(*) as count_order
from lineitem
where CAST(l_shipdate AS DATE) <= date '1998-12-01' - interval '90' day
group by rollup(l_returnflag, l_linestatus)
order by l_returnflag, l_linestatus
"""
CASCADED_Q01 = """
select l_returnflag, l_linestatus, grouping(l_linestatus) as g, sum(l_quantity) as sum_qty,
       avg(l_discount) as avg_disc, avg(l_extendedprice) as avg_price, max(l_tax) as max_tax, count(*) as count_order
from lineitem
where CAST(l_shipdate AS DATE) <= date '1998-12-01' - interval '90' day
group by rollup(l_returnflag, l_linestatus)
order by l_returnflag, l_linestatus
"""


def _aggregates(text: str) -> list[Any]:
    """The aggregates of ``text``'s normalized plan, each once."""
    from tempura.algebra import Aggregate, LogicalPlan
    from tempura.rules.logical import normalize

    found: dict[int, Aggregate] = {}

    def walk(node: LogicalPlan) -> None:
        if isinstance(node, Aggregate):
            found[id(node)] = node
        for child in node.inputs:
            walk(child)

    walk(normalize(parse_query(text, SCHEMAS).plan))
    return list(found.values())


@pytest.mark.parametrize(("text", "read"), [
    ("SELECT a, COUNT(DISTINCT b) AS nb, SUM(c) AS s FROM t GROUP BY ROLLUP(a, b)", {"a", "b", "c"}),
    ("SELECT b, MAX(d) AS m, COUNT(DISTINCT d) AS n FROM t WHERE a > 0 GROUP BY CUBE(a, b)", {"a", "b", "d"}),
    ("SELECT a, b, SUM(c) AS s FROM t GROUP BY GROUPING SETS ((a), (b))", {"a", "b", "c"}),  # no set has both
    ("SELECT a, b, SUM(CAST(e AS DECIMAL(30,2))) AS s FROM t GROUP BY ROLLUP(a, b)", {"a", "b", "e"}),  # 40 digits
])
def test_every_grouping_set_aggregates_one_pruned_input(text: str, read: set[str]) -> None:
    """Sets that cannot cascade: after normalization, each grouping set's aggregate still reads
    one and the same input, pruned to every column any of them reads (the widest set's keys and
    the calls' arguments): the memo sees one group for it, as the binding built it, not one
    pruned copy per set."""
    aggregates = _aggregates(text)
    assert len(aggregates) > 1 and len({id(a.input) for a in aggregates}) == 1
    assert set(aggregates[0].input.schema.names) == read


@pytest.mark.parametrize("text", [
    "SELECT a, b, SUM(c) AS s FROM t GROUP BY ROLLUP(a, b)",
    "SELECT b, MAX(d) AS m, AVG(c) AS ac, COUNT(*) AS n FROM t WHERE a > 0 GROUP BY CUBE(a, b)",
    "SELECT a, b, SUM(c) AS s FROM t GROUP BY GROUPING SETS ((a), (a, b), ())",
])
def test_coarser_sets_aggregate_the_finest_sets_groups(text: str) -> None:
    """Sets with a finest one and decomposable calls cascade: one aggregate reads the pruned
    input, by the finest set's keys, and every coarser set aggregates that aggregate."""
    from tempura.algebra import Aggregate

    aggregates = _aggregates(text)
    fine = [a for a in aggregates if not isinstance(a.input, Aggregate)]
    assert len(fine) == 1 and set(fine[0].keys) == {"a", "b"}
    coarser = [a for a in aggregates if a is not fine[0]]
    assert coarser and all(a.input is fine[0] for a in coarser)
    assert all(set(a.keys) < {"a", "b"} for a in coarser)
    assert "e" not in fine[0].input.schema.names


@pytest.mark.parametrize(("name", "text"), [("per-set", ROLLUP_Q01), ("cascaded", CASCADED_Q01)])
def test_standing_rollup_delivers_the_reference_at_every_time_point(
    fast_spark: Any, tpch_catalog: Any, tmp_path_factory: pytest.TempPathFactory, name: str, text: str
) -> None:
    """TPC-H Q1 grouped by ROLLUP as a standing query under ``ivm``: each grouping set's
    aggregate (of the input, or of the finest set's groups when the sets cascade) is maintained
    like any other, and every delivery equals ``spark.sql`` over the snapshot."""
    method = "ivm"
    from scenarios import prepared_scenario
    from tempura.scheduler import load_spec
    from tempura.scheduler.reference import reference
    from tempura.scheduler.simulation import simulate

    root = tmp_path_factory.getbasetemp() / f"grouping-standing-{name}"
    cache = root / ".tpch" / "sf0.01"
    if not cache.exists():
        cache.parent.mkdir(parents=True)
        cache.symlink_to(tpch_catalog.parent)
    spec_path = prepared_scenario(fast_spark, "tpch_q01", root, 0.01)
    (spec_path.parent / "query.sql").write_text(text)
    spec_path.write_text(spec_path.read_text().replace("deliver: last", "deliver: every"))
    spec = load_spec(spec_path)
    run = simulate(fast_spark, spec, method, tmp_path_factory.mktemp(f"grouping-{name}"))
    k = spec.time_points().k
    assert [p.index for p in run.points] == list(range(1, k + 1))
    wrong = [f"t{p.index}: {p.detail}" for p in run.points if not p.correct]
    assert not wrong, wrong
    assert reference(fast_spark, spec, spec.cycle(0), k).count() > 1
