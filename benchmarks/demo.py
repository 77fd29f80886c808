"""The demo job: standing queries simulated under every method, compared and checked.

For each scenario (``sales_returns`` and a TPC-H standing query by default) it generates the data
once, runs one warm-up cycle that is not measured, replays a cycle's arrival under ``auto`` and
under every forced method (:meth:`tempura.StandingQuery.simulate`), and prints one table
per scenario (naming the methods whose plan is ``auto``'s very plan): the
estimated and measured objective, the executor CPU seconds of each time point, and whether every
delivered result equals ``spark.sql`` over that time point's snapshot. A PNG chart shows the
work per time point of each method side by side.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from benchmarks.charts import colour, time_point_axis
from tempura.scheduler.simulation import MethodRun
from tempura.standing import StandingQuery

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCENARIOS = ("sales_returns", "tpch_q03")
METHODS = ("auto", "batch", "ivm", "ojv", "streaming", "higher-order")


def run_scenario(spark: SparkSession, name: str, methods: Sequence[str], workdir: Path, scale: float,
                 console: Console) -> list[MethodRun]:
    """Every method of ``methods`` on scenario ``name``; a method without a plan is reported and
    left out."""
    from scenarios import prepared_scenario

    from tempura.errors import TempuraError

    with console.status(f"{name}: data at scale {scale:g}"):
        spec = StandingQuery(prepared_scenario(spark, name, workdir / "scenarios", scale), workdir, spark).spec
    with console.status(f"{name}: a warm-up cycle (not measured)"):
        # the first cycle over new data pays for reading it cold: no method should be charged
        StandingQuery(spec, workdir / "warm-up", spark).simulate("batch")
    runs = []
    references = StandingQuery(spec, workdir, spark).references()  # each snapshot's spark.sql once
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(name, total=len(methods))
        # auto runs last: its plan is one the forced methods' plans share shapes with, so none
        # of its measurement is the first run of a query shape (the table lists it first)
        for method in sorted(methods, key=lambda m: m == "auto"):
            def show(what: str, done: int, total: int) -> None:
                progress.update(task, description=f"{name} [{method}] {what}")

            try:
                query = StandingQuery(spec, workdir, spark, progress=show)
                runs.append(query.simulate(method, check=True, references=references))
            except TempuraError as error:
                console.print(f"[yellow]{name} [{method}]: no run: {error}[/yellow]")
            progress.advance(task)
    return sorted(runs, key=lambda r: list(methods).index(r.method))


def comparison_table(name: str, runs: list[MethodRun]) -> Table:
    """Objective, work per time point and correctness of each method on one scenario."""
    best = min((r.measured_objective for r in runs), default=0.0)
    table = Table(title=f"{name}: one cycle per method (CPU: executor CPU seconds, measured)")
    table.add_column("method")
    table.add_column("uses")
    table.add_column("model est. objective (s)", justify="right")
    table.add_column("measured objective (CPU s)", justify="right")
    table.add_column("CPU per time point", justify="right")
    table.add_column("wall s", justify="right")
    table.add_column("equal to recompute")
    for run in runs:
        mark = " *" if run.measured_objective == best else ""
        per_point = " / ".join(f"{p.cpu_seconds:.2f}" for p in run.points)
        checked = [p for p in run.points if p.delivered]
        verdict = "[green]yes[/green]" if run.correct else "[red]no[/red] " + "; ".join(
            f"t{p.index}: {p.detail}" for p in checked if not p.correct)
        table.add_row(run.method, run.uses, f"{run.estimated_objective:.3g}s", f"{run.measured_objective:.3g}{mark}",
                      per_point, f"{run.wall_seconds:.1f}", f"{verdict} ({len(checked)} checked)")
    table.caption = "\n".join(line for line in (calibration(runs), same_plans(runs)) if line)
    return table


def calibration(runs: list[MethodRun]) -> str | None:
    """The factor from the model's estimate to the measured objective, over every method's
    run: shown once under the table."""
    estimated = sum(r.estimated_objective for r in runs)
    if estimated <= 0:
        return None
    factor = sum(r.measured_objective for r in runs) / estimated
    return (f"model est.: the cost model's seconds; calibration: one of them came to {factor:.3g} s of measured CPU "
            f"(summed over the methods)")


def same_plans(runs: list[MethodRun]) -> str | None:
    """Which forced methods run the very plan ``auto`` runs (equal plan digests): differences
    between their measurements are the machine's noise."""
    auto = next((r for r in runs if r.method == "auto" and r.plan_digest), None)
    if auto is None:
        return None
    same = [r.method for r in runs if r is not auto and r.plan_digest == auto.plan_digest]
    if not same:
        return None
    return f"auto runs the very plan of {', '.join(same)}: the measured difference is noise"


def figure(results: dict[str, list[MethodRun]]) -> Any:
    """Executor CPU per time point of each method, one panel per scenario, each method in its
    colour in every panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6.5 * len(results), 4.2), squeeze=False)
    for ax, (name, runs) in zip(axes[0], results.items()):
        k = max((len(r.points) for r in runs), default=0)
        width = 0.8 / max(1, len(runs))
        for j, run in enumerate(runs):
            xs = [p.index - 0.4 + width * (j + 0.5) for p in run.points]
            ax.bar(xs, [p.cpu_seconds for p in run.points], width, color=colour(run.method),
                   label=f"{run.method} ({run.measured_objective:.2g})")
        time_point_axis(ax, k)
        ax.set_title(name)
        ax.set_ylabel("executor CPU seconds")
        ax.legend(title="method (objective)", fontsize=8)
    fig.tight_layout()
    return fig


def chart(results: dict[str, list[MethodRun]], path: Path) -> Path:
    """:func:`figure` as a PNG at ``path``."""
    import matplotlib.pyplot as plt

    fig = figure(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(spark: SparkSession, scale: float = 0.01, workdir: str | Path = ".tempura", scenarios: Sequence[str] = SCENARIOS,
         methods: Sequence[str] = METHODS, chart_path: str | Path | None = None) -> int:
    """Run the demo; returns how many runs delivered a result that differs from recompute."""
    console = Console()
    root = Path(workdir) / "demo"
    results = {name: run_scenario(spark, name, methods, root, scale, console) for name in scenarios}
    for name, runs in results.items():
        console.print(comparison_table(name, runs))
    written = chart(results, Path(chart_path) if chart_path else root / "demo.png")
    console.print(f"chart: {written}")
    wrong = sum(not r.correct for runs in results.values() for r in runs)
    checked = sum(len(runs) for runs in results.values())
    console.print(f"{checked - wrong}/{checked} runs equal to recompute at every delivered time point")
    return wrong


__all__ = ["METHODS", "SCENARIOS", "chart", "figure", "comparison_table", "main", "run_scenario", "same_plans"]
