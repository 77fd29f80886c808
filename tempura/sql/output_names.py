"""The names of a query's result columns, as Spark gives them.

An aliased item keeps its alias as written (``AS "Excess Discount Amount"``, ``AS B1_LP``); a
bare column keeps its name as written; an unaliased expression is named by its SQL text the way
Spark prints it: function names in lower case, every binary operator in parentheses
(``(a + b)``), ``COUNT(*)`` as ``count(1)``, string literals without quotes, ``<>`` as
``(NOT (a = b))``, a window with its frame spelled out. sqlglot's qualification lowercases
identifiers and names unaliased expressions ``_col_N``, so the names are read from the query
as parsed, before qualification.
"""

from __future__ import annotations

from typing import Mapping

from sqlglot import exp

_BINARY: dict[type[exp.Expr], str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.EQ: "=", exp.NullSafeEQ: "<=>",
    exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.And: "AND", exp.Or: "OR", exp.DPipe: "||",
    exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^",
}
_UPPER_CASE: dict[type[exp.Expr], str] = {exp.Rank: "RANK()", exp.DenseRank: "DENSE_RANK()", exp.PercentRank: "PERCENT_RANK()"}
_ROW_FRAMED = (exp.Rank, exp.DenseRank, exp.PercentRank, exp.RowNumber, exp.Ntile)


def output_names(tree: exp.Expr, schemas: Mapping[str, Mapping[str, str]],
                 ctes: dict[str, exp.Expr] | None = None) -> list[str] | None:
    """Spark's names for the result columns of the parsed query ``tree`` (a star expands to
    the names of the relations it covers: tables' columns, derived tables' and CTEs' outputs),
    or None where they cannot be told before binding."""
    ctes = dict(ctes or {})
    with_ = tree.args.get("with_") or tree.args.get("with")
    for cte in with_.expressions if with_ else []:
        ctes[cte.alias_or_name.lower()] = cte
    select = tree
    while isinstance(select, (exp.SetOperation, exp.Subquery, exp.Paren)):
        select = select.this if not isinstance(select, exp.SetOperation) else select.left
        with_ = select.args.get("with_") or select.args.get("with")
        for cte in with_.expressions if with_ else []:
            ctes[cte.alias_or_name.lower()] = cte
    if not isinstance(select, exp.Select):
        return None
    names: list[str] = []
    for item in select.expressions:
        star = item if isinstance(item, exp.Star) else item.this if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) else None
        if star is None:
            names.append(item_name(item))
            continue
        qualifier = item.table.lower() if isinstance(item, exp.Column) else ""
        expanded = _star(select, qualifier, schemas, ctes)
        if expanded is None:
            return None
        names.extend(expanded)
    return names


def _star(select: exp.Select, qualifier: str, schemas: Mapping[str, Mapping[str, str]],
          ctes: dict[str, exp.Expr]) -> list[str] | None:
    if any(j.args.get("using") for j in select.args.get("joins") or []):
        return None  # USING merges the joined columns: the binder's names stand
    from_ = select.args.get("from_") or select.args.get("from")
    sources = ([from_.this] if from_ is not None else []) + [j.this for j in select.args.get("joins") or []]
    names: list[str] = []
    for source in sources:
        if qualifier and source.alias_or_name.lower() != qualifier:
            continue
        alias = source.args.get("alias")
        if alias is not None and alias.columns:
            names.extend(c.name for c in alias.columns)
            continue
        if isinstance(source, exp.Table) and source.name.lower() in ctes:
            cte = ctes[source.name.lower()]
            if cte.args.get("alias") is not None and cte.args["alias"].columns:
                names.extend(c.name for c in cte.args["alias"].columns)
                continue
            inner = output_names(cte.this, schemas, ctes)
        elif isinstance(source, exp.Table):
            table = {t.lower(): cols for t, cols in schemas.items()}.get(source.name.lower())
            inner = list(table) if table is not None else None
        elif isinstance(source, exp.Subquery):
            inner = output_names(source.this, schemas, ctes)
        else:
            inner = None
        if inner is None:
            return None
        names.extend(inner)
    return names


def item_name(item: exp.Expr) -> str:
    """The name Spark gives one select-list item."""
    if isinstance(item, exp.Alias):
        return item.alias
    node = item.unnest()
    if isinstance(node, exp.Cast):
        node = node.this.unnest()  # an unaliased cast is named after what it casts
    if isinstance(node, exp.Column):
        return node.name
    return pretty(node)


def pretty(node: exp.Expr) -> str:
    """``node`` as Spark prints an expression in a generated column name."""
    if isinstance(node, exp.Paren):
        return pretty(node.this)
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else node.this
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Star):
        return "*"
    if isinstance(node, exp.NEQ):
        return f"(NOT ({pretty(node.this)} = {pretty(node.expression)}))"
    operator = _BINARY.get(type(node))
    if operator is not None:
        return f"({pretty(node.this)} {operator} {pretty(node.expression)})"
    if isinstance(node, exp.Neg):
        return f"(- {pretty(node.this)})"
    if isinstance(node, exp.Not):
        inner = node.this.unnest()
        if isinstance(inner, exp.Is):
            return f"({pretty(inner.this)} IS NOT NULL)"
        return f"(NOT {pretty(inner)})"
    if isinstance(node, exp.Is):
        return f"({pretty(node.this)} IS NULL)"
    if isinstance(node, exp.In) and node.args.get("query") is None:
        return f"({pretty(node.this)} IN ({', '.join(pretty(e) for e in node.expressions)}))"
    if isinstance(node, exp.Between):
        return f"between({pretty(node.this)}, {pretty(node.args['low'])}, {pretty(node.args['high'])})"
    if isinstance(node, exp.Case):
        parts = ["CASE"] + ([pretty(node.this)] if node.this is not None else [])
        for when in node.args.get("ifs") or []:
            parts += ["WHEN", pretty(when.this), "THEN", pretty(when.args["true"])]
        if node.args.get("default") is not None:
            parts += ["ELSE", pretty(node.args["default"])]
        return " ".join(parts + ["END"])
    if isinstance(node, exp.Cast):
        kind = node.to.sql(dialect="spark").upper().replace(", ", ",")
        return f"CAST({pretty(node.this)} AS {kind})"
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return "count(1)"
    if isinstance(node, exp.Distinct):
        return "DISTINCT " + ", ".join(pretty(e) for e in node.expressions)
    if isinstance(node, exp.Window):
        return _window(node)
    if isinstance(node, exp.Func):
        name = node.sql_name().lower() if not isinstance(node, exp.Anonymous) else node.name.lower()
        args = [a for a in node.args.values() if a is not None]
        flat: list[exp.Expr] = []
        for a in args:
            flat.extend(x for x in (a if isinstance(a, list) else [a]) if isinstance(x, exp.Expr))
        return f"{_FUNCTION_NAMES.get(name, name)}({', '.join(pretty(a) for a in flat)})"
    return node.sql(dialect="spark")


_FUNCTION_NAMES = {"substring": "substring", "stddev": "stddev", "variance": "variance"}


def _window(node: exp.Window) -> str:
    function = node.this
    parts: list[str] = []
    partition = node.args.get("partition_by") or []
    if partition:
        parts.append("PARTITION BY " + ", ".join(pretty(p) for p in partition))
    order = node.args.get("order")
    ordered = order.expressions if order is not None else []
    if ordered:
        keys = []
        for o in ordered:
            desc = bool(o.args.get("desc"))
            nulls_first = bool(o.args.get("nulls_first"))
            keys.append(f"{pretty(o.this)} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if nulls_first else 'LAST'}")
        parts.append("ORDER BY " + ", ".join(keys))
    spec = node.args.get("spec")
    if isinstance(function, (exp.Lag, exp.Lead)):
        offset = function.args.get("offset")
        steps = int(offset.this) if isinstance(offset, exp.Literal) else 1
        default = function.args.get("default")
        text = f"{function.key}({pretty(function.this)}, {steps}, {pretty(default) if default is not None else 'NULL'})"
        side = -steps if isinstance(function, exp.Lag) else steps
        parts.append(f"ROWS BETWEEN {side} FOLLOWING AND {side} FOLLOWING")
        return f"{text} OVER ({' '.join(parts)})"
    if spec is not None:
        parts.append(spec.sql(dialect="spark").upper())
    elif ordered and isinstance(function, _ROW_FRAMED):
        parts.append("ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW")
    elif ordered:
        parts.append("RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW")
    else:
        parts.append("ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING")
    text = _UPPER_CASE.get(type(function)) or pretty(function)
    return f"{text} OVER ({' '.join(parts)})"
