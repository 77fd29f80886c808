"""TVR operators on Spark, and the registration of a source's versions.

Each operator is built over ``Scan`` leaves of small temporary views, lowered to the ordinary
algebra (``lower_plan``), printed as Spark SQL and run; its rows are compared with a result
computed independently: by hand, by the Z-set reference of ``tempura.tvr.zset``, from the table
of partial states in ``tempura.tvr.partials``' docstring, or by Spark's own aggregate over the
merged bag. The key property is ``Finalize(StateMerge(PS(A), VD(ΔA))) = γ(A +# ΔA)`` — and the
same with ``ΔA``'s rows (``StateRows``) in place of ``VD(ΔA)`` — checked on
examples (NULLs, decimals, a group deleted entirely) and by hypothesis.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from decimal import Decimal
from typing import Any, Iterable, Sequence

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from tempura.algebra import AggregateCall, Field, LogicalPlan, Query, Repeat, Scan, ScanColumn
from tempura.errors import CatalogError, ExecutionError
from tempura.runtime import compare_results
from tempura.runtime.sources import SourceData, register_read, register_snapshots, source_delta, source_snapshot
from tempura.sql import to_spark_sql
from tempura.tvr import zset
from tempura.tvr.operators import (
    Consolidate,
    Finalize,
    SourceRead,
    StateAggregate,
    StateMerge,
    StateRows,
    ToDelta,
    ZApply,
    lower_plan,
)
from tempura.tvr.partials import ROWS
from tempura.tvr.zset import MULT

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark(fast_spark: Any) -> Any:
    """The shared session with the tiny-data settings."""
    return fast_spark

Row = tuple[Any, ...]


# -- helpers -------------------------------------------------------------------------------------


def _literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "\\'") + "'"
    if isinstance(value, Decimal):
        return f"'{value}'"  # cast to the column's decimal type below, without a detour via double
    return str(value)


def view(spark: Any, name: str, columns: Sequence[tuple[str, str]], rows: Iterable[Row]) -> Scan:
    """Register ``rows`` as the temporary view ``name`` with ``columns`` (name, Spark type) and
    return a scan of all of its columns."""
    casts = ", ".join(f"CAST(`{c}` AS {t}) AS `{c}`" for c, t in columns)
    names = ", ".join(f"`{c}`" for c, _ in columns)
    body = ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in rows)
    if body:
        sql = f"SELECT {casts} FROM VALUES {body} AS v({names})"
    else:
        sql = "SELECT " + ", ".join(f"CAST(NULL AS {t}) AS `{c}`" for c, t in columns) + " WHERE FALSE"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW `{name}` AS {sql}")
    return Scan(name, tuple(ScanColumn(c, Field(c, t)) for c, t in columns), name)


def run(spark: Any, plan: LogicalPlan) -> tuple[list[Row], dict[str, str]]:
    """``plan`` lowered, printed and run: its rows and its Spark column types."""
    lowered = lower_plan(plan)
    assert lowered.schema.names == plan.schema.names
    frame = spark.sql(to_spark_sql(Query(lowered, lowered.schema.names)))
    assert frame.columns == list(plan.schema.names)
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    return [tuple(r) for r in frame.collect()], types


def rows_of(spark: Any, plan: LogicalPlan) -> list[Row]:
    return run(spark, plan)[0]


def assert_same_rows(expected: Sequence[Row], actual: Sequence[Row]) -> None:
    result = compare_results(list(expected), list(actual))
    assert result, f"{result.reason}\nexpected: {sorted(map(repr, expected))}\nactual:   {sorted(map(repr, actual))}"


def as_zset_rows(z: zset.ZSet) -> list[Row]:
    return [(*row, m) for row, m in z.items()]


def call(name: str, sql: str, type_: str, nullable: bool = True) -> AggregateCall:
    return AggregateCall(Field(name, type_, nullable), sqlglot.parse_one(sql, read="spark"))


def finalize_fields(scan: Scan, keys: tuple[str, ...], calls: tuple[AggregateCall, ...]) -> tuple[Field, ...]:
    return tuple(scan.schema.field(k) for k in keys) + tuple(c.field for c in calls)


Z_COLUMNS = [("k", "string"), ("x", "int"), (MULT, "bigint")]
BAG_COLUMNS = [("k", "string"), ("x", "int")]


# -- SourceRead, ToDelta, Consolidate, ZApply, Repeat ---------------------------------------------


def test_to_delta_gives_every_row_the_sign(spark: Any) -> None:
    bag = [("a", 1), ("a", 1), (None, None)]
    scan = view(spark, "td_bag", BAG_COLUMNS, bag)
    assert_same_rows([("a", 1, 1), ("a", 1, 1), (None, None, 1)], rows_of(spark, ToDelta(scan, 1)))
    assert_same_rows([("a", 1, -1), ("a", 1, -1), (None, None, -1)], rows_of(spark, ToDelta(scan, -1)))


def test_consolidate_sums_equal_rows_and_drops_zeros(spark: Any) -> None:
    z = [
        ("a", 1, 1),
        ("a", 1, 2),  # summed with the row above: 3
        ("b", None, 1),
        ("b", None, -1),  # cancels, NULL in a data column included
        (None, None, -2),
        (None, None, 1),  # all-NULL data: -1 stays
        ("c", 3, 0),  # a zero row
        ("d", 4, -1),
        (None, 5, 2),
    ]
    scan = view(spark, "cons_z", Z_COLUMNS, z)
    expected = as_zset_rows(zset.consolidate(((k, x), m) for k, x, m in z))
    assert_same_rows(expected, rows_of(spark, Consolidate(scan)))
    # By hand, so that the reference itself is pinned down.
    assert sorted(expected, key=repr) == sorted([("a", 1, 3), (None, None, -1), ("d", 4, -1), (None, 5, 2)], key=repr)


def test_zapply_unit_is_a_union(spark: Any) -> None:
    bag = [("a", 1), ("a", 1), (None, None)]
    delta = [("a", 1, 1), ("c", 3, 1), (None, None, 1)]
    left = view(spark, "za_bag", BAG_COLUMNS, bag)
    right = view(spark, "za_unit", Z_COLUMNS, delta)
    expected = zset.apply(bag, zset.consolidate(((k, x), m) for k, x, m in delta))
    assert_same_rows(expected, rows_of(spark, ZApply(left, right, unit=True)))


def test_zapply_applies_signed_multiplicities(spark: Any) -> None:
    bag = [("a", 1), ("a", 1), ("b", 2), (None, None), ("e", 5)]
    delta = [
        ("a", 1, -1),  # one of two copies deleted
        ("b", 2, -1),  # deleted to 0: gone
        ("c", 3, 2),  # inserted twice
        (None, None, 2),
        (None, None, -1),  # NULL row: 1 + 2 - 1
        ("e", 5, -1),
        ("e", 5, 1),  # an unconsolidated delta: deleted and inserted again
    ]
    left = view(spark, "za_bag2", BAG_COLUMNS, bag)
    right = view(spark, "za_signed", Z_COLUMNS, delta)
    expected = zset.apply(bag, zset.consolidate(((k, x), m) for k, x, m in delta))
    assert sorted(expected, key=repr) == sorted(
        [("a", 1), ("c", 3), ("c", 3), (None, None), (None, None), ("e", 5)], key=repr
    )
    assert_same_rows(expected, rows_of(spark, ZApply(left, right, unit=False)))


def test_repeat_copies_each_row_count_times(spark: Any) -> None:
    rows = [("zero", 0), ("one", 1), ("three", 3), ("minus", -2), ("null", None)]
    scan = view(spark, "rep", [("k", "string"), ("n", "bigint")], rows)
    result = rows_of(spark, Repeat(scan, "n"))
    assert Counter(result) == Counter({("one",): 1, ("three",): 3})


def test_source_read_reads_the_view_the_runtime_registers(spark: Any) -> None:
    t = [dt.datetime(2024, 1, 1, h) for h in (1, 2, 3)]
    view(
        spark,
        "sr_src",
        [("id", "int"), ("v", "string"), ("op", "string"), ("ts", "timestamp")],
        [(1, "a", "I", t[0]), (2, "b", "I", t[0]), (1, "a", "D", t[1]), (3, "c", "I", t[1]), (2, "b", "I", t[2])],
    )
    source = SourceData("sr_src", spark.table("sr_src"), "ts", "op", ("D",), tuple(t))
    scan = Scan("sr_src", (ScanColumn("v", Field("value", "string")), ScanColumn("id", Field("id", "int"))), "s")
    delta = SourceRead(scan, 1, 2, True)
    assert delta.view == "sr_src__sd_1_2"
    register_read(spark, source, 1, 2, True, delta.view)
    assert_same_rows([("a", 1, -1), ("c", 3, 1)], rows_of(spark, delta))
    snapshot = SourceRead(scan, 0, 3, False)
    register_read(spark, source, 0, 3, False, snapshot.view)
    assert_same_rows([("b", 2), ("c", 3), ("b", 2)], rows_of(spark, snapshot))


# -- StateAggregate ------------------------------------------------------------------------------

AGG_COLUMNS = [("k", "string"), ("x", "int"), ("d", "decimal(15,2)")]
AGG_CALLS = (
    call("s", "SUM(x)", "bigint"),
    call("c", "COUNT(*)", "bigint", False),
    call("cx", "COUNT(x)", "bigint", False),
    call("a", "AVG(d)", "decimal(19,6)"),
    call("mn", "MIN(x)", "int"),
    call("mx", "MAX(d)", "decimal(15,2)"),
)
STATE_COLUMNS = ["s__sum", "s__n", "c__n", "cx__n", "a__sum", "a__n", "mn__v", "mx__v", ROWS]


def expected_states(rows: Sequence[tuple[Row, int]], keyed: bool) -> list[Row]:
    """The partial states of ``AGG_CALLS`` over (k, x, d) rows with multiplicities, as the table
    in ``tempura.tvr.partials`` defines them (a bag is a Z-set whose multiplicities are 1)."""
    groups: dict[Any, list[tuple[Row, int]]] = defaultdict(list)
    for row, m in rows:
        groups[row[0] if keyed else None].append((row, m))
    out = []
    for key, members in groups.items():
        xs = [(r[1], m) for r, m in members if r[1] is not None]
        ds = [(r[2], m) for r, m in members if r[2] is not None]
        state = (
            sum(x * m for x, m in xs) if xs else None,
            sum(m for _, m in xs),
            sum(m for _, m in members),
            sum(m for _, m in xs),
            sum((d * m for d, m in ds), Decimal(0)) if ds else None,
            sum(m for _, m in ds),
            min(x for x, _ in xs) if xs else None,
            max(d for d, _ in ds) if ds else None,
            sum(m for _, m in members),
        )
        out.append(((key,) if keyed else ()) + state)
    return out


STATE_BAG = [
    ("a", 1, Decimal("1.10")),
    ("a", 1, Decimal("1.10")),
    ("a", None, Decimal("-2.25")),
    ("b", None, None),
    ("b", 7, None),
    (None, 3, Decimal("9999999999999.99")),
    (None, -4, Decimal("9999999999999.99")),
    (None, None, Decimal("0.01")),
]


def test_state_aggregate_of_a_bag(spark: Any) -> None:
    scan = view(spark, "sa_bag", AGG_COLUMNS, STATE_BAG)
    states, types = run(spark, StateAggregate(scan, ("k",), AGG_CALLS, signed=False))
    assert list(types) == ["k", *STATE_COLUMNS]
    assert_same_rows(expected_states([(r, 1) for r in STATE_BAG], keyed=True), states)


def test_state_aggregate_of_a_zset_is_signed(spark: Any) -> None:
    z = [
        (("a", 1, Decimal("1.10")), 2),
        (("a", 5, Decimal("0.05")), -1),
        (("a", 5, Decimal("0.05")), 1),  # cancels: sums 0, counts 0, but MIN still sees 5
        (("b", None, None), -1),
        (("b", 7, Decimal("3.00")), -3),
        ((None, 3, Decimal("9999999999999.99")), 3),
        ((None, None, Decimal("-0.01")), -1),
    ]
    scan = view(spark, "sa_z", AGG_COLUMNS + [(MULT, "bigint")], [(*r, m) for r, m in z])
    states, _ = run(spark, StateAggregate(scan, ("k",), AGG_CALLS, signed=True))
    assert_same_rows(expected_states(z, keyed=True), states)
    # One group by hand: ("b", 7, 3.00) deleted three times and ("b", NULL, NULL) once.
    b = [s for s in states if s[0] == "b"]
    assert b == [("b", -21, -3, -4, -3, Decimal("-9.00"), -3, 7, Decimal("3.00"), -4)]


def test_state_aggregate_without_keys(spark: Any) -> None:
    scan = view(spark, "sa_scalar", AGG_COLUMNS, STATE_BAG)
    states, _ = run(spark, StateAggregate(scan, (), AGG_CALLS, signed=False))
    assert_same_rows(expected_states([(r, 1) for r in STATE_BAG], keyed=False), states)


@pytest.mark.parametrize("signed", [False, True], ids=["bag", "zset"])
def test_scalar_aggregate_over_empty_input_is_one_row(spark: Any, signed: bool) -> None:
    columns = AGG_COLUMNS + ([(MULT, "bigint")] if signed else [])
    scan = view(spark, f"sa_empty_{signed}", columns, [])
    states = rows_of(spark, StateAggregate(scan, (), AGG_CALLS, signed))
    assert len(states) == 1
    final = Finalize(StateAggregate(scan, (), AGG_CALLS, signed), (), AGG_CALLS, tuple(c.field for c in AGG_CALLS))
    # SUM, AVG, MIN, MAX of nothing are NULL; COUNTs are 0, as in Spark.
    assert rows_of(spark, final) == [(None, 0, 0, None, None, None)]


# -- StateMerge and Finalize: Finalize(StateMerge(PS(A), VD(ΔA))) = γ(A +# ΔA) --------------------

MERGE_CALLS = (
    call("s", "SUM(x)", "bigint"),
    call("c", "COUNT(*)", "bigint", False),
    call("cx", "COUNT(x)", "bigint", False),
    call("ax", "AVG(x)", "double"),
    call("sd", "SUM(d)", "decimal(25,2)"),
    call("ad", "AVG(d)", "decimal(19,6)"),
)
MIN_MAX_CALLS = (call("mn", "MIN(x)", "int"), call("mxd", "MAX(d)", "decimal(15,2)"))
D = Decimal

MERGE_BAG: list[Row] = [
    ("a", 1, D("10.00")),
    ("a", 2, D("10.00")),
    ("a", None, D("10.01")),
    ("gone", 5, D("1.00")),  # every row of this group is deleted
    ("gone", 5, D("1.00")),
    ("nulls", None, None),
    (None, 4, D("9999999999999.99")),  # a NULL key is a group too; sums beyond decimal(15,2)
    (None, 4, D("9999999999999.99")),
    ("half", None, D("0.01")),  # AVG(d) = 0.01 / 32 = 0.0003125: rounds half up to 0.000313
    *[("half", 1, D("0.00"))] * 30,
]
MERGE_DELTA: list[tuple[Row, int]] = [
    (("a", 2, D("10.00")), -1),
    (("a", 3, D("0.05")), 2),
    (("gone", 5, D("1.00")), -2),
    (("new", 7, D("-3.33")), 1),
    (("nulls", None, None), 1),
    ((None, 4, D("9999999999999.99")), 1),
    (("half", 1, D("0.00")), 1),
    (("half", None, D("-0.01")), 1),
    (("half", None, D("-0.01")), -1),
]


def merged_plan(
    spark: Any, name: str, bag: Sequence[Row], delta: Sequence[tuple[Row, int]], keys: tuple[str, ...], calls: tuple[AggregateCall, ...],
    direct: bool = False,
) -> tuple[LogicalPlan, Scan]:
    """``Finalize(StateMerge(PS(bag), VD(delta)))`` — or, ``direct``, the merge of the delta's
    rows (``StateRows``) — over views of ``bag`` and ``delta``, and a scan of a view of
    ``bag +# delta`` computed by the Z-set reference."""
    a = view(spark, f"{name}_a", AGG_COLUMNS, bag)
    da = view(spark, f"{name}_da", AGG_COLUMNS + [(MULT, "bigint")], [(*r, m) for r, m in delta])
    merged = view(spark, f"{name}_merged", AGG_COLUMNS, zset.apply(bag, zset.consolidate(delta)))
    partial = StateAggregate(a, keys, calls, signed=False)
    value_delta = StateRows(da, keys, calls) if direct else StateAggregate(da, keys, calls, signed=True)
    plan = Finalize(StateMerge(partial, value_delta, keys, calls), keys, calls, finalize_fields(a, keys, calls))
    return plan, merged


def aggregate_sql(table: str, keys: tuple[str, ...], calls: tuple[AggregateCall, ...]) -> str:
    """Spark's own ``γ(keys; calls)`` over ``table``: the reference."""
    items = [*keys, *(f"{c.call.sql(dialect='spark')} AS {c.field.name}" for c in calls)]
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    return f"SELECT {', '.join(items)} FROM {table}{group}"


def spark_aggregate(spark: Any, table: str, keys: tuple[str, ...], calls: tuple[AggregateCall, ...]) -> tuple[list[Row], dict[str, str]]:
    frame = spark.sql(aggregate_sql(table, keys, calls))
    return [tuple(r) for r in frame.collect()], {f.name: f.dataType.simpleString() for f in frame.schema.fields}


def test_finalize_of_partial_states_is_the_aggregate(spark: Any) -> None:
    scan = view(spark, "fin_a", AGG_COLUMNS, MERGE_BAG)
    calls = MERGE_CALLS + MIN_MAX_CALLS
    plan = Finalize(StateAggregate(scan, ("k",), calls, False), ("k",), calls, finalize_fields(scan, ("k",), calls))
    actual, types = run(spark, plan)
    expected, expected_types = spark_aggregate(spark, "fin_a", ("k",), calls)
    assert_same_rows(expected, actual)
    assert types == expected_types


@pytest.mark.parametrize("direct", [False, True], ids=["value-delta", "delta-rows"])
def test_merge_then_finalize_equals_the_aggregate_of_the_merged_bag(spark: Any, direct: bool) -> None:
    plan, merged = merged_plan(spark, "mf", MERGE_BAG, MERGE_DELTA, ("k",), MERGE_CALLS, direct)
    actual, types = run(spark, plan)
    expected, expected_types = spark_aggregate(spark, merged.table, ("k",), MERGE_CALLS)
    assert_same_rows(expected, actual)
    assert types == expected_types  # AVG of decimal(15,2) is decimal(19,6) in both
    by_key = {r[0]: r for r in actual}
    assert "gone" not in by_key
    assert by_key["half"][-1] == D("0.000313")  # Spark's AVG rounds half up, and so must Finalize
    # By hand: group "a" is (1, 10.00), (NULL, 10.01), (3, 0.05) twice.
    assert_same_rows([("a", 7, 4, 3, 7 / 3, D("20.11"), D("5.027500"))], [by_key["a"]])
    assert by_key[None][5] == D("29999999999999.97")


@pytest.mark.parametrize("direct", [False, True], ids=["value-delta", "delta-rows"])
def test_merge_then_finalize_with_min_and_max_over_an_insert_only_delta(spark: Any, direct: bool) -> None:
    inserts = [(r, m) for r, m in MERGE_DELTA if m > 0]
    calls = MERGE_CALLS + MIN_MAX_CALLS
    plan, merged = merged_plan(spark, "mm", MERGE_BAG, inserts, ("k",), calls, direct)
    actual, types = run(spark, plan)
    expected, expected_types = spark_aggregate(spark, merged.table, ("k",), calls)
    assert_same_rows(expected, actual)
    assert types == expected_types


@pytest.mark.parametrize("direct", [False, True], ids=["value-delta", "delta-rows"])
def test_scalar_merge_then_finalize_after_deleting_every_row(spark: Any, direct: bool) -> None:
    delta = [(r, -m) for r, m in Counter(MERGE_BAG).items()]
    plan, merged = merged_plan(spark, "ms", MERGE_BAG, delta, (), MERGE_CALLS, direct)
    actual, _ = run(spark, plan)
    expected, _ = spark_aggregate(spark, merged.table, (), MERGE_CALLS)
    assert expected == [(None, 0, 0, None, None, None)]
    assert_same_rows(expected, actual)


def test_the_golden_example_summary(spark: Any) -> None:
    """SEMANTICS.md: SUM(IF(cost IS NULL, price, -cost)) per category is 280 and 150 at t1; the
    value delta VD[1,2] is -15 and +350; at t2 it is 265 and 500."""
    columns = [("o_id", "string"), ("category", "string"), ("price", "int"), ("cost", "int")]
    ss1 = [("o1", "c1", 100, 10), ("o2", "c2", 150, None), ("o3", "c1", 120, None), ("o4", "c1", 170, None)]
    sd12 = [
        ("o2", "c2", 150, None, -1),
        ("o2", "c2", 150, 20, 1),
        ("o5", "c2", 300, None, 1),
        ("o6", "c1", 150, 15, 1),
        ("o7", "c2", 220, None, 1),
    ]
    snapshot = view(spark, "golden_ss1", columns, ss1)
    delta = view(spark, "golden_sd12", columns + [(MULT, "bigint")], sd12)
    keys = ("category",)
    calls = (call("gross", "SUM(IF(cost IS NULL, price, -cost))", "bigint"),)
    fields = finalize_fields(snapshot, keys, calls)
    ps1 = StateAggregate(snapshot, keys, calls, signed=False)
    vd12 = StateAggregate(delta, keys, calls, signed=True)
    assert_same_rows([("c1", 280), ("c2", 150)], rows_of(spark, Finalize(ps1, keys, calls, fields)))
    assert_same_rows([("c1", -15), ("c2", 350)], rows_of(spark, Finalize(vd12, keys, calls, fields)))
    assert_same_rows([("c1", 265), ("c2", 500)], rows_of(spark, Finalize(StateMerge(ps1, vd12, keys, calls), keys, calls, fields)))
    # The delta's rows merge into the kept states to the same summary.
    direct = StateMerge(ps1, StateRows(delta, keys, calls), keys, calls)
    assert_same_rows([("c1", 265), ("c2", 500)], rows_of(spark, Finalize(direct, keys, calls, fields)))


# -- the key property, by hypothesis --------------------------------------------------------------

PROPERTY_CALLS = (
    call("s", "SUM(x)", "bigint"),
    call("c", "COUNT(*)", "bigint", False),
    call("cx", "COUNT(x)", "bigint", False),
    call("a", "AVG(x)", "double"),
)
PROPERTY_MIN_MAX = (call("mn", "MIN(x)", "int"), call("mx", "MAX(x)", "int"))

small_rows = st.tuples(st.sampled_from(["a", "b", "c", None]), st.one_of(st.none(), st.integers(-5, 5)))


@st.composite
def bags_and_deltas(draw: st.DrawFn) -> tuple[list[Row], list[tuple[Row, int]], bool]:
    """A bag, and a delta that applies to it: insertions (multiplicity 1 or 2) and, unless
    insert-only, deletions of present rows plus rows inserted and deleted again."""
    bag = draw(st.lists(small_rows, max_size=8))
    insert_only = draw(st.booleans())
    delta = [(row, draw(st.integers(1, 2))) for row in draw(st.lists(small_rows, max_size=5))]
    if not insert_only:
        for row, count in Counter(bag).items():
            deleted = draw(st.integers(0, count))
            if deleted:
                delta.append((row, -deleted))
        for row in draw(st.lists(small_rows, max_size=2)):
            delta += [(row, 1), (row, -1)]
    return bag, draw(st.permutations(delta)), insert_only


@settings(max_examples=25, deadline=None, database=None)
@given(case=bags_and_deltas(), keyed=st.booleans(), direct=st.booleans())
def test_finalize_of_merged_states_is_the_aggregate_of_the_merged_bag(
    spark: Any, case: tuple[list[Row], list[tuple[Row, int]], bool], keyed: bool, direct: bool
) -> None:
    bag, delta, insert_only = case
    keys = ("k",) if keyed else ()
    calls = PROPERTY_CALLS + (PROPERTY_MIN_MAX if insert_only else ())
    a = view(spark, "prop_a", BAG_COLUMNS, bag)
    da = view(spark, "prop_da", Z_COLUMNS, [(*r, m) for r, m in delta])
    view(spark, "prop_merged", BAG_COLUMNS, zset.apply(bag, zset.consolidate(delta)))
    change = StateRows(da, keys, calls) if direct else StateAggregate(da, keys, calls, True)
    merged = StateMerge(StateAggregate(a, keys, calls, False), change, keys, calls)
    plan = lower_plan(Finalize(merged, keys, calls, finalize_fields(a, keys, calls)))
    # Both sides in one Spark job, to keep the examples fast.
    both = spark.sql(
        f"SELECT 'actual' AS side, * FROM ({to_spark_sql(Query(plan, plan.schema.names))}) "
        f"UNION ALL SELECT 'expected' AS side, * FROM ({aggregate_sql('prop_merged', keys, calls)})"
    ).collect()
    actual = [tuple(r)[1:] for r in both if r[0] == "actual"]
    expected = [tuple(r)[1:] for r in both if r[0] == "expected"]
    assert_same_rows(expected, actual)


# -- sources: registering a source's versions ------------------------------------------------------

T = [dt.datetime(2024, 3, 1, 9), dt.datetime(2024, 3, 1, 10), dt.datetime(2024, 3, 1, 11)]
CDC_COLUMNS = [("o_id", "string"), ("amount", "int"), ("op", "string"), ("ts", "timestamp")]
CDC_ROWS = [
    ("o1", 10, "I", dt.datetime(2024, 3, 1, 8, 30)),
    ("o2", 20, "I", dt.datetime(2024, 3, 1, 8, 45)),
    ("o3", None, "I", T[0]),  # exactly at t1: in version 1
    ("o1", 10, "D", dt.datetime(2024, 3, 1, 9, 0, 0, 1)),  # a deletion carries the row's data
    ("o2", 20, "U", dt.datetime(2024, 3, 1, 9, 30)),  # not a delete value: a second copy of o2
    ("o4", 40, None, T[1]),  # a NULL op: an insertion
    ("o2", 20, "-", dt.datetime(2024, 3, 1, 10, 15)),  # the second delete value
    ("o3", None, "D", dt.datetime(2024, 3, 1, 10, 30)),  # deletes a row with a NULL in it
    ("o5", 50, "I", dt.datetime(2024, 3, 1, 11, 0, 0, 1)),  # after t3: never read
]


@pytest.fixture(scope="module")
def cdc(spark: Any) -> SourceData:
    view(spark, "orders", CDC_COLUMNS, CDC_ROWS)
    return SourceData("orders", spark.table("orders"), "TS", "op", ("D", "-"), tuple(T))


def collect(frame: Any) -> list[Row]:
    return [tuple(r) for r in frame.collect()]


def test_source_data_columns(spark: Any, cdc: SourceData) -> None:
    assert cdc.arrival_column == "ts"
    assert cdc.data_columns == ("o_id", "amount")
    assert source_delta(cdc, 0, 1).columns == ["o_id", "amount", MULT]
    assert source_snapshot(cdc, 1).columns == ["o_id", "amount"]
    with pytest.raises(CatalogError, match="'orders'.*'arrived'"):
        SourceData("orders", cdc.frame, "arrived", "op", time_values=tuple(T))


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, 0, []),
        (0, 1, [("o1", 10, 1), ("o2", 20, 1), ("o3", None, 1)]),
        (1, 2, [("o1", 10, -1), ("o2", 20, 1), ("o4", 40, 1)]),
        (2, 3, [("o2", 20, -1), ("o3", None, -1)]),
        (1, 3, [("o1", 10, -1), ("o2", 20, 1), ("o4", 40, 1), ("o2", 20, -1), ("o3", None, -1)]),  # not consolidated
        (3, 3, []),
    ],
)
def test_cdc_deltas(spark: Any, cdc: SourceData, start: int, end: int, expected: list[Row]) -> None:
    register_read(spark, cdc, start, end, True, "orders_delta")
    assert_same_rows(expected, collect(spark.table("orders_delta")))


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (0, []),
        (1, [("o1", 10), ("o2", 20), ("o3", None)]),
        (2, [("o2", 20), ("o2", 20), ("o3", None), ("o4", 40)]),
        (3, [("o2", 20), ("o4", 40)]),
    ],
)
def test_cdc_snapshots(spark: Any, cdc: SourceData, version: int, expected: list[Row]) -> None:
    register_read(spark, cdc, 0, version, False, "orders_snapshot")
    assert_same_rows(expected, collect(spark.table("orders_snapshot")))


def test_snapshots_register_under_the_table_names(spark: Any, cdc: SourceData) -> None:
    view(spark, "customers", [("o_id", "string"), ("name", "string"), ("at", "int")], [("o2", "x", 1), ("o4", "y", 3)])
    customers = SourceData("customers", spark.table("customers"), "at", time_values=(1, 2, 3))
    sources = {"orders": cdc, "customers": customers}
    query = "SELECT o.o_id, o.amount, c.name, c.at FROM orders o JOIN customers c ON o.o_id = c.o_id"
    register_snapshots(spark, sources, 2)
    assert_same_rows([("o2", 20, "x", 1), ("o2", 20, "x", 1)], collect(spark.sql(query)))
    # Again at a later version: the sources' frames still read the original rows.
    register_snapshots(spark, sources, 3)
    assert_same_rows([("o2", 20, "x", 1), ("o4", 40, "y", 3)], collect(spark.sql(query)))
    spark.catalog.dropTempView("orders")
    spark.catalog.dropTempView("customers")


def test_deleting_a_missing_row_is_an_error(spark: Any) -> None:
    rows = [
        ("o1", 10, "I", T[0]),
        ("o9", 90, "D", T[0]),  # deleted at t1, inserted only at t2
        ("o9", 90, "I", T[1]),
        ("o1", 10, "D", T[2]),
        ("o1", 10, "D", T[2]),  # o1 deleted twice
    ]
    view(spark, "bad_orders", CDC_COLUMNS, rows)
    source = SourceData("bad_orders", spark.table("bad_orders"), "ts", "op", time_values=tuple(T))
    with pytest.raises(ExecutionError, match=r"'bad_orders'.*o_id='o9', amount=90.*1 more time than"):
        register_read(spark, source, 0, 1, False, "bad_snapshot")
    # by t2, o9 is inserted as often as deleted, but its deletion came first: the feed is wrong
    with pytest.raises(ExecutionError, match=r"'bad_orders': a deletion by t1 .*o_id='o9'"):
        register_read(spark, source, 0, 2, False, "bad_snapshot")
    lenient = SourceData("bad_orders", spark.table("bad_orders"), "ts", "op", time_values=tuple(T),
                         deletion_policy="lenient")
    register_read(spark, lenient, 0, 2, False, "bad_snapshot")  # the absent row's deletion removes nothing
    assert_same_rows([("o1", 10), ("o9", 90)], collect(spark.table("bad_snapshot")))
    register_read(spark, lenient, 0, 3, False, "bad_snapshot")  # nor does o1's second deletion
    assert_same_rows([("o9", 90)], collect(spark.table("bad_snapshot")))
    # A delta is not consolidated, so it is not checked.
    register_read(spark, source, 2, 3, True, "bad_delta")
    assert_same_rows([("o1", 10, -1), ("o1", 10, -1)], collect(spark.table("bad_delta")))


def test_version_arguments_are_checked(spark: Any, cdc: SourceData) -> None:
    with pytest.raises(ValueError, match="snapshot"):
        register_read(spark, cdc, 1, 2, False, "x")
    with pytest.raises(ValueError, match="0..3"):
        register_read(spark, cdc, 2, 4, True, "x")


def test_insert_only_source_keeps_its_arrival_column(spark: Any) -> None:
    days = (dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2024, 1, 3))
    rows = [(1, "a", days[0]), (2, "b", days[1]), (2, "b", days[1]), (3, None, days[2]), (4, "d", dt.date(2024, 1, 4))]
    view(spark, "events", [("id", "int"), ("v", "string"), ("arrived", "date")], rows)
    source = SourceData("events", spark.table("events"), "arrived", time_values=days)
    assert source.data_columns == ("id", "v", "arrived")
    register_read(spark, source, 1, 3, True, "events_delta")
    assert_same_rows(
        [(2, "b", days[1], 1), (2, "b", days[1], 1), (3, None, days[2], 1)], collect(spark.table("events_delta"))
    )
    register_snapshots(spark, {"events": source}, 2)
    query = "SELECT id, v, arrived FROM events WHERE arrived > DATE '2024-01-01'"
    assert_same_rows([(2, "b", days[1]), (2, "b", days[1])], collect(spark.sql(query)))
    spark.catalog.dropTempView("events")
