"""Arrival bounds and proven-empty groups (``tempura.tvr.bounds``).

The ranges themselves are checked as arithmetic; what the planner does with them is checked by
running its plans on Spark against ``spark.sql`` on each snapshot, for every method: queries that
filter on an insert-only table's arrival column, where later deltas are provably empty, and
joins on keys that land once with the rows that reference them, where a join of old and new
rows is provably empty.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from test_tvr_properties import ARRIVAL, SETTINGS, Case, Table, bases, check_case, plan_case, predicates, tables
from tempura.tvr.bounds import ArrivalBounds, Interval, SourceBound, encode_time, predicate_facts
from tempura.tvr.operators import SourceRead


EMPTY = re.compile(r"WHERE\s+FALSE")  # how an empty relation reads in a fragment's SQL


# -- the arithmetic ------------------------------------------------------------------------------


def test_a_meet_of_disjoint_ranges_is_empty() -> None:
    assert Interval(1, 5, low_open=True).meet(Interval(None, 1)).empty
    assert Interval(2, None).meet(Interval(None, 2, high_open=True)).empty
    assert not Interval(2, None).meet(Interval(None, 2)).empty
    assert Interval(3, 1).empty


def test_a_hull_keeps_the_wider_ends() -> None:
    hull = Interval(1, 5, low_open=True).join(Interval(0, 3, high_open=True))
    assert (hull.low, hull.high, hull.low_open, hull.high_open) == (0, 5, False, False)
    assert Interval(1, 5).join(Interval(None, 2)).low is None
    tie = Interval(1, 2, low_open=True).join(Interval(1, 3, low_open=False))
    assert not tie.low_open


def test_predicate_facts_read_comparisons_with_constants() -> None:
    condition = sqlglot.parse_one(
        "o >= '1994-01-01' AND o < DATE '1995-01-01' AND x IN (1, 2, 5) AND y BETWEEN 2 AND 3 AND 4 > z "
        "AND (s = 'a' OR x = 9) AND w = 7 AND w < 7"
    )
    facts = predicate_facts(condition, {"o": "date", "x": "number", "y": "number", "z": "number", "w": "number", "s": "string"})
    day = encode_time(dt.date(1994, 1, 1), "date")
    assert facts["o"] == Interval(day, day + 365, high_open=True)
    assert facts["x"] == Interval(1, 5)
    assert facts["y"] == Interval(2, 3)
    assert facts["z"] == Interval(None, 4, high_open=True)
    assert facts["w"].empty  # w = 7 and w < 7
    assert "s" not in facts  # a disjunction proves nothing here
    cast = sqlglot.parse_one("CAST(o AS DATE) >= CAST('1994-01-01' AS DATE) AND CAST(o AS DATE) < "
                             "CAST('1994-01-01' AS DATE) + INTERVAL '1' YEAR AND CAST(x AS INT) > 1.5")
    facts = predicate_facts(cast, {"o": "date", "x": "number"})
    assert facts == {"o": Interval(day, day + 365, high_open=True)}  # a cast to int may change x's values


def test_time_points_compare_with_dates_at_midnight() -> None:
    assert encode_time(dt.datetime(2026, 11, 22, 6, 0), "date") == encode_time(dt.date(2026, 11, 22), "date")
    assert encode_time(dt.date(2026, 11, 22), "timestamp") is None  # no simple comparison: no fact
    assert encode_time(3, "number") == 3.0


def _read(start: int, end: int, delta: bool) -> SourceRead:
    from tempura.algebra import Field, Scan, ScanColumn

    scan = Scan("orders", (ScanColumn("o_orderdate", Field("o_orderdate", "date")), ScanColumn("o_key", Field("o_key", "bigint"))), "orders")
    return SourceRead(scan, start, end, delta)


def test_a_delta_read_is_bounded_on_both_ends_only_when_rows_arrive_on_time() -> None:
    values = (dt.date(1993, 1, 1), dt.date(1995, 1, 1), dt.date(1997, 1, 1))
    on_time = ArrivalBounds({"orders": SourceBound("O_ORDERDATE", values, origin=dt.date(1992, 1, 1))})
    late = ArrivalBounds({"orders": SourceBound("o_orderdate", values, origin=dt.date(1992, 1, 1), on_time=False)})
    days = [encode_time(v, "date") for v in values]
    first = encode_time(dt.date(1992, 1, 1), "date")
    assert on_time.fact(_read(1, 2, True)) == ("o_orderdate", Interval(days[0], days[1], low_open=True))
    assert late.fact(_read(1, 2, True)) == ("o_orderdate", Interval(first, days[1], low_open=True))
    assert on_time.fact(_read(0, 3, False)) == ("o_orderdate", Interval(first, days[2], low_open=True))
    fact = on_time.predicate(_read(1, 2, True))
    assert fact is not None and fact[0] == "o_orderdate"
    assert fact[1].sql(dialect="spark") == ("o_orderdate > CAST('1993-01-01' AS DATE) AND "
                                              "o_orderdate <= CAST('1995-01-01' AS DATE)")
    assert ArrivalBounds({}).fact(_read(1, 2, True)) is None


# -- plans on Spark ------------------------------------------------------------------------------


@st.composite
def arrival_filtered(draw: st.DrawFn) -> Case:
    """A query over insert-only tables with a filter on one table's arrival column (``ts``) that
    leaves out at least one interval (its first or its last): the reads of the intervals outside
    it are provably empty."""
    k = draw(st.integers(3, 5))
    base = draw(bases())
    aliases = sorted({c.sql.split(".")[0] for c in base.columns} & {"r", "u", "w", "o"})
    if not aliases:
        base = draw(bases(allow_derived=False))
        aliases = sorted({c.sql.split(".")[0] for c in base.columns} & {"r", "u", "w", "o"})
    alias = draw(st.sampled_from(aliases))
    n = draw(st.integers(2, k - 1))  # every filter below leaves out interval 1 or interval k
    on_time = draw(st.sampled_from([f"{alias}.{ARRIVAL} <= {n}", f"{alias}.{ARRIVAL} < {n}", f"{alias}.{ARRIVAL} > {n - 1}",
                                    f"{alias}.{ARRIVAL} BETWEEN {n} AND {n}", f"{alias}.{ARRIVAL} = {n}",
                                    f"{alias}.{ARRIVAL} IN ({n}, {max(1, n - 1)})"]))
    where = on_time if draw(st.booleans()) else f"{on_time} AND {draw(predicates(base))}"
    columns = ", ".join(f"{c.sql} AS c{i}" for i, c in enumerate(base.columns[:2]))
    shape = draw(st.sampled_from(["project", "aggregate"]))
    if shape == "project":
        sql = f"SELECT {columns} FROM {base.sql} WHERE {where}"
    else:
        key = base.columns[0].sql
        sql = f"SELECT {key} AS g0, COUNT(*) AS m0 FROM {base.sql} WHERE {where} GROUP BY {key}"
    data = draw(tables(k, frozenset()))
    weights = tuple(draw(st.lists(st.sampled_from([1, 1, 4]), min_size=k, max_size=k)))
    return Case(sql, tuple(t for t in data if t.name in base.tables), k, draw(st.sampled_from(["deadline", "total"])),
                arrival_weights=weights, bounds=True)


@settings(max_examples=6, **SETTINGS)  # type: ignore[arg-type]
@given(case=arrival_filtered())
def test_plans_with_proven_empty_deltas_deliver_the_reference(fast_spark: Any, case: Case) -> None:
    check_case(fast_spark, case)


R = Table("r", ((1, 10, "x", 1), (2, 20, "y", 1), (1, 11, "y", 2), (3, 30, "x", 3), (2, 21, "x", 4)), False)
U = Table("u", ((1, 100, "x", 1), (2, 200, "y", 2), (3, 300, "x", 3), (1, 101, "y", 4)), False)


@pytest.mark.parametrize("objective", ["deadline", "total"])
def test_a_join_with_an_empty_delta_reads_nothing_of_the_other_side(fast_spark: Any, objective: str) -> None:
    """``r`` filtered to its first interval: from t2 on, its deltas are empty, so the terms of the
    join's delta that probe ``u``'s snapshot with them are empty relations, and the plans still
    deliver the reference at every time point."""
    case = Case("SELECT r.b AS c0, u.c AS c1 FROM r JOIN u ON r.a = u.a WHERE r.ts <= 1", (R, U), 4, objective,
                estimated_rows=(("r", 1e6), ("u", 1e6)), methods=("ivm", "auto", "batch"), bounds=True)
    plans = plan_case(case)
    ivm = plans["ivm"]
    later = [f for f in ivm.fragments if f.time >= 2]
    assert later and any(EMPTY.search(f.sql()) for f in later), "\n".join(f.sql() for f in later)
    assert not any("r__sd_" in f.sql() for f in later), "\n".join(f.sql() for f in later)
    without = plan_case(Case(case.sql, case.tables, 4, objective, estimated_rows=case.estimated_rows, methods=("ivm",)))
    assert without["ivm"].cost.weighted > ivm.cost.weighted
    check_case(fast_spark, case)


# -- keys that land once, and rows that land with them ---------------------------------------------

KEYED = (("u", "a", "u.a"), ("r", "a", "u.a"), ("w", "a", "u.a"))  # u.a is a key; r.a and w.a land with it

KEYED_QUERIES = (
    "SELECT r.b AS c0, u.c AS c1 FROM r JOIN u ON r.a = u.a",
    "SELECT u.s AS g0, COUNT(*) AS m0, SUM(r.b) AS m1 FROM r JOIN u ON r.a = u.a GROUP BY u.s",
    "SELECT r.a AS g0, COUNT(*) AS m0 FROM r JOIN w ON r.a = w.a WHERE r.b > 0 GROUP BY r.a",
    "SELECT r.b AS c0, w.d AS c1 FROM r JOIN u ON r.a = u.a JOIN w ON w.a = u.a WHERE u.c IS NOT NULL",
    "SELECT r.b AS c0, o.b AS c1 FROM r JOIN r AS o ON r.a = o.a",
    "SELECT u.a AS g0, SUM(w.d) AS m0 FROM u LEFT JOIN w ON u.a = w.a GROUP BY u.a",
    "SELECT r.s AS g0, MAX(u.c) AS m0 FROM u JOIN r ON u.a = r.a AND u.s = r.s GROUP BY r.s",
    "SELECT u.a AS g0, u.s AS g1, SUM(r.b) AS m0, COUNT(*) AS m1 FROM u JOIN r ON u.a = r.a GROUP BY u.a, u.s",
    "SELECT u.c AS c0, u.s AS c1 FROM u WHERE u.a IN (SELECT r.a FROM r GROUP BY r.a HAVING SUM(r.b) > 1)",
    "SELECT r.b AS c0 FROM r WHERE NOT EXISTS (SELECT 1 FROM w WHERE w.a = r.a)",
    "SELECT u.a AS g0, SUM(r.b) AS m0 FROM u JOIN r ON u.a = r.a "
    "WHERE u.a IN (SELECT w.a FROM w GROUP BY w.a HAVING COUNT(*) > 1) GROUP BY u.a",
)


@st.composite
def keyed(draw: st.DrawFn) -> Case:
    """Tables whose rows land as :data:`KEYED` declares: each value of ``u.a`` lands in one
    interval (in any number of rows of ``u``), and the rows of ``r`` and ``w`` holding it land in
    that interval too; no key is NULL (the other columns may be)."""
    k = draw(st.integers(2, 4))
    landing = {v: draw(st.integers(1, k)) for v in (0, 1, 2, 3) if draw(st.booleans())}

    def rows(keys: list[int], domains: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...]:
        """Rows ``(key, data..., arrival)``: a key lands where ``landing`` says."""
        out = []
        for _ in range(draw(st.integers(0, 8)) if keys else 0):
            key = draw(st.sampled_from(keys))
            data = tuple(draw(st.sampled_from(d)) for d in domains)
            out.append((key, *data, landing[key]))
        return tuple(out)

    ints, strings, decimals = (None, 0, 1, 2, 3), (None, "x", "y"), (None, Decimal("1.50"), Decimal("-0.25"))
    u = Table("u", rows(sorted(landing), (ints, strings)), False)
    held = sorted({row[0] for row in u.rows})  # r and w reference only keys u has
    r = Table("r", rows(held, (ints, strings)), False)
    w = Table("w", rows(held, (decimals,)), False)
    sql = draw(st.sampled_from(KEYED_QUERIES))
    return Case(sql, (r, u, w), k, draw(st.sampled_from(["deadline", "total"])),
                estimated_rows=(("r", 1e6), ("u", 2e5), ("w", 1e6)), bounds=True, keys=KEYED)


@settings(max_examples=12, **SETTINGS)  # type: ignore[arg-type]
@given(case=keyed())
def test_plans_over_keys_that_land_together_deliver_the_reference(fast_spark: Any, case: Case) -> None:
    check_case(fast_spark, case)


def test_a_join_on_keys_that_land_together_reads_only_deltas_at_the_deadline(fast_spark: Any) -> None:
    """``r.a`` lands with the key ``u.a``: an old row of one side never meets a new row of the
    other, so at the deadline ivm joins the two deltas and reads neither snapshot; without the
    keys it probes them, at a higher estimated cost. Plans with the keys deliver the reference
    at every time point."""
    u = Table("u", ((1, 100, "x", 1), (2, 200, "y", 2), (3, 300, "x", 3), (4, None, "y", 2)), False)
    r = Table("r", ((1, 10, "x", 1), (2, 20, "y", 2), (2, 21, "x", 2), (3, 30, "x", 3), (4, None, None, 2)), False)
    sql = "SELECT u.s AS g0, SUM(r.b) AS m0 FROM r JOIN u ON r.a = u.a GROUP BY u.s"
    keys = (("u", "a", "u.a"), ("r", "a", "u.a"))
    rows = (("r", 1e6), ("u", 1e6))

    def last(case: Case) -> tuple[list[str], float]:
        plan = plan_case(case)["ivm"]
        return sorted({s.view for f in plan.fragments if f.time == 3 for s in f.sources}), plan.cost.weighted

    with_keys, cost = last(Case(sql, (r, u), 3, deliver=(3,), estimated_rows=rows, methods=("ivm",), bounds=True, keys=keys))
    # the interval's rows of each side, as a delta or as the bag of rows that arrived in it
    assert [v.replace("__ss_", "__sd_") for v in with_keys] == ["r__sd_2_3", "u__sd_2_3"], with_keys
    without, more = last(Case(sql, (r, u), 3, deliver=(3,), estimated_rows=rows, methods=("ivm",), bounds=True))
    # without them it probes a snapshot of each side
    assert any(v.startswith("r__ss_0_") for v in without) and any(v.startswith("u__ss_0_") for v in without), without
    assert more > cost
    for objective in ("deadline", "total"):
        check_case(fast_spark, Case(sql, (r, u), 3, objective, estimated_rows=rows, bounds=True, keys=keys))


def test_groups_and_semi_joins_on_keys_that_land_together_read_only_deltas_at_the_deadline(fast_spark: Any) -> None:
    """TPC-H Q18's shape: orders ``u`` whose line items ``r`` sum above a bound. Grouped by the
    key, each interval's groups are new (``tvr-aggregate-new-groups``: no old row is retracted,
    no kept state merged) and a semi-join of new rows meets only new rows
    (``tvr-delta-semi-anti-join-keyed``), so at the deadline ivm reads the two deltas and no
    snapshot; without the keys it reads snapshots. Both deliver the reference at every point."""
    u = Table("u", ((1, 100, "x", 1), (2, 200, "y", 2), (3, 300, "x", 3), (4, None, "y", 3), (5, 7, "x", 1)), False)
    r = Table("r", ((1, 10, "x", 1), (1, 9, "y", 1), (2, 20, "y", 2), (3, 30, "x", 3), (3, 1, None, 3), (4, 16, "x", 3),
                    (5, 3, "y", 1)), False)
    sql = ("SELECT u.a AS g0, u.c AS g1, SUM(r.b) AS m0 FROM u JOIN r ON u.a = r.a "
           "WHERE u.a IN (SELECT r2.a FROM r AS r2 GROUP BY r2.a HAVING SUM(r2.b) > 15) GROUP BY u.a, u.c")
    keys = (("u", "a", "u.a"), ("r", "a", "u.a"))
    rows = (("r", 1e6), ("u", 2e5))
    case = Case(sql, (r, u), 3, deliver=(3,), estimated_rows=rows, methods=("ivm",), bounds=True, keys=keys)
    plan = plan_case(case)["ivm"]
    read = sorted({s.view.replace("__ss_", "__sd_") for f in plan.fragments if f.time == 3 for s in f.sources})
    assert read == ["r__sd_2_3", "u__sd_2_3"], read
    firings = plan.search["tvr_rule_firings"]
    assert firings.get("tvr-aggregate-new-groups") and firings.get("tvr-delta-semi-anti-join-keyed"), firings
    unkeyed = plan_case(Case(sql, (r, u), 3, deliver=(3,), estimated_rows=rows, methods=("ivm",), bounds=True))["ivm"]
    assert any("__ss_0_" in s.view for f in unkeyed.fragments if f.time == 3 for s in f.sources)
    assert not unkeyed.search["tvr_rule_firings"].get("tvr-aggregate-new-groups")
    for objective in ("deadline", "total"):
        check_case(fast_spark, Case(sql, (r, u), 3, objective, estimated_rows=rows, bounds=True, keys=keys))



def test_keys_of_disjoint_spans_are_apart_and_never_null_until_padded() -> None:
    """``Prover.apart``: the order keys of the orders landed in ``(2, 3]`` and of those landed in
    ``(0, 2]`` never meet, under ``=`` and, as a key is never NULL, under ``<=>``. On the padded
    side of an outer join the key may be NULL: its spans still say where its values landed, so
    ``=`` stays apart, but ``<=>`` matches the NULLs of both sides."""
    from sqlglot import exp

    from tempura.algebra import Field, Join, JoinKind, Scan, ScanColumn, col
    from tempura.memo import Memo
    from tempura.stats.relation import RelStats
    from tempura.infer.prover import Prover

    memo = Memo(lambda expr, inputs: RelStats(10.0, 8.0, {}))
    bounds = ArrivalBounds({}, keys={"orders": {"o_key": "orders.o_key"}})
    prover = Prover(memo, bounds)
    new, old = memo.insert(_read(2, 3, True)), memo.insert(_read(0, 2, False))
    assert prover.non_null(new) == {"o_key"} and prover.keys(new)[("o_key", "orders.o_key")] == Interval(2.0, 3.0, low_open=True)
    assert prover.apart(new, old, [("o_key", "o_key")]) and prover.apart(new, old, [("o_key", "o_key")], null_safe=True)
    assert not prover.apart(new, memo.insert(_read(0, 3, False)), [("o_key", "o_key")])
    customers = Scan("customer", (ScanColumn("c_key", Field("c_key", "bigint")),), "customer")
    padded = memo.insert(Join(JoinKind.LEFT, SourceRead(customers, 0, 3, False), _read(2, 3, True),
                              exp.EQ(this=col("c_key"), expression=col("o_key"))))
    assert "o_key" not in prover.non_null(padded)
    assert prover.apart(padded, old, [("o_key", "o_key")])
    assert not prover.apart(padded, memo.insert(Join(JoinKind.LEFT, SourceRead(customers, 0, 3, False), _read(0, 2, False),
                                                      exp.EQ(this=col("c_key"), expression=col("o_key")))),
                            [("o_key", "o_key")], null_safe=True)

