"""Logical rules. :func:`normalize` applies the always-beneficial rewrites (predicate pushdown)
bottom-up until none applies, then prunes unread columns; rules can be disabled by name (the
names are checked by :mod:`tempura.rules.registry`)."""

from __future__ import annotations

from typing import Iterable

from tempura.algebra import LogicalPlan
from tempura.rules.logical.pruning import prune_columns
from tempura.rules.logical.pushdown import RULES

PRUNE = "prune-columns"

MAX_REWRITES_PER_NODE = 64


def normalize(plan: LogicalPlan, disabled: Iterable[str] = (), trace: list[str] | None = None) -> LogicalPlan:
    """``plan`` with every enabled rule applied to a fixpoint; ``trace`` collects rule names
    in the order they fired."""
    off = set(disabled)
    active = [rule for rule in RULES if rule.name not in off]

    def visit(node: LogicalPlan) -> LogicalPlan:
        if node.inputs:
            node = node.with_inputs(*(visit(child) for child in node.inputs))
        for _ in range(MAX_REWRITES_PER_NODE):
            for rule in active:
                rewritten = rule(node)
                if rewritten is not None:
                    if trace is not None:
                        trace.append(rule.name)
                    node = rewritten
                    if node.inputs:  # what moved down may move further
                        node = node.with_inputs(*(visit(child) for child in node.inputs))
                    break
            else:
                return node
        return node

    result = visit(plan)
    if PRUNE not in off:
        pruned = prune_columns(result)
        if pruned != result and trace is not None:
            trace.append(PRUNE)
        result = pruned
    return result


__all__ = ["PRUNE", "RULES", "normalize", "prune_columns"]
