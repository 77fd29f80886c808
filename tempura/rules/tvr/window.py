"""Window functions maintained by partition: the delta of a window recomputes only the
partitions its input's delta touches.

A window function reads the rows of one partition only (rows equal on the partition columns,
NULL equal to NULL). A change to the input can therefore change the window's output only in the
partitions whose keys occur in the input's delta; every other partition's rows, window values
included, stay as they were. So the window's delta is the new rows of the touched partitions
less their old rows:

``SD[v-1,v](W_K(R)) ⇒ W_K(R_v ⋉ A) − (W_K(R)_{v-1} ⋉ A)`` with ``A = δ(π_K(ΔR))``

where the old rows come from the window's own previous snapshot (kept or recomputed, as the
search prices it) and the semi-joins match keys null-safely. A ranking filter above the window
(top N per partition) is a filter over this delta. A window without partition columns has one
partition, always touched: its delta is the difference of its snapshots
(``tvr-snapshot-to-delta``), and so is any window where the cost says recomputing is cheaper.
"""

from __future__ import annotations

from typing import cast

from sqlglot import exp

from tempura.algebra import Distinct, Field, Join, JoinKind, LogicalPlan, Project, Projection, Union, Window, col, conjoin
from tempura.rules.tvr.aggregate import AFFECTED
from tempura.rules.tvr.base import TvrRule
from tempura.rules.tvr.expansion import Expansion
from tempura.tvr.forms import Form, FormKind
from tempura.tvr.operators import Consolidate, ToDelta
from tempura.tvr.zset import MULT_FIELD


class WindowPartitionsDelta(TvrRule):
    """``SD[v-1,v](W_K(R)) ⇒ W_K(R_v ⋉ A) − (W_K(R)_{v-1} ⋉ A)`` with ``A = δ(π_K(ΔR))``: only
    the partitions whose key occurs in the input's delta change, so their recomputed rows
    replace their old ones. Keys match null-safely, as partitioning does."""

    name = "tvr-window-partitions"
    family = "window"
    pattern = (Window,)
    produces = FormKind.DELTA

    def apply(self, x: Expansion, group: int, expr: LogicalPlan | None, form: Form) -> list[LogicalPlan]:
        window = cast(Window, expr)  # the expansion offers only expressions of the pattern
        keys = window.partition_keys
        if not keys or form.end < 2:
            return []
        child = x.child(window.input)
        delta, new_input, old = x.sd(child, form.end), x.ss(child, form.end), x.ss(group, form.end - 1)
        if delta is None or new_input is None or old is None:
            return []
        fields = window.input.schema
        touched = Distinct(Project(delta, tuple(
            Projection(Field(k + AFFECTED, fields.field(k).type, True), col(k)) for k in keys
        )))
        on = conjoin([exp.NullSafeEQ(this=col(k), expression=col(k + AFFECTED)) for k in keys])
        new = Window(Join(JoinKind.SEMI, new_input, touched, on), window.calls)
        replaced = Join(JoinKind.SEMI, old, touched, on)
        out = tuple(window.schema.fields) + (MULT_FIELD,)
        return [Consolidate(Union(ToDelta(new, 1), ToDelta(replaced, -1), True, out))]
