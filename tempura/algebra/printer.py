"""Printing plans as indented trees, one operator per line."""

from __future__ import annotations

from typing import Callable

from tempura.algebra.operators import LogicalPlan

Annotate = Callable[[LogicalPlan], str]


def format_plan(plan: LogicalPlan, annotate: Annotate | None = None, indent: str = "  ") -> str:
    """The plan as an indented tree. ``annotate`` may add text (estimates, costs) to each line."""
    lines: list[str] = []

    def visit(node: LogicalPlan, depth: int) -> None:
        details = node.details()
        line = f"{indent * depth}{node.operator}{' ' + details if details else ''}"
        if annotate is not None:
            extra = annotate(node)
            if extra:
                line = f"{line}  {extra}"
        lines.append(line)
        for child in node.inputs:
            visit(child, depth + 1)

    visit(plan, 0)
    return "\n".join(lines)
