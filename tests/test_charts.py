"""The charts of the demo and of ``tempura bench incremental``: time points are whole numbers
(ticks t1 … tk, nothing between), and each method keeps one colour in every panel, also when
another method is missing from a panel. Drawn from made-up results (no Spark)."""

from __future__ import annotations

from typing import Any

import matplotlib.colors as mcolors

from benchmarks import demo, incremental
from benchmarks.charts import COLOURS
from tempura.scheduler.simulation import MethodRun, PointMeasure


def colours_by_label(fig: Any) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for ax in fig.axes:
        for container in ax.containers:
            name = str(container.get_label()).split(" ")[0]
            found.setdefault(name, set()).update(mcolors.to_hex(bar.get_facecolor()) for bar in container)
    return found


def assert_time_point_axes(fig: Any, k: dict[str, int]) -> None:
    for ax in fig.axes:
        if not ax.get_title():
            continue
        ticks = list(ax.get_xticks())
        assert ticks == list(range(1, k[ax.get_title()] + 1)), ticks
        assert [t.get_text() for t in ax.get_xticklabels()] == [f"t{i}" for i in ticks]


def run(method: str, k: int) -> MethodRun:
    made = MethodRun("q", method, method, tuple([0.001] * (k - 1) + [1.0]), 1.0)
    made.points = [PointMeasure(i, 1.0, 0.1 * i, 0.1, 1, i == k, True) for i in range(1, k + 1)]
    return made


def test_the_demo_chart() -> None:
    results = {"sales_returns": [run("auto", 4), run("batch", 4), run("ivm", 4)],
               "tpch_q03": [run("auto", 3), run("ivm", 3), run("ojv", 3)]}  # no batch: ivm keeps its colour
    fig = demo.figure(results)
    assert_time_point_axes(fig, {"sales_returns": 4, "tpch_q03": 3})
    found = colours_by_label(fig)
    assert found == {m: {COLOURS[m]} for m in ("auto", "batch", "ivm", "ojv")}, found


def test_the_incremental_benchmark_chart() -> None:
    def contender(k: int) -> dict[str, Any]:
        return {"cpu_median": [0.1 * i for i in range(1, k + 1)], "correct": True}

    results = {"a": {"contenders": {"batch": contender(4), "ivm": contender(4), "auto": contender(4)}},
               "b": {"contenders": {"ivm": contender(2), "spark-streaming": contender(2), "auto": contender(2)}}}
    fig = incremental.figure(results)
    assert_time_point_axes(fig, {"a": 4, "b": 2})
    found = colours_by_label(fig)
    assert found == {m: {COLOURS[m]} for m in ("batch", "ivm", "auto", "spark-streaming")}, found
    assert len({c for colours in found.values() for c in colours}) == 4
