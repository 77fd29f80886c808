"""Cardinality estimation for every logical operator.

:meth:`Estimator.derive` computes one operator's :class:`RelStats` from its inputs' — the form
the memo calls once per group. :meth:`Estimator.estimate` walks a whole plan.

The formulas, by operator (seeds: Spark ``002``, Hive ``001``, Beam ``000``):

- **Generate** (LATERAL VIEW): each input row times its array's length (a literal's, else an
  assumed 4).
- **Opaque** (a part run as the user's Spark SQL): its inputs' rows together, every value distinct.
- **Scan**: the table's statistics; without them, defaults from file sizes (and a note).
- **Filter**: :mod:`tempura.stats.selectivity`; untouched columns keep the distinct values
  Cardenas' formula gives for the rows kept.
- **Project**: rows unchanged; a computed column of one input column has at most its distinct
  values, of several at most their product.
- **Join** on equi-keys ``a_i = b_i``: ``T(A)·T(B)/max(V(A.k), V(B.k))`` over non-null keys, where
  ``V`` of a multi-column key is the product of the columns' distinct counts with exponential
  backoff (largest first, then square root, fourth root, …) and at most the side's rows. If a
  side's key holds a column that is unique there, each row of the other side matches at most
  once (key/foreign-key). The share of a side's rows that find a partner is
  ``min(1, V(other.k)/max(V, domains))``: a side thinned by predicates on other columns keeps a
  random subset of its keys' domain, so not every key of the smaller side finds a partner.
  Only keys in both sides' ranges can match. Left, right
  and full joins add the unmatched rows; this is never below the Spark seed's ``max(T(A ⋈ B),
  T(A))``. Semi and anti joins keep the matching or the unmatched share of the left side.
  Conditions beyond the equi-keys are estimated as a filter on the join's output.
- **Aggregate**: a key functionally determined by another key adds nothing; one key left gives
  its distinct count; several give ``D·(1 − (1 − 1/D)^n)`` for ``D`` the product of their
  distinct counts and ``n`` the rows (never above the rows). Aggregate outputs get normal or
  Poisson-like histograms, so that HAVING is estimated like any range.
- **Union all**: rows add up, distinct counts are the larger of the two (Hive seed). Union
  (distinct), intersect and except follow Calcite's constants as the Beam seed gives them.
- **Distinct** is an aggregate on every column; **Sort** keeps everything; **Limit** caps rows;
  **Window** keeps every row and adds its calls' columns.
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist
from typing import Callable, Iterable, Mapping

from sqlglot import exp

from tempura.algebra import (
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
    Generate,
    Opaque,
    Scan,
    SetOperation,
    Sort,
    Union,
    Values,
    Window,
    column_name,
    columns_in,
    conjoin,
    conjuncts,
)
from tempura.algebra.schema import Field
from tempura.stats.bounds import generated_per_row, row_bound
from tempura.stats.model import ORDERABLE, ColumnStats, Histogram, HistogramBin, TableStats, kind_of, step_of
from tempura.stats.relation import (
    ROW_OVERHEAD,
    RelStats,
    column_width,
    merge_notes,
    null_fraction,
    restrict_fds,
    fraction_below,
    scale_column,
    stale_note,
    uniform_histogram,
)
from tempura.stats.selectivity import FilterEstimator, backoff, column_ref, domain_of, expression_key
from tempura.stats.values import NotConstant, constant, encode

TableLookup = Callable[[str], TableStats]

UNION_OVERLAP = 0.5
EXCEPT_FACTOR = 0.5
GENERATED_PER_ROW = 4.0
"""Rows a generator makes of each input row, where its array is not a literal."""


OPAQUE_ROWS = 1000.0
"""Rows guessed for an opaque part that reads no table (a table-valued function)."""


def blank_column(f: Field) -> ColumnStats:
    """Statistics of a column nothing is known about but its type."""
    return ColumnStats(kind=kind_of(f.type), step=step_of(f.type))


def row_size(fields: Iterable[Field], columns: Mapping[str, ColumnStats]) -> float:
    return ROW_OVERHEAD + sum(column_width(columns.get(f.name), f.type) for f in fields)


class Estimator:
    """Derives statistics for plan operators; ``tables`` gives each catalog table's stats."""

    def __init__(self, tables: TableLookup) -> None:
        self.tables = tables
        self._cache: dict[LogicalPlan, RelStats] = {}

    def estimate(self, plan: LogicalPlan) -> RelStats:
        """Statistics of ``plan``'s output (every subplan's are cached: see :meth:`of`)."""
        cached = self._cache.get(plan)
        if cached is not None:
            return cached
        inputs = [self.estimate(child) for child in plan.inputs]
        stats = self.derive(plan, inputs)
        self._cache[plan] = stats
        return stats

    def of(self, plan: LogicalPlan) -> RelStats:
        return self.estimate(plan)

    def derive(self, plan: LogicalPlan, inputs: list[RelStats]) -> RelStats:
        """Statistics of one operator's output from its inputs' statistics, with the bound on
        its rows that holds whatever the estimate assumed (:mod:`tempura.stats.bounds`)."""
        stats = self.derive_estimate(plan, inputs)
        table = self.tables(plan.table) if isinstance(plan, Scan) else None
        pairs: list[tuple[str, str]] = []
        if isinstance(plan, Join):
            pairs, _, _ = split_join_condition(plan.condition, set(plan.left.schema.names), set(plan.right.schema.names))
        bound = row_bound(plan, inputs, table, pairs)
        return stats if bound == stats.max_rows else dataclasses.replace(stats, max_rows=bound)

    def derive_estimate(self, plan: LogicalPlan, inputs: list[RelStats]) -> RelStats:
        """The estimate alone of one operator's output (its ``max_rows`` not yet derived)."""
        if isinstance(plan, Scan):
            return self._scan(plan)
        if isinstance(plan, Values):
            return self._values(plan)
        if isinstance(plan, Opaque):
            return self._opaque(plan, inputs)
        if isinstance(plan, Generate):
            return self._generate(plan, inputs[0])
        if isinstance(plan, Filter):
            return self._filter(plan, inputs[0])
        if isinstance(plan, Project):
            return self._project(plan, inputs[0])
        if isinstance(plan, Join):
            return self._join(plan, inputs[0], inputs[1])
        if isinstance(plan, Aggregate):
            return self._aggregate(plan, inputs[0])
        if isinstance(plan, Distinct):
            return self._distinct(plan, inputs[0])
        if isinstance(plan, SetOperation):
            return self._set_operation(plan, inputs[0], inputs[1])
        if isinstance(plan, Sort):
            return inputs[0]
        if isinstance(plan, Window):
            return self._window(plan, inputs[0])
        if isinstance(plan, Limit):
            return self._limit(plan, inputs[0])
        raise TypeError(f"no estimate for {plan.operator}")

    # -- leaves --------------------------------------------------------------------------

    def _scan(self, plan: Scan) -> RelStats:
        table = self.tables(plan.table)
        columns: dict[str, ColumnStats] = {}
        for c in plan.columns:
            known = table.column(c.source)
            base = blank_column(c.field)
            if known is not None:
                base = known.replace(step=known.step or base.step, domain=known.ndv)
                if base.kind == "other":
                    base = base.replace(kind=kind_of(c.field.type))
            origin = plan.columns[0].field.name  # plan-unique: names this scan
            columns[c.field.name] = base.replace(origin=origin, origin_rows=table.rows, lineage=f"{plan.table}.{c.source}")
        names = [c.field.name for c in plan.columns]
        fds = {n: frozenset(names) - {n} for n in names if columns[n].unique}
        notes: tuple[str, ...] = ()
        if table.is_default:
            basis = "guessed from file size" if table.file_bytes > 0 else "assumed (file size unknown)"
            notes = (f"no statistics for table {plan.table}: {table.rows:.0f} rows {basis}",)
        elif table.stale:
            notes = (stale_note(plan.table),)
        measured = [f for f in plan.schema if columns[f.name].avg_len is not None or table.is_default]
        size = row_size(plan.schema, columns)
        if not measured and table.rows > 0:
            size = min(size, max(table.bytes / table.rows, ROW_OVERHEAD))
        return RelStats(table.rows, size, columns, fds, notes)

    def _values(self, plan: Values) -> RelStats:
        rows = float(len(plan.rows))
        columns: dict[str, ColumnStats] = {}
        for i, f in enumerate(plan.fields):
            base = blank_column(f)
            values: list[object] = []
            for row in plan.rows:
                try:
                    raw, _ = constant(row[i])
                    values.append(encode(raw, base.kind) if raw is not None else None)
                except NotConstant:
                    values.append(("?", len(values)))  # unknown, counted as distinct
            nonnull = [v for v in values if v is not None]
            numbers = [v for v in nonnull if isinstance(v, float)]
            columns[f.name] = base.replace(
                ndv=float(len(set(map(str, nonnull)))),
                nulls=float(len(values) - len(nonnull)),
                min=min(numbers) if numbers and base.kind in ORDERABLE and len(numbers) == len(nonnull) else None,
                max=max(numbers) if numbers and base.kind in ORDERABLE and len(numbers) == len(nonnull) else None,
            )
        return RelStats(rows, row_size(plan.fields, columns), columns)

    def _generate(self, plan: Generate, source: RelStats) -> RelStats:
        """Each input row as many times as its array has elements: an array literal's count, else
        :data:`GENERATED_PER_ROW`; with OUTER, at least once. The input's columns keep their
        distinct values (and are no longer unique where a row may be repeated); each generated
        column's are all distinct."""
        per_row = generated_per_row(plan)
        factor = float(per_row) if per_row is not None else max(GENERATED_PER_ROW, 1.0 if plan.outer else 0.0)
        repeated = per_row is None or per_row > 1
        rows = source.rows * factor
        columns = {name: stats.replace(nulls=None if stats.nulls is None else stats.nulls * factor,
                                       unique=stats.unique and not repeated)
                   for name, stats in source.columns.items()}
        for f in plan.fields:
            columns[f.name] = blank_column(f).replace(ndv=max(rows, 1.0))
        return RelStats(rows, row_size(plan.schema, columns), columns, dict(source.fds), source.notes)

    def _opaque(self, plan: Opaque, inputs: list[RelStats]) -> RelStats:
        """An opaque part's output, which tempura cannot see into: as many rows as its inputs
        together (a generator's or a pivot's factor unknown), every value distinct; a part that
        reads no table (``range(…)``) is guessed at :data:`OPAQUE_ROWS`."""
        rows = sum(i.rows for i in inputs) if inputs else OPAQUE_ROWS
        columns = {c.field.name: blank_column(c.field).replace(ndv=max(rows, 1.0)) for c in plan.columns}
        note = f"an opaque part ({plan.reason}): {rows:.0f} rows assumed, its inputs' together"
        notes = tuple(n for i in inputs for n in i.notes) + (note,)
        return RelStats(rows, row_size(plan.schema, columns), columns, {}, notes)

    # -- filter and project ------------------------------------------------------------

    def _filter(self, plan: Filter, source: RelStats) -> RelStats:
        return self.apply_predicate(source, plan.condition)

    def apply_predicate(self, source: RelStats, predicate: exp.Expr | None) -> RelStats:
        """``source`` after keeping the rows ``predicate`` accepts."""
        if predicate is None:
            return source
        estimator = FilterEstimator(source)
        result = estimator.estimate(predicate)
        rows = source.rows * result.selectivity
        if source.rows >= 1.0:
            rows = max(rows, 1.0)  # never plan on an empty result that may not be empty
        columns = {
            name: result.columns[name] if name in result.columns else scale_column(stats, source.rows, rows)
            for name, stats in source.columns.items()
        }
        for name, stats in result.columns.items():
            columns.setdefault(name, stats)  # statistics of filtered expressions
        fds = {k: set(v) for k, v in source.fds.items()}
        for conjunct in conjuncts(predicate):
            node = conjunct.unnest()
            if isinstance(node, exp.EQ):
                a, b = column_ref(node.this, source), column_ref(node.expression, source)
                if a is not None and b is not None and a != b:
                    fds.setdefault(a, set()).add(b)
                    fds.setdefault(b, set()).add(a)
        notes = merge_notes(source.notes, result.notes)
        return RelStats(rows, source.row_size, columns, {k: frozenset(v) for k, v in fds.items()}, notes)

    def _project(self, plan: Project, source: RelStats) -> RelStats:
        columns: dict[str, ColumnStats] = {}
        origins: dict[str, frozenset[str]] = {}
        for p in plan.projections:
            name = column_ref(p.expression, source)
            if name is not None and name in source.columns:
                columns[p.field.name] = source.columns[name]
                origins[p.field.name] = frozenset({name})
                continue
            refs = columns_in(p.expression)
            origins[p.field.name] = refs
            columns[p.field.name] = self._computed(p.field, p.expression, refs, source)
        # Dependencies: an output column determines another when its source determines all of
        # the other's inputs.
        closures = {out: source.closure(refs) for out, refs in origins.items() if refs}
        fds: dict[str, frozenset[str]] = {}
        for out, closure in closures.items():
            deps = frozenset(o for o, refs in origins.items() if o != out and refs and refs <= closure)
            if deps:
                fds[out] = deps
        return RelStats(source.rows, row_size(plan.schema, columns), columns, fds, source.notes)

    def _computed(self, f: Field, expression: exp.Expr, refs: frozenset[str], source: RelStats) -> ColumnStats:
        base = blank_column(f)
        if not refs:
            try:
                raw, _ = constant(expression)
            except NotConstant:
                return base.replace(ndv=source.rows)
            value = encode(raw, base.kind) if raw is not None else None
            number = value if isinstance(value, float) and base.kind in ORDERABLE else None
            return base.replace(ndv=0.0 if value is None else 1.0, nulls=source.rows if value is None else 0.0, min=number, max=number)
        known = source.columns.get(expression_key(expression))
        if known is not None and known.ndv is not None:
            return base.replace(ndv=min(known.ndv, source.rows), nulls=known.nulls)
        buckets = time_buckets(expression, source)
        if buckets is not None:
            nulls = max((source.columns[r].nulls or 0.0) for r in refs if r in source.columns)
            return base.replace(ndv=min(buckets, source.rows), nulls=nulls)
        linear = affine(expression, source)
        if linear is not None:
            name, scale, offset = linear
            return affine_column(source.columns[name], scale, offset, base)
        product = 1.0
        for ref in refs:
            ndv = source.ndv(ref)
            if ndv is None:
                return base
            product *= max(ndv, 1.0)
        nulls = max((source.columns[r].nulls or 0.0) for r in refs if r in source.columns) if refs else 0.0
        return base.replace(ndv=min(product, source.rows), nulls=nulls)

    # -- joins -------------------------------------------------------------------------

    def _join(self, plan: Join, left: RelStats, right: RelStats) -> RelStats:
        left_names = set(plan.left.schema.names)
        right_names = set(plan.right.schema.names)
        pairs, residual, null_safe = split_join_condition(plan.condition, left_names, right_names)
        notes = merge_notes(left.notes, right.notes)
        cross = left.rows * right.rows
        if not pairs:
            combined = self._combine(plan, left, right, {}, cross, notes)
            inner = self.apply_predicate(combined, residual)
            match_l = 1.0 if residual is None else min(1.0, inner.rows / max(left.rows, 1e-9))
            match_r = 1.0 if residual is None else min(1.0, inner.rows / max(right.rows, 1e-9))
            if right.rows <= 0:
                match_l = 0.0
            if left.rows <= 0:
                match_r = 0.0
            return self._finish(plan, left, right, inner, match_l, match_r)

        left_keys = [a for a, _ in pairs]
        right_keys = [b for _, b in pairs]
        v_left = key_ndv(left, left_keys)
        v_right = key_ndv(right, right_keys)
        nonnull_left = 1.0 if null_safe else _nonnull_share(left, left_keys)
        nonnull_right = 1.0 if null_safe else _nonnull_share(right, right_keys)
        if v_left is None or v_right is None:
            # No distinct counts: assume the side with fewer rows is the key side.
            notes = merge_notes(notes, [f"no distinct counts for join keys {', '.join(left_keys + right_keys)}"])
            if v_left is None and v_right is None:
                # Then the other side's foreign key holds at most as many values: each of its
                # rows finds one partner (not one row in all, as distinct counts of the rows
                # would say).
                v_left = v_right = min(left.rows, right.rows)
            v_left = v_left if v_left is not None else left.rows
            v_right = v_right if v_right is not None else right.rows
        # Only keys inside both sides' ranges can match: restrict each side to the overlap.
        share_left, share_right = 1.0, 1.0
        for a, b in pairs:
            sa, sb = range_overlap(left, a, right, b)
            share_left *= sa
            share_right *= sb
        d_left = (key_domain(left, left_keys) or 0.0) * share_left
        d_right = (key_domain(right, right_keys) or 0.0) * share_right
        v_left_in, v_right_in = v_left * share_left, v_right * share_right
        denominator = max(v_left_in, v_right_in, d_left, d_right, 1.0)
        in_left = left.rows * nonnull_left * share_left
        in_right = right.rows * nonnull_right * share_right
        rows = in_left * in_right / denominator
        if _has_unique(right, right_keys):
            rows = min(rows, in_left)
        if _has_unique(left, left_keys):
            rows = min(rows, in_right)
        match_l = min(1.0, v_right_in / denominator) * nonnull_left * share_left if right.rows > 0 else 0.0
        match_r = min(1.0, v_left_in / denominator) * nonnull_right * share_right if left.rows > 0 else 0.0
        key_ndvs = min(v_left, v_right)
        updates: dict[str, ColumnStats] = {}
        for a, b in pairs:
            ca, cb = left.columns.get(a), right.columns.get(b)
            if ca is None or cb is None:
                continue
            ndv = None if ca.ndv is None or cb.ndv is None else min(ca.ndv, cb.ndv, key_ndvs if len(pairs) == 1 else math.inf)
            low = max(ca.min, cb.min) if ca.has_range and cb.has_range else None  # type: ignore[type-var]
            high = min(ca.max, cb.max) if ca.has_range and cb.has_range else None  # type: ignore[type-var]
            for name, c in ((a, ca), (b, cb)):
                updates[name] = c.replace(
                    ndv=ndv if ndv is not None else c.ndv,
                    nulls=0.0,
                    min=low if low is not None else c.min,
                    max=high if high is not None else c.max,
                    histogram=None,
                    domain=max(domain_of(ca) or 0.0, domain_of(cb) or 0.0) or None,
                    unique=c.unique and (_has_unique(right, right_keys) if name == a else _has_unique(left, left_keys)),
                )
        combined = self._combine(plan, left, right, updates, rows, notes, match_l, match_r)
        fds = dict(combined.fds)
        for a, b in pairs:
            fds[a] = fds.get(a, frozenset()) | {b}
            fds[b] = fds.get(b, frozenset()) | {a}
        combined = RelStats(combined.rows, combined.row_size, combined.columns, fds, combined.notes)
        inner = self.apply_predicate(combined, residual)
        if residual is not None and combined.rows > 0:
            # A row matches when at least one of its key partners passes the residual.
            selectivity = inner.rows / combined.rows
            for side, share, count in (("l", match_l, left.rows), ("r", match_r, right.rows)):
                fanout = combined.rows / max(count * share, 1e-9) if share > 0 else 1.0
                adjusted = share * (1.0 - (1.0 - selectivity) ** max(fanout, 1.0))
                if side == "l":
                    match_l = adjusted
                else:
                    match_r = adjusted
        return self._finish(plan, left, right, inner, match_l, match_r)

    def _combine(
        self,
        plan: Join,
        left: RelStats,
        right: RelStats,
        updates: Mapping[str, ColumnStats],
        rows: float,
        notes: tuple[str, ...],
        match_l: float = 1.0,
        match_r: float = 1.0,
    ) -> RelStats:
        """The inner join's columns: key columns as ``updates`` says, others scaled to the rows
        of their side that find a partner."""
        columns: dict[str, ColumnStats] = {}
        for side, share in ((left, match_l), (right, match_r)):
            kept_rows = side.rows * share
            for name, stats in side.columns.items():
                columns[name] = updates[name] if name in updates else scale_column(stats, side.rows, kept_rows)
                if name not in updates and stats.unique:
                    other_unique = side is left and _any_unique_in(right, updates) or side is right and _any_unique_in(left, updates)
                    if not other_unique:
                        columns[name] = columns[name].replace(unique=False)
        fds = {**left.fds, **right.fds}
        width = left.row_size + right.row_size - ROW_OVERHEAD
        return RelStats(rows, width, columns, fds, notes)

    def _finish(self, plan: Join, left: RelStats, right: RelStats, inner: RelStats, match_l: float, match_r: float) -> RelStats:
        kind = plan.kind
        if kind in (JoinKind.INNER, JoinKind.CROSS):
            return inner
        if kind in (JoinKind.SEMI, JoinKind.ANTI):
            share = match_l if kind is JoinKind.SEMI else 1.0 - match_l
            rows = left.rows * min(max(share, 0.0), 1.0)
            columns = {n: scale_column(c, left.rows, rows) for n, c in left.columns.items()}
            if kind is JoinKind.SEMI:
                for n in left.columns:
                    if n in inner.columns and inner.columns[n].ndv is not None and columns[n].ndv is not None:
                        columns[n] = columns[n].replace(ndv=min(columns[n].ndv or 0.0, inner.columns[n].ndv or 0.0, rows) if rows else 0.0)
            return RelStats(rows, left.row_size, columns, left.fds, inner.notes)
        unmatched_left = left.rows * (1.0 - min(match_l, 1.0)) if kind.pads_right else 0.0
        unmatched_right = right.rows * (1.0 - min(match_r, 1.0)) if kind.pads_left else 0.0
        rows = inner.rows + unmatched_left + unmatched_right
        rows = max(rows, inner.rows, left.rows if kind.pads_right else 0.0, right.rows if kind.pads_left else 0.0)
        padded_columns: dict[str, ColumnStats] = {}
        for name, stats in inner.columns.items():
            from_left = name in left.columns
            preserved = (from_left and kind.pads_right) or (not from_left and kind.pads_left)
            original = (left if from_left else right).columns[name]
            padded = unmatched_right if from_left else unmatched_left
            if preserved:
                stats = original  # every row of a preserved side appears
            nulls = (stats.nulls or 0.0) + padded
            padded_columns[name] = stats.replace(nulls=nulls if stats.nulls is not None or padded else None, unique=False)
        fds = {**(left.fds if kind.pads_right else {}), **(right.fds if kind.pads_left else {})}
        return RelStats(rows, inner.row_size, padded_columns, fds, inner.notes)

    # -- aggregation -------------------------------------------------------------------

    def group_count(self, source: RelStats, keys: list[str]) -> float:
        """Distinct combinations of ``keys``.

        Keys determined by other keys are skipped. One key left: its distinct count. Several:
        ``D`` combinations (the product of their distinct counts, plus one for a key with
        nulls) drawn ``n`` times give ``D·(1 − (1 − 1/D)^n)`` distinct ones, where ``n`` is the
        rows, or fewer: the distinct values of a column that determines every key (rows that
        share it share the whole group).
        """
        if source.rows <= 0:
            return 0.0
        if not keys:
            return 1.0
        remaining = reduce_keys(source, keys)
        product = 1.0
        for key in remaining:
            ndv = source.ndv(key)
            if ndv is None:
                return source.rows
            column = source.columns[key]
            product *= max(ndv, 1.0) + (1.0 if (column.nulls or 0.0) > 0 else 0.0)
        if len(remaining) == 1:
            return min(product, source.rows)
        draws = source.rows
        for name in source.fds:
            ndv = source.ndv(name)
            if ndv is not None and ndv < draws and set(remaining) <= source.closure([name]):
                draws = max(ndv, 1.0)
        return min(distinct_draws(product, draws), source.rows)

    def _aggregate(self, plan: Aggregate, source: RelStats) -> RelStats:
        keys = list(plan.keys)
        rows = self.group_count(source, keys)
        if not keys:
            rows = 1.0
        columns: dict[str, ColumnStats] = {}
        for key in keys:
            column = source.columns.get(key, blank_column(plan.input.schema.field(key)))
            columns[key] = column.replace(
                ndv=None if column.ndv is None else min(column.ndv, rows),
                nulls=None if column.nulls is None else min(column.nulls, 1.0),
                histogram=None,
            )
        for call in plan.calls:
            columns[call.field.name] = self._aggregate_column(call.field, call.call, call.function, source, rows)
        remaining = reduce_keys(source, keys) if keys else []
        fds: dict[str, frozenset[str]] = restrict_fds(source.fds, set(keys), source)
        if len(remaining) == 1:
            (key,) = remaining
            columns[key] = columns[key].replace(unique=(columns[key].nulls or 0.0) <= 1.0)
            fds[key] = frozenset(plan.schema.names) - {key}
        return RelStats(rows, row_size(plan.schema, columns), columns, fds, source.notes)

    def _window(self, plan: Window, source: RelStats) -> RelStats:
        """Every input row, with one column per call: a ranking's values run from 1 to the
        largest partition's size, an aggregate without ORDER BY has one value per partition,
        and a LAG or LEAD takes its argument's values."""
        partitions = self.group_count(source, list(plan.partition_keys)) if plan.partition_keys else 1.0
        per_partition = max(source.rows / max(partitions, 1.0), 1.0)
        columns = dict(source.columns)
        for call in plan.calls:
            base = blank_column(call.field)
            function = call.call.this
            if call.function in ("rank", "denserank", "rownumber", "ntile"):
                columns[call.field.name] = base.replace(ndv=min(per_partition, source.rows), nulls=0.0, min=1.0,
                                                        max=per_partition)
                continue
            argument = column_ref(function.this, source) if isinstance(function.this, exp.Expr) else None
            if call.function in ("lag", "lead", "firstvalue", "lastvalue", "nthvalue") and argument is not None \
                    and argument in source.columns:
                columns[call.field.name] = source.columns[argument].replace(unique=False, histogram=None)
                continue
            values = source.rows if call.ordered else partitions
            columns[call.field.name] = base.replace(ndv=min(values, source.rows))
        return RelStats(source.rows, row_size(plan.schema, columns), columns, source.fds, source.notes)

    def _aggregate_column(self, f: Field, call: exp.Expr, function: str, source: RelStats, groups: float) -> ColumnStats:
        base = blank_column(f)
        if function in ("min", "max"):
            refs = list(columns_in(call))
            if len(refs) == 1 and refs[0] in source.columns:
                inner = source.columns[refs[0]]
                return base.replace(
                    ndv=None if inner.ndv is None else min(inner.ndv, groups),
                    nulls=0.0,
                    min=inner.min,
                    max=inner.max,
                    avg_len=inner.avg_len,
                    max_len=inner.max_len,
                    lineage=f"{function}:{inner.lineage}" if inner.lineage else None,
                    group_size=source.rows / max(groups, 1.0),
                )
        size = source.rows / max(groups, 1.0)  # average rows per group
        if function == "count":
            # Rows per group, roughly Poisson around the average group size.
            return normal_column(base, size, math.sqrt(max(size, 1.0)), groups, low=0.0, step=1.0)
        if function in ("sum", "avg"):
            refs = list(columns_in(call))
            argument = source.columns.get(refs[0]) if len(refs) == 1 and column_ref(_argument(call), source) else None
            moments = None if argument is None else column_moments(argument, source.rows)
            if moments is not None:
                mean, sd = moments
                if function == "sum":
                    # A sum of N values, N itself varying from group to group (Poisson around
                    # the average n): mean n·μ, variance n·σ² + μ²·n.
                    spread = math.sqrt(size * (sd * sd + mean * mean))
                    return normal_column(base, size * mean, spread, groups, step=0.0)
                return normal_column(base, mean, sd / math.sqrt(max(size, 1.0)), groups, step=0.0)
        return base.replace(ndv=groups, nulls=0.0)

    def _distinct(self, plan: Distinct, source: RelStats) -> RelStats:
        names = list(plan.schema.names)
        rows = self.group_count(source, names)
        columns = {n: c.replace(ndv=None if c.ndv is None else min(c.ndv, rows)) for n, c in source.columns.items()}
        remaining = reduce_keys(source, names)
        fds = dict(source.fds)
        if len(remaining) == 1:
            columns[remaining[0]] = columns[remaining[0]].replace(unique=True)
        return RelStats(rows, source.row_size, columns, fds, source.notes)

    # -- set operations and limit ------------------------------------------------------

    def _set_operation(self, plan: SetOperation, left: RelStats, right: RelStats) -> RelStats:
        notes = merge_notes(left.notes, right.notes)
        columns: dict[str, ColumnStats] = {}
        left_fields = plan.left.schema.fields
        right_fields = plan.right.schema.fields
        for out, lf, rf in zip(plan.fields, left_fields, right_fields):
            a = left.columns.get(lf.name, blank_column(out))
            b = right.columns.get(rf.name, blank_column(out))
            columns[out.name] = _union_column(out, a, b, left.rows if isinstance(plan, Union) else 0.0, right.rows)
        if isinstance(plan, Union):
            rows = left.rows + right.rows
            if not plan.all:
                rows = max(left.rows, right.rows) + UNION_OVERLAP * min(left.rows, right.rows)
                rows = min(rows, self._distinct_bound(columns, rows))
        elif isinstance(plan, Intersect):
            rows = min(left.rows, right.rows)
            columns = {n: c.replace(ndv=None if c.ndv is None else min(c.ndv, rows)) for n, c in columns.items()}
        else:
            assert isinstance(plan, Except)
            rows = max(left.rows - EXCEPT_FACTOR * right.rows, 0.0)
            columns = {n: left.columns.get(lf.name, blank_column(n_f)) for n, lf, n_f in zip(columns, left_fields, plan.fields)}
            columns = {n: scale_column(c, left.rows, rows) for n, c in columns.items()}
        if not plan.all and not isinstance(plan, Union):
            rows = min(rows, self._distinct_bound(columns, rows))
        size = (left.row_size + right.row_size) / 2.0
        return RelStats(rows, size, columns, {}, notes)

    @staticmethod
    def _distinct_bound(columns: Mapping[str, ColumnStats], rows: float) -> float:
        product = 1.0
        for c in columns.values():
            if c.ndv is None:
                return rows
            product *= max(c.ndv, 1.0) + (1.0 if (c.nulls or 0.0) > 0 else 0.0)
            if product >= rows:
                return rows
        return product

    def _limit(self, plan: Limit, source: RelStats) -> RelStats:
        rows = max(source.rows - plan.offset, 0.0)
        if plan.count is not None:
            rows = min(rows, float(plan.count))
        columns = {n: scale_column(c, source.rows, rows) for n, c in source.columns.items()}
        return RelStats(rows, source.row_size, columns, source.fds, source.notes)


def _union_column(f: Field, a: ColumnStats, b: ColumnStats, rows_a: float, rows_b: float) -> ColumnStats:
    ndv = None if a.ndv is None or b.ndv is None else max(a.ndv, b.ndv)
    ranged = a.has_range and b.has_range
    return blank_column(f).replace(
        ndv=ndv,
        nulls=None if a.nulls is None or b.nulls is None else a.nulls + b.nulls,
        min=min(a.min, b.min) if ranged else None,  # type: ignore[type-var]
        max=max(a.max, b.max) if ranged else None,  # type: ignore[type-var]
        avg_len=None if a.avg_len is None or b.avg_len is None else (a.avg_len + b.avg_len) / 2.0,
        max_len=None if a.max_len is None or b.max_len is None else max(a.max_len, b.max_len),
        domain=None if ndv is None else max(domain_of(a) or 0.0, domain_of(b) or 0.0),
    )


DAYS_PER_YEAR = 365.2425

# A calendar unit's length in seconds (months, quarters and years on average), by the names
# date_trunc and trunc take.
_UNIT_SECONDS = {"second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0,
                 "month": DAYS_PER_YEAR / 12 * 86400.0, "quarter": DAYS_PER_YEAR / 4 * 86400.0,
                 "year": DAYS_PER_YEAR * 86400.0}
_UNIT_NAMES = {"ss": "second", "mi": "minute", "hh": "hour", "dd": "day", "d": "day", "wk": "week",
               "mm": "month", "mon": "month", "q": "quarter", "yy": "year", "yyyy": "year"}
# A field of a date or timestamp: its unit and how many values it cycles through.
_FIELDS: dict[type[exp.Expr], tuple[str, float]] = {
    exp.Year: ("year", math.inf), exp.Quarter: ("quarter", 4.0), exp.Month: ("month", 12.0),
    exp.Week: ("week", 53.0), exp.DayOfWeek: ("day", 7.0), exp.DayOfMonth: ("day", 31.0),
    exp.DayOfYear: ("day", 366.0), exp.Hour: ("hour", 24.0), exp.Minute: ("minute", 60.0),
    exp.Second: ("second", 60.0)}


def _unit(node: exp.Expr | None) -> str | None:
    if node is None:
        return None
    text = (node.name if isinstance(node, (exp.Var, exp.Literal)) else node.sql(dialect="spark")).strip("'").lower()
    text = _UNIT_NAMES.get(text, text.rstrip("s") if text.endswith("s") and text != "s" else text)
    return text if text in _UNIT_SECONDS else None


def time_buckets(expression: exp.Expr, stats: RelStats) -> float | None:
    """At most how many values a calendar function of a date or timestamp column with a range
    takes: ``date_trunc('HOUR', ts)`` one per hour the range spans, ``CAST(ts AS DATE)`` one per
    day, ``EXTRACT(YEAR FROM d)`` one per year, ``hour(ts)`` at most 24, ``month(d)`` at most
    12, ... (``None``: not such a function, or no range). A timestamp's distinct values are
    nearly its rows; grouped by the hour, they are the hours."""
    node = expression.unnest()
    cycle = math.inf
    if isinstance(node, exp.Extract):
        unit, target = _unit(node.this), node.expression
        cycle = {"quarter": 4.0, "month": 12.0, "hour": 24.0, "minute": 60.0, "second": 60.0}.get(unit or "", math.inf)
    elif isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
        unit, target = _unit(node.args.get("unit")), node.this
    elif isinstance(node, exp.TsOrDsToDate) or (isinstance(node, (exp.Cast, exp.TryCast)) and node.to.is_type("date")):
        unit, target = "day", node.this
    elif type(node) in _FIELDS:
        unit, cycle = _FIELDS[type(node)]
        target = node.this
    else:
        return None
    while isinstance(target, (exp.TsOrDsToDate, exp.Cast, exp.TryCast, exp.Paren)):
        target = target.this  # the field of a date made of the column
    name = column_ref(target, stats)
    column = stats.columns.get(name) if name is not None else None
    if unit is None or column is None or not column.has_range or column.kind not in ("date", "timestamp"):
        return None
    assert column.min is not None and column.max is not None
    scale = 86400.0 if column.kind == "date" else 1.0  # a date counts days, a timestamp seconds
    length = _UNIT_SECONDS[unit]
    low, high = column.min * scale, column.max * scale
    spanned = math.floor(high / length) - math.floor(low / length) + 1.0
    if unit in ("week", "month", "quarter", "year"):  # calendar units not aligned on the epoch
        spanned = math.floor((high - low) / length) + 2.0
    return max(1.0, min(spanned, cycle))


def affine(expression: exp.Expr, stats: RelStats) -> tuple[str, float, float] | None:
    """``(column, a, b)`` when ``expression`` is ``a·column + b`` for constants ``a ≠ 0`` and
    ``b`` (products, quotients, sums and differences with constants, casts that keep order)."""
    node = expression.unnest()
    name = column_ref(node, stats)
    if name is not None:
        column = stats.columns.get(name)
        return (name, 1.0, 0.0) if column is not None and column.has_range else None
    if isinstance(node, exp.Neg):
        inner = affine(node.this, stats)
        return None if inner is None else (inner[0], -inner[1], -inner[2])
    if not isinstance(node, (exp.Mul, exp.Div, exp.Add, exp.Sub)):
        return None
    for this, other, flipped in ((node.this, node.expression, False), (node.expression, node.this, True)):
        inner = affine(this, stats)
        if inner is None:
            continue
        try:
            value, _ = constant(other)
        except NotConstant:
            return None
        if not isinstance(value, float):
            return None
        col_name, a, b = inner
        if isinstance(node, exp.Mul):
            return (col_name, a * value, b * value) if value != 0 else None
        if isinstance(node, exp.Div):
            return (col_name, a / value, b / value) if not flipped and value != 0 else None
        if isinstance(node, exp.Add):
            return col_name, a, b + value
        return (col_name, -a, value - b) if flipped else (col_name, a, b - value)
    return None


def affine_column(column: ColumnStats, scale: float, offset: float, base: ColumnStats) -> ColumnStats:
    """Statistics of ``scale·column + offset``: the same distinct values and nulls, the range
    and histogram mapped (and flipped when ``scale`` is negative)."""
    assert column.min is not None and column.max is not None

    def f(x: float) -> float:
        return scale * x + offset

    lo, hi = sorted((f(column.min), f(column.max)))
    histogram = None
    if column.histogram is not None:
        bins = [HistogramBin(min(f(b.lo), f(b.hi)), max(f(b.lo), f(b.hi)), b.ndv, b.rows) for b in column.histogram.bins]
        histogram = Histogram(tuple(sorted(bins, key=lambda b: b.lo)))
    return base.replace(
        ndv=column.ndv, nulls=column.nulls, min=lo, max=hi, histogram=histogram, step=abs(scale) * column.step
    )


def _argument(call: exp.Expr) -> exp.Expr:
    node = call.this if isinstance(call, exp.Filter) else call
    arg = node.args.get("this")
    return arg if isinstance(arg, exp.Expr) else node


NORMAL_BINS = 16
NORMAL_TAIL = 0.001


def column_moments(column: ColumnStats, rows: float) -> tuple[float, float] | None:
    """Mean and standard deviation of a numeric column, from its histogram (or the uniform
    one): each bin's values spread evenly over the bin."""
    if column.kind != "number":
        return None
    hist = uniform_histogram(column, rows)
    if hist is None or hist.rows <= 0:
        return None
    total = hist.rows
    mean = sum(b.rows * (b.lo + b.hi) / 2.0 for b in hist.bins) / total
    var = sum(b.rows * ((b.hi - b.lo) ** 2 / 12.0 + ((b.lo + b.hi) / 2.0 - mean) ** 2) for b in hist.bins) / total
    return mean, math.sqrt(max(var, 0.0))


def normal_column(base: ColumnStats, mean: float, sd: float, groups: float, low: float | None = None, step: float = 0.0) -> ColumnStats:
    """A per-group aggregate's statistics when its values are roughly normal (the central
    limit theorem for sums and averages): an equi-height histogram of the normal's quantiles,
    so that a HAVING filter on it is estimated like any other range predicate."""
    if groups <= 0:
        return base.replace(ndv=0.0, nulls=0.0)
    if sd <= 0:
        return base.replace(ndv=1.0, nulls=0.0, min=mean, max=mean, step=step)
    dist = NormalDist(mean, sd)
    cuts = [dist.inv_cdf(NORMAL_TAIL + (1 - 2 * NORMAL_TAIL) * i / NORMAL_BINS) for i in range(NORMAL_BINS + 1)]
    if low is not None:
        cuts = [max(c, low) for c in cuts]
    width = cuts[-1] - cuts[0]
    ndv = groups if step <= 0 else min(groups, width / step + 1.0)
    bins = tuple(
        HistogramBin(cuts[i], cuts[i + 1], max(ndv / NORMAL_BINS, 1.0), groups / NORMAL_BINS)
        for i in range(NORMAL_BINS)
        if cuts[i + 1] >= cuts[i]
    )
    return base.replace(ndv=ndv, nulls=0.0, min=cuts[0], max=cuts[-1], histogram=Histogram(bins), step=step)


def distinct_draws(space: float, draws: float) -> float:
    """Expected distinct values among ``draws`` uniform picks from ``space`` values."""
    if space <= 1.0 or draws <= 0.0:
        return min(space, max(draws, 0.0))
    return space * -math.expm1(draws * math.log1p(-1.0 / space))


def reduce_keys(stats: RelStats, keys: list[str]) -> list[str]:
    """``keys`` without those functionally determined by the others (fewest distinct values
    dropped first, so a key column survives the columns it determines)."""
    remaining = list(dict.fromkeys(keys))
    order = sorted(remaining, key=lambda k: stats.ndv(k) or math.inf)
    for key in order:
        others = [k for k in remaining if k != key]
        if others and key in stats.closure(others):
            remaining.remove(key)
    return remaining


def key_ndv(stats: RelStats, keys: list[str]) -> float | None:
    """Distinct values of a (possibly multi-column) key: the product of the columns' distinct
    counts with exponential backoff (largest in full, the next square-rooted, and so on), at
    most the rows; columns determined by other key columns are left out."""
    remaining = reduce_keys(stats, keys)
    values = []
    for key in remaining:
        ndv = stats.ndv(key)
        if ndv is None:
            return None
        values.append(max(ndv, 1.0))
    nonnull = stats.rows * _nonnull_share(stats, keys)
    return max(min(backoff(values), nonnull), 1.0 if nonnull > 0 else 0.0)


def range_overlap(left: RelStats, a: str, right: RelStats, b: str) -> tuple[float, float]:
    """Shares of each side's rows whose key lies in the range both sides cover (1 when a
    range is unknown)."""
    ca, cb = left.columns.get(a), right.columns.get(b)
    if ca is None or cb is None or not ca.has_range or not cb.has_range or ca.kind != cb.kind:
        return 1.0, 1.0
    assert ca.min is not None and ca.max is not None and cb.min is not None and cb.max is not None
    low, high = max(ca.min, cb.min), min(ca.max, cb.max)
    if low > high:
        return 0.0, 0.0

    def share(column: ColumnStats, rows: float) -> float:
        hist = uniform_histogram(column, rows)
        if hist is None:
            return 1.0
        return max(fraction_below(hist, high, True, column.step) - fraction_below(hist, low, False, column.step), 0.0)

    return share(ca, left.rows), share(cb, right.rows)


def key_domain(stats: RelStats, keys: list[str]) -> float | None:
    """The domain of a (possibly multi-column) key, combined as :func:`key_ndv` combines
    distinct counts (without the cap by rows: a domain is not bounded by what survived)."""
    values = []
    for key in reduce_keys(stats, keys):
        column = stats.columns.get(key)
        domain = None if column is None else domain_of(column)
        if domain is None:
            return None
        values.append(max(domain, 1.0))
    return backoff(values)


def _nonnull_share(stats: RelStats, keys: list[str]) -> float:
    share = 1.0
    for key in keys:
        share *= 1.0 - null_fraction(stats.columns.get(key), stats.rows)
    return share


def _has_unique(stats: RelStats, keys: list[str]) -> bool:
    return any(stats.columns.get(k) is not None and stats.columns[k].unique for k in keys)


def _any_unique_in(stats: RelStats, updates: Mapping[str, ColumnStats]) -> bool:
    return any(name in stats.columns and stats.columns[name].unique for name in updates)


def split_join_condition(
    condition: exp.Expr | None, left: set[str], right: set[str]
) -> tuple[list[tuple[str, str]], exp.Expr | None, bool]:
    """Equi-key pairs ``(left column, right column)`` of a join condition, the rest of the
    condition (``x <=> y`` is a key pair too, which hash joins take as Spark does), and whether
    the keys match nulls the null-aware way (``x = y OR x IS NULL OR y IS NULL`` of NOT IN)."""
    pairs: list[tuple[str, str]] = []
    rest: list[exp.Expr] = []
    null_safe = False
    for conjunct in conjuncts(condition):
        node = conjunct.unnest()
        pair = _equi_pair(node, left, right)
        if pair is None and isinstance(node, exp.Or):
            terms = _disjuncts(node)
            equalities = [t for t in terms if _equi_pair(t, left, right) is not None]
            if len(equalities) == 1 and all(t is equalities[0] or isinstance(t, exp.Is) for t in terms):
                pair = _equi_pair(equalities[0], left, right)
                null_safe = True
        if pair is not None:
            pairs.append(pair)
        else:
            rest.append(conjunct)
    return pairs, conjoin(rest), null_safe


def _disjuncts(node: exp.Expr) -> list[exp.Expr]:
    node = node.unnest()
    if isinstance(node, exp.Or):
        return _disjuncts(node.left) + _disjuncts(node.right)
    return [node]


def _equi_pair(node: exp.Expr, left: set[str], right: set[str]) -> tuple[str, str] | None:
    if not isinstance(node, (exp.EQ, exp.NullSafeEQ)):
        return None
    a, b = _bare(node.this), _bare(node.expression)
    if a is None or b is None:
        return None
    if a in left and b in right:
        return a, b
    if b in left and a in right:
        return b, a
    return None


def _bare(node: exp.Expr) -> str | None:
    node = node.unnest()
    while isinstance(node, (exp.Cast, exp.TryCast)):
        node = node.this.unnest()
    return column_name(node)
