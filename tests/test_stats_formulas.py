"""The estimator's formulas on worked numbers: selectivities, joins, aggregates, set operations.

Every expected value is computed by hand from the seeds' formulas (written out in the test),
never by the estimator itself. Statistics are injected, so no Spark is needed.
"""

from __future__ import annotations

import math

import pytest
import sqlglot
from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    AggregateCall,
    Distinct,
    Field,
    Filter,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Scan,
    ScanColumn,
    Union,
)
from tempura.stats import ColumnStats, Estimator, Histogram, HistogramBin, TableStats
from tempura.stats.relation import cardenas
from tempura.stats.selectivity import like_selectivity
from tempura.stats.values import constant

# Table a: 1000 rows. x: 1..100 uniform, 100 distinct; k: unique key 1..1000; s: 10 strings;
# n: 200 nulls. Table b: 5000 rows; k: 800 distinct foreign keys; y: 0..49.
A = TableStats(
    rows=1000,
    bytes=1000 * 40,
    columns={
        "x": ColumnStats(kind="number", ndv=100, nulls=0, min=1, max=100, step=1),
        "k": ColumnStats(kind="number", ndv=1000, nulls=0, min=1, max=1000, unique=True, step=1),
        "s": ColumnStats(kind="string", ndv=10, nulls=0, avg_len=6),
        "n": ColumnStats(kind="number", ndv=50, nulls=200, min=0, max=49, step=1),
    },
)
B = TableStats(
    rows=5000,
    bytes=5000 * 24,
    columns={
        "k": ColumnStats(kind="number", ndv=800, nulls=0, min=1, max=1000, step=1),
        "y": ColumnStats(kind="number", ndv=50, nulls=0, min=0, max=49, step=1),
    },
)
TYPES = {"x": "int", "k": "bigint", "s": "string", "n": "int", "y": "int"}


def scan(table: str, *names: str, suffix: str = "") -> Scan:
    return Scan(table, tuple(ScanColumn(n, Field(n + suffix, TYPES[n])) for n in names), table)


def estimator(**extra: TableStats) -> Estimator:
    tables = {"a": A, "b": B, **extra}
    return Estimator(lambda name: tables[name])


def where(plan: LogicalPlan, condition: str) -> Filter:
    return Filter(plan, sqlglot.parse_one(condition, read="spark"))


def rows(plan: LogicalPlan, est: Estimator | None = None) -> float:
    return (est or estimator()).of(plan).rows


A_ALL = scan("a", "x", "k", "s", "n")


# -- filters ----------------------------------------------------------------------------


def test_equality_with_a_literal_is_one_over_ndv() -> None:
    assert rows(where(A_ALL, "x = 7")) == pytest.approx(1000 / 100)
    assert rows(where(A_ALL, "s = 'abc'")) == pytest.approx(1000 / 10)


def test_equality_outside_the_range_keeps_at_least_one_row() -> None:
    # The selectivity is 0, but estimates never go below one row.
    assert rows(where(A_ALL, "x = 500")) == 1.0


def test_range_uses_the_uniform_histogram_with_the_domain_step() -> None:
    # x in 1..100, integers: values spread over [1, 101). x < 26 keeps (26 - 1) / 100.
    assert rows(where(A_ALL, "x < 26")) == pytest.approx(1000 * 25 / 100)
    # x <= 25 keeps the same 25 values.
    assert rows(where(A_ALL, "x <= 25")) == pytest.approx(1000 * 25 / 100)
    # x > 90 keeps 91..100 = 10 values.
    assert rows(where(A_ALL, "x > 90")) == pytest.approx(1000 * 10 / 100)


def test_range_narrows_min_max_and_distinct_values() -> None:
    stats = estimator().of(where(A_ALL, "x < 26")).columns["x"]
    assert stats.min == 1 and stats.max == 25
    assert stats.ndv == pytest.approx(100 * 0.25)


def test_range_uses_a_histogram_when_present() -> None:
    # 900 of 1000 rows sit in [1, 10]; 100 rows in [11, 100].
    skewed = TableStats(
        rows=1000,
        bytes=8000,
        columns={
            "x": ColumnStats(
                kind="number",
                ndv=100,
                nulls=0,
                min=1,
                max=100,
                step=1,
                histogram=Histogram((HistogramBin(1, 10, 10, 900), HistogramBin(11, 100, 90, 100))),
            )
        },
    )
    est = estimator(h=skewed)
    plan = Scan("h", (ScanColumn("x", Field("x", "int")),), "h")
    # x <= 10: the whole first bin.
    assert rows(where(plan, "x <= 10"), est) == pytest.approx(900)
    # x = 50 falls in the second bin: 100 rows over 90 distinct values.
    assert rows(where(plan, "x = 50"), est) == pytest.approx(100 / 90)


def test_in_list_sums_equalities_of_values_in_range() -> None:
    # 3 of the 4 values lie in 1..100: 3 / 100.
    assert rows(where(A_ALL, "x IN (1, 2, 3, 1000)")) == pytest.approx(1000 * 3 / 100)


def test_between_is_two_ranges() -> None:
    # 11..20 is 10 values of 100.
    assert rows(where(A_ALL, "x BETWEEN 11 AND 20")) == pytest.approx(1000 * 10 / 100)


def test_is_null_and_is_not_null() -> None:
    assert rows(where(A_ALL, "n IS NULL")) == pytest.approx(200)
    assert rows(where(A_ALL, "n IS NOT NULL")) == pytest.approx(800)


def test_not_equal_and_not() -> None:
    # Hive seed: (V - 1) / V.
    assert rows(where(A_ALL, "x <> 7")) == pytest.approx(1000 * 99 / 100)
    assert rows(where(A_ALL, "NOT x < 26")) == pytest.approx(1000 * 75 / 100)


def test_comparison_with_null_keeps_nothing() -> None:
    assert rows(where(A_ALL, "x = NULL")) == 1.0


def test_and_multiplies_and_or_uses_the_hive_formula() -> None:
    # AND: 1/100 * 1/10. OR: s1 + s2 - s1*s2.
    assert rows(where(A_ALL, "x = 7 AND s = 'q'")) == pytest.approx(1000 * (1 / 100) * (1 / 10))
    s1, s2 = 1 / 100, 1 / 10
    assert rows(where(A_ALL, "x = 7 OR s = 'q'")) == pytest.approx(1000 * (s1 + s2 - s1 * s2))


def test_or_of_equalities_narrows_distinct_values() -> None:
    stats = estimator().of(where(A_ALL, "x = 1 OR x = 2")).columns["x"]
    assert stats.ndv == 2 and stats.min == 1 and stats.max == 2


def test_like_patterns() -> None:
    # Without wildcards LIKE is an equality; each literal run of n characters keeps 1/(n+1).
    assert rows(where(A_ALL, "s LIKE 'abc'")) == pytest.approx(1000 / 10)
    assert like_selectivity("PROMO%") == pytest.approx(1 / 6)
    assert like_selectivity("%special%requests%") == pytest.approx(1 / 8 * 1 / 9)
    # Never below one distinct value's share: s has 10 values.
    assert rows(where(A_ALL, "s LIKE '%averyveryverylongword%'")) == pytest.approx(1000 / 10)
    assert rows(where(A_ALL, "s NOT LIKE 'PROMO%'")) == pytest.approx(1000 * (1 - 1 / 6))


def test_like_is_tried_on_the_value_sample() -> None:
    # 2 of 8 sampled values start with 'forest'; none ends in 'xyz' (half a value's share).
    sample = ("forest green", "forest", "lime", "navy blue", "green", "red", "blue", "almond")
    table = TableStats(rows=800, bytes=8000, columns={"s": ColumnStats(kind="string", ndv=700, nulls=0, sample=sample)})
    est = estimator(w=table)
    plan = Scan("w", (ScanColumn("s", Field("s", "string")),), "w")
    assert rows(where(plan, "s LIKE 'forest%'"), est) == pytest.approx(800 * 2 / 8)
    assert rows(where(plan, "s LIKE '%xyz'"), est) == pytest.approx(800 * 0.5 / 8)
    assert rows(where(plan, "s ILIKE 'FOREST%'"), est) == pytest.approx(800 * 2 / 8)
    assert rows(where(plan, "s LIKE '_ime'"), est) == pytest.approx(800 * 1 / 8)


def test_column_equality_is_one_over_the_larger_ndv() -> None:
    # Hive seed: 1 / max(V(x), V(n)); n is null in 200 of 1000 rows.
    expected = 1000 * (1 / max(100, 50)) * (800 / 1000)
    assert rows(where(A_ALL, "x = n")) == pytest.approx(expected)


def two_columns(rows: float, p: ColumnStats, q: ColumnStats, type_name: str) -> tuple[Estimator, Scan]:
    """An estimator knowing table f (columns p and q) and a scan of it."""
    table = TableStats(rows=rows, bytes=rows * 8, columns={"p": p, "q": q})
    plan = Scan("f", (ScanColumn("p", Field("p", type_name)), ScanColumn("q", Field("q", type_name))), "f")
    return estimator(f=table), plan


def test_column_comparison_without_overlap_is_zero_or_one() -> None:
    # p in 0..9 lies wholly below q in 100..109.
    est, plan = two_columns(
        100,
        ColumnStats(kind="number", ndv=10, nulls=0, min=0, max=9, step=1),
        ColumnStats(kind="number", ndv=10, nulls=0, min=100, max=109, step=1),
        "int",
    )
    assert rows(where(plan, "p < q"), est) == pytest.approx(100)
    assert rows(where(plan, "p > q"), est) == 1.0


def test_column_comparison_of_overlapping_uniform_columns() -> None:
    # Two independent uniform columns on the same range: P(p < q) is close to 1/2.
    uniform = ColumnStats(kind="number", ndv=1000, nulls=0, min=0, max=1, step=0)
    est, plan = two_columns(1000, uniform, uniform, "double")
    assert rows(where(plan, "p < q"), est) == pytest.approx(500, rel=0.01)


def test_unreadable_predicates_get_defaults_and_a_note() -> None:
    stats = estimator().of(where(A_ALL, "abs(x) = 3"))
    assert stats.rows == pytest.approx(1000 * 0.1)
    assert any("default selectivity" in note for note in stats.notes)


def test_untouched_columns_keep_cardenas_distinct_values() -> None:
    # Keeping 100 of 1000 rows of k (unique): cardenas(1000, 1000, 100) = 100.
    assert cardenas(1000, 1000, 100) == pytest.approx(100)
    # 50 distinct values, 20 rows each, keep 10%: 50 * (1 - 0.9^20).
    assert cardenas(50, 1000, 100) == pytest.approx(50 * (1 - 0.9**20))
    # A tiny share of a huge relation is not lost to rounding.
    assert cardenas(25, 1e19, 400) == pytest.approx(25, rel=1e-3)


# -- joins ------------------------------------------------------------------------------


def join(kind: JoinKind, condition: str | None = "k = k_b") -> Join:
    left = scan("a", "x", "k")
    right = scan("b", "k", "y", suffix="_b")
    cond = sqlglot.parse_one(condition, read="spark") if condition else None
    return Join(kind, left, right, cond)


def test_inner_join_is_the_spark_seed_formula() -> None:
    # T(A)·T(B)/max(V(A.k), V(B.k)) = 1000·5000/max(1000, 800).
    assert rows(join(JoinKind.INNER)) == pytest.approx(1000 * 5000 / 1000)


def test_join_with_a_unique_key_never_exceeds_the_foreign_key_side() -> None:
    # a.k is unique: each b row matches at most once, so at most T(B) = 5000.
    assert rows(join(JoinKind.INNER)) <= 5000


def test_outer_joins_add_unmatched_rows() -> None:
    inner = 1000 * 5000 / 1000
    # 800 of a's 1000 keys find a partner (containment): 200 unmatched a rows.
    assert rows(join(JoinKind.LEFT)) == pytest.approx(inner + 1000 * (1 - 800 / 1000))
    # Every b key finds its partner: no unmatched b rows.
    assert rows(join(JoinKind.RIGHT)) == pytest.approx(inner)
    assert rows(join(JoinKind.FULL)) == pytest.approx(inner + 200)
    # Never below the Spark seed's max(T(A ⋈ B), T(A)).
    assert rows(join(JoinKind.LEFT)) >= max(inner, 1000)


def test_semi_and_anti_joins_split_the_left_side() -> None:
    assert rows(join(JoinKind.SEMI)) == pytest.approx(1000 * 800 / 1000)
    assert rows(join(JoinKind.ANTI)) == pytest.approx(1000 * 200 / 1000)


def test_cross_join_multiplies() -> None:
    assert rows(join(JoinKind.CROSS, None)) == 1000 * 5000


def test_join_residual_is_a_filter_on_the_output() -> None:
    # y < 25 keeps half of y's 0..49.
    assert rows(join(JoinKind.INNER, "k = k_b AND y_b < 25")) == pytest.approx(5000 * 0.5)


def test_join_of_a_filtered_key_side_uses_the_key_domain() -> None:
    # Keep 100 of a's keys (k <= 100); b's 800 keys are spread over a's 1000-key domain, so
    # each kept key has 5000/800 partners with probability 800/1000: 100·5000/1000 rows.
    left = where(scan("a", "x", "k"), "k <= 100")
    plan = Join(JoinKind.INNER, left, scan("b", "k", "y", suffix="_b"), sqlglot.parse_one("k = k_b"))
    assert rows(plan) == pytest.approx(100 * 5000 / 1000)


def test_multi_column_keys_back_off_exponentially() -> None:
    # b's key (k, y): 800 and 50 distinct, combined with backoff as 800 · 50^(1/2) (its domain;
    # its distinct count is also capped by b's 5000 rows). On a, k is unique, so it determines
    # n and the key (k, n) has k's 1000 values (800 non-null rows: n is null in 200).
    left = scan("a", "k", "n")
    right = scan("b", "k", "y", suffix="_b")
    plan = Join(JoinKind.INNER, left, right, sqlglot.parse_one("k = k_b AND n = y_b"))
    denominator = max(min(1000, 800), min(800 * 50**0.5, 5000), 1000, 800 * 50**0.5)
    assert rows(plan) == pytest.approx(1000 * 0.8 * 5000 / denominator)


def test_null_aware_anti_join_condition_is_read_as_its_key() -> None:
    condition = "k = k_b OR k IS NULL OR k_b IS NULL"
    assert rows(join(JoinKind.ANTI, condition)) == pytest.approx(1000 * 200 / 1000)


# -- aggregates, distinct, set operations, limit -----------------------------------------


def count_star(name: str = "c") -> AggregateCall:
    return AggregateCall(Field(name, "bigint", False), exp.Count(this=exp.Star()))


def test_aggregate_is_the_product_of_key_ndvs_capped_by_rows() -> None:
    # s (10) × n (50 + 1 for the null group) = 510 combinations, drawn 1000 times.
    assert rows(Aggregate(A_ALL, ("s", "n"), (count_star(),))) == pytest.approx(510 * (1 - (1 - 1 / 510) ** 1000))
    # k is unique, so it determines x: k's 1000 values.
    assert rows(Aggregate(A_ALL, ("x", "k"), (count_star(),))) == pytest.approx(1000)
    # After a filter keeping 50 of a's 1000 rows (k <= 50), s keeps 10·(1 − 0.95^100) values
    # and x 100·(1 − 0.95^10) (Cardenas); rows sharing k share the group, so there are 50
    # draws (not more) from those combinations.
    kept = where(A_ALL, "k <= 50")
    space = 10 * (1 - 0.95**100) * 100 * (1 - 0.95**10)
    assert rows(Aggregate(kept, ("s", "x"), (count_star(),))) == pytest.approx(space * (1 - (1 - 1 / space) ** 50))
    assert rows(Aggregate(A_ALL, (), (count_star(),))) == 1.0


def test_keys_determined_by_a_unique_key_add_nothing() -> None:
    # Join a (k unique) with b; group by b.k_b, a.k, a.x: k determines x, and k ≡ k_b.
    plan = Aggregate(join(JoinKind.INNER), ("k_b", "k", "x"), (count_star(),))
    assert rows(plan) == pytest.approx(800)


def test_having_on_a_sum_uses_the_normal_approximation() -> None:
    # Group by k: 800 groups of n = 6.25 rows; y is uniform on 0..49 (μ ≈ 25, σ ≈ 14.4). With
    # group sizes varying (Poisson), SUM(y) has mean n·μ ≈ 156 and deviation √(n·(σ² + μ²)) ≈ 72.
    # SUM(y) > 1000 is 11 deviations out: nothing survives; SUM(y) > 0 keeps P(z > -2.2) ≈ 98.5%,
    # read through a 16-bin histogram of the normal's quantiles (uniform within each bin).
    agg = Aggregate(
        scan("b", "k", "y"), ("k",), (AggregateCall(Field("t", "bigint"), sqlglot.parse_one("SUM(y)")),)
    )
    assert rows(where(agg, "t > 1000")) == 1.0
    assert rows(where(agg, "t > 0")) == pytest.approx(800 * 0.985, rel=0.03)


def test_a_column_equal_to_its_group_minimum_keeps_a_row_per_group() -> None:
    # b joined with MIN(y) per k: each of the 800 keys keeps about one row (the minimum's).
    minimum = Aggregate(
        scan("b", "k", "y", suffix="_m"), ("k_m",), (AggregateCall(Field("lowest", "int"), sqlglot.parse_one("MIN(y_m)")),)
    )
    joined = Join(JoinKind.INNER, scan("b", "k", "y"), minimum, sqlglot.parse_one("k = k_m"))
    assert rows(where(joined, "y = lowest")) == pytest.approx(800)


def test_union_all_adds_rows_and_takes_the_larger_ndv() -> None:
    left = scan("a", "x")
    right = scan("b", "y")
    plan = Union(left, right, True, (Field("u", "int"),))
    stats = estimator().of(plan)
    assert stats.rows == 6000
    assert stats.columns["u"].ndv == max(100, 50)


def test_distinct_and_limit() -> None:
    assert rows(Distinct(scan("a", "s"))) == 10
    assert rows(Limit(A_ALL, 5)) == 5
    assert rows(Limit(A_ALL, 5, offset=998)) == 2


def test_row_size_comes_from_average_lengths() -> None:
    # 8 bytes of row overhead + s's 6 bytes + 4 bytes of length.
    stats = estimator().of(scan("a", "s"))
    assert stats.row_size == 8 + 6 + 4
    assert stats.bytes == 1000 * 18


def test_constants_fold_dates_and_intervals() -> None:
    value, kind = constant(sqlglot.parse_one("DATE '1998-12-01' - INTERVAL '90' DAY", read="spark"))
    # 1998-09-02 is 10471 days after 1970-01-01.
    assert kind == "date" and value == 10471.0
    assert math.isclose(constant(sqlglot.parse_one("0.06 - 0.01"))[0], 0.05)  # type: ignore[arg-type]
