"""Filter estimation: the selectivity of a predicate and the column statistics after it.

Conjuncts are applied one after another, each narrowing the statistics the next one sees
(Spark's FilterEstimation). Atoms:

- ``col op literal`` for ``= <> < <= > >=``: the histogram when there is one, else the uniform
  histogram from min, max and distinct count (Hive seed). Min, max, distinct count and the
  histogram are narrowed; a literal outside ``[min, max]`` gives 0.
- ``IN (…)``, ``BETWEEN``, ``IS [NOT] NULL``, ``LIKE`` (a pattern without wildcards is an
  equality; otherwise the share of the column's value sample that matches, or without a sample
  1/(n+1) for each literal run of n characters; never below one distinct value's share).
- ``col = col``: ``1/max(V(a), V(b))`` (Hive seed); ``col < col``: 0 or 1 when the ranges do not
  overlap, else 1/3 (Spark seed).
- ``AND`` multiplies (sequentially), ``OR`` is ``s1 + s2 − s1·s2`` (Hive seed), ``NOT`` is
  ``1 − s``.

What cannot be read (a function of a column, a comparison with an unknown value) gets the
textbook defaults: 1/10 for equality, 1/3 otherwise, and a note says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from sqlglot import exp

from tempura.algebra import column_name, columns_in, conjuncts
from tempura.stats.model import ORDERABLE, ColumnStats
from tempura.stats.relation import (
    RelStats,
    fraction_below,
    fraction_equal,
    null_fraction,
    restrict_histogram,
    uniform_histogram,
)
from tempura.stats.values import NotConstant, Value, coerce, constant

DEFAULT_EQUALITY = 0.1
DEFAULT_RANGE = 1.0 / 3.0
DEFAULT_OTHER = 1.0 / 3.0

_FLIP: dict[type[exp.Expr], type[exp.Expr]] = {exp.LT: exp.GT, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.GTE: exp.LTE, exp.EQ: exp.EQ, exp.NEQ: exp.NEQ}
_COMPARISONS = tuple(_FLIP)


def column_ref(expression: exp.Expr, stats: RelStats) -> str | None:
    """The column an expression stands for: a column, or a cast of one that keeps order."""
    node = expression.unnest()
    while isinstance(node, (exp.Cast, exp.TryCast)):
        inner = node.this.unnest()
        name = column_name(inner)
        if name is not None:
            column = stats.column(name)
            target = node.to.sql(dialect="spark").lower()
            from tempura.stats.model import kind_of

            if column is not None and (kind_of(target) == column.kind or column.kind == "other"):
                return name
            return None
        node = inner
    return column_name(node)


@dataclass
class FilterResult:
    """Selectivity of a predicate and the statistics of the columns it narrowed."""

    selectivity: float
    columns: dict[str, ColumnStats] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class FilterEstimator:
    """Estimates predicates against one relation's statistics."""

    def __init__(self, stats: RelStats) -> None:
        self.stats = stats
        self.rows = stats.rows
        self.columns = dict(stats.columns)
        self.notes: list[str] = []

    def estimate(self, predicate: exp.Expr) -> FilterResult:
        """Apply ``predicate``; the result's columns are the narrowed ones only."""
        touched: dict[str, ColumnStats] = {}
        selectivity = 1.0
        parts = conjuncts(predicate)
        grouped = self._key_groups(parts)
        for i, conjunct in enumerate(parts):
            result = self._atom(conjunct, update=True)
            if i in grouped:
                result.selectivity = grouped[i]
            selectivity *= result.selectivity
            self.rows *= result.selectivity
            for name, column in result.columns.items():
                column = _shrink_domain(self.columns.get(name), column)
                self.columns[name] = column
                touched[name] = column
        return FilterResult(min(max(selectivity, 0.0), 1.0), touched, self.notes)

    def _key_groups(self, parts: list[exp.Expr]) -> dict[int, float]:
        """Equalities between columns of the same two scans form one multi-column key: its
        selectivity is ``1/max(V(A.k), V(B.k))`` with the key's distinct values combined with
        exponential backoff and capped by each table's rows (as a join on the key would be
        estimated), instead of a product of independent equalities. Returns the selectivity
        per conjunct index: the whole group's on its first equality, 1 on the others."""
        groups: dict[frozenset[str], list[tuple[int, str, str]]] = {}
        for i, part in enumerate(parts):
            node = part.unnest()
            if not isinstance(node, exp.EQ):
                continue
            a, b = column_ref(node.this, self.stats), column_ref(node.expression, self.stats)
            ca, cb = self.columns.get(a or ""), self.columns.get(b or "")
            if a is None or b is None or ca is None or cb is None or not ca.origin or not cb.origin:
                continue
            if ca.origin == cb.origin:
                continue
            key = frozenset({ca.origin, cb.origin})
            first, second = (a, b) if ca.origin < cb.origin else (b, a)
            groups.setdefault(key, []).append((i, first, second))
        out: dict[int, float] = {}
        for members in groups.values():
            if len(members) < 2:
                continue
            sides = ([m[1] for m in members], [m[2] for m in members])
            bounds = []
            for names in sides:
                columns = [self.columns[n] for n in names]
                if any(c.ndv is None for c in columns):
                    break
                ndvs = sorted((max(c.ndv or 1.0, 1.0) for c in columns), reverse=True)
                domains = sorted((max(domain_of(c) or 1.0, 1.0) for c in columns), reverse=True)
                cap = columns[0].origin_rows or math.inf
                bounds.append(min(backoff(ndvs), cap))
                bounds.append(min(backoff(domains), cap))
            else:
                share = 1.0 / max(max(bounds), 1.0)
                nonnull = 1.0
                for names in sides:
                    for n in names:
                        nonnull *= self._nonnull(n)
                for j, (i, _, _) in enumerate(members):
                    out[i] = share * nonnull if j == 0 else 1.0
        return out

    # -- atoms -----------------------------------------------------------------------------

    def _atom(self, node: exp.Expr, update: bool) -> FilterResult:
        node = node.unnest()
        if node.args.get("negate"):  # sqlglot's NOT LIKE / NOT ILIKE
            positive = node.copy()
            positive.set("negate", None)
            return FilterResult(1.0 - self._atom(positive, update=False).selectivity)
        if isinstance(node, exp.And):
            saved_rows, saved_columns = self.rows, dict(self.columns)
            result = self.estimate(node)
            self.rows, self.columns = saved_rows, saved_columns
            return result if update else FilterResult(result.selectivity)
        if isinstance(node, exp.Or):
            left = self._branch(node.left)
            right = self._branch(node.right)
            share = left.selectivity + right.selectivity - left.selectivity * right.selectivity
            return FilterResult(share, self._either(left, right) if update else {})
        if isinstance(node, exp.Not):
            inner = node.this.unnest()
            if isinstance(inner, exp.Is):
                return self._is_null(inner, negated=True)
            return FilterResult(1.0 - self._atom(inner, update=False).selectivity)
        if isinstance(node, exp.Boolean):
            return FilterResult(1.0 if node.this else 0.0)
        if isinstance(node, exp.Null):
            return FilterResult(0.0)
        if isinstance(node, exp.Is):
            return self._is_null(node, negated=False)
        if isinstance(node, exp.Between):
            low = exp.GTE(this=node.this, expression=node.args["low"])
            high = exp.LTE(this=node.this, expression=node.args["high"])
            return self._atom(exp.And(this=low, expression=high), update)
        if isinstance(node, exp.In):
            return self._in(node)
        if isinstance(node, (exp.Like, exp.ILike)):
            return self._like(node)
        if isinstance(node, _COMPARISONS):
            return self._comparison(node)
        name = column_ref(node, self.stats)
        if name is not None and self.columns.get(name, ColumnStats()).kind == "boolean":
            return self._compare_literal(exp.EQ, name, True)
        self.notes.append(f"default selectivity {DEFAULT_OTHER:.2f} for {node.sql(dialect='spark')}")
        return FilterResult(DEFAULT_OTHER)

    def _branch(self, node: exp.Expr) -> FilterResult:
        """One side of an OR, estimated with narrowing but without touching this estimator."""
        saved_rows, saved_columns = self.rows, dict(self.columns)
        result = self.estimate(node)
        self.rows, self.columns = saved_rows, saved_columns
        return result

    def _either(self, left: FilterResult, right: FilterResult) -> dict[str, ColumnStats]:
        """Columns narrowed by both sides of an OR: the union of the two narrowings."""
        out: dict[str, ColumnStats] = {}
        for name in left.columns.keys() & right.columns.keys():
            a, b, before = left.columns[name], right.columns[name], self.columns.get(name, ColumnStats())
            ndv = None if a.ndv is None or b.ndv is None else a.ndv + b.ndv
            if ndv is not None and before.ndv is not None:
                ndv = min(ndv, before.ndv)
            ranged = a.min is not None and b.min is not None and a.max is not None and b.max is not None
            out[name] = before.replace(
                ndv=ndv,
                nulls=0.0,
                min=min(a.min, b.min) if ranged else before.min,  # type: ignore[type-var]
                max=max(a.max, b.max) if ranged else before.max,  # type: ignore[type-var]
                histogram=None,
            )
        return out

    def _nonnull(self, name: str) -> float:
        return 1.0 - null_fraction(self.columns.get(name), self.rows)

    def _is_null(self, node: exp.Is, negated: bool) -> FilterResult:
        name = column_ref(node.this, self.stats)
        if name is None or not isinstance(node.expression, exp.Null):
            return FilterResult(DEFAULT_OTHER)
        column = self.columns.get(name, ColumnStats())
        share = null_fraction(column, self.rows)
        if negated:
            return FilterResult(1.0 - share, {name: column.replace(nulls=0.0)})
        return FilterResult(share, {name: column.replace(ndv=0.0, min=None, max=None, histogram=None)})

    def _comparison(self, node: exp.Expr) -> FilterResult:
        left, right = node.this, node.expression
        left_name, right_name = column_ref(left, self.stats), column_ref(right, self.stats)
        op: type[exp.Expr] = type(node)
        if left_name is not None and right_name is not None:
            return self._compare_columns(op, left_name, right_name)
        if left_name is None and right_name is not None:
            left_name, left, right = right_name, right, left
            op = _FLIP[op]
        if left_name is not None:
            try:
                value, _ = constant(right)
                return self._compare_literal(op, left_name, value)
            except NotConstant:  # not a constant, or not one of the column's domain (Spark: NULL or an error)
                return self._default(op, node)
        return self._default(op, node)

    def _default(self, op: type[exp.Expr], node: exp.Expr) -> FilterResult:
        self.notes.append(f"default selectivity for {node.sql(dialect='spark')}")
        if op is exp.EQ:
            return FilterResult(DEFAULT_EQUALITY)
        if op is exp.NEQ:
            return FilterResult(1.0 - DEFAULT_EQUALITY)
        return FilterResult(DEFAULT_RANGE)

    def _equal_share(self, column: ColumnStats, value: Value) -> float | None:
        """Share of non-null rows equal to ``value``; ``None`` when unknown."""
        if isinstance(value, float) and column.kind in ORDERABLE:
            hist = uniform_histogram(column, self.rows)
            if hist is not None:
                return fraction_equal(hist, value)
        if column.ndv is None:
            return None
        ndv = min(column.ndv, self.rows)
        return 0.0 if ndv <= 0 else 1.0 / ndv

    def _compare_literal(self, op: type[exp.Expr], name: str, raw: Value) -> FilterResult:
        column = self.columns.get(name, ColumnStats())
        if raw is None:
            return FilterResult(0.0)  # comparisons with NULL are never true
        value = coerce(raw, column.kind)
        nonnull = self._nonnull(name)
        if op in (exp.EQ, exp.NEQ):
            share = self._equal_share(column, value)
            if share is None:
                equal = DEFAULT_EQUALITY
                self.notes.append(f"no distinct count for {name}: default selectivity")
            else:
                equal = share * nonnull
            if op is exp.EQ:
                ordered = isinstance(value, float)
                narrowed = column.replace(
                    ndv=min(1.0, column.ndv) if column.ndv is not None else 1.0,
                    nulls=0.0,
                    min=value if ordered and column.kind in ORDERABLE else None,
                    max=value if ordered and column.kind in ORDERABLE else None,
                    histogram=None,
                )
                return FilterResult(equal, {name: narrowed})
            ndv = None if column.ndv is None else max(column.ndv - 1.0, 0.0)
            return FilterResult(max(nonnull - equal, 0.0), {name: column.replace(ndv=ndv, nulls=0.0)})
        if not isinstance(value, float) or column.kind not in ORDERABLE:
            self.notes.append(f"no range statistics for {name}: default selectivity")
            return FilterResult(DEFAULT_RANGE * nonnull)
        hist = uniform_histogram(column, self.rows)
        if hist is None:
            self.notes.append(f"no min/max for {name}: default selectivity")
            return FilterResult(DEFAULT_RANGE * nonnull)
        step = column.step
        if op in (exp.LT, exp.LTE):
            share = fraction_below(hist, value, op is exp.LTE, step)
            lo, hi = None, (value if op is exp.LTE else value - step if step else value)
        else:
            share = 1.0 - fraction_below(hist, value, op is exp.GT, step)
            lo, hi = (value if op is exp.GTE else value + step if step else value), None
        if share <= 0:
            return FilterResult(0.0, {name: column.replace(ndv=0.0, nulls=0.0, histogram=None)})
        restricted = restrict_histogram(hist, lo, hi, step)
        new_min = column.min if lo is None or column.min is None else max(column.min, lo)
        new_max = column.max if hi is None or column.max is None else min(column.max, hi)
        ndv = None if column.ndv is None else max(column.ndv * share, 1.0)
        narrowed = column.replace(
            ndv=ndv,
            nulls=0.0,
            min=new_min,
            max=new_max,
            histogram=restricted if column.histogram is not None else None,
        )
        return FilterResult(share * nonnull, {name: narrowed})

    def _in(self, node: exp.In) -> FilterResult:
        name = column_ref(node.this, self.stats)
        items = node.expressions
        if name is None or not items or node.args.get("query") is not None:
            share = min(DEFAULT_EQUALITY * max(len(items), 1), 1.0)
            self.notes.append(f"default selectivity for {node.sql(dialect='spark')}")
            if items and columns_in(node.this) and all(isinstance(i, exp.Literal) for i in items):
                # Remember that the expression now takes at most these values (a later
                # projection of the same expression, or a GROUP BY on it, uses it).
                listed = {str(i.this) for i in items}
                return FilterResult(share, {expression_key(node.this): ColumnStats(ndv=float(len(listed)), nulls=0.0)})
            return FilterResult(share)
        column = self.columns.get(name, ColumnStats())
        values: list[Value] = []
        try:
            for item in items:
                raw, _ = constant(item)
                value = coerce(raw, column.kind)
                if value is not None and value not in values:
                    values.append(value)
        except NotConstant:
            return FilterResult(min(DEFAULT_EQUALITY * len(items), 1.0))
        if column.has_range:
            assert column.min is not None and column.max is not None
            lo, hi = column.min, column.max
            values = [v for v in values if not isinstance(v, float) or lo <= v <= hi]
        total = 0.0
        for value in values:
            equal = self._equal_share(column, value)
            total += DEFAULT_EQUALITY if equal is None else equal
        total = min(total, 1.0) * self._nonnull(name)
        numbers = [v for v in values if isinstance(v, float)]
        narrowed = column.replace(
            ndv=float(len(values)) if column.ndv is None else min(float(len(values)), column.ndv),
            nulls=0.0,
            min=min(numbers) if numbers and column.kind in ORDERABLE else column.min,
            max=max(numbers) if numbers and column.kind in ORDERABLE else column.max,
            histogram=None,
        )
        return FilterResult(total, {name: narrowed})

    def _like(self, node: exp.Expr) -> FilterResult:
        name = column_ref(node.this, self.stats)
        pattern = node.expression
        if name is None or not isinstance(pattern, exp.Literal) or not pattern.is_string:
            self.notes.append(f"default selectivity for {node.sql(dialect='spark')}")
            return FilterResult(DEFAULT_RANGE)
        text = str(pattern.this)
        if "%" not in text and "_" not in text and not isinstance(node, exp.ILike):
            return self._compare_literal(exp.EQ, name, text)
        column = self.columns.get(name, ColumnStats())
        matching: tuple[str, ...] | None = None
        if column.sample:
            matching = tuple(v for v in column.sample if like_matches(text, v, isinstance(node, exp.ILike)))
            # No hit still leaves half a sampled value's share.
            share = max(len(matching), 0.5) / len(column.sample)
        else:
            share = like_selectivity(text)
        if column.ndv:
            share = max(share, 1.0 / max(min(column.ndv, self.rows), 1.0))
        ndv = None if column.ndv is None else max(column.ndv * share, 1.0)
        narrowed = column.replace(ndv=ndv, nulls=0.0, histogram=None, sample=matching or None)
        return FilterResult(share * self._nonnull(name), {name: narrowed})

    def _compare_columns(self, op: type[exp.Expr], left: str, right: str) -> FilterResult:
        a = self.columns.get(left, ColumnStats())
        b = self.columns.get(right, ColumnStats())
        nonnull = self._nonnull(left) * self._nonnull(right)
        if left == right:
            return FilterResult(nonnull if op in (exp.EQ, exp.LTE, exp.GTE) else 0.0)
        if op is exp.EQ and _extreme_of(a, b):
            # x = MIN(x) (or MAX) of its group: one row in each group holds the extreme.
            extreme = b if (b.lineage or "").startswith(("min:", "max:")) else a
            return FilterResult(1.0 / max(extreme.group_size or 1.0, 1.0))
        if op is exp.EQ:
            ndv_a = min(a.ndv, self.rows) if a.ndv is not None else None
            ndv_b = min(b.ndv, self.rows) if b.ndv is not None else None
            known = [v for v in (ndv_a, ndv_b) if v is not None]
            if not known:
                self.notes.append(f"no distinct counts for {left} = {right}: default selectivity")
                return FilterResult(DEFAULT_EQUALITY)
            share = 1.0 / max(max(known), 1.0)
            ndv = min(known)
            low = max(a.min, b.min) if a.has_range and b.has_range else None  # type: ignore[type-var]
            high = min(a.max, b.max) if a.has_range and b.has_range else None  # type: ignore[type-var]
            if low is not None and high is not None and low > high:
                return FilterResult(0.0)
            domain = max(domain_of(a) or 0.0, domain_of(b) or 0.0) or None
            share = 1.0 / max(max(known), domain or 0.0, 1.0)
            updates = {
                left: a.replace(ndv=ndv, nulls=0.0, min=low if low is not None else a.min, max=high if high is not None else a.max, histogram=None, domain=domain),
                right: b.replace(ndv=ndv, nulls=0.0, min=low if low is not None else b.min, max=high if high is not None else b.max, histogram=None, domain=domain),
            }
            return FilterResult(share * nonnull, updates)
        if op is exp.NEQ:
            known = [v for v in (a.ndv, b.ndv) if v is not None]
            share = 1.0 - (1.0 / max(max(known), 1.0) if known else DEFAULT_EQUALITY)
            return FilterResult(share * nonnull)
        # a < b, a <= b, a > b, a >= b
        if a.has_range and b.has_range and a.kind == b.kind:
            compared = compare_distributions(op, a, b, self.rows)
            if compared is not None:
                return FilterResult(compared * nonnull)
        if a.has_range and b.has_range:
            assert a.min is not None and a.max is not None and b.min is not None and b.max is not None
            less = op in (exp.LT, exp.LTE)
            lo_a, hi_a, lo_b, hi_b = (a.min, a.max, b.min, b.max) if less else (b.min, b.max, a.min, a.max)
            if hi_a < lo_b or (hi_a == lo_b and op in (exp.LTE, exp.GTE)):
                return FilterResult(nonnull)
            if lo_a > hi_b or (lo_a == hi_b and op in (exp.LT, exp.GT)):
                return FilterResult(0.0)
        return FilterResult(DEFAULT_RANGE * nonnull)


COMPARE_POINTS = 4


def compare_distributions(op: type[exp.Expr], a: ColumnStats, b: ColumnStats, rows: float) -> float | None:
    """``P(a op b)`` for two independent columns, from their histograms (or uniform ones):
    each bin of ``a`` is sampled at a few points and ``b``'s histogram answers each."""
    hist_a, hist_b = uniform_histogram(a, rows), uniform_histogram(b, rows)
    if hist_a is None or hist_b is None or hist_a.rows <= 0 or hist_b.rows <= 0:
        return None
    total = 0.0
    for bin_a in hist_a.bins:
        weight = bin_a.rows / hist_a.rows / COMPARE_POINTS
        for i in range(COMPARE_POINTS):
            point = bin_a.lo + (bin_a.hi - bin_a.lo) * (i + 0.5) / COMPARE_POINTS
            if op in (exp.LT, exp.LTE):  # P(b > point) or P(b >= point)
                share = 1.0 - fraction_below(hist_b, point, op is exp.LT, b.step)
            else:  # a > b: P(b < point); a >= b: P(b <= point)
                share = fraction_below(hist_b, point, op is exp.GTE, b.step)
            total += weight * share
    return min(max(total, 0.0), 1.0)


def expression_key(expression: exp.Expr) -> str:
    """The key under which statistics of a computed expression travel with a relation."""
    return "expr:" + expression.sql(dialect="spark")


def backoff(values: list[float]) -> float:
    """Distinct combinations of several columns: the largest count in full, the next
    square-rooted, the next fourth-rooted, … (exponential backoff for correlated columns)."""
    product = 1.0
    for i, v in enumerate(sorted(values, reverse=True)):
        product *= v ** (1.0 / (2**i))
    return product


def _extreme_of(a: ColumnStats, b: ColumnStats) -> bool:
    """Whether one column is the per-group MIN or MAX of the other's base column."""
    if not a.lineage or not b.lineage:
        return False
    return b.lineage in (f"min:{a.lineage}", f"max:{a.lineage}") or a.lineage in (f"min:{b.lineage}", f"max:{b.lineage}")


def domain_of(column: ColumnStats) -> float | None:
    """The distinct values a column could hold (at least its distinct count)."""
    if column.ndv is None:
        return column.domain
    return max(column.domain or 0.0, column.ndv)


def _shrink_domain(before: ColumnStats | None, after: ColumnStats) -> ColumnStats:
    """A predicate on the column itself shrinks its domain as much as its distinct values
    (unless the atom set the domain itself)."""
    if before is None or after.domain != before.domain or before.domain is None:
        return after
    if before.ndv and after.ndv is not None:
        return after.replace(domain=before.domain * min(after.ndv / before.ndv, 1.0))
    return after


def like_regex(pattern: str) -> str:
    """A LIKE pattern as a regular expression (``%`` any run, ``_`` one character, ``\\``
    escapes)."""
    out: list[str] = []
    escaped = False
    for ch in pattern:
        if escaped:
            out.append(re.escape(ch))
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return "".join(out)


def like_matches(pattern: str, value: str, ignore_case: bool = False) -> bool:
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.fullmatch(like_regex(pattern), value, flags) is not None


def like_selectivity(pattern: str) -> float:
    """Share of strings matching a LIKE pattern with wildcards: each literal run of n characters
    keeps 1/(n+1); a pattern of wildcards alone keeps everything."""
    runs = [run for run in _literal_runs(pattern) if run]
    share = 1.0
    for run in runs:
        share *= 1.0 / (len(run) + 1.0)
    return share


def _literal_runs(pattern: str) -> list[str]:
    runs: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in pattern:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in "%_":
            runs.append("".join(current))
            current = []
        else:
            current.append(ch)
    runs.append("".join(current))
    return runs
