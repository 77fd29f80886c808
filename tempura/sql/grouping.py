"""Grouping sets: ``GROUP BY ROLLUP / CUBE / GROUPING SETS`` (also Hive's ``WITH ROLLUP``,
``WITH CUBE`` and ``GROUP BY a, b GROUPING SETS (...)``) and the functions ``GROUPING()`` and
``GROUPING_ID()``, bound as operators the rest of tempura already knows.

A grouping-set query is a ``UNION ALL`` of one ``Aggregate`` per grouping set, all over one
shared input (the FROM and WHERE bound once, with computed keys projected once), so that the
memo and the state selection see one input group and can share its work.

When one set groups by every column the others group by (the first set of a ROLLUP or a CUBE)
and every call is decomposable (SUM, COUNT, AVG, MIN, MAX without DISTINCT or FILTER;
:mod:`tempura.algebra.decompose`), the sets cascade: the input is aggregated once, by that
finest set, into each call's partial states, and every coarser set aggregates those groups
again by its own keys. The input (usually a join) is then read and shuffled once rather than
once per set, and a standing query keeps one aggregate of its rows where the others are small
aggregates of it. Otherwise each set aggregates the input itself. Each branch outputs,
in the same order, every grouping column (``NULL`` of the column's type when the set does not
group by it), every aggregate call, and one constant column per ``GROUPING``/``GROUPING_ID``
the block uses. HAVING, the select list, ORDER BY and LIMIT then apply to the union, through
the :data:`~tempura.sql.scope.Rewrite` returned here, as they apply to an ``Aggregate``.

Spark's semantics, which this reproduces exactly:

- The elements of a GROUP BY multiply: a plain expression is in every set; ``ROLLUP(e1, …, en)``
  gives the n + 1 prefixes, ``CUBE`` the 2^n subsets, ``GROUPING SETS`` its listed sets (whose
  elements may be ROLLUP, CUBE or GROUPING SETS again); a parenthesised tuple is one unit.
  Duplicate sets are kept: each gives its groups again.
- The grouping columns, which ``GROUPING_ID`` counts, are the distinct grouping expressions in
  the order they are written (Hive's form names them in its plain list). ``GROUPING(x)`` is 1
  where the row's set leaves ``x`` out; ``GROUPING_ID()`` is the bit vector with the first
  grouping column as its most significant bit, and its arguments, if any, must be exactly the
  grouping columns.
- A set that groups by nothing, ``()``, gives its one row only when the input has rows — except
  when it is the only set (``GROUPING SETS (())``), which Spark plans as a global aggregate:
  one row even over no input.
- Aggregate calls see the input's values, never the NULLs a set puts in place of a key.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from sqlglot import exp

from tempura.algebra import (
    Aggregate,
    AggregateCall,
    Field,
    Filter,
    LogicalPlan,
    Project,
    Projection,
    Union,
    col,
    column_name,
)
from tempura.algebra.decompose import bag_partials, decimal_shape, decomposable, finalize, merged_partials
from tempura.algebra.expressions import canonical
from tempura.algebra.schema import UNKNOWN_TYPE, Schema
from tempura.errors import BindError, UnsupportedQuery
from tempura.sql.parse import position_of, unsupported
from tempura.sql.scope import BlockBinder, Rewrite, Scope, aggregate_type, aggregates_in, spark_type

MAX_GROUPING_SETS = 64
"""More grouping sets than this (CUBE over more than six columns) is refused: each set is one
aggregation of the input."""

GROUPING_FUNCTIONS = (exp.Grouping, exp.GroupingId)
_SET_NODES = (exp.Rollup, exp.Cube, exp.GroupingSets)

GroupingSet = list[exp.Expr]
"""The grouping expressions (as written) of one grouping set."""


def uses_grouping_sets(group: exp.Group | None, calls: list[exp.Expr], sql: str) -> bool:
    """Whether the block's GROUP BY has grouping sets; ``GROUPING()`` without them is an error,
    as in Spark."""
    if group is not None and (
        any(isinstance(e, _SET_NODES) for e in group.expressions)
        or any(group.args.get(arg) for arg in ("rollup", "cube", "grouping_sets"))
    ):
        return True
    for call in calls:
        if isinstance(call, GROUPING_FUNCTIONS):
            line, column = position_of(call, sql)
            raise BindError(f"{_unqualified(call)} needs GROUP BY ROLLUP, CUBE or GROUPING SETS", line, column)
    return False


def _unqualified(node: exp.Expr) -> str:
    """``node`` as SQL with its columns unqualified, near to how the user wrote it."""
    return node.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n).sql(dialect="spark")


def _units(elements: list[exp.Expr]) -> list[GroupingSet]:
    """The units of a ROLLUP or CUBE: a parenthesised tuple is one unit."""
    out = []
    for e in elements:
        if isinstance(e, exp.Tuple):
            out.append(list(e.expressions))
        elif isinstance(e, exp.Paren):
            out.append([e.this])
        else:
            out.append([e])
    return out


def _sets_of(element: exp.Expr, sql: str) -> list[GroupingSet]:
    """The grouping sets one element of a GROUP BY (or of GROUPING SETS) stands for."""
    if isinstance(element, exp.Rollup):
        units = _units(list(element.expressions))
        return [[e for unit in units[:n] for e in unit] for n in range(len(units), -1, -1)]
    if isinstance(element, exp.Cube):
        units = _units(list(element.expressions))
        if 2 ** len(units) > MAX_GROUPING_SETS:
            raise _too_many(element, sql)
        return [
            [e for unit, kept in zip(units, mask) if kept for e in unit]
            for mask in itertools.product((True, False), repeat=len(units))
        ]
    if isinstance(element, exp.GroupingSets):
        return [s for e in element.expressions for s in _listed_set(e, sql)]
    if isinstance(element, exp.Tuple):
        if element.expressions:
            raise unsupported("a tuple as a GROUP BY key", element, sql)
        return [[]]
    return [[element]]


def _listed_set(element: exp.Expr, sql: str) -> list[GroupingSet]:
    """One entry of ``GROUPING SETS (…)``: a tuple is one set, a nested ROLLUP / CUBE /
    GROUPING SETS its sets, anything else a set of one expression."""
    if isinstance(element, exp.Tuple):
        return [list(element.expressions)]
    if isinstance(element, exp.Paren):
        return [[element.this]]
    if isinstance(element, _SET_NODES):
        return _sets_of(element, sql)
    return [[element]]


def _flatten(element: exp.Expr) -> list[exp.Expr]:
    """The grouping expressions inside one GROUP BY element, in the order written."""
    if isinstance(element, (exp.Tuple, *_SET_NODES)):
        return [e for inner in element.expressions for e in _flatten(inner)]
    if isinstance(element, exp.Paren):
        return _flatten(element.this)
    return [element]


def expand_grouping_sets(group: exp.Group, sql: str) -> tuple[list[GroupingSet], list[exp.Expr]]:
    """The grouping sets of ``group`` (duplicates kept) and its grouping expressions in order
    (duplicates kept; the caller makes them distinct once they are resolved)."""
    plain = list(group.expressions)
    if group.args.get("grouping_sets"):
        return [s for node in group.args["grouping_sets"] for s in _sets_of(node, sql)], plain
    if group.args.get("rollup"):
        return _sets_of(exp.Rollup(expressions=plain), sql), plain
    if group.args.get("cube"):
        if 2 ** len(plain) > MAX_GROUPING_SETS:
            raise _too_many(group, sql)
        return _sets_of(exp.Cube(expressions=plain), sql), plain
    sets: list[GroupingSet] = [[]]
    for element in plain:
        sets = [left + right for left in sets for right in _sets_of(element, sql)]
        if len(sets) > MAX_GROUPING_SETS:
            raise _too_many(group, sql)
    return sets, [e for element in plain for e in _flatten(element)]


def _too_many(node: exp.Expr, sql: str) -> UnsupportedQuery:
    return unsupported(f"GROUP BY with more than {MAX_GROUPING_SETS} grouping sets", node, sql)


@dataclass
class _Function:
    """One distinct ``GROUPING(…)`` / ``GROUPING_ID(…)`` of the block: its value per set."""

    type: str
    values: list[int]
    column: str = ""


def bind_grouping_sets(
    binder: BlockBinder, plan: LogicalPlan, scope: Scope, select: exp.Select, calls: list[exp.Expr]
) -> tuple[LogicalPlan, Rewrite]:
    """The union of one aggregate of ``plan`` per grouping set of ``select``'s GROUP BY, and
    the rewrite that expresses the block's expressions over the union's columns."""
    sql = binder.sql
    group = select.args["group"]
    sets, written = expand_grouping_sets(group, sql)
    if len(sets) > MAX_GROUPING_SETS:
        raise _too_many(group, sql)

    aliases = {(item.unalias() if isinstance(item, exp.Alias) else item): item.alias_or_name for item in select.expressions}

    def resolved(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            position = int(node.this)
            if not 1 <= position <= len(select.expressions):
                raise binder.bind_error(f"GROUP BY position {position} is not in the select list", node)
            item = select.expressions[position - 1]
            node = item.unalias() if isinstance(item, exp.Alias) else item
            if aggregates_in(node):
                raise binder.bind_error(f"GROUP BY position {position} refers to an aggregate", node)
        return binder.resolve(node, scope)

    # The grouping columns: computed ones are projected once, under the shared input.
    key_columns: dict[exp.Expr, str] = {}
    computed: list[Projection] = []
    for node in written:
        key = resolved(node)
        same = canonical(key)
        if same in key_columns:  # `a + b` and `b + a` are one grouping column, as in Spark
            continue
        name = column_name(key)
        if name is not None and name in plan.schema:
            key_columns[same] = name
            continue
        original = node if not (isinstance(node, exp.Literal) and not node.is_string) else key
        field_ = Field(binder.names.fresh(aliases.get(node, "group_key")), spark_type(original), True)
        computed.append(Projection(field_, key))
        key_columns[same] = field_.name
    if computed:
        plan = Project(plan, tuple(Projection(f, col(f.name)) for f in plan.schema) + tuple(computed))
    grouping_columns = list(key_columns)
    set_columns = []
    for s in sets:
        columns = []
        for node in s:
            key = canonical(resolved(node))
            if key not in key_columns:
                raise binder.bind_error(f"{node.sql(dialect='spark')} of GROUPING SETS is not in the GROUP BY list", node)
            columns.append(key_columns[key])
        set_columns.append(columns)

    aggregates: dict[exp.Expr, tuple[str, str, bool]] = {}
    functions: dict[exp.Expr, _Function] = {}
    for call in calls:
        resolved_call = binder.resolve(call, scope)
        if isinstance(call, GROUPING_FUNCTIONS):
            if resolved_call not in functions:
                values = _function_values(binder, call, resolved_call, grouping_columns, key_columns, set_columns)
                functions[resolved_call] = _Function("tinyint" if isinstance(call, exp.Grouping) else "bigint", values)
            continue
        if resolved_call in aggregates:
            continue
        inner = call.this if isinstance(call, exp.Filter) else call
        aggregates[resolved_call] = (aliases.get(call, inner.key), aggregate_type(call), not isinstance(inner, exp.Count))

    key_names = list(key_columns.values())
    set_values = [[(f.type, f.values[i]) for f in functions.values()] for i in range(len(sets))]
    finest = _finest(set_columns)
    if finest is not None and len(sets) > 1 and _decomposable(aggregates):
        branches = _cascaded(binder, plan, key_names, set_columns, finest, aggregates, set_values)
    else:
        branches = [
            _branch(binder, plan, key_names, columns, aggregates, set_values[i], len(sets) == 1)
            for i, columns in enumerate(set_columns)
        ]
    displays = key_names + [display for display, _, _ in aggregates.values()]
    displays += ["grouping" if f.type == "tinyint" else "grouping_id" for f in functions.values()]
    output = _union_all(binder, branches, displays)
    names = iter(output.schema.names)
    union_keys = {key: next(names) for key in key_columns}
    union_calls = {call: next(names) for call in aggregates}
    for function in functions.values():
        function.column = next(names)
    input_columns = frozenset(plan.schema.names)
    outputs = frozenset(output.schema.names)

    def rewrite(node: exp.Expr) -> exp.Expr:
        def replace(n: exp.Expr) -> exp.Expr:
            if n in functions:
                return col(functions[n].column)
            if n in union_calls:
                return col(union_calls[n])
            key = canonical(n)
            if key in union_keys:
                return col(union_keys[key])
            return n

        result = binder.resolve(node, scope).transform(replace)
        for c in result.find_all(exp.Column):
            if not c.table and c.name in input_columns and c.name not in outputs:
                raise binder.bind_error(f"column {c.name} must appear in GROUP BY or inside an aggregate function", node)
        return result

    return output, rewrite


def _function_values(
    binder: BlockBinder,
    call: exp.Expr,
    resolved_call: exp.Expr,
    grouping_columns: list[exp.Expr],
    key_columns: dict[exp.Expr, str],
    set_columns: list[list[str]],
) -> list[int]:
    """A ``GROUPING(x)`` or ``GROUPING_ID(…)`` per grouping set: whether ``x`` is left out, or
    the bit vector of the left-out grouping columns (first column most significant)."""
    text = _unqualified(call)
    if isinstance(call, exp.Grouping):
        arguments = list(resolved_call.expressions)
        if len(arguments) != 1:
            raise binder.bind_error(f"{text} takes one column", call)
        name = key_columns.get(canonical(arguments[0]))
        if name is None:
            raise binder.bind_error(f"the column of {text} is not a grouping column", call)
        return [0 if name in columns else 1 for columns in set_columns]
    arguments = list(resolved_call.expressions)
    if arguments and [canonical(a) for a in arguments] != grouping_columns:
        raise binder.bind_error(f"the columns of {text} must be the grouping columns, in order", call)
    names = [key_columns[g] for g in grouping_columns]
    return [
        sum(1 << (len(names) - 1 - i) for i, name in enumerate(names) if name not in columns)
        for columns in set_columns
    ]


def _branch(
    binder: BlockBinder,
    plan: LogicalPlan,
    key_names: list[str],
    set_columns: list[str],
    aggregates: dict[exp.Expr, tuple[str, str, bool]],
    function_values: list[tuple[str, int]],
    only_set: bool,
) -> LogicalPlan:
    """One grouping set's rows: the aggregate of ``plan`` by the set's columns, with every other
    grouping column NULL and the grouping functions' constants."""
    keys = tuple(dict.fromkeys(set_columns))
    calls = [
        AggregateCall(Field(binder.names.fresh(display), type_, nullable), call.copy())
        for call, (display, type_, nullable) in aggregates.items()
    ]
    guard: Field | None = None
    if not keys and not only_set:
        # Unlike a global aggregate, the empty set has no row over empty input (Spark groups
        # it by its grouping id): keep its row only when it counted some.
        guard = next((c.field for c in calls if isinstance(c.call, exp.Count) and isinstance(c.call.this, exp.Star)), None)
        if guard is None:
            guard = Field(binder.names.fresh("grouped_rows"), "bigint", False)
            calls.append(AggregateCall(guard, exp.Count(this=exp.Star())))
    branch: LogicalPlan = Aggregate(plan, keys, tuple(calls))
    if guard is not None:
        branch = Filter(branch, exp.GT(this=col(guard.name), expression=exp.Literal.number(0)))
    outputs = [Projection(c.field, col(c.field.name)) for c in calls[: len(aggregates)]]
    return _set_rows(binder, branch, plan.schema, key_names, keys, outputs, function_values)


def _set_rows(
    binder: BlockBinder,
    branch: LogicalPlan,
    input_schema: Schema,
    key_names: list[str],
    keys: tuple[str, ...],
    outputs: list[Projection],
    function_values: list[tuple[str, int]],
) -> LogicalPlan:
    """A set's aggregate ``branch`` as the union's rows: every grouping column (NULL where the
    set leaves it out), the aggregates' ``outputs``, the grouping functions' constants."""
    projections = []
    for name in key_names:
        source = input_schema.field(name)
        if name in keys:
            projections.append(Projection(source, col(name)))
        else:
            projections.append(Projection(Field(binder.names.fresh(name), source.type, True), _typed_null(source.type)))
    projections += outputs
    for type_, value in function_values:
        constant = exp.cast(exp.Literal.number(value), exp.DataType.build(type_, dialect="spark"))
        display = "grouping" if type_ == "tinyint" else "grouping_id"
        projections.append(Projection(Field(binder.names.fresh(display), type_, False), constant))
    return Project(branch, tuple(projections))


def _finest(set_columns: list[list[str]]) -> int | None:
    """The index of a set that groups by every column any set groups by, if one does and
    there is such a column (sets that are all ``()`` have nothing to aggregate first)."""
    every = {c for columns in set_columns for c in columns}
    return next((i for i, columns in enumerate(set_columns) if every and set(columns) == every), None)


_MAX_SUMMED_PRECISION = {"sum": 28, "avg": 22}
"""The widest decimal SUM / AVG result a cascade sums again: its input has at most 18 digits,
so the finest set's sums (``p + 10``) and their sums again (``p + 20``) cannot overflow where
the sum over the input would not."""


def _decomposable(aggregates: dict[exp.Expr, tuple[str, str, bool]]) -> bool:
    """Whether every call re-aggregates from partial states (:func:`decomposable`), with a
    known type and a decimal sum that cannot overflow in the finest set alone."""
    for call, (display, type_, nullable) in aggregates.items():
        stand_in = AggregateCall(Field(display, type_, nullable), call)
        if type_ == UNKNOWN_TYPE or not decomposable(stand_in):
            return False
        shape = decimal_shape(type_)
        if shape and stand_in.function in _MAX_SUMMED_PRECISION and shape[0] > _MAX_SUMMED_PRECISION[stand_in.function]:
            return False
    return True


def _cascaded(
    binder: BlockBinder,
    plan: LogicalPlan,
    key_names: list[str],
    set_columns: list[list[str]],
    finest: int,
    aggregates: dict[exp.Expr, tuple[str, str, bool]],
    values: list[list[tuple[str, int]]],
) -> list[LogicalPlan]:
    """Every set's rows from one aggregate of the input by the finest set: that aggregate keeps
    each call's partial states (:func:`bag_partials`); a coarser set merges them by its own
    keys (:func:`merged_partials`), and every set finalizes them. The input is then read and
    aggregated once, and the coarser sets aggregate the finest set's groups, not the input's rows."""
    partials = [
        AggregateCall(Field(binder.names.fresh(display), type_, nullable), call.copy())
        for call, (display, type_, nullable) in aggregates.items()
    ]
    finest_keys = tuple(dict.fromkeys(set_columns[finest]))
    fine = Aggregate(plan, finest_keys, tuple(part for call in partials for part in bag_partials(call)))
    branches = []
    for columns, function_values in zip(set_columns, values):
        keys = tuple(dict.fromkeys(columns))
        finals = partials
        branch: LogicalPlan = fine
        if set(keys) != set(finest_keys):
            finals = [AggregateCall(Field(binder.names.fresh(c.field.name), c.field.type, c.field.nullable), c.call) for c in partials]
            calls = [merged for c, into in zip(partials, finals) for merged in merged_partials(c, into)]
            guard = None
            if not keys:  # the set of () has no row over no input: the finest set then has no group
                guard = Field(binder.names.fresh("grouped_rows"), "bigint", False)
                calls.append(AggregateCall(guard, exp.Count(this=exp.Star())))
            branch = Aggregate(fine, keys, tuple(calls))
            if guard is not None:
                branch = Filter(branch, exp.GT(this=col(guard.name), expression=exp.Literal.number(0)))
        outputs = [
            Projection(Field(binder.names.fresh(display), type_, nullable), finalize(c))
            for c, (display, type_, nullable) in zip(finals, aggregates.values())
        ]
        branches.append(_set_rows(binder, branch, plan.schema, key_names, keys, outputs, function_values))
    return branches


def _typed_null(type_: str) -> exp.Expr:
    if type_ == UNKNOWN_TYPE:
        return exp.null()
    return exp.cast(exp.null(), exp.DataType.build(type_, dialect="spark"))


def _union_all(binder: BlockBinder, branches: list[LogicalPlan], displays: list[str]) -> LogicalPlan:
    """``UNION ALL`` of the branches, left-deep; each union's columns get fresh names derived
    from ``displays``."""
    result = branches[0]
    for branch in branches[1:]:
        fields = tuple(
            Field(binder.names.fresh(display), left.type if left.type != UNKNOWN_TYPE else right.type, left.nullable or right.nullable)
            for display, left, right in zip(displays, result.schema, branch.schema)
        )
        result = Union(result, branch, True, fields)
    return result


__all__ = ["MAX_GROUPING_SETS", "bind_grouping_sets", "expand_grouping_sets", "uses_grouping_sets"]
