"""Subqueries become joins: the decorrelation tempura's algebra needs.

sqlglot's ``unnest_subqueries`` rewrites SQL to SQL, keeping the result SQL-shaped (left joins
with ``IS NOT NULL`` tests, arrays for non-equality correlation). tempura needs semi- and
anti-joins in its algebra, because incremental rules treat them specially, so this module
builds those directly. Each rewrite below is exact under SQL's three-valued logic:

- ``EXISTS (q)`` / ``NOT EXISTS (q)`` as a conjunct of WHERE or HAVING
  ⇒ ``outer ⋉_c q'`` / ``outer ▷_c q'``, where ``c`` are q's correlated conjuncts and ``q'`` is
  q without them.
- ``x IN (SELECT y ...)`` ⇒ ``outer ⋉_{x = y ∧ c} q'``.
- ``x NOT IN (SELECT y ...)`` ⇒ ``outer ▷_{(x = y ∨ x IS NULL ∨ y IS NULL) ∧ c} q'``: a row is
  dropped when the comparison is true *or unknown* for some row of q, which is exactly when
  ``NOT IN`` is not true.
- An uncorrelated scalar subquery that always yields one row (an aggregate without GROUP BY,
  also through a CTE or derived table) ⇒ a cross join with it; one that yields at most one row
  ⇒ a left join ``ON TRUE``.
- A correlated scalar aggregate ``(SELECT f(agg) FROM q WHERE k = outer.k ...)``
  ⇒ ``outer ⟕_{outer.k = k} γ_{k; agg}(q')``. Where ``f`` over an empty input is not NULL (as
  for COUNT), a marker column tells a missing group apart, and ``f``'s empty value is used for it
  (the "COUNT bug"). A NULL outer key meets no group, as ``k = NULL`` admits no row of q.
- A correlation that is not a conjunct of such equalities: first, a conjunct common to every
  branch of an OR is factored out, ``(X ∧ A) ∨ (X ∧ B) ≡ X ∧ (A ∨ B)`` (Kleene logic is a
  distributive lattice; a branch of common conjuncts only makes ``A ∨ B`` TRUE). What remains,
  ``c(o, q)`` over outer columns ``o``, goes through the outer rows' distinct values
  ``D = δ(π_o outer)``: ``q`` becomes ``D ⋈_{c[o→o']} q`` keyed by ``o'``, and an outer row meets
  its group on ``o <=> o'``. Each outer row has exactly one ``D`` row with its values (NULLs
  included, hence ``<=>``), whose group holds exactly the rows of q that ``c`` admits for it; the
  COUNT-bug marker covers values with none.
- An uncorrelated scalar subquery that may return several rows ⇒ a cross join with
  ``π_{CASE WHEN n > 1 THEN raise_error(…) ELSE v END}(γ_{n := count(*), v := max(y)}(q))``: one
  row always; for at most one row of q, ``max`` is its value (NULL over none, as the subquery's
  value is); for more, the run fails as Spark's does, with the subquery's position.
- EXISTS elsewhere than an AND term (inside OR, under NOT, in CASE or the select list) ⇒ a
  *mark*: ``outer ⟕ δ(π_{keys, TRUE AS m}(q'))`` and ``m IS NOT NULL``. The distinct keys meet an
  outer row at most once, so no row is repeated, and ``m`` is set exactly when some row of q
  satisfies the correlation (keyed as above). EXISTS is two-valued, and so is the mark.
- ``x IN (SELECT y …)`` there ⇒ the EXISTS mark of ``x = y ∧ c`` (TRUE exactly when IN is
  TRUE), as Spark evaluates it: Spark first moves NOTs through AND and OR down to the predicate,
  then reads an unknown ``x IN (q)`` or ``x NOT IN (q)`` as FALSE, in a filter and in the select
  list alike (``x IN (q)`` in a select list is never NULL in Spark, though SQL's would be). So an
  IN under an even number of such NOTs is the mark alone; under an odd number, its unknown case
  is TRUE (the NOTs turn it FALSE), told apart with ``γ_{keys; n := count(*), v := count(y)}`` of
  q per correlation key: IN is FALSE when ``n`` is 0 or missing (q is empty for the row), else
  unknown when ``x`` is NULL or ``n > v`` (a NULL among q's values), else FALSE. Where the IN
  sits under AND, OR and NOT only of a WHERE/HAVING condition, this keeps exactly the rows SQL's
  three-valued IN keeps (unknown reaches the condition as a value that is not TRUE either way).

Constructs outside these shapes raise :class:`UnsupportedQuery` with their position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

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
    Project,
    Projection,
    Sort,
    col,
    column_name,
    columns_in,
    conjoin,
    conjuncts,
    substitute,
)
from tempura.sql.scope import (
    BlockBinder,
    Rewrite,
    Scope,
    aggregates_in,
    contains_subquery,
    is_subquery_node,
    select_has_aggregation,
    spark_type,
    unwrap_query,
)
from tempura.sql.parse import offset_to_line_col, position_of, unsupported

def _rows_of(plan: LogicalPlan) -> str | None:
    """``"one"`` when ``plan`` always yields exactly one row, ``"at most one"`` when it yields
    no more than one, else ``None``: read off the bound plan, so that a scalar subquery that
    selects from a CTE or derived table holding a global aggregate is known to be one row."""
    exact = True
    while True:
        if isinstance(plan, (Project, Sort)):
            plan = plan.input
        elif isinstance(plan, Filter):
            plan, exact = plan.input, False
        elif isinstance(plan, Limit):
            if plan.count is not None and plan.count <= 1:
                return "at most one"
            exact = exact and not plan.offset
            plan = plan.input
        elif isinstance(plan, Aggregate) and not plan.keys:
            return "one" if exact else "at most one"
        else:
            return None


_EMPTY_IS_ZERO = (exp.Count, exp.CountIf, exp.ApproxDistinct)
_EMPTY_IS_ARRAY = (exp.ArrayAgg, exp.ArrayUniqueAgg)


_NULL_PROPAGATING = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Paren, exp.Cast)


def _is_null(expression: exp.Expr) -> bool:
    """Whether ``expression`` is NULL for certain: NULL itself, or arithmetic over a NULL."""
    if isinstance(expression, exp.Null):
        return True
    if isinstance(expression, _NULL_PROPAGATING):
        return any(_is_null(child) for child in expression.iter_expressions())
    return False


def _negated_subquery(predicate: exp.Expr) -> tuple[exp.Expr, bool]:
    node = predicate.unnest()
    if isinstance(node, exp.Not):
        inner = node.this.unnest()
        if isinstance(inner, exp.Exists) or (isinstance(inner, exp.In) and inner.args.get("query") is not None):
            return inner, True
    return node, False


def _aliases_defined_in(query: exp.Expr) -> set[str]:
    names = set()
    for node in query.walk():
        if isinstance(node, (exp.Table, exp.Subquery)) and node.alias_or_name:
            names.add(node.alias_or_name.lower())
        elif isinstance(node, exp.CTE):
            names.add(node.alias_or_name.lower())
    return names


def is_correlated(query: exp.Expr) -> bool:
    """Whether ``query`` references a column of an enclosing query."""
    own = _aliases_defined_in(query)
    return any(c.table and c.table.lower() not in own for c in query.find_all(exp.Column))


def _is_plain_select(query: exp.Expr) -> bool:
    """A select block without aggregation, LIMIT or OFFSET: its rows are its FROM rows."""
    return (
        isinstance(query, exp.Select)
        and not select_has_aggregation(query)
        and query.args.get("limit") is None
        and query.args.get("offset") is None
    )


SCALAR_ROWS_MESSAGE = "scalar subquery returned more than one row"
"""What a plan raises at run time when a scalar subquery that may return several rows does."""


def _factor_common_conjuncts(predicate: exp.Expr) -> list[exp.Expr]:
    """``(X ∧ A) ∨ (X ∧ B)`` as the conjuncts ``[X, A ∨ B]``: equal in Kleene logic, which is a
    distributive lattice. A branch that is only common conjuncts makes the rest ``TRUE`` (``X ∨
    (X ∧ B) = X``). Anything else is returned as it is."""
    node = _unparen(predicate)
    if not isinstance(node, exp.Or):
        return [predicate]
    branches = [conjuncts(b) for b in _disjuncts(node)]
    common = [c for c in branches[0] if all(c in b for b in branches[1:])]
    if not common:
        return [predicate]
    rests = [[c for c in b if c not in common] for b in branches]
    if any(not rest for rest in rests):
        return common
    remainder = exp.or_(*(exp.paren(exp.and_(*rest, copy=False), copy=False) for rest in rests), copy=False)
    return common + [remainder]


def _unparen(node: exp.Expr) -> exp.Expr:
    """``node`` without enclosing parentheses (``unnest`` would open a subquery too)."""
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _disjuncts(node: exp.Expr) -> list[exp.Expr]:
    node = _unparen(node)
    if isinstance(node, exp.Or):
        return _disjuncts(node.left) + _disjuncts(node.right)
    return [node]


def _equality_sides(predicate: exp.Expr, inner_columns: set[str]) -> tuple[exp.Expr, exp.Expr] | None:
    """``(inner, outer)`` when ``predicate`` is ``inner = outer`` (either way round) with one side
    over the subquery's columns only and the other over outer columns only."""
    if not isinstance(predicate, exp.EQ):
        return None
    sides = (predicate.this, predicate.expression)
    inner = [s for s in sides if columns_in(s) and columns_in(s) <= inner_columns]
    outer = [s for s in sides if columns_in(s) and not columns_in(s) & inner_columns]
    if len(inner) != 1 or len(outer) != 1:
        return None
    return inner[0], outer[0]


def _negations(node: exp.Expr) -> int:
    """How many NOTs lie between ``node`` and the nearest ancestor that is not a NOT, AND, OR or
    parentheses: those Spark moves down to ``node`` before it evaluates it."""
    count = 0
    parent = node.parent
    while isinstance(parent, (exp.Not, exp.And, exp.Or, exp.Paren)):
        count += isinstance(parent, exp.Not)
        parent = parent.parent
    return count


def _is_not_null(expression: exp.Expr) -> exp.Expr:
    return exp.Not(this=exp.Is(this=expression, expression=exp.null()))


@dataclass(frozen=True)
class _Keyed:
    """A subquery body made joinable with the outer rows: each row of ``body`` belongs to the
    outer rows whose ``outer`` expressions equal its ``keys`` — null-safely (``<=>``) when
    ``null_safe``, where the keys are the outer rows' own values."""

    body: LogicalPlan
    keys: tuple[exp.Expr, ...]
    outer: tuple[exp.Expr, ...]
    null_safe: bool


class SubqueryPlanner:
    """Turns subqueries of one query block into joins; works for a binder (:class:`~tempura.sql.scope.BlockBinder`)."""

    def __init__(self, binder: BlockBinder) -> None:
        self.binder = binder

    def _unsupported(self, what: str, node: exp.Expr) -> Exception:
        return unsupported(what, node, self.binder.sql)

    def _fresh(self, base: str, type_: str, nullable: bool = True) -> Field:
        return Field(self.binder.names.fresh(base), type_, nullable)

    # -- predicates ----------------------------------------------------------------------------

    def apply_predicate(
        self, plan: LogicalPlan, predicate: exp.Expr, scope: Scope, rewrite: Rewrite
    ) -> LogicalPlan:
        """Apply one WHERE/HAVING conjunct that contains a subquery."""
        node, negated = _negated_subquery(predicate)
        if isinstance(node, exp.Exists):
            return self._exists(plan, node, scope, negated)
        if isinstance(node, exp.In) and node.args.get("query") is not None:
            return self._in(plan, node, scope, negated, rewrite)
        plan, condition = self.inline_scalars(plan, node, scope, rewrite, in_filter=True)
        return Filter(plan, condition)

    def _exists(self, plan: LogicalPlan, node: exp.Exists, scope: Scope, negated: bool) -> LogicalPlan:
        kind = JoinKind.ANTI if negated else JoinKind.SEMI
        body, correlation = self._exists_parts(plan, node, scope)
        return Join(kind, plan, body, conjoin(correlation) or exp.true())

    def _exists_parts(self, plan: LogicalPlan, node: exp.Exists, scope: Scope) -> tuple[LogicalPlan, list[exp.Expr]]:
        """The EXISTS subquery's body and its correlated conjuncts (over the body's and ``plan``'s columns)."""
        query = unwrap_query(node.this)
        if _is_plain_select(query):
            assert isinstance(query, exp.Select)
            body, correlation, _ = self._correlated_body(query, scope, plan)
            return body, correlation
        if is_correlated(query):
            raise self._unsupported("correlated EXISTS subquery with aggregation, LIMIT or a set operation", node)
        return self.binder.bind_query(query, None).plan, []

    def _in(self, plan: LogicalPlan, node: exp.In, scope: Scope, negated: bool, rewrite: Rewrite) -> LogicalPlan:
        lhs, body, correlation, values = self._in_parts(plan, node, scope, rewrite)
        if negated and len(lhs) > 1:
            raise self._unsupported("multi-column NOT IN subquery", node)
        if negated:
            (x,), (y,) = lhs, values
            match: exp.Expr = exp.or_(
                exp.EQ(this=x.copy(), expression=y.copy()),
                exp.Is(this=x.copy(), expression=exp.null()),
                exp.Is(this=y.copy(), expression=exp.null()),
            )
            condition = conjoin([exp.paren(match, copy=False)] + correlation)
        else:
            equalities = [exp.EQ(this=x.copy(), expression=y.copy()) for x, y in zip(lhs, values)]
            condition = conjoin(equalities + correlation)
        assert condition is not None
        return Join(JoinKind.ANTI if negated else JoinKind.SEMI, plan, body, condition)

    def _in_parts(
        self, plan: LogicalPlan, node: exp.In, scope: Scope, rewrite: Rewrite
    ) -> tuple[list[exp.Expr], LogicalPlan, list[exp.Expr], list[exp.Expr]]:
        """The IN's left-hand values, the subquery's body, its correlated conjuncts, and the
        values it returns (over the body's columns)."""
        query = unwrap_query(node.args["query"])
        left = node.this.expressions if isinstance(node.this, exp.Tuple) else [node.this]
        if any(contains_subquery(e) for e in left):
            raise self._unsupported("subquery on the left of IN", node)
        lhs = [rewrite(e) for e in left]
        if _is_plain_select(query):
            assert isinstance(query, exp.Select)
            body, correlation, body_scope = self._correlated_body(query, scope, plan)
            values = []
            for item in query.expressions:
                expression = item.unalias() if isinstance(item, exp.Alias) else item
                if contains_subquery(expression):
                    raise self._unsupported("subquery in the select list of an IN subquery", expression)
                values.append(self.binder.resolve(expression, body_scope))
        else:
            if is_correlated(query):
                raise self._unsupported("correlated IN subquery with aggregation, LIMIT or a set operation", node)
            bound = self.binder.bind_query(query, None)
            body, correlation = bound.plan, []
            values = [col(f.name) for f in body.schema]
        if len(values) != len(lhs):
            raise self.binder.bind_error(f"IN subquery returns {len(values)} columns, {len(lhs)} expected", node)
        return lhs, body, correlation, values

    # -- marks: EXISTS and IN as values ----------------------------------------------------------

    def _keyed(self, plan: LogicalPlan, body: LogicalPlan, correlation: list[exp.Expr]) -> _Keyed:
        """``body`` keyed for a left join back to ``plan`` by the correlation.

        Conjuncts without outer columns filter ``body``. Equalities ``inner = outer`` key it by
        their inner sides. Any other correlation ``c`` goes through the outer rows' distinct
        values ``D = δ(π_o plan)`` of its outer columns ``o``: the body becomes ``D ⋈_{c[o→o']}
        body``, keyed by ``o'``, which an outer row meets on ``o <=> o'``.
        """
        inner_columns = set(body.schema.names)
        local = [p for p in correlation if not columns_in(p) - inner_columns]
        if local:
            body = Filter(body, conjoin(local))  # type: ignore[arg-type]
        rest = [p for p in correlation if columns_in(p) - inner_columns]
        pairs = [_equality_sides(p, inner_columns) for p in rest]
        if all(pair is not None for pair in pairs):
            return _Keyed(body, tuple(p[0] for p in pairs if p), tuple(p[1] for p in pairs if p), False)
        condition = conjoin(rest)
        assert condition is not None
        used = columns_in(condition)
        outer_names = [f.name for f in plan.schema if f.name in used]
        renamed = {name: self.binder.names.fresh(name) for name in outer_names}
        domain = Distinct(Project(plan, tuple(
            Projection(plan.schema.field(name).renamed(renamed[name]), col(name)) for name in outer_names)))
        condition = substitute(condition, {name: col(new) for name, new in renamed.items()})
        joined = Join(JoinKind.INNER, domain, body, condition)
        return _Keyed(joined, tuple(col(renamed[n]) for n in outer_names), tuple(col(n) for n in outer_names), True)

    def _key_fields(self, keyed: _Keyed) -> list[Projection]:
        """The keys of ``keyed`` as fresh columns (the same body may be joined back twice)."""
        out = []
        for key in keyed.keys:
            name = column_name(key)
            source = keyed.body.schema.field(name) if name is not None and name in keyed.body.schema else None
            field_ = self._fresh(name or "key", source.type if source else spark_type(key))
            out.append(Projection(field_, key.copy()))
        return out

    @staticmethod
    def _join_back(plan: LogicalPlan, right: LogicalPlan, keyed: _Keyed, keys: list[Projection]) -> LogicalPlan:
        if not keys and isinstance(right, Aggregate):
            return Join(JoinKind.CROSS, plan, right, None)  # a scalar aggregate: always one row
        equal = exp.NullSafeEQ if keyed.null_safe else exp.EQ
        condition = conjoin(equal(this=outer.copy(), expression=col(k.field.name)) for outer, k in zip(keyed.outer, keys))
        return Join(JoinKind.LEFT, plan, right, condition or exp.true())

    def _match_mark(self, plan: LogicalPlan, body: LogicalPlan, correlation: list[exp.Expr]) -> tuple[LogicalPlan, exp.Expr]:
        """``plan ⟕ δ(π_{keys, TRUE AS m}(body))`` and the test ``m IS NOT NULL``: whether some
        row of ``body`` satisfies ``correlation`` with the outer row (TRUE or FALSE, never NULL).
        The distinct keys meet each outer row at most once, so no outer row is repeated."""
        keyed = self._keyed(plan, body, correlation)
        keys = self._key_fields(keyed)
        marker = self._fresh("matched", "boolean", False)
        matches = Distinct(Project(keyed.body, tuple(keys) + (Projection(marker, exp.true()),)))
        return self._join_back(plan, matches, keyed, keys), _is_not_null(col(marker.name))

    def _exists_mark(self, plan: LogicalPlan, node: exp.Exists, scope: Scope) -> tuple[LogicalPlan, exp.Expr]:
        body, correlation = self._exists_parts(plan, node, scope)
        return self._match_mark(plan, body, correlation)

    def _in_mark(
        self, plan: LogicalPlan, node: exp.In, scope: Scope, rewrite: Rewrite
    ) -> tuple[LogicalPlan, exp.Expr]:
        """``x IN (q)`` as a value, as Spark computes it. SQL's value is TRUE when some row of q
        equals x (a match mark); otherwise FALSE when q is empty for the outer row, NULL when x is
        NULL or q holds a NULL, else FALSE — from q's rows and non-NULL values counted per
        correlation key. Spark first moves NOTs through AND and OR down to the predicate (De
        Morgan), then reads an unknown ``x IN (q)`` or ``x NOT IN (q)`` as FALSE, in a filter and
        in a value alike. So an IN under an even number of such NOTs is the match mark alone;
        under an odd number its unknown case is TRUE (the NOTs make it FALSE). In a filter this
        keeps the rows SQL keeps wherever the IN sits under AND, OR and NOT only."""
        lhs, body, correlation, values = self._in_parts(plan, node, scope, rewrite)
        equalities: list[exp.Expr] = [exp.EQ(this=x.copy(), expression=y.copy()) for x, y in zip(lhs, values)]
        plan, matched = self._match_mark(plan, body, correlation + equalities)
        if _negations(node) % 2 == 0:
            return plan, matched
        if len(lhs) != 1:
            raise self._unsupported("multi-column IN subquery under NOT, outside a top-level condition", node)
        (x,), (y,) = lhs, values
        keyed = self._keyed(plan, body, correlation)
        keys = self._key_fields(keyed)
        value = self._fresh("in_value", spark_type(y))
        rows, present = self._fresh("rows", "bigint", False), self._fresh("values", "bigint", False)
        counts = Aggregate(
            Project(keyed.body, tuple(keys) + (Projection(value, y.copy()),)),
            tuple(k.field.name for k in keys),
            (AggregateCall(rows, exp.Count(this=exp.Star())), AggregateCall(present, exp.Count(this=col(value.name)))),
        )
        plan = self._join_back(plan, counts, keyed, keys)
        empty = exp.EQ(this=exp.func("coalesce", col(rows.name), exp.Literal.number(0)), expression=exp.Literal.number(0))
        unknown = exp.or_(exp.Is(this=x.copy(), expression=exp.null()), exp.GT(this=col(rows.name), expression=col(present.name)))
        mark = exp.Case(
            ifs=[
                exp.If(this=matched, true=exp.true()),
                exp.If(this=empty, true=exp.false()),
                exp.If(this=unknown, true=exp.true()),
            ],
            default=exp.false(),
        )
        return plan, mark

    def _correlated_body(
        self, query: exp.Select, scope: Scope, outer: LogicalPlan
    ) -> tuple[LogicalPlan, list[exp.Expr], Scope]:
        """Bind ``query``'s FROM and its local WHERE conjuncts; return its correlated conjuncts
        (resolved, over the body's and ``outer``'s columns) separately."""
        binder = self.binder
        with binder.cte_frame(query):
            body, body_scope = binder.bind_from(query, scope)
            local: list[exp.Expr] = []
            correlation: list[exp.Expr] = []
            where = query.args.get("where")
            predicates = conjuncts(where.this if where is not None else None)
            factored = [c for p in predicates for c in (_factor_common_conjuncts(p) if binder.max_depth(p, body_scope) else [p])]
            for predicate in factored:
                depth = binder.max_depth(predicate, body_scope)
                if depth == 0:
                    local.append(predicate)
                elif depth == 1:
                    if contains_subquery(predicate):
                        raise self._unsupported("correlated predicate containing a subquery", predicate)
                    correlation.append(binder.resolve(predicate, body_scope))
                else:
                    raise self._unsupported("subquery correlated with a query more than one level out", predicate)
            body = binder.apply_predicates(body, local, body_scope, lambda e: binder.resolve(e, body_scope))
        visible = set(body.schema.names) | set(outer.schema.names)
        for predicate in correlation:
            if not columns_in(predicate) <= visible:
                raise self._unsupported("correlated subquery referencing columns not available here", query)
        return body, correlation, body_scope

    # -- scalar subqueries ---------------------------------------------------------------------

    def inline_scalars(
        self, plan: LogicalPlan, expression: exp.Expr, scope: Scope, rewrite: Rewrite, in_filter: bool = False
    ) -> tuple[LogicalPlan, exp.Expr]:
        """Join every subquery of ``expression`` to ``plan`` and refer to its value: a scalar
        subquery's value, or EXISTS / IN as a boolean (a mark). ``in_filter``: ``expression`` is
        a filter condition, where marks in positive places may read NULL as FALSE."""
        if not contains_subquery(expression):
            return plan, rewrite(expression)
        expression = expression.copy()
        found = [n for n in expression.walk(prune=is_subquery_node) if is_subquery_node(n)]
        values: dict[str, exp.Expr] = {}
        for node in found:
            if isinstance(node, exp.Subquery):
                plan, value = self._scalar(plan, node, scope)
            elif isinstance(node, exp.Exists):
                plan, value = self._exists_mark(plan, node, scope)
            else:
                assert isinstance(node, exp.In)
                plan, value = self._in_mark(plan, node, scope, rewrite)
            placeholder = self.binder.names.fresh("subquery_value")
            values[placeholder] = value
            if node is expression:
                expression = exp.column(placeholder)
            else:
                node.replace(exp.column(placeholder))
        return plan, substitute(rewrite(expression), values)

    def _scalar(self, plan: LogicalPlan, node: exp.Subquery, scope: Scope) -> tuple[LogicalPlan, exp.Expr]:
        query = unwrap_query(node.this)
        if not is_correlated(query):
            return self._uncorrelated_scalar(plan, node, query)
        if not (
            isinstance(query, exp.Select)
            and len(query.expressions) == 1
            and not query.args.get("group")
            and not query.args.get("having")
            and query.args.get("limit") is None
            and not query.args.get("distinct")
            and aggregates_in(query.expressions[0])
        ):
            raise self._unsupported("correlated scalar subquery that is not a single aggregate", node)
        return self._correlated_scalar(plan, node, query, scope)

    def _uncorrelated_scalar(
        self, plan: LogicalPlan, node: exp.Subquery, query: exp.Expr
    ) -> tuple[LogicalPlan, exp.Expr]:
        bound = self.binder.bind_query(query, None)
        if len(bound.plan.schema) != 1:
            raise self.binder.bind_error(f"scalar subquery returns {len(bound.plan.schema)} columns", node)
        aggregate_without_groups = (
            isinstance(query, exp.Select) and not query.args.get("group") and select_has_aggregation(query)
        )
        limit = query.args.get("limit")
        limit_one = limit is not None and (limit.args.get("expression") or limit.this).name in ("0", "1")
        rows = "one" if aggregate_without_groups and not query.args.get("having") else None
        if rows is None and (aggregate_without_groups or limit_one):
            rows = "at most one"
        rows = rows or _rows_of(bound.plan)
        if rows == "one":
            joined: LogicalPlan = Join(JoinKind.CROSS, plan, bound.plan, None)
        elif rows == "at most one":
            joined = Join(JoinKind.LEFT, plan, bound.plan, exp.true())
        else:
            return self._checked_scalar(plan, node, bound.plan)
        value = col(bound.plan.schema.fields[0].name)
        return joined, value

    def _checked_scalar(self, plan: LogicalPlan, node: exp.Subquery, rows: LogicalPlan) -> tuple[LogicalPlan, exp.Expr]:
        """A scalar subquery that may return several rows: ``plan × π_{CASE WHEN n > 1 THEN
        raise_error ELSE v END}(γ_{n := count(*), v := max(x)}(q))``. The scalar aggregate is one
        row; with at most one row in q, ``max`` is that row's value (NULL for none), and with
        more the plan fails as Spark does, naming the subquery's position."""
        (source,) = rows.schema.fields
        count = self._fresh("rows", "bigint", False)
        first = self._fresh(source.name, source.type)
        grouped = Aggregate(rows, (), (
            AggregateCall(count, exp.Count(this=exp.Star())), AggregateCall(first, exp.Max(this=col(source.name)))))
        line, column = self._opening(node)
        where = f" (line {line}, column {column})" if line is not None else ""
        failure = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(f"{SCALAR_ROWS_MESSAGE}{where}")])
        checked = self._fresh(source.name, source.type)
        value = exp.Case(ifs=[exp.If(this=exp.GT(this=col(count.name), expression=exp.Literal.number(1)), true=failure)],
                         default=col(first.name))
        return Join(JoinKind.CROSS, plan, Project(grouped, (Projection(checked, value),)), None), col(checked.name)

    def _opening(self, node: exp.Subquery) -> tuple[int | None, int | None]:
        """Where the subquery's parenthesis opens, as Spark points at it; else where it starts."""
        sql = self.binder.sql
        starts = [n.meta["start"] for n in node.walk() if isinstance(n.meta.get("start"), int)]
        if starts:
            paren = sql.rfind("(", 0, min(starts))
            if paren >= 0 and re.fullmatch(r"[\s\w]*", sql[paren + 1 : min(starts)]):
                return offset_to_line_col(sql, paren)
        return position_of(node, sql)

    def _correlated_scalar(
        self, plan: LogicalPlan, node: exp.Subquery, query: exp.Select, scope: Scope
    ) -> tuple[LogicalPlan, exp.Expr]:
        binder = self.binder
        body, correlation, body_scope = self._correlated_body(query, scope, plan)
        keyed = self._keyed(plan, body, correlation)
        inner_keys, outer_keys = list(keyed.keys), list(keyed.outer)

        item = query.expressions[0]
        value_ast = item.unalias() if isinstance(item, exp.Alias) else item
        calls = aggregates_in(value_ast)
        aggregate, rewrite = binder.bind_aggregate(keyed.body, body_scope, inner_keys, calls)
        key_names = list(aggregate.keys)  # type: ignore[attr-defined]
        key_of = {k: key_names[i] for i, k in enumerate(dict.fromkeys(inner_keys))}

        value_field = Field(binder.names.fresh(item.alias_or_name or "scalar"), spark_type(value_ast), True)
        projections = [Projection(aggregate.schema.field(k), col(k)) for k in key_names]
        projections.append(Projection(value_field, rewrite(value_ast)))
        empty = self._empty_value(value_ast)
        marker: Field | None = None
        if empty is not None:
            marker = Field(binder.names.fresh("matched"), "boolean", False)
            projections.append(Projection(marker, exp.true()))
        grouped = Project(aggregate, tuple(projections))

        equal = exp.NullSafeEQ if keyed.null_safe else exp.EQ
        condition = conjoin(
            equal(this=outer.copy(), expression=col(key_of[inner])) for outer, inner in zip(outer_keys, inner_keys)
        )
        joined = Join(JoinKind.LEFT, plan, grouped, condition)
        value: exp.Expr = col(value_field.name)
        if marker is not None and empty is not None:
            value = exp.Case(
                ifs=[exp.If(this=exp.Is(this=col(marker.name), expression=exp.null()), true=empty)],
                default=value,
            )
        return joined, value

    def _empty_value(self, value_ast: exp.Expr) -> exp.Expr | None:
        """The subquery's value over no rows, or ``None`` when that value is NULL."""

        def replace(n: exp.Expr) -> exp.Expr:
            inner = n.this if isinstance(n, exp.Filter) else n
            if isinstance(inner, _EMPTY_IS_ARRAY):
                raise self._unsupported("correlated scalar subquery over an array aggregate", n)
            if isinstance(inner, _EMPTY_IS_ZERO):
                return exp.Literal.number(0)
            if isinstance(inner, exp.AggFunc):
                return exp.null()
            return n

        empty = value_ast.copy().transform(replace)
        if any(isinstance(n, exp.Column) for n in empty.walk()):
            raise self._unsupported("correlated scalar subquery whose value uses outer columns", value_ast)
        folded = simplify(empty)
        return None if _is_null(folded) else folded
