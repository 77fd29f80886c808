"""The decomposition of aggregates into partial states (``tempura.algebra.decompose``): which
calls have them, their calls over a bag, their merges, and the types Spark gives each. The
values are checked against Spark where grouping sets cascade (``tests/test_grouping_sets.py``)
and where aggregates are maintained (``tests/test_tvr_operators.py``)."""

from __future__ import annotations

import pytest
from sqlglot import exp

from tempura.algebra import AggregateCall, Field, col
from tempura.algebra.decompose import bag_partials, decomposable, finalize, merged_partials, summed_type
from tempura.tvr.partials import partial_columns


def call(sql: str, type_: str, name: str = "v") -> AggregateCall:
    node = exp.maybe_parse(sql, dialect="spark")
    return AggregateCall(Field(name, type_, True), node)


@pytest.mark.parametrize(("sql", "type_", "expected"), [
    ("SUM(x)", "decimal(17,2)", [("v__sum", "decimal(17,2)", "SUM(x)"), ("v__n", "bigint", "COUNT(x)")]),
    ("AVG(x)", "decimal(11,6)", [("v__sum", "decimal(17,2)", "SUM(x)"), ("v__n", "bigint", "COUNT(x)")]),
    ("AVG(x)", "double", [("v__sum", "double", "SUM(CAST(x AS DOUBLE))"), ("v__n", "bigint", "COUNT(x)")]),
    ("COUNT(*)", "bigint", [("v__n", "bigint", "COUNT(*)")]),
    ("MAX(x)", "string", [("v__v", "string", "MAX(x)")]),
])
def test_a_calls_partial_states_over_a_bag_are_plain_calls_named_after_it(sql: str, type_: str,
                                                                      expected: list[tuple[str, str, str]]) -> None:
    parts = bag_partials(call(sql, type_))
    assert [(p.field.name, p.field.type, p.call.sql(dialect="spark")) for p in parts] == expected
    assert all(p.function in ("sum", "count", "min", "max") for p in parts)  # no cast around a call


def test_the_states_kept_over_time_and_the_states_over_a_bag_have_one_set_of_names() -> None:
    """Maintenance keeps partial columns (``tvr.partials``) and grouping sets aggregate them
    (``bag_partials``): one ``finalize`` reads both, so their names and types must agree."""
    for sql, type_ in [("SUM(x)", "bigint"), ("AVG(x)", "decimal(11,6)"), ("COUNT(x)", "bigint"), ("MIN(x)", "int")]:
        c = call(sql, type_)
        kept = [(p.field.name, p.field.type) for p in partial_columns(c)]
        assert sorted(kept) == sorted((p.field.name, p.field.type) for p in bag_partials(c)), sql


def test_merging_partial_states_sums_them_in_sparks_wider_type_and_finalize_casts_back() -> None:
    avg = call("AVG(x)", "decimal(11,6)")
    into = call("AVG(x)", "decimal(11,6)", "w")
    merged = merged_partials(avg, into)
    assert [(m.field.name, m.field.type, m.call.sql()) for m in merged] == [
        ("w__sum", "decimal(27,2)", "SUM(v__sum)"), ("w__n", "bigint", "SUM(v__n)")]
    text = finalize(into).sql(dialect="spark")
    assert "CAST(w__sum AS DECIMAL(17, 2))" in text and "AS DECIMAL(11, 6)" in text
    lowest = merged_partials(call("MIN(x)", "int"), call("MIN(x)", "int", "w"))
    assert [(m.field.name, m.call.sql()) for m in lowest] == [("w__v", "MIN(v__v)")]
    assert finalize(call("MIN(x)", "int", "w")) == col("w__v")
    assert finalize(call("COUNT(*)", "bigint", "w")).sql() == "CAST(COALESCE(w__n, 0) AS BIGINT)"
    assert summed_type("decimal(35,2)") == "decimal(38,2)" and summed_type("double") == "double"
    assert summed_type("bigint") == "bigint"


@pytest.mark.parametrize(("sql", "parts"), [
    ("SUM(x)", True), ("AVG(x)", True), ("COUNT(x)", True), ("MIN(x)", True), ("MAX(x)", True),
    ("COUNT(DISTINCT x)", False), ("SUM(x) FILTER(WHERE x > 0)", False), ("STDDEV(x)", False),
])
def test_only_sum_count_avg_min_max_without_distinct_or_filter_decompose(sql: str, parts: bool) -> None:
    assert decomposable(call(sql, "double")) is parts
    if not parts:
        with pytest.raises(ValueError, match="has no partial state"):
            bag_partials(call(sql, "double"))

