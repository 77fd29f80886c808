"""Logical plans back to Spark SQL text, built as sqlglot trees and printed in Spark's dialect.

The generator folds operators into SQL query blocks in the order SQL evaluates clauses — FROM
and joins, WHERE, GROUP BY, SELECT, DISTINCT, ORDER BY, LIMIT — and starts a new block (the old
one becomes a derived table) whenever an operator cannot join the current block without changing
its meaning. Folding keeps the SQL close to what a person would write; the wrapping fallback is
always correct. Each plan column is printed under its plan-unique name, so no two columns in
scope ever clash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    Distinct,
    Filter,
    Generate,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Opaque,
    Project,
    Query,
    Repeat,
    Scan,
    SetOperation,
    Sort,
    Values,
    Window,
    substitute,
)
from tempura.algebra.operators import Except, Intersect, Union
from tempura.algebra.schema import UNKNOWN_TYPE
from tempura.sql.dialect import TempuraSpark
from tempura.sql.names import NameAllocator


@dataclass
class Block:
    """One SQL query block under construction.

    ``columns`` maps each visible plan column, in output order, to the SQL expression that
    refers to it in the block's next clause: a qualified source column before SELECT is set, the
    unqualified output alias after.
    """

    columns: dict[str, exp.Expr]
    source: exp.Expr | None = None
    joins: list[exp.Join] = field(default_factory=list)
    laterals: list[exp.Lateral] = field(default_factory=list)
    where: list[exp.Expr] = field(default_factory=list)
    group: list[exp.Expr] | None = None
    select: list[exp.Expr] | None = None
    distinct: bool = False
    order: list[exp.Ordered] = field(default_factory=list)
    limit: int | None = None
    offset: int = 0
    hints: list[exp.Expr] = field(default_factory=list)

    @property
    def is_open(self) -> bool:
        """Only FROM, joins and WHERE are set: the block still exposes its sources' columns."""
        return (
            self.select is None
            and not self.laterals
            and self.group is None
            and not self.distinct
            and not self.order
            and self.limit is None
            and not self.offset
        )

    def set_select(self, items: list[tuple[str, exp.Expr]]) -> None:
        self.select = [exp.alias_(e, name, copy=False) for name, e in items]
        self.columns = {name: exp.column(name) for name, _ in items}


def _sql_join(kind: JoinKind, source: exp.Expr, condition: exp.Expr | None) -> exp.Join:
    args: dict[str, object] = {"this": source}
    if kind in (JoinKind.LEFT, JoinKind.RIGHT, JoinKind.FULL):
        args["side"] = kind.value.upper()
    elif kind in (JoinKind.SEMI, JoinKind.ANTI):
        args["side"] = "LEFT"
        args["kind"] = kind.value.upper()
    elif kind is JoinKind.CROSS or condition is None:
        args["kind"] = "CROSS"
    if condition is not None and kind is not JoinKind.CROSS:
        args["on"] = condition
    return exp.Join(**args)


class SparkSqlGenerator:
    """Compiles one plan; a generator is used for one plan only."""

    def __init__(self, hints: Mapping[LogicalPlan, tuple[str, str]] | None = None) -> None:
        self._aliases = NameAllocator()
        self._hints = hints or {}

    def generate(self, query: Query) -> exp.Select:
        block = self.compile(query.plan)
        names = list(query.names)
        plan_names = list(query.plan.schema.names)
        if names != plan_names:
            if block.select is None:
                block.set_select([(n, block.columns[p]) for n, p in zip(names, plan_names)])
            elif len({n.lower() for n in names}) == len(names) and not block.distinct:
                self._rename_outputs(block, dict(zip(plan_names, names)))
            else:
                block = self._wrap(block)
                block.set_select([(n, block.columns[p]) for n, p in zip(names, plan_names)])
        return self._close(block)

    # -- blocks --------------------------------------------------------------------------------

    def _close(self, block: Block) -> exp.Select:
        if block.select:
            items = block.select
        elif block.columns:
            items = [exp.alias_(e, name) for name, e in block.columns.items()]
        else:
            items = [exp.alias_(exp.Literal.number(0), "unit")]
        select = exp.Select(expressions=items)
        if block.hints:
            select.set("hint", exp.Hint(expressions=block.hints))
        if block.source is not None:
            select.set("from_", exp.From(this=block.source))
        if block.joins:
            select.set("joins", block.joins)
        if block.laterals:
            select.set("laterals", block.laterals)
        if block.where:
            select.set("where", exp.Where(this=exp.and_(*block.where) if len(block.where) > 1 else block.where[0]))
        if block.group:
            select.set("group", exp.Group(expressions=block.group))
        if block.distinct:
            select.set("distinct", exp.Distinct())
        if block.order:
            select.set("order", exp.Order(expressions=block.order))
        if block.limit is not None:
            select.set("limit", exp.Limit(expression=exp.Literal.number(block.limit)))
        if block.offset:
            select.set("offset", exp.Offset(expression=exp.Literal.number(block.offset)))
        return select

    def _derived(self, query: exp.Expr, names: list[str]) -> Block:
        alias = self._aliases.fresh("t")
        source = exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        return Block(columns={n: exp.column(n, table=alias) for n in names}, source=source)

    def _wrap(self, block: Block) -> Block:
        return self._derived(self._close(block), list(block.columns))

    def _rename_outputs(self, block: Block, renames: dict[str, str]) -> None:
        assert block.select is not None
        block.select = [exp.alias_(item.unalias(), renames.get(item.alias, item.alias)) for item in block.select]
        block.order = [substitute(o, {old: exp.column(new) for old, new in renames.items()}) for o in block.order]  # type: ignore[misc]
        block.columns = {renames.get(n, n): exp.column(renames.get(n, n)) for n in block.columns}

    # -- operators -----------------------------------------------------------------------------

    def compile(self, plan: LogicalPlan) -> Block:
        method = getattr(self, f"_compile_{type(plan).__name__.lower()}", None)
        if method is None:
            if isinstance(plan, SetOperation):
                return self._compile_set_operation(plan)
            raise NotImplementedError(f"no SQL for {type(plan).__name__}")
        return method(plan)

    def _compile_scan(self, plan: Scan) -> Block:
        alias = self._aliases.fresh(plan.alias or plan.table)
        source = exp.Table(this=exp.to_identifier(plan.table), alias=exp.TableAlias(this=exp.to_identifier(alias)))
        return Block(columns={c.field.name: exp.column(c.source, table=alias) for c in plan.columns}, source=source)

    def _compile_opaque(self, plan: Opaque) -> Block:
        """The part's text as it was written, with each mention of a table it reads replaced by
        the plan's read of that table, as a derived table whose columns an alias list names
        (Spark's own names may repeat, or be any text)."""
        from tempura.sql.opaque import spliced

        reads: dict[str, tuple[str, str | None]] = {}
        for table, read, names in zip(plan.tables, plan.inputs, plan.read_columns):
            view = read.table if isinstance(read, Scan) and tuple(c.source for c in read.columns) == names else None
            block = self.compile(read)
            if not block.is_open:
                block = self._wrap(block)
            block.set_select([(n, block.columns[f]) for n, f in zip(names, read.schema.names)])
            reads[table] = (self._close(block).sql(dialect=TempuraSpark), view)
        alias = self._aliases.fresh("o")
        source = exp.Subquery(this=exp.Var(this=spliced(plan.sql, reads)),
                              alias=exp.TableAlias(this=exp.to_identifier(alias), columns=[exp.to_identifier(n) for n in plan.outputs]))
        return Block(columns={c.field.name: exp.column(c.source, table=alias) for c in plan.columns}, source=source)

    def _compile_values(self, plan: Values) -> Block:
        if not plan.fields:
            if len(plan.rows) == 1:
                return Block(columns={})
            block = Block(columns={})
            block.where.append(exp.false())
            return block
        if not plan.rows:
            untyped = [f.name for f in plan.fields if f.type == UNKNOWN_TYPE]
            if untyped:  # the planner never makes one: an empty relation needs its columns' types
                raise AssertionError(f"an empty relation with columns of unknown type: {', '.join(untyped)}")
            block = Block(columns={})
            block.set_select([(f.name, exp.cast(exp.null(), f.type)) for f in plan.fields])
            block.where.append(exp.false())
            return self._wrap(block)
        alias = self._aliases.fresh("v")
        source = exp.Values(
            expressions=[exp.Tuple(expressions=[v.copy() for v in row]) for row in plan.rows],
            alias=exp.TableAlias(
                this=exp.to_identifier(alias), columns=[exp.to_identifier(f.name) for f in plan.fields]
            ),
        )
        return Block(columns={f.name: exp.column(f.name, table=alias) for f in plan.fields}, source=source)

    def _compile_filter(self, plan: Filter) -> Block:
        block = self.compile(plan.input)
        if not block.is_open:
            block = self._wrap(block)
        block.where.append(substitute(plan.condition, block.columns))
        return block

    def _compile_project(self, plan: Project) -> Block:
        block = self.compile(plan.input)
        if block.select is not None and not block.distinct and all(p.is_passthrough for p in plan.projections):
            self._narrow(block, [p.field.name for p in plan.projections])
            return block
        if block.select is not None or block.group is not None or block.distinct or block.limit is not None or block.offset:
            block = self._wrap(block)
        block.set_select([(p.field.name, substitute(p.expression, block.columns)) for p in plan.projections])
        return block

    def _compile_generate(self, plan: Generate) -> Block:
        block = self.compile(plan.input)
        if not block.is_open:
            block = self._wrap(block)
        alias = self._aliases.fresh("g")
        block.laterals.append(exp.Lateral(
            this=substitute(plan.call, block.columns), view=True, outer=plan.outer or None,
            alias=exp.TableAlias(this=exp.to_identifier(alias), columns=[exp.to_identifier(f.name) for f in plan.fields])))
        block.columns.update({f.name: exp.column(f.name, table=alias) for f in plan.fields})
        return block

    def _compile_repeat(self, plan: Repeat) -> Block:
        block = self.compile(plan.input)
        if not block.is_open:
            block = self._wrap(block)
        keep = [n for n in block.columns if n != plan.count]
        # sequence(1, 0) is [1, 0]: rows without a positive count must not reach the explode
        block.where.append(exp.GT(this=block.columns[plan.count].copy(), expression=exp.Literal.number(0)))
        copies = exp.Explode(this=exp.func("sequence", exp.Literal.number(1), block.columns[plan.count].copy()))
        block.set_select([(n, block.columns[n].copy()) for n in keep] + [("__copy", copies)])
        block = self._wrap(block)
        block.set_select([(n, block.columns[n].copy()) for n in keep])
        return block

    def _narrow(self, block: Block, keep: list[str]) -> None:
        """Keep only the ``keep`` outputs of a block whose select list is set; sort keys that
        named a dropped output are replaced by its expression."""
        assert block.select is not None
        items = {item.alias: item for item in block.select}
        dropped = {name: item.unalias() for name, item in items.items() if name not in keep}
        block.order = [substitute(o, dropped) for o in block.order]  # type: ignore[misc]
        block.select = [items[name] for name in keep]
        block.columns = {name: block.columns[name] for name in keep}

    def _compile_aggregate(self, plan: Aggregate) -> Block:
        block = self.compile(plan.input)
        if not block.is_open:
            block = self._wrap(block)
        block.group = [block.columns[k].copy() for k in plan.keys]
        items = [(k, block.columns[k].copy()) for k in plan.keys]
        items += [(c.field.name, substitute(c.call, block.columns)) for c in plan.calls]
        if not items:  # a global aggregate of no call (HAVING alone) is still one row, whatever its input holds
            items = [("unit", exp.Count(this=exp.Literal.number(1)))]
        block.set_select(items)
        return block

    def _compile_window(self, plan: Window) -> Block:
        block = self.compile(plan.input)
        if not block.is_open:
            block = self._wrap(block)
        items = [(name, e.copy()) for name, e in block.columns.items()]
        items += [(c.field.name, substitute(c.call, block.columns)) for c in plan.calls]
        block.set_select(items)
        return block

    def _compile_join(self, plan: Join) -> Block:
        kind = plan.kind
        left = self.compile(plan.left)
        if not left.is_open or left.source is None or (left.where and kind in (JoinKind.RIGHT, JoinKind.FULL)):
            left = self._wrap(left)
        right = self.compile(plan.right)
        movable_where = kind in (JoinKind.INNER, JoinKind.CROSS, JoinKind.RIGHT)
        into_on = kind in (JoinKind.LEFT, JoinKind.SEMI, JoinKind.ANTI)
        if not right.is_open or right.source is None or right.joins or (right.where and not (movable_where or into_on)):
            right = self._wrap(right)
        hint = self._hints.get(plan)
        if hint is not None:
            strategy, side = hint
            if side == "left" and (left.joins or left.source is None):
                left = self._wrap(left)  # the hint needs the left input to be one named relation
            hinted = left if side == "left" else right
            assert hinted.source is not None
            left.hints.append(exp.Anonymous(this=strategy, expressions=[exp.to_identifier(hinted.source.alias_or_name)]))
        columns = {**left.columns, **right.columns}
        condition = substitute(plan.condition, columns) if plan.condition is not None else None
        if right.where and into_on:
            condition = exp.and_(condition or exp.true(), *right.where)
        elif right.where:
            left.where.extend(right.where)
        if condition is None and kind not in (JoinKind.INNER, JoinKind.CROSS):
            condition = exp.true()
        assert right.source is not None
        left.joins.append(_sql_join(kind, right.source, condition))
        if kind.keeps_right_columns:
            left.columns = columns
        return left

    def _compile_sort(self, plan: Sort) -> Block:
        block = self.compile(plan.input)
        hint = self._hints.get(plan)
        if block.order or block.limit is not None or block.offset or (hint is not None and block.hints):
            block = self._wrap(block)
        if hint is not None:
            # COALESCE(n) binds to the query block below its ORDER BY: Spark sorts the coalesced
            # partitions, and a global sort over one partition needs no range exchange.
            strategy, count = hint
            block.hints.append(exp.Anonymous(this=strategy, expressions=[exp.Literal.number(int(count))]))
        block.order = [
            exp.Ordered(this=substitute(k.expression, block.columns), desc=k.descending, nulls_first=k.nulls_first)
            for k in plan.keys
        ]
        return block

    def _compile_limit(self, plan: Limit) -> Block:
        block = self.compile(plan.input)
        if block.limit is not None or block.offset:
            block = self._wrap(block)
        block.limit, block.offset = plan.count, plan.offset
        return block

    def _compile_distinct(self, plan: Distinct) -> Block:
        block = self.compile(plan.input)
        if block.select is None and block.is_open:
            block.set_select(list(block.columns.items()))
        elif block.select is None or block.distinct or block.order or block.limit is not None or block.offset:
            block = self._wrap(block)
            block.set_select(list(block.columns.items()))
        block.distinct = True
        return block

    def _compile_set_operation(self, plan: SetOperation) -> Block:
        sides = []
        for side, names in ((plan.left, [f.name for f in plan.fields]), (plan.right, None)):
            block = self.compile(side)
            if block.order or block.limit is not None or block.offset:
                block = self._wrap(block)
            if names is not None:
                block = self._renamed(block, names)
            sides.append(self._close(block))
        op = {Union: exp.Union, Intersect: exp.Intersect, Except: exp.Except}[type(plan)]
        combined = op(this=sides[0], expression=sides[1], distinct=not plan.all)
        return self._derived(combined, [f.name for f in plan.fields])

    def _renamed(self, block: Block, names: list[str]) -> Block:
        if list(block.columns) == names:
            return block
        if block.select is None:
            block.set_select([(n, e) for n, e in zip(names, block.columns.values())])
            return block
        self._rename_outputs(block, dict(zip(block.columns, names)))
        return block


def to_spark_sql(query: Query, pretty: bool = False, hints: Mapping[LogicalPlan, tuple[str, str]] | None = None) -> str:
    """Spark SQL text computing ``query``, with its output columns under the user's names.

    ``hints`` maps join nodes of the plan to a Spark join strategy hint and the side it names
    (``("BROADCAST", "right")``); each hinted side becomes one named relation of its query block
    so that the hint reaches exactly that join. A sort node may map to ``("COALESCE", "1")``: its
    input block is coalesced to one partition and sorted there."""
    return SparkSqlGenerator(hints).generate(query).sql(dialect=TempuraSpark, pretty=pretty)
