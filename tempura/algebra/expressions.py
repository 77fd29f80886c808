"""Helpers over scalar expressions, which are sqlglot expressions.

tempura grows no expression language of its own. Inside a plan, a column reference is an
unqualified ``exp.Column`` whose name is the plan-unique column name (see ``schema.py``).
Expressions held by plan nodes are never mutated: every helper here returns a new tree.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from sqlglot import exp


def col(name: str) -> exp.Column:
    """A reference to the plan column ``name``."""
    return exp.Column(this=exp.to_identifier(name))


def column_name(expression: exp.Expr) -> str | None:
    """The referenced column's name if ``expression`` is a bare column reference."""
    if isinstance(expression, exp.Column) and not expression.table:
        return expression.name
    return None


def columns_in(expression: exp.Expr) -> frozenset[str]:
    """Names of all plan columns that ``expression`` references."""
    return frozenset(c.name for c in expression.find_all(exp.Column))


def conjuncts(expression: exp.Expr | None) -> list[exp.Expr]:
    """Split a predicate at its top-level ANDs (parentheses are looked through)."""
    if expression is None:
        return []
    node = expression.unnest()
    if isinstance(node, exp.And):
        return conjuncts(node.left) + conjuncts(node.right)
    return [node]


def conjoin(predicates: Iterable[exp.Expr]) -> exp.Expr | None:
    """AND the predicates together; ``None`` when there are none."""
    preds = list(predicates)
    if not preds:
        return None
    return exp.and_(*preds, copy=True) if len(preds) > 1 else preds[0]


def by_sql(predicates: Iterable[exp.Expr]) -> dict[str, exp.Expr]:
    """The predicates keyed by their Spark SQL, each once, in the order first seen."""
    out: dict[str, exp.Expr] = {}
    for p in predicates:
        out.setdefault(p.sql(dialect="spark"), p)
    return out


def substitute(expression: exp.Expr, mapping: Mapping[str, exp.Expr]) -> exp.Expr:
    """Replace column references by the expressions ``mapping`` gives for their names."""

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name in mapping:
            return mapping[node.name].copy()
        return node

    return expression.transform(replace)


# Operators whose operands Spark's canonical form orders (``a + b`` is ``b + a``).
COMMUTATIVE: tuple[type[exp.Expr], ...] = (exp.Add, exp.Mul, exp.And, exp.Or, exp.EQ, exp.NEQ, exp.NullSafeEQ,
                                           exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor)


def canonical(expression: exp.Expr) -> exp.Expr:
    """``expression`` as Spark compares expressions for equality (its ``canonicalized`` form, as
    far as tempura needs it): parentheses dropped, and the operands of a chain of one commutative
    operator (``a + b + c``) in one order. Two expressions with equal canonical forms compute the
    same value: a grouping key written ``a + b`` and ``b + a`` is one key."""
    tree = expression.copy()
    for node in reversed(list(tree.dfs())):  # each node after everything beneath it
        if isinstance(node, exp.Paren) and node.parent is not None:
            node.replace(node.this)
    tree = tree.unnest() if isinstance(tree, exp.Paren) else tree
    for node in reversed(list(tree.dfs())):
        kind = type(node)
        if kind not in COMMUTATIVE or type(node.parent) is kind:
            continue
        operands: list[exp.Expr] = []
        stack: list[exp.Expr] = [node]
        while stack:
            top = stack.pop()
            if type(top) is kind:
                stack += [top.expression, top.this]
            else:
                operands.append(top)
        operands.sort(key=repr)  # the tree, not its text: the text of a tree without parentheses is ambiguous
        rebuilt = operands[0]
        for operand in operands[1:]:
            rebuilt = kind(this=rebuilt, expression=operand)
        if node is tree:
            tree = rebuilt
        else:
            node.replace(rebuilt)
    return tree
