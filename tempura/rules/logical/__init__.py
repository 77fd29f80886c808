"""Logical rules. :func:`normalize` applies the always-beneficial rewrites (predicate pushdown)
bottom-up until none applies; rules can be disabled by name."""

from __future__ import annotations

from typing import Iterable

from tempura.algebra import LogicalPlan
from tempura.rules.logical.pushdown import RULES

MAX_REWRITES_PER_NODE = 64


def normalize(plan: LogicalPlan, disabled: Iterable[str] = (), trace: list[str] | None = None) -> LogicalPlan:
    """``plan`` with every enabled rule applied to a fixpoint; ``trace`` collects rule names
    in the order they fired."""
    off = set(disabled)
    unknown = off - set(RULES)
    if unknown:
        from tempura.errors import TempuraError

        raise TempuraError(f"unknown rule(s): {', '.join(sorted(unknown))} (known: {', '.join(RULES)})")
    active = [(name, rule) for name, rule in RULES.items() if name not in off]

    def visit(node: LogicalPlan) -> LogicalPlan:
        if node.inputs:
            node = node.with_inputs(*(visit(child) for child in node.inputs))
        for _ in range(MAX_REWRITES_PER_NODE):
            for name, rule in active:
                rewritten = rule(node)
                if rewritten is not None:
                    if trace is not None:
                        trace.append(name)
                    node = rewritten
                    if node.inputs:  # what moved down may move further
                        node = node.with_inputs(*(visit(child) for child in node.inputs))
                    break
            else:
                return node
        return node

    return visit(plan)


__all__ = ["RULES", "normalize"]
