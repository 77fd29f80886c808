"""``tempura bench mqo``: the greedy state selection against the exact one.

Instances (:class:`~tempura.mqo.instance.Instance`, pruned as the planner prunes them):

- the golden example of the semantics (sales and returns, gross per category) and every TPC-H
  query, as standing queries over 2, 4 and 8 time points with ``deadline`` weights, planned
  over the statistics of TPC-H at scale 0.01 (shipped with the benchmark; ``--stats`` takes
  another file written by ``tempura analyze``);
- random synthetic instances (:mod:`tempura.mqo.synthetic`), 2 to 8 time points each.

For each, the greedy (started from the memo search's own states, as the planner starts it) and
the ILP run side by side, alternating, ``repeat`` times each; the report has the median time of
each, the objectives, the greedy's gap (its objective over the proven optimum), the states each
keeps, and the instance's size (nodes, binaries). Instances the solver cannot prove optimal
within the time limit are reported with their status and left out of the gap figures.

Targets: the greedy within 5% of the optimum on at least 95% of instances; an exact solve within
2 s for every instance of up to 1,000 binaries. JSON and a PNG chart.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Callable, Iterator

from tempura import tpch
from tempura.catalog import TableSource
from tempura.cost.vector import Objective
from tempura.optimizer import Arrival, Optimizer
from tempura.mqo import ilp
from tempura.mqo.greedy import greedy
from tempura.mqo.instance import Instance
from tempura.mqo.synthetic import random_instance
from tempura.sql import parse_query
from tempura.stats import Estimator, TableStats
from tempura.stats.defaults import default_table_stats
from tempura.tvr import TimePoints

STATS = Path(__file__).parent / "data" / "tpch-sf0.01-stats.json"
QUERIES = Path(tpch.__file__).parent / "data" / "tpch" / "queries"
POINTS = (2, 4, 8)
GAP_TARGET = 1.05
SECONDS_TARGET = 2.0
BINARIES_TARGET = 1000

GOLDEN_SQL = """WITH sales_status AS (
  SELECT sales.o_id, category, price, cost
  FROM sales LEFT OUTER JOIN returns ON sales.o_id = returns.o_id)
SELECT category, SUM(IF(cost IS NULL, price, -cost)) AS gross
FROM sales_status GROUP BY category"""
GOLDEN_SCHEMA = {
    "sales": {"o_id": "string", "category": "string", "price": "bigint"},
    "returns": {"o_id": "string", "cost": "bigint"},
}


def _instance(lookup: Callable[[str], TableStats], schema: dict[str, dict[str, str]], sql: str, k: int) -> tuple[Instance, set[int]]:
    planner = Optimizer(Estimator(lookup), Arrival.uniform(k))
    query = parse_query(sql, schema)
    return planner.state_instance(query, TimePoints(tuple(range(1, k + 1))), Objective.deadline(k))


def standing_instances(stats_file: Path, names: list[str] | None, points: tuple[int, ...]) -> Iterator[tuple[str, Instance, set[int]]]:
    """The golden example and the TPC-H queries as standing queries over each of ``points``."""
    stats = {n: TableStats.from_json(s) for n, s in json.loads(stats_file.read_text(encoding="utf-8")).items()}
    golden = {t: default_table_stats(TableSource(t, f"/{t}"), cols, None) for t, cols in GOLDEN_SCHEMA.items()}
    for k in points:
        if names is None or "golden" in names:
            yield (f"golden@{k}", *_instance(golden.__getitem__, GOLDEN_SCHEMA, GOLDEN_SQL, k))
        for path in sorted(QUERIES.glob("q*.sql")):
            if names is not None and path.stem not in names:
                continue
            yield (f"{path.stem}@{k}", *_instance(stats.__getitem__, tpch.SCHEMA, path.read_text(encoding="utf-8"), k))


def measure(name: str, kind: str, instance: Instance, start: set[int], repeat: int, time_limit: float) -> dict[str, Any]:
    """The greedy and the ILP on one instance, alternating ``repeat`` times."""
    greedy_runs, ilp_runs = [], []
    for _ in range(repeat):
        greedy_runs.append(greedy(instance, start))
        ilp_runs.append(ilp.solve(instance, time_limit=time_limit, upper=greedy_runs[-1].objective, known=greedy_runs[-1].kept))
    found, exact = greedy_runs[0], ilp_runs[0]
    optimal = exact.optimal
    gap = None
    if optimal:
        gap = 1.0 if exact.objective <= 0 else found.objective / exact.objective
    return {
        "instance": name,
        "kind": kind,
        "time_points": instance.k,
        "nodes": instance.size,
        "candidates": len(instance.candidates),
        "binaries": instance.binaries(),
        "greedy_objective": found.objective,
        "greedy_seconds": statistics.median(r.seconds for r in greedy_runs),
        "greedy_kept": len(found.kept),
        "ilp_objective": exact.objective,
        "ilp_seconds": statistics.median(r.seconds for r in ilp_runs),
        "ilp_kept": len(exact.kept),
        "ilp_status": exact.status,
        "ilp_solver": exact.solver,
        "ilp_program": exact.program,
        "optimal": optimal,
        "gap": gap,
    }


def run(out: Path, repeat: int = 3, stats_file: Path = STATS, names: list[str] | None = None, random_count: int = 120,
        time_limit: float = 30.0, points: tuple[int, ...] = POINTS, log: Callable[[str], None] = print) -> dict[str, Any]:
    rows = []
    for name, instance, start in standing_instances(stats_file, names, points):
        rows.append(measure(name, "standing", instance, start, repeat, time_limit))
        log(_line(rows[-1]))
    for seed in range(random_count):
        instance = random_instance(seed)
        rows.append(measure(f"random-{seed}", "random", instance, set(), repeat, time_limit))
        log(_line(rows[-1]))
    report = {"repeat": repeat, "stats": stats_file.name, "time_limit": time_limit, "instances": rows, "summary": summarize(rows)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "mqo.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    _chart(rows, out / "mqo.png")
    return report


def _line(row: dict[str, Any]) -> str:
    gap = f"gap {row['gap']:.4f}" if row["gap"] is not None else f"ILP {row['ilp_status']}"
    return (f"{row['instance']}: {row['binaries']} binaries, greedy {row['greedy_seconds'] * 1e3:.1f} ms "
            f"({row['greedy_kept']} kept), ILP {row['ilp_seconds']:.2f} s ({row['ilp_kept']} kept), {gap}")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The targets' figures, over all instances and per kind."""
    def figures(part: list[dict[str, Any]]) -> dict[str, Any]:
        proven = [r for r in part if r["gap"] is not None]
        small = [r for r in part if r["binaries"] <= BINARIES_TARGET]
        return {
            "instances": len(part),
            "proven_optimal": len(proven),
            "greedy_within_5pct": sum(r["gap"] <= GAP_TARGET + 1e-9 for r in proven) / len(proven) if proven else None,
            "greedy_optimal": sum(r["gap"] <= 1 + 1e-6 for r in proven) / len(proven) if proven else None,
            "worst_gap": max((r["gap"] for r in proven), default=None),
            "median_gap": statistics.median(r["gap"] for r in proven) if proven else None,
            "median_greedy_seconds": statistics.median(r["greedy_seconds"] for r in part) if part else None,
            "max_greedy_seconds": max((r["greedy_seconds"] for r in part), default=None),
            "median_ilp_seconds": statistics.median(r["ilp_seconds"] for r in part) if part else None,
            "max_ilp_seconds_up_to_1000_binaries": max((r["ilp_seconds"] for r in small), default=None),
            "ilp_within_2s_up_to_1000_binaries": (sum(r["ilp_seconds"] <= SECONDS_TARGET and r["optimal"] for r in small) / len(small)
                                                   if small else None),
            "median_ilp_over_greedy_seconds": statistics.median(r["ilp_seconds"] / max(r["greedy_seconds"], 1e-9) for r in part)
            if part else None,
            "max_binaries": max((r["binaries"] for r in part), default=0),
        }

    return {"all": figures(rows), **{kind: figures([r for r in rows if r["kind"] == kind]) for kind in ("standing", "random")}}


def _chart(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    for kind, color in (("standing", "#4c72b0"), ("random", "#dd8452")):
        gaps = sorted(r["gap"] for r in rows if r["kind"] == kind and r["gap"] is not None)
        if gaps:
            left.step(gaps, [(i + 1) / len(gaps) for i in range(len(gaps))], where="post", color=color, label=f"{kind} ({len(gaps)})")
        part = [r for r in rows if r["kind"] == kind]
        right.scatter([r["binaries"] for r in part], [r["ilp_seconds"] for r in part], s=14, color=color, label=f"ILP, {kind}")
        right.scatter([r["binaries"] for r in part], [r["greedy_seconds"] for r in part], s=14, color=color, marker="x",
                      label=f"greedy, {kind}")
    left.axvline(GAP_TARGET, color="red", linestyle="--", linewidth=1, label="5% gap")
    left.set_xlabel("greedy objective / ILP optimum")
    left.set_ylabel("fraction of instances")
    left.legend()
    right.axhline(SECONDS_TARGET, color="red", linestyle="--", linewidth=1, label="2 s")
    right.axvline(BINARIES_TARGET, color="grey", linestyle=":", linewidth=1)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("binary variables")
    right.set_ylabel("seconds (median)")
    right.legend(fontsize=7)
    fig.suptitle("tempura: greedy state selection against the exact ILP (HiGHS)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
