"""``tempura bench tvr-planning``: how long planning a standing query takes, and what the memo
copy by translational symmetry saves.

For every TPC-H query, planned over the statistics of TPC-H at scale 0.01 (shipped with the
benchmark; ``--stats`` takes another file written by ``tempura analyze``):

- the time to plan it with ``auto`` over 4 time points (median of ``repeat`` runs), the memo
  it builds (template, groups and expressions), and each optimizer phase's time (median); the
  summary gives each phase's share of the planning time over all the queries;
- the time to plan it over 8 time points with the memo copy and with every version expanded by
  rules, in alternating runs (median of ``repeat`` each), and their ratio, for the expansion
  phase alone and for the whole planning;
- the peak memory of planning over 8 time points (``tracemalloc``, in its own run).

Targets: at most 2 s per query over 4 time points; copy at least 3× faster than full expansion
at 8 time points; at most 1 GB peak memory at 8 time points. JSON and a PNG chart.
"""

from __future__ import annotations

import json
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

from tempura import tpch
from tempura.cost.vector import Objective
from tempura.optimizer import Arrival, Optimizer
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.tvr import TimePoints
from tempura.tvr.plan import MultiTimePlan

STATS = Path(__file__).parent / "data" / "tpch-sf0.01-stats.json"
QUERIES = Path(tpch.__file__).parent / "data" / "tpch" / "queries"


def _planner(stats: dict[str, TableStats], k: int) -> Optimizer:
    def lookup(table: str) -> TableStats:
        return stats[table]

    return Optimizer(Estimator(lookup), Arrival.uniform(k))


def _plan(stats: dict[str, TableStats], name: str, k: int, copy: bool = True) -> tuple[float, MultiTimePlan]:
    sql = (QUERIES / f"{name}.sql").read_text(encoding="utf-8")
    query = parse_query(sql, tpch.SCHEMA)
    started = time.perf_counter()
    plan = _planner(stats, k).plan_standing(query, sql, TimePoints(tuple(range(1, k + 1))), Objective.deadline(k),
                                        disabled=() if copy else ("copy",))
    return time.perf_counter() - started, plan


def run(out: Path, repeat: int = 3, stats_file: Path = STATS, names: list[str] | None = None,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    stats = {n: TableStats.from_json(s) for n, s in json.loads(stats_file.read_text(encoding="utf-8")).items()}
    names = names or sorted(p.stem for p in QUERIES.glob("q*.sql"))
    rows = []
    for name in names:
        four = [_plan(stats, name, 4) for _ in range(repeat)]
        copy_runs, full_runs = [], []
        for _ in range(repeat):  # alternate the contenders
            copy_runs.append(_plan(stats, name, 8, copy=True))
            full_runs.append(_plan(stats, name, 8, copy=False))
        tracemalloc.start()
        _plan(stats, name, 8, copy=False)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        plan4, plan8 = four[0][1], copy_runs[0][1]
        expand_copy = statistics.median(p.search["expand_seconds"] for _, p in copy_runs)
        expand_full = statistics.median(p.search["expand_seconds"] for _, p in full_runs)
        row = {
            "query": name,
            "plan_seconds_4": statistics.median(t for t, _ in four),
            "template_groups": plan4.search["template_groups"],
            "groups_4": plan4.search["groups"],
            "expressions_4": plan4.search["expressions"],
            "methods_4": plan4.methods,
            "phases_4": {phase: statistics.median(p.search["phase_seconds"][phase] for _, p in four)
                         for phase in plan4.search["phase_seconds"]},
            "groups_8": plan8.search["groups"],
            "expressions_8": plan8.search["expressions"],
            "plan_seconds_8_copy": statistics.median(t for t, _ in copy_runs),
            "plan_seconds_8_full": statistics.median(t for t, _ in full_runs),
            "expand_seconds_8_copy": expand_copy,
            "expand_seconds_8_full": expand_full,
            "expand_speedup_8": expand_full / expand_copy if expand_copy else None,
            "plan_speedup_8": statistics.median(t for t, _ in full_runs) / statistics.median(t for t, _ in copy_runs),
            "peak_mb_8": peak / 2**20,
        }
        rows.append(row)
        log(f"{name}: {row['plan_seconds_4']:.2f}s at 4 points ({row['groups_4']} groups); 8 points: expansion "
            f"{expand_full:.2f}s -> {expand_copy:.2f}s with copy ({row['expand_speedup_8']:.1f}x), peak {row['peak_mb_8']:.0f} MB")
    phase_totals: dict[str, float] = {}
    for r in rows:
        for phase, seconds in r["phases_4"].items():
            phase_totals[phase] = phase_totals.get(phase, 0.0) + seconds
    total = sum(phase_totals.values()) or 1.0
    shares = {phase: seconds / total for phase, seconds in phase_totals.items()}
    log("phases' shares of planning time at 4 time points: " + ", ".join(f"{p} {s:.1%}" for p, s in shares.items()))
    summary = {
        "phase_shares_4": shares,
        "phase_seconds_4": phase_totals,
        "max_plan_seconds_4": max(r["plan_seconds_4"] for r in rows),
        "median_expand_speedup_8": statistics.median(r["expand_speedup_8"] for r in rows),
        "min_expand_speedup_8": min(r["expand_speedup_8"] for r in rows),
        "median_plan_speedup_8": statistics.median(r["plan_speedup_8"] for r in rows),
        "max_peak_mb_8": max(r["peak_mb_8"] for r in rows),
    }
    report = {"repeat": repeat, "stats": stats_file.name, "queries": rows, "summary": summary}
    out.mkdir(parents=True, exist_ok=True)
    (out / "tvr-planning.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    _chart(rows, out / "tvr-planning.png")
    return report


def _chart(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["query"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    top.bar(names, [r["plan_seconds_4"] for r in rows], color="#4c72b0")
    top.axhline(2.0, color="red", linestyle="--", linewidth=1, label="target 2 s")
    top.set_ylabel("planning, 4 time points (s)")
    top.legend()
    x = range(len(names))
    bottom.bar([i - 0.2 for i in x], [r["expand_seconds_8_full"] for r in rows], width=0.4, label="full expansion")
    bottom.bar([i + 0.2 for i in x], [r["expand_seconds_8_copy"] for r in rows], width=0.4, label="memo copy")
    bottom.set_ylabel("TVR expansion, 8 time points (s)")
    bottom.legend()
    fig.suptitle("tempura: planning standing TPC-H queries (auto, deadline weights)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
