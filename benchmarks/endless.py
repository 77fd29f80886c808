"""``tempura bench endless``: a view kept forever, over weeks of runs.

Sales arrive all day; a standing query keeps the gross and the count per category to date,
refreshed every 6 hours on an endless schedule of daily cycles. Two contenders run the
same days cycle by cycle, alternating who goes first: ``auto``, whose cycles carry their states
on, and ``batch``, which recomputes over all history at every time point. Every time point
runs in a new runner, as after a restart (all it knows is on disk), and each cycle's last
result is checked against ``spark.sql`` over all history.

Per cycle and contender the report gives the history's rows, the executor CPU and rows read of
the last time point, the carry's CPU and whether it compacted the history, and whether the
result is right; then, over the second half of the cycles, the median of auto's over
batch's last-point CPU, and how each contender's last-point CPU grew from the first cycles to
the last (auto's with the day's delta, batch's with the history). Writes ``endless.json`` and ``endless.png`` to the output folder.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
import time
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

START = dt.datetime(2026, 11, 1)
QUERY = "SELECT category, SUM(price) AS gross, COUNT(*) AS sales FROM sales GROUP BY category"
CONTENDERS = ("auto", "batch")


def write_data(spark: SparkSession, folder: Path, days: int, per_day: int, seed: int = 1) -> None:
    """``per_day`` sales a day over ``days`` days from :data:`START` (one file a day, as a day's
    export), in 40 categories."""
    from pyspark.sql import functions as F

    start = int(START.timestamp())
    for day in range(days):
        frame = (spark.range(per_day).select(
            F.format_string("c%02d", (F.rand(seed + day) * 40).cast("int")).alias("category"),
            (F.rand(seed + 1000 + day) * 100 + 1).cast("decimal(9,2)").alias("price"),
            F.timestamp_seconds(F.lit(start + day * 86400) + (F.rand(seed + 2000 + day) * 86399).cast("long") + 1)
            .alias("sold_at")))
        frame.coalesce(1).write.mode("append").parquet(str(folder / "sales"))


def spec_text(name: str) -> str:
    return (f"name: {name}\nquery: |\n  {QUERY}\nsources:\n"
            "  sales:\n    path: data/sales\n    arrival: {column: sold_at}\n"
            f"schedule:\n  start: '{START.isoformat()}'\n  every: 6h\n  points: 4\n  endless: true\n")


def run(spark: SparkSession, out: Path, workdir: Path, days: int = 14, per_day: int = 50_000,
        log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run ``days`` daily cycles under each contender, alternating; write the report."""
    from tempura.runtime import compare_results
    from tempura.scheduler import load_spec
    from tempura.scheduler.reference import reference
    from tempura.scheduler.runner import Runner

    began = time.time()
    shutil.rmtree(workdir, ignore_errors=True)
    (workdir / "job" / "data").mkdir(parents=True)
    write_data(spark, workdir / "job" / "data", days, per_day)
    (workdir / "job" / "spec.yaml").write_text(spec_text("endless_gross"), encoding="utf-8")
    spec = load_spec(workdir / "job" / "spec.yaml")
    rows: list[dict[str, Any]] = []
    for n in range(days):
        cycle = spec.cycle(n)
        assert cycle is not None
        order = CONTENDERS if n % 2 == 0 else tuple(reversed(CONTENDERS))
        for method in order:
            # every time point by a new runner, as if the process had stopped since the last one
            results = [Runner(spec, spark, workdir / "work", method, simulate=True).run_point(cycle, i) for i in cycle.steps]
            last = results[-1].manifest
            expected = [tuple(r) for r in reference(spark, spec, cycle, cycle.last).collect()]
            assert results[-1].delivered is not None
            got = [tuple(r) for r in spark.read.parquet(results[-1].delivered).collect()]
            carry = results[0].manifest if cycle.carried else None
            history = sum(int(r) for r, _ in last["measured"]["sales"][:-1])
            row = {
                "cycle": n, "contender": method, "history_rows": history,
                "delta_rows": int(last["measured"]["sales"][-1][0]),
                "last_cpu": float(last["run"]["cpu_seconds"]), "last_wall": float(last["run"]["wall_seconds"]),
                "last_rows_read": sum(int(f["rows_in"] or 0) for f in last["fragments"]),
                "carry_cpu": float(carry["run"]["cpu_seconds"]) if carry else 0.0,
                "compacted": carry is not None and "compacted" in carry["run"]["reason"],
                "states_taken_over": len(carry["states"]) if carry else 0,
                "carry": carry["run"]["reason"] if carry else "",
                "methods": sorted({f["method"] for r in results for f in r.manifest.get("fragments", [])}),
                "correct": compare_results(expected, got).equal,
            }
            rows.append(row)
            log(f"cycle {n} {method}: history {history} rows, last point {row['last_cpu']:.2f}s CPU, "
                f"read {row['last_rows_read']} rows, carry {row['carry_cpu']:.2f}s"
                f"{' (compacted)' if row['compacted'] else ''}, correct {row['correct']}")
    report = summarize(rows, days, per_day)
    report["seconds"] = time.time() - began
    out.mkdir(parents=True, exist_ok=True)
    path = out / "endless.json"
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    chart = out / "endless.png"
    draw(rows, chart)
    report["files"] = [str(path), str(chart)]
    return report


def summarize(rows: list[dict[str, Any]], days: int, per_day: int) -> dict[str, Any]:
    """Medians over the second half of the cycles, and the growth from the first cycles' to the
    last cycles' last-point CPU, per contender."""
    def of(method: str, cycles: range, key: str) -> float:
        return median(r[key] for r in rows if r["contender"] == method and r["cycle"] in cycles)

    late = range(days // 2, days)
    early = range(1, min(3, days))  # not cycle 0: it has no carry and no history yet
    final = range(max(days - 2, 1), days)
    summary = {method: {"last_cpu_late": of(method, late, "last_cpu"), "last_wall_late": of(method, late, "last_wall"),
                        "carry_cpu_late": of(method, late, "carry_cpu"),
                        "compactions": sum(1 for r in rows if r["contender"] == method and r["compacted"]),
                        "last_rows_read_late": of(method, late, "last_rows_read"),
                        "growth": of(method, final, "last_cpu") / max(of(method, early, "last_cpu"), 1e-9)}
               for method in CONTENDERS}
    auto_rows = [r for r in rows if r["contender"] == "auto" and r["cycle"] in late]
    return {
        "days": days, "sales_per_day": per_day, "rows": rows, "summary": summary,
        "auto_over_batch_last_cpu": median(a["last_cpu"] / max(b["last_cpu"], 1e-9) for a in auto_rows
                                           for b in rows if b["contender"] == "batch" and b["cycle"] == a["cycle"]),
        "auto_over_batch_last_wall": median(a["last_wall"] / max(b["last_wall"], 1e-9) for a in auto_rows
                                            for b in rows if b["contender"] == "batch" and b["cycle"] == a["cycle"]),
        "history_growth": (rows[-1]["history_rows"] / max(next(r["history_rows"] for r in rows if r["cycle"] == 1), 1)
                           if days > 1 else math.nan),
        "correct": all(r["correct"] for r in rows),
    }


def draw(rows: list[dict[str, Any]], path: Path) -> None:
    """Last-point executor CPU per cycle of each contender, beside the history's rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from benchmarks.charts import colour

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for method in CONTENDERS:
        mine = [r for r in rows if r["contender"] == method]
        ax.plot([r["cycle"] for r in mine], [r["last_cpu"] for r in mine], marker="o", label=f"{method}: last time point",
                color=colour(method))
        ax.plot([r["cycle"] for r in mine], [r["carry_cpu"] for r in mine], linestyle="--", color=colour(method),
                label=f"{method}: carry")
    ax.set_xlabel("cycle (day)")
    ax.set_ylabel("executor CPU (s)")
    twin = ax.twinx()
    mine = [r for r in rows if r["contender"] == "auto"]
    twin.bar([r["cycle"] for r in mine], [r["history_rows"] for r in mine], alpha=0.15, color="grey", label="history rows")
    twin.set_ylabel("history (rows)")
    ax.set_zorder(twin.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("endless schedule: gross per category to date, refreshed every 6 h")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["run", "summarize", "write_data"]
