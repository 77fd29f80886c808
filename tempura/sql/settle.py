"""Column types that sqlglot cannot derive, settled by Spark's analyzer.

The binder types each column with sqlglot's ``annotate_types``. For a function sqlglot does not
know the result type of (``date_trunc``, many of Spark's built-ins), the column is ``unknown``.
The plan is right without it, but some of what tempura writes needs it: an empty relation is
``CAST(NULL AS <type>)`` per column, and a kept state has a schema.

:func:`settle_types` asks Spark, which is the authority on a query's types. Each operator that
introduces a column of unknown type is printed as Spark SQL, over empty stand-ins for the tables it
reads (so no data and no table is needed), and Spark's analyzer says the types of its columns.
Analysis runs no job. Column names are unique within a plan, so a settled type is set on every
mention of the column, above and below.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from tempura.algebra import LogicalPlan, Query, Scan, Values
from tempura.algebra.rebuild import Rebuild
from tempura.algebra.schema import UNKNOWN_TYPE, Field

Describe = Callable[[str], "list[str] | None"]
"""Spark's types of a query's output columns, in order, or ``None`` when Spark rejects it."""


def unknown_fields(plan: LogicalPlan) -> set[str]:
    """The names of the columns of ``plan`` and of its inputs whose type is unknown."""
    names: set[str] = set()
    for node in _nodes(plan):
        names.update(f.name for f in node.schema.fields if f.type == UNKNOWN_TYPE)
    return names


def settle_types(query: Query, describe: Describe) -> Query:
    """``query`` with every column of unknown type typed as Spark's analyzer types it, where Spark
    can (a column Spark cannot type stays unknown)."""
    if not unknown_fields(query.plan):
        return query
    from tempura.sql.backend import to_spark_sql

    settled: dict[str, str] = {}
    asked: set[str] = set()
    for node in _nodes(query.plan):  # inputs before the operators over them
        new = [f for f in node.schema.fields if f.type == UNKNOWN_TYPE and f.name not in asked]
        if not new:
            continue
        asked.update(f.name for f in new)
        stand_in = _without_tables(node)
        if stand_in is None:
            continue
        types = describe(to_spark_sql(Query(stand_in, tuple(f.name for f in stand_in.schema.fields))))
        if types is None or len(types) != len(node.schema.fields):
            continue
        for field, type_ in zip(node.schema.fields, types):
            if field.type == UNKNOWN_TYPE and type_ not in ("void", UNKNOWN_TYPE):
                settled[field.name] = type_
    if not settled:
        return query
    def retyped(field: Field) -> Field:
        type_ = settled.get(field.name)
        return field if type_ is None or field.type != UNKNOWN_TYPE else Field(field.name, type_, field.nullable)

    return dataclasses.replace(query, plan=Rebuild(field=retyped).value(query.plan))


def _nodes(plan: LogicalPlan) -> list[LogicalPlan]:
    """Every operator of ``plan`` once, each after its inputs."""
    seen: set[int] = set()
    order: list[LogicalPlan] = []

    def visit(node: LogicalPlan) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for child in node.inputs:
            visit(child)
        order.append(node)

    visit(plan)
    return order


def _without_tables(plan: LogicalPlan) -> LogicalPlan | None:
    """``plan`` with each table read replaced by an empty relation of its columns' types: Spark
    then analyzes the rest without a catalog. ``None`` when a table's column has no type."""
    if isinstance(plan, Scan):
        fields = tuple(c.field for c in plan.columns)
        return None if any(f.type == UNKNOWN_TYPE for f in fields) else Values(fields, ())
    if not plan.inputs:
        return plan
    inputs = [_without_tables(child) for child in plan.inputs]
    return None if any(i is None for i in inputs) else plan.with_inputs(*inputs)  # type: ignore[arg-type]
