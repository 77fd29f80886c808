"""Upper bounds on the rows of a relation: what an operator can output at most, whatever the
estimate assumed.

An estimate can be wrong by orders of magnitude when it rests on defaults (a table nobody has
analysed, a default selectivity, a join whose keys have no distinct counts). A decision that
fails outright when the relation is larger than thought — broadcasting it to every task — must
rest on a bound instead. The bound of each operator, from its inputs' bounds:

- **Scan**: the table's rows as measured, or as guessed from its file size (the size Spark's
  own planner trusts); no bound when the file size is unknown.
- **Values**: its rows. **Filter**, **Project**, **Sort**, **Distinct**, **Aggregate** with keys,
  semi and anti joins: the input's bound. A global aggregate: one row. **Limit**: its count.
- **Inner join**: when one side's key holds a column known to be unique on that side (measured
  by ``analyze``, or carried up from a unique key through key/foreign-key joins and group
  keys), each row of the other side matches at most once, so the other side's bound; else the
  product of the two bounds. A left (right) join adds at most one padded row per left (right)
  row; a full join both.
- **Union all**: the sum; **union**, **intersect** and **except** at most that, the smaller
  side, and the left side.

Any other operator has no bound (infinite) until one is written for it.
"""

from __future__ import annotations

import math
from typing import Sequence

from sqlglot import exp

from tempura.algebra import (
    Generate,
    Aggregate,
    Distinct,
    Except,
    Filter,
    Intersect,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    Sort,
    Union,
    Values,
)
from tempura.stats.model import TableStats
from tempura.stats.relation import RelStats

UNBOUNDED = math.inf


def table_row_bound(table: TableStats) -> float:
    """Rows a table holds at most: measured (or scaled to changed files), or guessed from its
    file size; unbounded when the file size is unknown too."""
    if table.is_default and table.file_bytes <= 0 and table.rows > 0:
        return UNBOUNDED
    return table.rows


def join_row_bound(
    kind: JoinKind, left: RelStats, right: RelStats, pairs: Sequence[tuple[str, str]]
) -> float:
    """Rows a join of ``left`` and ``right`` on the equi-key ``pairs`` outputs at most."""
    if kind in (JoinKind.SEMI, JoinKind.ANTI):
        return left.max_rows
    unique_right = any(_unique(right, b) for _, b in pairs)
    unique_left = any(_unique(left, a) for a, _ in pairs)
    if unique_right and unique_left:
        matched = min(left.max_rows, right.max_rows)
    elif unique_right:
        matched = left.max_rows
    elif unique_left:
        matched = right.max_rows
    else:
        matched = _product(left.max_rows, right.max_rows)
    padded = 0.0
    if kind.pads_right:
        padded += left.max_rows
    if kind.pads_left:
        padded += right.max_rows
    return matched + padded


def row_bound(plan: LogicalPlan, inputs: Sequence[RelStats], table: TableStats | None = None,
              pairs: Sequence[tuple[str, str]] = ()) -> float:
    """Rows ``plan`` outputs at most, from its inputs' bounds (``table``: a scan's statistics;
    ``pairs``: a join's equi-keys)."""
    if isinstance(plan, Scan):
        return UNBOUNDED if table is None else table_row_bound(table)
    if isinstance(plan, Values):
        return float(len(plan.rows))
    if isinstance(plan, (Filter, Project, Sort, Distinct)):
        return inputs[0].max_rows
    if isinstance(plan, Aggregate):
        return inputs[0].max_rows if plan.keys else 1.0
    if isinstance(plan, Limit):
        return inputs[0].max_rows if plan.count is None else min(inputs[0].max_rows, float(plan.count))
    if isinstance(plan, Join):
        return join_row_bound(plan.kind, inputs[0], inputs[1], pairs)
    if isinstance(plan, Union):
        return inputs[0].max_rows + inputs[1].max_rows
    if isinstance(plan, Intersect):
        return min(inputs[0].max_rows, inputs[1].max_rows)
    if isinstance(plan, Except):
        return inputs[0].max_rows
    if isinstance(plan, Generate):
        per_row = generated_per_row(plan)
        if per_row is not None:
            return inputs[0].max_rows * per_row
    return UNBOUNDED


def generated_per_row(plan: Generate) -> int | None:
    """How many rows ``plan``'s generator makes of each input row, where the text says: an array
    literal's length (at least one with OUTER); ``None`` for any other array."""
    argument = plan.call.this if isinstance(plan.call, exp.Func) else None
    if not isinstance(argument, exp.Array):
        return None
    return max(len(argument.expressions), 1 if plan.outer else 0)


def _unique(stats: RelStats, name: str) -> bool:
    column = stats.columns.get(name)
    return column is not None and column.unique


def _product(a: float, b: float) -> float:
    if a == 0.0 or b == 0.0:
        return 0.0
    return a * b
