"""tempura on a Spark standalone cluster (:mod:`benchmarks.standalone`): the driver programs the
cluster tests and ``tempura bench cluster`` run as subprocesses, each with its own SparkSession
on the master ``TEMPURA_SPARK_MASTER`` names.

``python -c "from benchmarks.cluster import main; main()" queries CATALOG OUT NAME ...`` runs TPC-H
queries through :class:`tempura.Session` and writes each result as parquet to ``OUT/NAME``, then
prints the session's master and application id as JSON (the last line of its output).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from benchmarks.faults import PROJECT, Exit
from tempura.runtime.spark import MASTER_ENV

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


__all__ = ["DRIVER", "Driven", "drive", "main", "run_queries"]
