"""Opaque Spark subplans: the parts of a query tempura does not plan natively, carved out and run
as the Spark SQL the user wrote.

When the binder refuses a construct (:class:`~tempura.errors.UnsupportedQuery`), the query is not
refused: the innermost self-contained query around the construct becomes an opaque part. A part
is a derived table, a CTE's body, or the whole query, whichever is the innermost that Spark
analyzes on its own (a part that refers to an outer query's columns or CTEs is not self-contained,
and the next one out is tried). Spark's analysis of the part names and types its columns, the
part is replaced in the tree by a read of a stand-in table of those columns, and binding goes on;
a query with several refused constructs has several parts. After binding, each stand-in read
becomes an :class:`~tempura.algebra.Opaque` operator over scans of the catalog tables the part
reads, so the memo prices it, a standing query recomputes it from its sources' snapshots, and
``explain`` says why it is opaque.

The part's text is the user's: the whole query's is the text itself, a derived table's or CTE's
is cut from it between the part's parentheses (a re-print through sqlglot would rewrite what its
model of Spark SQL does not carry, such as ``percentile_cont … WITHIN GROUP``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Mapping

from sqlglot import exp
from sqlglot.tokens import Token

from tempura.algebra import Field, LogicalPlan, Opaque, Scan, ScanColumn
from tempura.algebra.schema import UNKNOWN_TYPE
from tempura.errors import SparkRejects, UnsupportedQuery
from tempura.sql.desugar import cte_of

Analyze = Callable[[str], str]
"""Spark's analysis of a query over the catalog's tables: its result ``StructType`` as JSON.
Raises :class:`~tempura.errors.SparkRejects` where Spark rejects it."""

STAND_IN = "__opaque_"
"""Prefix of the stand-in tables' names (no catalog table may start with it)."""


@dataclass
class Part:
    """One opaque part: the stand-in table ``name`` of ``columns`` (unique name → Spark type, in
    the part's order), computed by ``sql`` from the catalog tables ``tables``. ``original`` is the tree it replaced
    (a derived table, a CTE body, or the whole query)."""

    name: str
    sql: str
    tables: tuple[str, ...]
    columns: dict[str, str]
    reason: str
    original: exp.Expr
    whole: bool = False


def _offset(sql: str, line: int | None, column: int | None) -> int | None:
    if line is None or column is None:
        return None
    lines = sql.split("\n")
    if line > len(lines):
        return None
    return sum(len(text) + 1 for text in lines[: line - 1]) + column - 1


def _at(tree: exp.Expr, offset: int | None) -> exp.Expr:
    """The node of ``tree`` that starts at ``offset`` in the text (the tree itself when none)."""
    if offset is None:
        return tree
    for node in tree.walk():
        if node.meta.get("start") == offset:
            return node
    return tree


def _candidates(node: exp.Expr, root: exp.Expr) -> list[exp.Expr]:
    """The parts that may hold ``node``, innermost first: derived tables, CTE bodies, the whole
    query. (A derived table holds only what its query does: not a PIVOT applied to it.)"""
    found: list[exp.Expr] = []
    child, parent = node, node.parent
    while parent is not None:
        if child.arg_key == "this" and isinstance(parent, exp.Subquery) and isinstance(parent.parent, (exp.From, exp.Join)):
            found.append(parent)
        elif child.arg_key == "this" and isinstance(parent, exp.CTE):
            found.append(child)
        if parent is root:
            break
        child, parent = parent, parent.parent
    found.append(root)
    return found


def _restored(node: exp.Expr, parts: Mapping[str, Part]) -> exp.Expr:
    """A copy of ``node`` with each stand-in read replaced by the part it stands for (and that
    part's own stand-ins by theirs)."""
    copy = node.copy()
    for table in list(copy.find_all(exp.Table)):
        part = parts.get(table.name.lower())
        if part is None:
            continue
        original = _restored(part.original, parts)
        if isinstance(part.original, exp.Subquery):
            table.replace(original)
            continue
        select = table.find_ancestor(exp.Select)  # a CTE body's stand-in: SELECT * FROM it
        if select is None or select is copy:
            return original
        select.replace(original)
    return copy


def _written(sql: str, part: exp.Expr) -> str | None:
    """The text of ``part`` (a derived table's or a CTE's parenthesised query) as the user wrote
    it: inside the innermost parentheses, found by Spark's tokens, that hold every token of the
    part's the text positions and open with a query. ``None`` where the text does not place it."""
    from sqlglot.tokens import TokenType

    from tempura.sql.dialect import TempuraSpark

    spans = [(n.meta["start"], n.meta.get("end", n.meta["start"])) for n in part.walk()
             if isinstance(n.meta.get("start"), int)]
    if not spans:
        return None
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    tokens = TempuraSpark().tokenize(sql)
    index = next((i for i, t in enumerate(tokens) if t.start >= first), None)
    if index is None:
        return None
    opens = (TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.FROM, TokenType.L_PAREN)
    depth = 0
    for i in range(index - 1, -1, -1):  # outwards, through each parenthesis still open at the part's first token
        kind = tokens[i].token_type
        if kind == TokenType.R_PAREN:
            depth += 1
            continue
        if kind != TokenType.L_PAREN:
            continue
        if depth:
            depth -= 1
            continue
        close = _closing(tokens, i)
        if close is None:
            return None
        if tokens[close].start > last and i + 1 < len(tokens) and tokens[i + 1].token_type in opens:
            return sql[tokens[i].end + 1:tokens[close].start].strip()
    return None


def _closing(tokens: list[Token], opening: int) -> int | None:
    """The index of the parenthesis closing the one at ``opening``."""
    from sqlglot.tokens import TokenType

    depth = 0
    for i in range(opening + 1, len(tokens)):
        kind = tokens[i].token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            if depth == 0:
                return i
            depth -= 1
    return None


def _unique(names: list[str]) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    out: list[str] = []
    for name in names:
        key = name.lower()
        seen[key] = seen.get(key, 0) + 1
        out.append(name if seen[key] == 1 else f"{name}__{seen[key]}")
    return tuple(out)


def carve(tree: exp.Query, refusal: UnsupportedQuery, sql: str, schemas: Mapping[str, Mapping[str, str]],
          analyze: Analyze, parts: dict[str, Part], result: str | None = None, whole_only: bool = False) -> exp.Query:
    """``tree`` with the innermost self-contained part around the refused construct replaced by a
    stand-in read, the part added to ``parts``; the whole query's part (its text the user's
    ``sql``, its analysis ``result`` when known) replaces every part carved before. Re-raises
    ``refusal`` where no part Spark analyzes holds it. ``whole_only``: the whole query is the
    part."""
    from tempura.sql.dialect import TempuraSpark

    target = _at(tree, _offset(sql, refusal.line, refusal.column))
    catalog = {name.lower() for name in schemas}
    reason = refusal.detail.removeprefix("unsupported: ")
    for candidate in [tree] if whole_only else _candidates(target, tree):
        whole = candidate is tree
        text_tree = _restored(candidate, parts)
        if isinstance(text_tree, exp.Subquery):
            text_tree = text_tree.this
        tables = [t for t in text_tree.find_all(exp.Table) if not cte_of(t, text_tree) is not None]
        if not whole and any(t.name.lower() not in catalog for t in tables):
            continue  # it reads an outer query's CTE: not self-contained
        text = sql if whole else (_written(sql, candidate) or text_tree.sql(dialect=TempuraSpark))
        try:
            analysis = result if whole and result is not None else analyze(text)
        except SparkRejects:
            if whole:
                raise refusal from None
            continue  # it refers to an outer query's columns
        fields = json.loads(analysis)["fields"]
        outputs = _unique([f["name"] for f in fields])
        name = f"{STAND_IN}{len(parts) + 1}"
        while name in parts:
            name += "_"
        read = sorted({t.name.lower() for t in tables if t.name.lower() in catalog})
        columns = {n: _type_text(f["type"]) for n, f in zip(outputs, fields)}
        part = Part(name, text, tuple(read), columns, reason, candidate, whole)
        stand_in = exp.select("*").from_(exp.to_table(name))
        if whole:
            parts.clear()
            parts[name] = part
            return stand_in
        parts[name] = part
        if isinstance(candidate, exp.Subquery):
            alias = candidate.args.get("alias")
            candidate.replace(exp.Table(this=exp.to_identifier(name), alias=alias.copy() if alias else None))
        else:
            candidate.replace(stand_in)
        return tree
    raise refusal


def _type_text(spark_type: dict[str, object] | str) -> str:
    """A type of Spark's JSON schema as Spark SQL type text."""
    from pyspark.sql.types import _parse_datatype_json_value

    try:
        return str(_parse_datatype_json_value(spark_type).simpleString())
    except Exception:  # a type pyspark cannot read back: the column stays untyped
        return UNKNOWN_TYPE


def stand_in_schemas(parts: Mapping[str, Part]) -> dict[str, dict[str, str]]:
    return {name: dict(part.columns) for name, part in parts.items()}


def with_opaque_parts(plan: LogicalPlan, parts: Mapping[str, Part], schemas: Mapping[str, Mapping[str, str]]) -> LogicalPlan:
    """``plan`` with each read of a stand-in table replaced by the :class:`Opaque` operator of its
    part."""
    if not parts:
        return plan
    done: dict[int, LogicalPlan] = {}
    lowered = {t.lower(): {c.lower(): ty for c, ty in cols.items()} for t, cols in schemas.items()}

    def visit(node: LogicalPlan) -> LogicalPlan:
        known = done.get(id(node))
        if known is not None:
            return known
        if isinstance(node, Scan) and node.table in parts:
            part = parts[node.table]
            reads = tuple(
                Scan(t, tuple(ScanColumn(c, Field(f"{part.name}_{t}_{c}", ty.lower().replace(", ", ","), True))
                              for c, ty in lowered[t].items()), t)
                for t in part.tables
            )
            made: LogicalPlan = Opaque(part.sql, part.tables, reads, tuple(tuple(c.source for c in r.columns) for r in reads),
                                       node.columns, tuple(part.columns), part.reason)
        else:
            inputs = [visit(child) for child in node.inputs]
            made = node if all(a is b for a, b in zip(inputs, node.inputs)) else node.with_inputs(*inputs)
        done[id(node)] = made
        return made

    return visit(plan)


def spliced(sql: str, reads: Mapping[str, tuple[str, str | None]]) -> str:
    """``sql`` with each mention of a table of ``reads`` (not of a CTE of that name) replaced by
    what the plan reads for it, under the name it was mentioned by: ``reads`` gives the query of
    each, and the table or view it is a plain read of (``None`` when it is not one). A plain read
    of the table itself leaves the mention as it is; a sampled mention (``TABLESAMPLE`` needs a
    table) is renamed to the view. Only those spans of the text change: the rest reaches Spark as
    it was written."""
    from tempura.sql.names import quote_identifier
    from tempura.sql.parse import parse_sql

    mentions = []
    for table in parse_sql(sql).find_all(exp.Table):
        name = table.name.lower()
        if name not in reads or cte_of(table, table.root()) is not None:
            continue
        start, end = table.this.meta.get("start"), table.this.meta.get("end")
        if not isinstance(start, int) or not isinstance(end, int) or table.args.get("db"):
            continue
        query, view = reads[name]
        if view is not None and view.lower() == name:
            continue
        if view is not None and table.args.get("sample") is not None:
            mentions.append((start, end, quote_identifier(view)))
            continue
        named = "" if table.args.get("alias") else f" AS {sql[start:end + 1]}"
        mentions.append((start, end, f"({query}){named}"))
    for start, end, text in sorted(mentions, reverse=True):
        sql = sql[:start] + text + sql[end + 1:]
    return sql


def opaque_notes(plan: LogicalPlan) -> list[str]:
    """What a standing query's plan says of each opaque part in ``plan``: what it is, why it is
    opaque, and how it is computed across the time points."""
    notes: list[str] = []
    seen: set[str] = set()
    stack = [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.inputs)
        if isinstance(node, Opaque) and node.sql not in seen:
            seen.add(node.sql)
            text = " ".join(node.sql.split())
            shown = text if len(text) <= 80 else text[:77] + "..."
            reads = ", ".join(node.tables) or "no table"
            notes.append(f"opaque part ({node.reason}, not planned natively) runs as Spark SQL: {shown}; it is "
                         f"recomputed from the snapshots of {reads} at each time point it is needed, and what reads it "
                         "is maintained from the difference of its snapshots where that is cheaper")
    return notes
