"""tempura on a Spark standalone cluster (:mod:`benchmarks.standalone`): the driver programs the
cluster tests and ``tempura bench cluster`` run as subprocesses, each with its own SparkSession
on the master ``TEMPURA_SPARK_MASTER`` names.

``tempura bench cluster`` runs one scenario's cycle (``tempura run``, delivering at every time
point) on a local master with as many cores as the cluster's worker and on the cluster, the two
alternating round by round (who goes first alternates too), and reports per contender the medians
of the run's wall time, the time points' own wall time and the executors' CPU (from the
manifests), and whether every time point equals the local reference. The report goes to
``cluster.json`` in the output folder.

``python -c "from benchmarks.cluster import main; main()" queries CATALOG OUT NAME ...`` runs TPC-H
queries through :class:`tempura.Session` and writes each result as parquet to ``OUT/NAME``, then
prints the session's master and application id as JSON (the last line of its output).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from benchmarks import faults, standalone
from benchmarks.faults import PROJECT, Exit
from tempura.runtime.spark import MASTER_ENV

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DRIVER = "from benchmarks.cluster import main; main()"


def run_queries(catalog: Path, out: Path, names: Sequence[str]) -> dict[str, str]:
    """TPC-H queries ``names`` planned by tempura, run on this process's Spark, each written to
    ``out/<name>`` as one file, in the result's order; the session's master and application id."""
    import tempura
    from tempura import tpch

    session = tempura.Session(catalog)
    for name in names:
        session.sql(tpch.query_text(name)).coalesce(1).write.mode("overwrite").parquet(str(out / name))
    context = session.spark.sparkContext
    return {"master": str(context.master), "application": str(context.applicationId)}


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 3 or args[0] != "queries":
        raise SystemExit("usage: queries CATALOG OUT NAME ...")
    print(json.dumps(run_queries(Path(args[1]), Path(args[2]), args[3:])))


@dataclass
class Driven:
    """A driver program's exit, and the Spark it ran on (from its last line)."""

    exit: Exit
    master: str = ""
    application: str = ""


def drive(args: Sequence[str], master: str | None, code: str = DRIVER, timeout: float = 900.0,
          env: Mapping[str, str] | None = None) -> Driven:
    """Run ``code`` (with ``args``) in a subprocess from the project's folder, on ``master``
    (``None``: tempura's default)."""
    environment = {key: value for key, value in os.environ.items() if key != MASTER_ENV}
    environment.update(env or {})
    if master is not None:
        environment[MASTER_ENV] = master
    began = time.monotonic()
    process = subprocess.run([sys.executable, "-c", code, *args], cwd=PROJECT, env=environment, capture_output=True,
                             text=True, timeout=timeout)
    exit = Exit(process.returncode, process.stdout, process.stderr, time.monotonic() - began)
    driven = Driven(exit)
    lines = [line for line in process.stdout.splitlines() if line.startswith("{")]
    if process.returncode == 0 and lines:
        found = json.loads(lines[-1])
        driven.master, driven.application = str(found.get("master", "")), str(found.get("application", ""))
    return driven


def _measured(trial: faults.Trial) -> tuple[float, float]:
    """The time points' own wall seconds and the executors' CPU seconds, summed over the cycle's
    manifests."""
    store, label = trial.store(), trial.cycle().label
    wall = cpu = 0.0
    for index in store.manifest_indices(label):
        run = (store.manifest(label, index) or {}).get("run", {})
        wall += float(run.get("wall_seconds") or 0.0)
        cpu += float(run.get("cpu_seconds") or 0.0)
    return wall, cpu


def bench(spark: SparkSession, out: Path, workdir: Path, scenario: str = "sales_returns", scale: float = 0.01,
          repeat: int = 3, method: str = "auto", log: Callable[[str], None] = print,
          running: standalone.Standalone | None = None) -> dict[str, Any]:
    """Scenario ``scenario``'s cycle under ``method``, ``repeat`` rounds on a local master and on a
    standalone cluster with the same cores (``running``, else one started and stopped here),
    alternating; each run's deliveries checked against the local reference (``spark``: this
    process's own session). Writes ``out/cluster.json``."""
    prepared = faults.prepare(spark, scenario, workdir / "scenarios", scale)
    local = f"local[{standalone.CORES}]"
    runs: dict[str, list[dict[str, Any]]] = {"local": [], "cluster": []}
    expected: dict[tuple[str, int], list[Any]] = {}
    began = time.monotonic()
    with contextlib.nullcontext(running) if running is not None else standalone.start(workdir / "cluster") as cluster:
        masters = {"local": local, "cluster": cluster.url}
        for round_ in range(repeat):
            order = ["local", "cluster"] if round_ % 2 == 0 else ["cluster", "local"]
            for contender in order:
                trial = faults.new_trial(prepared, f"{contender}-{round_}")
                driven = drive(trial.run_args(method), masters[contender], code=faults.ENTRY)
                if driven.exit.code != 0:
                    raise RuntimeError(f"{contender} run {round_ + 1} failed: {driven.exit.last_lines(8)}")
                verdict = faults.check(spark, trial, expected=expected)
                wall, cpu = _measured(trial)
                runs[contender].append({"seconds": driven.exit.seconds, "time_point_wall": wall, "executor_cpu": cpu,
                                        "correct": verdict.ok, "checked": verdict.checked, "problems": verdict.describe()})
                log(f"{contender} round {round_ + 1}: {driven.exit.seconds:.1f} s, time points {wall:.1f} s, "
                    f"executor cpu {cpu:.1f} s, {'correct' if verdict.ok else verdict.describe()}")
                trial.remove()
    summary = {name: {key: median(r[key] for r in rows) for key in ("seconds", "time_point_wall", "executor_cpu")}
               | {"correct": all(r["correct"] for r in rows)} for name, rows in runs.items()}
    ratios = {key: summary["cluster"][key] / summary["local"][key] if summary["local"][key] else None
              for key in ("seconds", "time_point_wall", "executor_cpu")}
    report = {"scenario": scenario, "scale": scale, "method": method, "repeat": repeat, "local_master": local,
              "cluster": {"workers": 1, "cores": standalone.CORES, "memory": standalone.MEMORY},
              "runs": runs, "summary": summary, "cluster_over_local": ratios, "seconds": time.monotonic() - began}
    out.mkdir(parents=True, exist_ok=True)
    path = out / "cluster.json"
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    report["files"] = [str(path)]
    return report


__all__ = ["DRIVER", "Driven", "bench", "drive", "main", "run_queries"]
