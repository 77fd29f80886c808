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
  (the "COUNT bug").

Constructs outside these shapes raise :class:`UnsupportedQuery` with their position.
"""

from __future__ import annotations


from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

from tempura.algebra import (
    Aggregate,
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
    columns_in,
    conjoin,
    conjuncts,
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
from tempura.sql.parse import unsupported

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


class SubqueryPlanner:
    """Turns subqueries of one query block into joins; works for a binder (:class:`~tempura.sql.scope.BlockBinder`)."""

    def __init__(self, binder: BlockBinder) -> None:
        self.binder = binder

    def _unsupported(self, what: str, node: exp.Expr) -> Exception:
        return unsupported(what, node, self.binder.sql)

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
        for n in node.walk():
            if isinstance(n, exp.Exists) or (isinstance(n, exp.In) and n.args.get("query") is not None):
                raise self._unsupported("EXISTS or IN subquery that is not a top-level AND term of WHERE/HAVING", n)
        plan, condition = self.inline_scalars(plan, node, scope, rewrite)
        return Filter(plan, condition)

    def _exists(self, plan: LogicalPlan, node: exp.Exists, scope: Scope, negated: bool) -> LogicalPlan:
        kind = JoinKind.ANTI if negated else JoinKind.SEMI
        query = unwrap_query(node.this)
        if _is_plain_select(query):
            assert isinstance(query, exp.Select)
            body, correlation, _ = self._correlated_body(query, scope, plan)
            return Join(kind, plan, body, conjoin(correlation) or exp.true())
        if is_correlated(query):
            raise self._unsupported("correlated EXISTS subquery with aggregation, LIMIT or a set operation", node)
        bound = self.binder.bind_query(query, None)
        return Join(kind, plan, bound.plan, exp.true())

    def _in(self, plan: LogicalPlan, node: exp.In, scope: Scope, negated: bool, rewrite: Rewrite) -> LogicalPlan:
        query = unwrap_query(node.args["query"])
        left = node.this.expressions if isinstance(node.this, exp.Tuple) else [node.this]
        if any(contains_subquery(e) for e in left):
            raise self._unsupported("subquery on the left of IN", node)
        lhs = [rewrite(e) for e in left]
        if negated and len(lhs) > 1:
            raise self._unsupported("multi-column NOT IN subquery", node)
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
            for predicate in conjuncts(where.this if where is not None else None):
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
        self, plan: LogicalPlan, expression: exp.Expr, scope: Scope, rewrite: Rewrite
    ) -> tuple[LogicalPlan, exp.Expr]:
        """Join every scalar subquery of ``expression`` to ``plan`` and refer to its value."""
        if not contains_subquery(expression):
            return plan, rewrite(expression)
        expression = expression.copy()
        found = [n for n in expression.walk(prune=is_subquery_node) if is_subquery_node(n)]
        for node in found:
            if not isinstance(node, exp.Subquery):
                raise self._unsupported("EXISTS or IN subquery inside an expression", node)
            plan, value = self._scalar(plan, node, scope)
            if node is expression:
                expression = value
            else:
                node.replace(value)
        return plan, rewrite(expression)

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
            raise self._unsupported("scalar subquery that may return more than one row", node)
        value = col(bound.plan.schema.fields[0].name)
        return joined, value

    def _correlated_scalar(
        self, plan: LogicalPlan, node: exp.Subquery, query: exp.Select, scope: Scope
    ) -> tuple[LogicalPlan, exp.Expr]:
        binder = self.binder
        body, correlation, body_scope = self._correlated_body(query, scope, plan)
        inner_columns = set(body.schema.names)
        outer_keys: list[exp.Expr] = []
        inner_keys: list[exp.Expr] = []
        for predicate in correlation:
            sides = (predicate.this, predicate.expression) if isinstance(predicate, exp.EQ) else ()
            inner = [s for s in sides if columns_in(s) and columns_in(s) <= inner_columns]
            outer = [s for s in sides if columns_in(s) and not columns_in(s) & inner_columns]
            if len(inner) != 1 or len(outer) != 1:
                raise self._unsupported("correlated scalar subquery with a correlation that is not an equality", node)
            inner_keys.append(inner[0])
            outer_keys.append(outer[0])

        item = query.expressions[0]
        value_ast = item.unalias() if isinstance(item, exp.Alias) else item
        calls = aggregates_in(value_ast)
        aggregate, rewrite = binder.bind_aggregate(body, body_scope, inner_keys, calls)
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

        condition = conjoin(
            exp.EQ(this=outer.copy(), expression=col(key_of[inner])) for outer, inner in zip(outer_keys, inner_keys)
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
