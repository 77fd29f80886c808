"""Binding: a qualified sqlglot tree becomes a ``tempura.algebra`` plan.

sqlglot has already resolved every column to its source alias (``qualify``) and typed every
expression (``annotate_types``). The binder walks query blocks in SQL's logical order —
FROM and JOIN, WHERE, GROUP BY and aggregates, HAVING, SELECT, DISTINCT, ORDER BY, LIMIT — and
builds one operator per clause. Along the way it

- gives every column a plan-unique name (``names.py``) and rewrites column references to it;
- reads only the columns a query uses from each table;
- normalises aggregation: group keys become columns (computed keys are projected first), each
  distinct aggregate call is computed once, and expressions over aggregates go to a ``Project``
  above the ``Aggregate``;
- hands subqueries in WHERE, HAVING and SELECT to ``subqueries.py``, which turns them into
  joins, semi-joins and anti-joins.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    AggregateCall,
    Distinct,
    Except,
    Field,
    Filter,
    Generate,
    Intersect,
    Join,
    JoinKind,
    Limit,
    LogicalPlan,
    Project,
    Projection,
    Query,
    Scan,
    ScanColumn,
    Sort,
    SortKey,
    Union,
    Values,
    col,
    column_name,
    conjoin,
    conjuncts,
    substitute,
    validate_plan,
)
from tempura.algebra.expressions import canonical
from tempura.algebra.schema import UNKNOWN_TYPE
from tempura.errors import BindError
from tempura.sql.grouping import bind_grouping_sets, uses_grouping_sets
from tempura.sql.names import NameAllocator
from tempura.sql.parse import TableSchemas, position_of, unsupported

from tempura.sql.scope import (Bound, Rewrite, Scope, aggregate_type, aggregates_in, contains_subquery,
                                is_subquery_node, select_has_aggregation, spark_type, unwrap_query, window_sources,
                                windows_in)
from tempura.sql.windows import WindowBinder


class Binder:
    """Binds one qualified query. A binder is used for one query only."""

    def __init__(self, schemas: TableSchemas, sql: str) -> None:
        from tempura.sql.subqueries import SubqueryPlanner

        self.schemas = {t.lower(): {c.lower(): ty for c, ty in cols.items()} for t, cols in schemas.items()}
        self.sql = sql
        self.names = NameAllocator()
        self._ctes: list[dict[str, exp.CTE]] = []
        self.subqueries = SubqueryPlanner(self)

    # -- entry point ---------------------------------------------------------------------------

    def bind(self, tree: exp.Query) -> Query:
        self._trim_exists_select_lists(tree)
        bound = self.bind_query(tree, None)
        query = Query(bound.plan, tuple(bound.names), bound.ordered, bound.order_keys)
        validate_plan(query.plan)
        return query

    @staticmethod
    def _trim_exists_select_lists(tree: exp.Expr) -> None:
        """``EXISTS (SELECT * ...)`` reads no column of its select list: drop the expanded star
        so that scans under it read only what the subquery's predicates use."""
        for node in tree.find_all(exp.Exists):
            inner = unwrap_query(node.this)
            if isinstance(inner, exp.Select) and not select_has_aggregation(inner):
                inner.set("expressions", [exp.alias_(exp.Literal.number(1), "one")])

    @staticmethod
    def _columns_used(table: exp.Table, alias: str) -> set[str]:
        """Columns of ``alias`` referenced in the query block that reads ``table``, its nested
        subqueries included (they may be correlated with it)."""
        block = table.parent_select or table.root()
        return {c.name.lower() for c in block.find_all(exp.Column) if c.table.lower() == alias}

    # -- errors --------------------------------------------------------------------------------

    def bind_error(self, message: str, node: exp.Expr | None) -> BindError:
        line, column = position_of(node, self.sql)
        return BindError(message, line, column)

    # -- query expressions ---------------------------------------------------------------------

    @contextlib.contextmanager
    def cte_frame(self, node: exp.Expr) -> Iterator[None]:
        with_ = node.args.get("with_") or node.args.get("with")
        frame = {cte.alias_or_name.lower(): cte for cte in (with_.expressions if with_ else [])}
        self._ctes.append(frame)
        try:
            yield
        finally:
            self._ctes.pop()

    def _cte(self, name: str) -> exp.CTE | None:
        for frame in reversed(self._ctes):
            if name in frame:
                return frame[name]
        return None

    def bind_query(self, node: exp.Expr, outer: Scope | None) -> Bound:
        node = unwrap_query(node)
        with self.cte_frame(node):
            if isinstance(node, exp.Select):
                return self.bind_select(node, outer)
            if isinstance(node, exp.SetOperation):
                return self.bind_set_operation(node, outer)
        raise unsupported(f"{node.key.upper()} as a query", node, self.sql)

    def bind_set_operation(self, node: exp.SetOperation, outer: Scope | None) -> Bound:
        left = self.bind_query(node.left, outer)
        right = self.bind_query(node.right, outer)
        if len(left.plan.schema) != len(right.plan.schema):
            raise self.bind_error(
                f"{node.key.upper()} inputs have {len(left.plan.schema)} and {len(right.plan.schema)} columns", node
            )
        fields = tuple(
            Field(self.names.fresh(name), lf.type if lf.type != UNKNOWN_TYPE else rf.type, lf.nullable or rf.nullable)
            for name, lf, rf in zip(left.names, left.plan.schema, right.plan.schema)
        )
        op = {exp.Union: Union, exp.Intersect: Intersect, exp.Except: Except}[type(node)]
        distinct = node.args.get("distinct", True) is not False
        plan: LogicalPlan = op(left.plan, right.plan, not distinct, fields)
        names = list(left.names)
        outputs = [Projection(f, col(f.name)) for f in fields]
        return self._order_and_limit(node, plan, names, outputs, rewrite=None, projected=True)

    def bind_select(self, select: exp.Select, outer: Scope | None) -> Bound:
        if isinstance(select.args.get("distinct"), exp.Distinct) and select.args["distinct"].args.get("on"):
            raise unsupported("DISTINCT ON", select.args["distinct"], self.sql)
        plan, scope = self.bind_from(select, outer)

        def resolve_here(e: exp.Expr) -> exp.Expr:
            return self.resolve(e, scope)

        where = select.args.get("where")
        if where is not None:
            plan = self.apply_predicates(plan, conjuncts(where.this), scope, resolve_here)

        rewrite: Rewrite = resolve_here
        order = select.args.get("order")
        agg_sources = list(select.expressions) + ([select.args["having"]] if select.args.get("having") else [])
        if order is not None:
            agg_sources += [o.this for o in order.expressions]
        calls = [c for e in agg_sources for c in aggregates_in(e)]
        group = select.args.get("group")
        if group is not None or calls or select.args.get("having") is not None:  # HAVING alone: a global aggregate
            group_exprs = list(group.expressions) if group is not None else []
            for g in group_exprs:
                if contains_subquery(g):
                    raise unsupported("subquery in GROUP BY", g, self.sql)
            if uses_grouping_sets(group, calls, self.sql):
                plan, rewrite = bind_grouping_sets(self, plan, scope, select, calls)
            else:
                keys = [self.resolve(g, scope) for g in group_exprs]
                plan, rewrite = self.bind_aggregate(plan, scope, keys, calls, select.expressions, group_exprs)
            having = select.args.get("having")
            if having is not None:
                plan = self.apply_predicates(plan, conjuncts(having.this), scope, rewrite)

        windows = [w for e in select.expressions for w in windows_in(e)]
        for key in window_sources(select)[len(select.expressions):]:
            for window in windows_in(key):  # Spark refuses them there too
                raise self.bind_error("a window function in ORDER BY: sort by its alias in the select list", window)
        if windows:
            aliases = {item.unalias(): item.alias_or_name for item in select.expressions if isinstance(item, exp.Alias)}
            plan, rewrite = WindowBinder(self).bind(plan, windows, rewrite, aliases)

        names: list[str] = []
        outputs: list[Projection] = []
        taken: set[str] = set()
        for item in select.expressions:
            expression = item.unalias() if isinstance(item, exp.Alias) else item
            while isinstance(expression, exp.Paren):  # `DISTINCT (x)` is x
                expression = expression.this
            plan, resolved = self.subqueries.inline_scalars(plan, expression, scope, rewrite)
            projection = self.projection(resolved, item.alias_or_name, plan, expression, taken)
            taken.add(projection.field.name)
            outputs.append(projection)
            names.append(item.alias_or_name)

        distinct = bool(select.args.get("distinct"))
        if distinct:
            plan = Distinct(Project(plan, tuple(outputs)))
            outputs = [Projection(p.field, col(p.field.name)) for p in outputs]
        return self._order_and_limit(select, plan, names, outputs, rewrite, projected=distinct)

    def _order_and_limit(
        self,
        node: exp.Expr,
        plan: LogicalPlan,
        names: list[str],
        outputs: list[Projection],
        rewrite: Rewrite | None,
        projected: bool = False,
    ) -> Bound:
        """Project the outputs (unless ``projected``), then ORDER BY, LIMIT and OFFSET.

        Sort keys that name an output (by alias, position or equal expression) sort by it. Any
        other key is computed as a hidden column, which a final ``Project`` drops again; that is
        impossible over DISTINCT and set operations, as in SQL.
        """
        hidden: list[Projection] = []
        keys: list[SortKey] = []
        key_positions: list[int] | None = []
        order = node.args.get("order")
        for ordered in order.expressions if order is not None else []:
            position = self._output_position(ordered.this, names, outputs, rewrite)
            if position is not None:
                key_name = outputs[position].field.name
                if key_positions is not None:
                    key_positions.append(position)
            else:
                if projected or rewrite is None:
                    raise self.bind_error("ORDER BY expression must be one of the selected columns", ordered)
                if contains_subquery(ordered.this):
                    raise unsupported("subquery in ORDER BY", ordered, self.sql)
                taken = {p.field.name for p in outputs + hidden}
                key = self._over_outputs(ordered.this, names, outputs, rewrite)
                projection = self.projection(key, "sort_key", plan, ordered.this, taken)
                hidden.append(projection)
                key_name = projection.field.name
                key_positions = None
            keys.append(
                SortKey(
                    col(key_name),
                    descending=bool(ordered.args.get("desc")),
                    nulls_first=bool(ordered.args.get("nulls_first")),
                )
            )

        all_outputs = tuple(outputs + hidden)
        identity = all(p.is_passthrough for p in all_outputs) and [p.field.name for p in all_outputs] == list(
            plan.schema.names
        )
        if not projected and not identity:
            plan = Project(plan, all_outputs)
        if keys:
            plan = Sort(plan, tuple(keys))
        count, offset = self._limit_value(node, "limit"), self._limit_value(node, "offset")
        if count is not None or offset:
            plan = Limit(plan, count, offset or 0)
        if hidden:
            plan = Project(plan, tuple(Projection(p.field, col(p.field.name)) for p in outputs))
        order_keys = tuple(key_positions) if keys and key_positions is not None else None
        return Bound(plan, names, bool(keys), order_keys)

    @staticmethod
    def _over_outputs(key: exp.Expr, names: list[str], outputs: list[Projection], rewrite: Rewrite) -> exp.Expr:
        """A sort key expression over the block's columns. An unqualified name in it is a
        select-list alias (``ORDER BY CASE WHEN total = 0 THEN name END``), as Spark resolves
        ORDER BY: it stands for that output's expression."""
        by_alias = {n.lower(): p for n, p in reversed(list(zip(names, outputs)))}
        used = {c.name.lower() for c in key.find_all(exp.Column) if not c.table and c.name.lower() in by_alias}
        if not used:
            return rewrite(key)
        marked = key.transform(
            lambda n: col(by_alias[n.name.lower()].field.name)
            if isinstance(n, exp.Column) and not n.table and n.name.lower() in used else n
        )
        return substitute(rewrite(marked), {by_alias[u].field.name: by_alias[u].expression for u in used})

    def _output_position(
        self, key: exp.Expr, names: list[str], outputs: list[Projection], rewrite: Rewrite | None
    ) -> int | None:
        if isinstance(key, exp.Column) and not key.table:
            lowered = [n.lower() for n in names]
            if key.name.lower() in lowered:
                return lowered.index(key.name.lower())
        if isinstance(key, exp.Literal) and not key.is_string:
            index = int(key.this) - 1
            if not 0 <= index < len(outputs):
                raise self.bind_error(f"ORDER BY position {index + 1} is not in the select list", key)
            return index
        if rewrite is not None and not contains_subquery(key):
            resolved = rewrite(key)
            for i, p in enumerate(outputs):
                if p.expression == resolved:
                    return i
        return None

    def _limit_value(self, node: exp.Expr, arg: str) -> int | None:
        clause = node.args.get(arg)
        if clause is None:
            return None
        value = clause.args.get("expression") or clause.this
        if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()):
            raise unsupported(f"{arg.upper()} that is not a non-negative integer literal", clause, self.sql)
        return int(value.this)

    # -- FROM ----------------------------------------------------------------------------------

    def bind_from(self, select: exp.Select, outer: Scope | None) -> tuple[LogicalPlan, Scope]:
        """The FROM clause and its joins, and the scope of names they make visible."""
        scope = Scope(parent=outer)
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            plan: LogicalPlan = Values((), ((),))
        else:
            plan = self.bind_source(from_.this, scope)
        for join in select.args.get("joins") or []:
            right = self.bind_source(join.this, scope)
            kind = self._join_kind(join)
            condition = join.args.get("on")
            if condition is not None and contains_subquery(condition):
                raise unsupported("subquery in a join condition", condition, self.sql)
            resolved = self.resolve(condition, scope) if condition is not None else None
            if kind in (JoinKind.SEMI, JoinKind.ANTI, JoinKind.LEFT, JoinKind.RIGHT, JoinKind.FULL) and resolved is None:
                resolved = exp.true()
            plan = Join(kind, plan, right, resolved)
        for lateral in select.args.get("laterals") or []:
            plan = self._generate(lateral, plan, scope)
        return plan, scope

    def _generate(self, lateral: exp.Lateral, plan: LogicalPlan, scope: Scope) -> LogicalPlan:
        """``LATERAL VIEW [OUTER] generator(…) alias AS c1, …``: the generated columns, typed by
        Spark's analysis once it runs (:func:`~tempura.sql.settle.settle_types`), join the scope
        under the view's alias."""
        call = lateral.this
        outer = bool(lateral.args.get("outer")) or type(call).__name__.lower().endswith("outer")
        alias = lateral.args["alias"]
        names = [c.name.lower() for c in alias.columns]
        fields = tuple(Field(self.names.fresh(n), UNKNOWN_TYPE, True) for n in names)
        resolved = self.resolve(call, scope)
        scope.sources[alias.name.lower()] = {n: f.name for n, f in zip(names, fields)}
        return Generate(plan, resolved, fields, outer)

    def _join_kind(self, join: exp.Join) -> JoinKind:
        side = (join.args.get("side") or "").upper()
        kind = (join.args.get("kind") or "").upper()
        if kind == "SEMI":
            return JoinKind.SEMI
        if kind == "ANTI":
            return JoinKind.ANTI
        if side in ("LEFT", "RIGHT", "FULL"):
            return JoinKind(side.lower())
        if kind == "CROSS" or join.args.get("on") is None:
            return JoinKind.CROSS
        if kind in ("", "INNER", "OUTER"):
            return JoinKind.INNER
        raise unsupported(f"{kind} JOIN", join, self.sql)

    def bind_source(self, node: exp.Expr, scope: Scope) -> LogicalPlan:
        """One FROM item; registers its columns in ``scope`` under its alias."""
        alias = node.alias_or_name.lower()
        alias_columns = [c.name.lower() for c in node.args["alias"].columns] if node.args.get("alias") else []
        if isinstance(node, exp.Table):
            cte = self._cte(node.name.lower())
            if cte is not None:
                bound = self.bind_query(cte.this, None)
                return self._register_bound(bound, alias, alias_columns, scope, node)
            return self._scan(node, alias, scope, self._columns_used(node, alias))
        if isinstance(node, exp.Subquery):
            bound = self.bind_query(node.this, None)
            return self._register_bound(bound, alias, alias_columns, scope, node)
        if isinstance(node, exp.Values):
            return self._values(node, alias, alias_columns, scope)
        raise unsupported(f"{node.key.upper()} in FROM", node, self.sql)

    def _register_bound(
        self, bound: Bound, alias: str, alias_columns: list[str], scope: Scope, node: exp.Expr
    ) -> LogicalPlan:
        names = alias_columns or [n.lower() for n in bound.names]
        if len(names) != len(bound.plan.schema):
            raise self.bind_error(f"'{alias}' names {len(names)} columns but has {len(bound.plan.schema)}", node)
        scope.sources[alias] = {name: f.name for name, f in zip(names, bound.plan.schema)}
        return bound.plan

    def _scan(self, table: exp.Table, alias: str, scope: Scope, used: set[str]) -> LogicalPlan:
        name = table.name.lower()
        columns = self.schemas[name]
        scan_columns = tuple(
            ScanColumn(c, Field(self.names.fresh(c), ty.lower().replace(", ", ","), True))
            for c, ty in columns.items()
            if c in used
        )
        scope.sources[alias] = {c.source: c.field.name for c in scan_columns}
        return Scan(name, scan_columns, alias)

    def _values(self, node: exp.Values, alias: str, alias_columns: list[str], scope: Scope) -> LogicalPlan:
        rows = [list(t.expressions) if isinstance(t, exp.Tuple) else [t] for t in node.expressions]
        width = len(rows[0]) if rows else 0
        if any(len(r) != width for r in rows):
            raise self.bind_error("VALUES rows have different numbers of columns", node)
        for row in rows:
            for value in row:
                if any(isinstance(n, exp.Column) for n in value.walk()) or contains_subquery(value):
                    raise unsupported("VALUES with non-constant expressions", value, self.sql)
        names = alias_columns or [f"col{i + 1}" for i in range(width)]
        fields = tuple(
            Field(self.names.fresh(n), spark_type(rows[0][i]) if rows else UNKNOWN_TYPE, any(isinstance(r[i], exp.Null) for r in rows))
            for i, n in enumerate(names)
        )
        scope.sources[alias] = {n: f.name for n, f in zip(names, fields)}
        return Values(fields, tuple(tuple(v.copy() for v in r) for r in rows))

    # -- expressions ---------------------------------------------------------------------------

    def resolve(self, node: exp.Expr, scope: Scope) -> exp.Expr:
        """A copy of ``node`` with every qualified column replaced by its plan column.

        Unqualified columns are kept: they already name plan columns (subquery results joined
        in by ``subqueries.py``), or they are lambda variables.
        """

        def replace(n: exp.Expr) -> exp.Expr:
            if isinstance(n, exp.Column) and n.table:
                found = scope.lookup(n.table.lower(), n.name.lower())
                if found is None:
                    raise self.bind_error(f"cannot resolve column {n.sql(dialect='spark')}", n)
                new = col(found[0])
                new.type = n.type
                return new
            if is_subquery_node(n):
                raise unsupported("subquery in this position", n, self.sql)
            if isinstance(n, exp.Window):
                raise self.bind_error("a window function is allowed only in SELECT and ORDER BY", n)
            return n

        return node.transform(replace)

    def max_depth(self, node: exp.Expr, scope: Scope) -> int:
        """How many blocks out the outermost column ``node`` references lives (0 = local).

        Columns inside nested subqueries belong to those subqueries and are not counted.
        """
        depth = 0
        for n in node.walk(prune=is_subquery_node):
            if isinstance(n, exp.Column) and n.table:
                found = scope.lookup(n.table.lower(), n.name.lower())
                if found is not None:
                    depth = max(depth, found[1])
        return depth

    def projection(
        self, resolved: exp.Expr, display: str, plan: LogicalPlan, original: exp.Expr, taken: set[str]
    ) -> Projection:
        """An output column computing ``resolved``; a bare input column passes through by name."""
        name = column_name(resolved)
        if name is not None and name in plan.schema and name not in taken:
            return Projection(plan.schema.field(name), resolved)
        if name is not None and name in plan.schema:
            source = plan.schema.field(name)
            return Projection(Field(self.names.fresh(display), source.type, source.nullable), resolved)
        nullable = not (isinstance(resolved, exp.Literal) or isinstance(original, exp.Count))
        return Projection(Field(self.names.fresh(display), spark_type(original), nullable), resolved)

    def apply_predicates(
        self, plan: LogicalPlan, predicates: list[exp.Expr], scope: Scope, rewrite: Rewrite
    ) -> LogicalPlan:
        """Filter ``plan`` by the conjuncts ``predicates``; subquery predicates become joins."""
        plain = [p for p in predicates if not contains_subquery(p)]
        if plain:
            condition = conjoin([rewrite(p) for p in plain])
            assert condition is not None
            plan = Filter(plan, condition)
        for predicate in predicates:
            if contains_subquery(predicate):
                plan = self.subqueries.apply_predicate(plan, predicate, scope, rewrite)
        return plan

    # -- aggregation ---------------------------------------------------------------------------

    def bind_aggregate(
        self,
        plan: LogicalPlan,
        scope: Scope,
        keys: list[exp.Expr],
        calls: list[exp.Expr],
        select_items: list[exp.Expr] | None = None,
        group_asts: list[exp.Expr] | None = None,
    ) -> tuple[LogicalPlan, Rewrite]:
        """Group ``plan`` by the resolved ``keys`` and compute the aggregate ``calls``.

        Returns the ``Aggregate`` and a rewrite that expresses expressions of the block in terms
        of its output: key expressions become key columns, calls become call columns, and any
        other column of the input is an error (it is neither grouped nor aggregated).
        """
        aliases = {
            (item.unalias() if isinstance(item, exp.Alias) else item): item.alias_or_name for item in select_items or []
        }
        key_columns: dict[exp.Expr, str] = {}
        computed: list[Projection] = []
        for i, key in enumerate(keys):
            same = canonical(key)
            if same in key_columns:
                continue
            name = column_name(key)
            if name is not None and name in plan.schema:
                key_columns[same] = name
                continue
            original = group_asts[i] if group_asts else key
            display = aliases.get(original, "group_key")
            field_ = Field(self.names.fresh(display), spark_type(original), True)
            computed.append(Projection(field_, key))
            key_columns[same] = field_.name
        if computed:
            passthrough = tuple(Projection(f, col(f.name)) for f in plan.schema)
            plan = Project(plan, passthrough + tuple(computed))

        call_columns: dict[exp.Expr, str] = {}
        agg_calls: list[AggregateCall] = []
        for call in calls:
            resolved = self.resolve(call, scope)
            same = canonical(resolved)
            if same in call_columns:
                continue
            inner = call.this if isinstance(call, exp.Filter) else call
            display = aliases.get(call, inner.key)
            nullable = not isinstance(inner, exp.Count)
            field_ = Field(self.names.fresh(display), aggregate_type(call), nullable)
            call_columns[same] = field_.name
            agg_calls.append(AggregateCall(field_, resolved))
        input_columns = frozenset(plan.schema.names)
        aggregate = Aggregate(plan, tuple(dict.fromkeys(key_columns.values())), tuple(agg_calls))

        def rewrite(node: exp.Expr) -> exp.Expr:
            resolved = self.resolve(node, scope)

            def replace(n: exp.Expr) -> exp.Expr:
                key = canonical(n)  # as Spark matches them: `b + a` is the key `a + b`
                if key in call_columns:
                    return col(call_columns[key])
                if key in key_columns:
                    return col(key_columns[key])
                return n

            result = resolved.transform(replace)
            outputs = frozenset(aggregate.schema.names)
            for c in result.find_all(exp.Column):
                if not c.table and c.name in input_columns and c.name not in outputs:
                    raise self.bind_error(
                        f"column {c.name} must appear in GROUP BY or inside an aggregate function", node
                    )
            return result

        return aggregate, rewrite
