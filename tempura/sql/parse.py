"""SQL text to a qualified, type-annotated sqlglot tree, with user errors located in the text.

This is sqlglot's work, not ours: ``parse`` reads the text in the given dialect, ``qualify``
resolves every column to its source and expands stars and alias references, and
``annotate_types`` derives types. tempura only turns sqlglot's failures into located
:class:`~tempura.errors.TempuraError` subclasses and rejects, up front and with their position,
the constructs the binder does not plan.
"""

from __future__ import annotations

import re
from typing import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.annotate_types import TypeAnnotator
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import ensure_schema

from tempura.errors import BindError, SqlSyntaxError, UnsupportedQuery
from tempura.sql.dialect import read_dialect
from tempura.sql.scope import aggregate_type, decimal_of

TableSchemas = Mapping[str, Mapping[str, str]]
"""Table name → column name → Spark SQL type string."""


def position_of(node: exp.Expr | None, sql: str) -> tuple[int | None, int | None]:
    """1-based (line, column) of where ``node`` starts in ``sql``, from sqlglot's token metadata.

    Nodes that sqlglot built itself carry no position; the earliest positioned descendant, and
    then the nearest positioned ancestor, stand in for them.
    """
    if node is None:
        return None, None
    starts = [n.meta["start"] for n in node.walk() if isinstance(n.meta.get("start"), int)]
    parent = node.parent
    while not starts and parent is not None:
        if isinstance(parent.meta.get("start"), int):
            starts = [parent.meta["start"]]
        parent = parent.parent
    if not starts:
        return None, None
    return offset_to_line_col(sql, min(starts))


def offset_to_line_col(sql: str, offset: int) -> tuple[int, int]:
    line = sql.count("\n", 0, offset) + 1
    column = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    return line, column


def unsupported(what: str, node: exp.Expr | None, sql: str) -> UnsupportedQuery:
    line, column = position_of(node, sql)
    return UnsupportedQuery(f"unsupported: {what}", line, column)


_MISSING_ARG = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*\.(\w+)'>")


_CLAUSES = {"SELECT", "FROM", "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "JOIN", "WITH"}
_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+.*?>")


def _readable(description: str) -> str:
    """sqlglot's parse messages, without its class names and token reprs."""
    match = _MISSING_ARG.search(description)
    if match:
        clause = match.group(2).upper()
        return f"incomplete {clause} clause" if clause in _CLAUSES else "incomplete expression"
    return _TOKEN.sub(
        lambda m: "end of input" if m.group(1) == "SENTINEL" else f"'{m.group(2)}'", description
    )


def tables_named(sql: str, dialect: str = "spark") -> set[str] | None:
    """Every table name ``sql`` reads from (lower case; a CTE's name too, where it is read), or
    ``None`` when it does not parse."""
    try:
        tree = parse_sql(sql, dialect)
    except SqlSyntaxError:
        return None
    return {t.name.lower() for t in tree.find_all(exp.Table) if t.name}


def parse_sql(sql: str, dialect: str = "spark") -> exp.Query:
    """Parse one query statement."""
    try:
        parsed = sqlglot.parse(sql, read=read_dialect(dialect))
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        description = _readable(first.get("description") or str(error).splitlines()[0])
        raise SqlSyntaxError(f"syntax error: {description}", first.get("line"), first.get("col")) from None
    except TokenError as error:
        raise SqlSyntaxError(f"syntax error: {error}") from None
    except ValueError as error:  # unknown dialect
        raise SqlSyntaxError(f"cannot read SQL: {error}") from None
    statements = [s for s in parsed if s is not None]
    if len(statements) != 1:
        raise SqlSyntaxError(f"expected exactly one SQL statement, found {len(statements)}")
    (statement,) = statements
    if not isinstance(statement, exp.Query):
        raise unsupported(f"{statement.key.upper()} statement (only queries are planned)", statement, sql)
    return statement


_UNSUPPORTED_NODES: tuple[tuple[type[exp.Expr], str], ...] = (
    (exp.Unnest, "UNNEST"),
    (exp.Explode, "a generator function outside LATERAL VIEW"),
    (exp.Inline, "a generator function outside LATERAL VIEW"),
    (exp.Stack, "STACK (generator function)"),
    (exp.WithinGroup, "WITHIN GROUP"),
    (exp.Pivot, "PIVOT / UNPIVOT"),
    (exp.TableSample, "TABLESAMPLE"),
    (exp.Qualify, "QUALIFY"),
    (exp.Into, "SELECT ... INTO"),
    (exp.Connect, "CONNECT BY"),
)


NATIVE_GENERATORS = (exp.Explode, exp.Inline)
"""The generators a LATERAL VIEW is planned natively with (explode, posexplode, inline and their
OUTER forms)."""


def native_lateral(node: exp.Lateral) -> str:
    """Why the binder does not plan ``node`` natively (a construct's name), or ``""``."""
    if not node.args.get("view"):
        return "LATERAL subquery"
    alias = node.args.get("alias")
    if not isinstance(node.this, NATIVE_GENERATORS):
        return f"LATERAL VIEW of {node.this.sql(dialect='spark').split('(')[0]}"
    if not isinstance(alias, exp.TableAlias) or not alias.columns or not alias.name:
        return "LATERAL VIEW without column names"
    if any(isinstance(n, (exp.Subquery, exp.Explode, exp.Inline, exp.Window, exp.AggFunc)) for n in node.this.walk() if n is not node.this):
        return "LATERAL VIEW of a nested generator, aggregate, window or subquery"
    return ""


_GENERATORS = {"json_tuple", "inline_outer"}
"""Spark's generator functions sqlglot reads as plain calls."""


def reject_unsupported(tree: exp.Expr, sql: str) -> None:
    """Raise :class:`UnsupportedQuery` at the first construct the binder cannot plan."""
    planned: set[int] = set()  # the generator calls of the LATERAL VIEWs the binder plans
    for node in tree.walk():
        if isinstance(node, exp.Lateral):
            what = native_lateral(node)
            if what:
                raise unsupported(what, node, sql)
            planned.add(id(node.this))
            continue
        if id(node) in planned:
            continue
        for node_type, what in _UNSUPPORTED_NODES:
            if isinstance(node, node_type):
                raise unsupported(what, node, sql)
        if isinstance(node, exp.Anonymous) and node.name.lower() in _GENERATORS:
            raise unsupported(f"{node.name.upper()} (generator function)", node, sql)
        if isinstance(node, exp.Window) and isinstance(node.this, exp.Filter):
            raise unsupported("FILTER on a window aggregate", node, sql)
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise unsupported("WITH RECURSIVE", node, sql)
        if isinstance(node, exp.Join) and node.args.get("method"):
            raise unsupported(f"{node.args['method'].upper()} JOIN", node, sql)
        if isinstance(node, exp.SetOperation) and node.args.get("by_name"):
            raise unsupported("set operation BY NAME", node, sql)


def check_tables(tree: exp.Expr, schemas: TableSchemas, sql: str) -> None:
    """Every table the query reads must be a CTE or a catalog table."""
    cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    known = {name.lower() for name in schemas}
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            raise unsupported("table-valued function in FROM", table, sql)
        if table.args.get("db") or table.args.get("catalog"):
            raise unsupported("database-qualified table name", table, sql)
        name = table.name.lower()
        if name not in known and name not in cte_names:
            line, column = position_of(table, sql)
            catalog = ", ".join(sorted(known)) or "none"
            raise BindError(f"unknown table '{table.name}' (catalog tables: {catalog})", line, column)


_LOCATION = re.compile(r"Line:\s*(\d+),\s*Col:\s*(\d+)")


def qualify_tree(tree: exp.Query, schemas: TableSchemas, sql: str, dialect: str = "spark") -> exp.Query:
    """Qualify and type-annotate ``tree`` against the catalog ``schemas`` (sqlglot passes), with
    Spark's shorthands written out first (:mod:`tempura.sql.desugar`)."""
    from tempura.sql.desugar import desugar

    desugar(tree, schemas)
    reject_unsupported(tree, sql)
    check_tables(tree, schemas, sql)
    lowered: dict[str, object] = {t.lower(): {c.lower(): ty for c, ty in cols.items()} for t, cols in schemas.items()}
    for join in tree.find_all(exp.Join):
        if join.args.get("using"):
            join.meta["using"] = [i.name.lower() for i in join.args["using"]]
    try:
        qualified = qualify(
            tree,
            dialect=dialect,
            schema=lowered,
            validate_qualify_columns=True,
            quote_identifiers=False,
            identify=False,
            sql=sql,
        )
    except OptimizeError as error:
        message = str(error).splitlines()[0]
        match = _LOCATION.search(message)
        line, column = (int(match.group(1)), int(match.group(2))) if match else (None, None)
        message = _LOCATION.sub("", message).strip().rstrip(".")
        unknown = _UNKNOWN_COLUMN.search(message)
        if unknown is not None:
            name = unknown.group(1) or unknown.group(2)
            # where it starts (sqlglot gives a token's end, or nothing): its first mention
            mention = next((c for c in tree.find_all(exp.Column) if c.name.lower() == name.lower()), None)
            if mention is not None:
                line, column = position_of(mention, sql)
            message = f"unknown column {name}" + _suggestion(name, tree, lowered)
        raise BindError(message[0].lower() + message[1:] if message else "cannot resolve query", line, column) from None
    _merge_using_keys(qualified)
    annotator = SparkDecimals(schema=ensure_schema(lowered, dialect=dialect))
    annotator.generated = frozenset(lateral.alias_or_name.lower() for lateral in qualified.find_all(exp.Lateral))
    annotated = annotator.annotate(qualified)
    assert isinstance(annotated, exp.Query)
    return annotated


def _merge_using_keys(tree: exp.Expr) -> None:
    """A chain of USING joins joins each next relation on the key merged so far, as Spark does: the
    left key of an inner or left join, the right key of a right join, and ``COALESCE(left, right)``
    of a full one. sqlglot's qualification writes each USING as an equality with the key of the
    first relation holding it, which is that only while no right or full join came before."""
    for select in tree.find_all(exp.Select):
        merged: dict[str, exp.Expr] = {}
        for join in select.args.get("joins") or []:
            using = join.meta.get("using")
            on = join.args.get("on")
            if not using or on is None:
                continue
            equalities = [e for e in on.flatten() if isinstance(e, exp.EQ)] if isinstance(on, exp.And) else [on]
            if len(equalities) != len(using) or not all(isinstance(e, exp.EQ) for e in equalities):
                continue
            side = (join.side or "").upper()
            for name, equality in zip(using, equalities):
                left, right = equality.this, equality.expression
                if name in merged:
                    left = merged[name].copy()
                    equality.set("this", left)
                if side == "RIGHT":
                    merged[name] = right.copy()
                elif side == "FULL":
                    merged[name] = exp.Coalesce(this=left.copy(), expressions=[right.copy()])
                else:
                    merged[name] = left.copy()


_UNKNOWN_COLUMN = re.compile(r"Unknown column: ([\w$]+)|Column '([^']+)' could not be resolved", re.IGNORECASE)


def _suggestion(name: str, tree: exp.Expr, schemas: Mapping[str, object]) -> str:
    """``; did you mean x?`` with the closest column of the tables the query reads, if one is
    close."""
    import difflib

    read = {t.name.lower() for t in tree.find_all(exp.Table)}
    columns = sorted({str(c) for t in read if isinstance(found := schemas.get(t), dict) for c in found})
    close = difflib.get_close_matches(name.lower(), columns, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


_DERIVED = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Paren, exp.Neg, exp.Case, exp.If, exp.Coalesce)


class SparkDecimals(TypeAnnotator):
    """sqlglot's type inference, with generators' columns left untyped (for Spark to type), and
    with decimal arithmetic, ``CASE``/``IF``/``COALESCE`` and ``SUM``/``AVG`` typed as Spark types them (:func:`~tempura.sql.scope.decimal_of`). The types
    are set as each node is annotated, so a derived table's column carries its expression's
    Spark type into the query around it (``SUM(x) / n`` is ``decimal(38,12)`` outside too, not a
    bare ``decimal``)."""

    generated: frozenset[str] = frozenset()
    """The aliases of the query's LATERAL VIEWs, whose columns Spark types."""

    def _set_type(self, expression: exp.Expr, target_type: exp.DataType | exp.DType | None) -> exp.Expr:
        spark = _spark_decimal(expression)
        if spark is not None:
            target_type = exp.DataType.build(spark, dialect="spark")
        elif isinstance(expression, (exp.Explode, exp.Inline)) or (
                isinstance(expression, exp.Column) and expression.table.lower() in self.generated):
            target_type = exp.DType.UNKNOWN  # sqlglot's guess at a generator's columns is not Spark's: Spark settles them
        return super()._set_type(expression, target_type)


def _spark_decimal(node: exp.Expr) -> str | None:
    """Spark's type of ``node`` where it is a decimal tempura derives, else None."""
    if isinstance(node, (exp.Sum, exp.Avg)):
        text = aggregate_type(node)
        return text if text.startswith("decimal(") else None
    if isinstance(node, _DERIVED):
        shape = decimal_of(node)
        return f"decimal({shape[0]},{shape[1]})" if isinstance(shape, tuple) else None
    return None
