"""Plans are immutable, hashable values that know their schema, print as trees and validate."""

from __future__ import annotations

import dataclasses

import pytest
from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    AggregateCall,
    Field,
    Filter,
    InvalidPlan,
    Join,
    JoinKind,
    Project,
    Projection,
    Scan,
    ScanColumn,
    col,
    conjuncts,
    format_plan,
    validate_plan,
)


def scan(table: str, *names: str, nullable: bool = False) -> Scan:
    return Scan(table, tuple(ScanColumn(n, Field(n, "bigint", nullable)) for n in names), table)


def test_equal_plans_are_equal_and_hash_alike() -> None:
    a = Filter(scan("t", "x", "y"), exp.GT(this=col("x"), expression=exp.Literal.number(1)))
    b = Filter(scan("t", "x", "y"), exp.GT(this=col("x"), expression=exp.Literal.number(1)))
    c = Filter(scan("t", "x", "y"), exp.GT(this=col("x"), expression=exp.Literal.number(2)))
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2


def test_plans_are_frozen_and_rebuilt_with_new_inputs() -> None:
    plan = Filter(scan("t", "x"), exp.true())
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.condition = exp.false()  # type: ignore[misc]
    other = plan.with_inputs(scan("u", "x"))
    assert isinstance(other, Filter) and other.input == scan("u", "x") and plan.input == scan("t", "x")


def test_outer_joins_make_padded_sides_nullable_and_semi_joins_drop_right() -> None:
    left, right = scan("t", "x"), scan("u", "y")
    cond = exp.EQ(this=col("x"), expression=col("y"))
    assert [f.nullable for f in Join(JoinKind.INNER, left, right, cond).schema] == [False, False]
    assert [f.nullable for f in Join(JoinKind.LEFT, left, right, cond).schema] == [False, True]
    assert [f.nullable for f in Join(JoinKind.RIGHT, left, right, cond).schema] == [True, False]
    assert [f.nullable for f in Join(JoinKind.FULL, left, right, cond).schema] == [True, True]
    assert Join(JoinKind.SEMI, left, right, cond).schema.names == ("x",)


def test_aggregate_schema_and_printing() -> None:
    plan = Aggregate(
        scan("t", "k", "v"), ("k",), (AggregateCall(Field("total", "bigint"), exp.Sum(this=col("v"))),)
    )
    assert plan.schema.names == ("k", "total")
    assert plan.calls[0].function == "sum" and not plan.calls[0].distinct
    assert format_plan(plan) == "Aggregate keys=[k] calls=[total := SUM(v)]\n  Scan t [k, v]"


def test_validate_rejects_unknown_columns_and_clashes() -> None:
    with pytest.raises(InvalidPlan, match="unknown column"):
        validate_plan(Filter(scan("t", "x"), exp.EQ(this=col("zz"), expression=exp.Literal.number(1))))
    with pytest.raises(InvalidPlan, match="share column names"):
        validate_plan(Join(JoinKind.CROSS, scan("t", "x"), scan("u", "x")))
    with pytest.raises(InvalidPlan, match="reuses input column name"):
        validate_plan(Project(scan("t", "x"), (Projection(Field("x"), exp.Literal.number(1)),)))


def test_conjuncts_look_through_parentheses() -> None:
    a, b, c = (exp.EQ(this=col(n), expression=exp.Literal.number(1)) for n in "abc")
    predicate = exp.and_(exp.paren(exp.and_(a, b)), c)
    assert conjuncts(predicate) == [a, b, c]
