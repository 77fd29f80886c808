"""What every chart of the benchmarks and the demo shares: one colour per method or contender,
the same in every panel and every chart, and time points as whole numbers on the x axis."""

from __future__ import annotations

from typing import Any

# the matplotlib "tab10" colours, one per method, fixed: a method missing from a panel does not
# shift the others' colours
COLOURS = {
    "auto": "#1f77b4",
    "batch": "#ff7f0e",
    "ivm": "#2ca02c",
    "streaming": "#d62728",
    "ojv": "#9467bd",
    "higher-order": "#8c564b",
    "spark-streaming": "#e377c2",
    "floor": "#bcbd22",
}
OTHER = "#7f7f7f"


def colour(name: str) -> str:
    """The colour of a method or contender."""
    return COLOURS.get(name, OTHER)


def time_point_axis(ax: Any, k: int) -> None:
    """Ticks at t1 … tk only, labelled so."""
    ax.set_xticks(range(1, k + 1), [f"t{i}" for i in range(1, k + 1)])
    ax.set_xlim(0.5, k + 0.5)
    ax.set_xlabel("time point")


__all__ = ["COLOURS", "colour", "time_point_axis"]
