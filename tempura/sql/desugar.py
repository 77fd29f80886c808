"""Spark SQL's shorthands, written out in the constructs they stand for before the query is bound.

Each rewrite is the one Spark's own analyzer makes, so the bound plan computes what Spark does:

- **Boolean aggregates.** ``bool_and``, ``every`` are ``min`` of a boolean, and ``bool_or``,
  ``some``, ``any`` are ``max`` (Spark replaces them so at analysis).
- **Named windows.** ``OVER w`` and ``OVER (w ROWS …)`` take the partitioning, order and frame of
  ``WINDOW w AS (…)``; a definition may build on an earlier one.
- **Hive's ``grouping__id``** is ``grouping_id()`` (unless a table has a column of that name).
- **Constant LIMIT and OFFSET expressions** (``LIMIT 2 + 1``) are folded to their number.
- **NATURAL JOIN** is a join ``USING`` the columns both sides have, where the sides are tables of
  the catalog (the columns of other relations are not known before binding).
- **A CTE named like a catalog table** is renamed (``t__cte``) with the mentions that read it: a
  mention of the name where the CTE is not in scope (its own body, an earlier CTE's) reads the
  table, as Spark's CTEs are not recursive.
- **``VALUES 1, 2 AS data(a)``**: the alias sqlglot reads into the last row is the relation's.
- **A table alias with a column list** (``t AS w(x, y)``) is a derived table renaming the
  table's columns: ``(SELECT a AS x, b AS y FROM t) AS w``.
- **Repeated names in a derived table or CTE** (``SELECT a AS x, a AS x``) stay two columns: the
  second is renamed inside, so a star over it expands to both, as Spark's does. Spark rejects any
  reference to such a name by itself as ambiguous, so no reference changes meaning.

The result names are still Spark's: they come from Spark's analysis of the query as written.
"""

from __future__ import annotations

from typing import Mapping

from sqlglot import exp
from sqlglot.optimizer.simplify import simplify

_MIN_OF_BOOLEAN = ("bool_and", "every")
_MAX_OF_BOOLEAN = ("bool_or", "some", "any")


def desugar(tree: exp.Expr, schemas: Mapping[str, Mapping[str, str]]) -> exp.Expr:
    """``tree`` (changed in place, and returned) with the shorthands of the module docstring written out."""
    for node in list(tree.find_all(exp.LogicalAnd, exp.LogicalOr, exp.Anonymous, exp.Any)):
        replaced = _boolean_aggregate(node)
        if replaced is not None:
            node.replace(replaced)
    if not any("grouping__id" in {c.lower() for c in cols} for cols in schemas.values()):
        for virtual in list(tree.find_all(exp.Column)):  # Hive's virtual column, which Spark reads as grouping_id()
            if not virtual.table and virtual.name.lower() == "grouping__id":
                virtual.replace(exp.GroupingId())
    _values_aliases(tree)
    _shadowing_ctes(tree, schemas)
    _renamed_tables(tree, schemas)
    for relation in list(tree.find_all(exp.Subquery, exp.CTE)):
        _unique_names(relation.this)
    for select in list(tree.find_all(exp.Select)):
        _inline_windows(select)
        _fold_limits(select)
        _natural_joins(select, schemas)
    return tree


def cte_of(table: exp.Table, boundary: exp.Expr | None = None) -> exp.CTE | None:
    """The CTE that the mention ``table`` reads, looking no further out than ``boundary``, or
    ``None`` when it reads a table. Spark's CTEs are not recursive: a CTE's body sees only the
    CTEs defined before it, and the query's body all of them."""
    if table.args.get("db"):
        return None
    name = table.name.lower()
    child: exp.Expr = table
    parent = table.parent
    while parent is not None:
        if isinstance(parent, exp.With):
            ctes = list(parent.expressions)
            index = next((i for i, c in enumerate(ctes) if c is child), len(ctes))
            found = [c for c in ctes[:index] if c.alias_or_name.lower() == name]
            if found:
                return found[-1]
        elif isinstance(parent, exp.Query):
            with_ = parent.args.get("with_") or parent.args.get("with")
            if isinstance(with_, exp.With) and child is not with_:
                found = [c for c in with_.expressions if c.alias_or_name.lower() == name]
                if found:
                    return found[-1]
        if parent is boundary:
            return None
        child, parent = parent, parent.parent
    return None


def _values_aliases(tree: exp.Expr) -> None:
    for values in list(tree.find_all(exp.Values)):
        rows = values.expressions
        last = rows[-1].expressions[-1] if rows and isinstance(rows[-1], exp.Tuple) and rows[-1].expressions else None
        alias = values.args.get("alias")
        if isinstance(last, exp.Alias) and (alias is None or not alias.this):
            last.replace(last.this)
            columns = list(alias.columns) if isinstance(alias, exp.TableAlias) else []
            values.set("alias", exp.TableAlias(this=exp.to_identifier(last.alias), columns=columns))


def _shadowing_ctes(tree: exp.Expr, schemas: Mapping[str, Mapping[str, str]]) -> None:
    catalog = {t.lower() for t in schemas}
    clashing = [c for c in tree.find_all(exp.CTE) if c.alias_or_name.lower() in catalog]
    if not clashing:
        return
    taken = catalog | {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    renames: dict[int, str] = {}
    for cte in clashing:
        new = f"{cte.alias_or_name.lower()}__cte"
        while new in taken:
            new += "_"
        taken.add(new)
        renames[id(cte)] = new
    mentions = [(t, cte_of(t)) for t in tree.find_all(exp.Table)]
    for table, read in mentions:
        if read is not None and id(read) in renames:
            if not table.args.get("alias"):
                table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
            table.set("this", exp.to_identifier(renames[id(read)]))
    for cte in clashing:
        alias = cte.args["alias"]
        alias.set("this", exp.to_identifier(renames[id(cte)]))


def _renamed_tables(tree: exp.Expr, schemas: Mapping[str, Mapping[str, str]]) -> None:
    lowered = {t.lower(): list(cols) for t, cols in schemas.items()}
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in list(tree.find_all(exp.Table)):
        alias = table.args.get("alias")
        if not isinstance(alias, exp.TableAlias):
            continue
        names = list(alias.columns)
        name = table.name.lower()
        if not names or name in ctes or table.args.get("db") or name not in lowered or len(names) != len(lowered[name]):
            continue
        plain = exp.Table(this=table.this.copy())
        select = exp.select(*(exp.alias_(exp.column(c), n.copy()) for c, n in zip(lowered[name], names))).from_(plain)
        table.replace(exp.Subquery(this=select, alias=exp.TableAlias(this=exp.to_identifier(alias.name))))


def _unique_names(query: exp.Expr) -> None:
    select = query
    while isinstance(select, exp.SetOperation):
        select = select.this  # a set operation's names are its first branch's
    if not isinstance(select, exp.Select) or any(isinstance(i, exp.Star) or (isinstance(i, exp.Column) and
                                                                              isinstance(i.this, exp.Star))
                                                 for i in select.expressions):
        return
    taken = {i.alias_or_name.lower() for i in select.expressions}
    seen: set[str] = set()
    for item in select.expressions:
        name = item.alias_or_name
        if name.lower() not in seen:
            seen.add(name.lower())
            continue
        k = 2
        while f"{name}__{k}".lower() in taken:
            k += 1
        fresh = f"{name}__{k}"
        taken.add(fresh.lower())
        seen.add(fresh.lower())
        item.replace(exp.alias_(item.unalias() if isinstance(item, exp.Alias) else item.copy(), fresh))


def _boolean_aggregate(node: exp.Expr) -> exp.Expr | None:
    if isinstance(node, exp.LogicalAnd):
        return exp.Min(this=node.this)
    if isinstance(node, exp.LogicalOr):
        return exp.Max(this=node.this)
    if isinstance(node, exp.Anonymous) and len(node.expressions) == 1:
        name = str(node.this).lower()
        if name in _MIN_OF_BOOLEAN:
            return exp.Min(this=node.expressions[0])
        if name in _MAX_OF_BOOLEAN:
            return exp.Max(this=node.expressions[0])
    if isinstance(node, exp.Any) and not isinstance(node.parent, exp.Predicate):  # `x = ANY (…)` is a comparison
        argument = node.this.unnest() if isinstance(node.this, exp.Paren) else node.this
        if not isinstance(argument, (exp.Query, exp.Subquery)):
            return exp.Max(this=argument)
    return None


def _inline_windows(select: exp.Select) -> None:
    definitions = select.args.get("windows")
    if not definitions:
        return
    named: dict[str, exp.Window] = {}
    for definition in definitions:
        named[definition.name.lower()] = _resolved(definition, named)
    for window in list(select.find_all(exp.Window)):
        if window.parent is select and window in definitions:
            continue
        reference = window.args.get("alias")
        if reference is None or window.args.get("partition_by") or window.args.get("order"):
            continue
        base = named.get(reference.name.lower())
        if base is None:
            continue
        window.set("alias", None)
        for key in ("partition_by", "order"):
            if base.args.get(key):
                window.set(key, base.args[key].copy() if isinstance(base.args[key], exp.Expr)
                           else [e.copy() for e in base.args[key]])
        if window.args.get("spec") is None and base.args.get("spec") is not None:
            window.set("spec", base.args["spec"].copy())
    select.set("windows", None)


def _resolved(definition: exp.Window, named: Mapping[str, exp.Window]) -> exp.Window:
    """A window definition with the one it builds on (``WINDOW w2 AS (w1 ORDER BY x)``) merged in."""
    resolved = definition.copy()
    base_name = definition.args.get("alias")
    base = named.get(base_name.name.lower()) if isinstance(base_name, exp.Identifier) else None
    if base is not None:
        for key in ("partition_by", "order", "spec"):
            if not resolved.args.get(key) and base.args.get(key):
                value = base.args[key]
                resolved.set(key, value.copy() if isinstance(value, exp.Expr) else [e.copy() for e in value])
    return resolved


def _fold_limits(select: exp.Select) -> None:
    for key in ("limit", "offset"):
        clause = select.args.get(key)
        if clause is None:
            continue
        value = clause.args.get("expression")
        if value is None or isinstance(value, exp.Literal) or value.find(exp.Column, exp.Subquery):
            continue
        folded = simplify(value.copy())
        if isinstance(folded, exp.Literal) and not folded.is_string:
            clause.set("expression", folded)


def _natural_joins(select: exp.Select, schemas: Mapping[str, Mapping[str, str]]) -> None:
    joins = select.args.get("joins") or []
    if not any((j.args.get("method") or "").upper() == "NATURAL" for j in joins):
        return
    lowered = {t.lower(): [c.lower() for c in cols] for t, cols in schemas.items()}
    from_ = select.args.get("from_") or select.args.get("from")
    relations = [from_.this] if from_ is not None else []
    seen: list[str] = []
    for relation in relations:
        columns = _table_columns(relation, lowered)
        if columns is None:
            return
        seen += [c for c in columns if c not in seen]
    for join in joins:
        columns = _table_columns(join.this, lowered)
        if columns is None:
            return
        if (join.args.get("method") or "").upper() == "NATURAL":
            common = [c for c in seen if c in columns]
            join.set("method", None)
            if common:
                join.set("using", [exp.to_identifier(c) for c in common])
            elif not join.side:
                join.set("kind", "CROSS")
        seen += [c for c in columns if c not in seen]


def _table_columns(relation: exp.Expr, schemas: Mapping[str, list[str]]) -> list[str] | None:
    if isinstance(relation, exp.Table) and not relation.args.get("db") and relation.name.lower() in schemas:
        return schemas[relation.name.lower()]
    return None
