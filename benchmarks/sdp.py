"""Spark Declarative Pipelines, the competitor a Spark user has, as a contender by the clock.

pyspark ships Spark Declarative Pipelines (``pyspark.pipelines``, the ``spark-pipelines``
command, a local Spark Connect server). A standing query becomes a pipeline project, designed the
way a competent SDP user designs it, in one of two ways:

- ``sdp-streaming``: a **streaming table** per source (Structured Streaming over the source's
  folder, each refresh reading the files that are new) and a **materialized view** of the query
  over them. A refresh at a time point whose result is not due updates the streaming tables alone
  (``--refresh`` of those); at a point that delivers, the pipeline is refreshed whole, and the
  materialized view is recomputed over everything the streaming tables hold.
- ``sdp-mv``: one **materialized view** of the query over the files themselves (a temporary view
  per source reads its folder). It has nothing to do until a result is due: it runs at the points
  that deliver, and recomputes the query over all the files there are.

Each project keeps its tables in a Hive metastore of its own (Derby, in the project folder), so
that the next refresh, a new process, finds them; Spark's settings for the Connect server — the
same local master, shuffle partitions and driver memory tempura's runs get, and the event log —
go in the project's ``conf/spark-defaults.conf``. :meth:`SdpProject.refresh` runs
``spark-pipelines run`` in a new process, measured as tempura's runs are
(:func:`benchmarks.clock.measured_command`: every job of the server's Spark application, from its
event log, and the CPU of the whole process tree).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.clock import ClockJob, PointFigures, event_log_conf, measured_command
from tempura.runtime.spark import DEFAULT_CONF

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DESIGNS = ("sdp-streaming", "sdp-mv")
RESULT = "standing_result"  # the materialized view of the query

# Spark's settings of tempura's runs that the Connect server gets too, so that both do the same
# work on the same resources (the event log's are added per refresh).
SHARED_CONF = {k: v for k, v in DEFAULT_CONF.items() if not k.startswith("spark.sql.codegen")}


def spark_pipelines() -> Path:
    """The ``spark-pipelines`` command of the pyspark this Python runs."""
    found = Path(sys.executable).with_name("spark-pipelines")
    if found.exists():
        return found
    which = shutil.which("spark-pipelines")
    if which is None:
        raise FileNotFoundError("spark-pipelines is not installed with this Python's pyspark")
    return Path(which)


def flows_source(job: ClockJob, design: str, schemas: dict[str, str]) -> str:
    """The project's Python definitions: its sources (streaming tables or temporary views)."""
    spec = job.spec
    lines = ['"""The sources of the standing query, as the pipeline reads them."""', "",
             "from pyspark import pipelines as dp", ""]
    for name, source in spec.sources.items():
        location = str(Path(spec.location(name)).resolve())
        fmt = source.format or "parquet"
        if design == "sdp-streaming":
            lines += ["", f"@dp.table(name={name!r}, comment='every file that landed in the folder')",
                      f"def {name}():",
                      f"    return spark.readStream.format({fmt!r}).schema({schemas[name]!r}).load({location!r})", ""]
        else:
            lines += ["", f"@dp.temporary_view(name={name!r})", f"def {name}():",
                      f"    return spark.read.format({fmt!r}).schema({schemas[name]!r}).load({location!r})", ""]
    return "\n".join(lines)


@dataclass
class SdpProject:
    """One SDP project for one job run by the clock: ``spark-pipeline.yml``, its definitions, its
    Spark settings, its storage (checkpoints) and its own metastore and warehouse."""

    folder: Path
    job: ClockJob
    design: str

    @classmethod
    def create(cls, spark: SparkSession, job: ClockJob, design: str, folder: Path) -> SdpProject:
        """A fresh project for ``job`` (its source folders may be empty: schemas are read from the
        staged data)."""
        if design not in DESIGNS:
            raise ValueError(f"unknown SDP design {design!r} (one of {', '.join(DESIGNS)})")
        shutil.rmtree(folder, ignore_errors=True)
        (folder / "transformations").mkdir(parents=True)
        (folder / "conf").mkdir()
        spec = job.spec
        schemas = {}
        for name, source in spec.sources.items():
            staged = sorted((job.staged / name).glob("i=*"))
            schemas[name] = spark.read.format(source.format or "parquet").load(str(staged[-1])).schema.toDDL()
        (folder / "transformations" / "sources.py").write_text(flows_source(job, design, schemas), encoding="utf-8")
        sql = spec.sql.strip().rstrip(";")
        (folder / "transformations" / "result.sql").write_text(
            f"CREATE MATERIALIZED VIEW {RESULT} AS\n{sql}\n", encoding="utf-8")
        (folder / "spark-pipeline.yml").write_text(
            f"name: {spec.name}\nstorage: {(folder / 'storage').resolve().as_uri()}\n"
            "libraries:\n  - glob:\n      include: transformations/**\n", encoding="utf-8")
        return cls(folder, job, design)

    @property
    def warehouse(self) -> Path:
        return (self.folder / "warehouse").resolve()

    def conf(self, events: Path) -> dict[str, str]:
        """The Connect server's settings for one refresh."""
        metastore = (self.folder / "metastore_db").resolve()
        return {**SHARED_CONF, **event_log_conf(events),
                "spark.sql.catalogImplementation": "hive",
                "spark.sql.warehouse.dir": str(self.warehouse),
                "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={metastore};create=true",
                "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.connect.grpc.binding.address": "127.0.0.1"}

    def runs_at(self, index: int) -> bool:
        """Whether this design refreshes at time point ``index`` (``sdp-mv``: only where due)."""
        cycle = self.job.spec.cycle(0)
        assert cycle is not None
        return self.design == "sdp-streaming" or index in cycle.time_points.deliver

    def refresh(self, index: int, events: Path) -> PointFigures:
        """``spark-pipelines run`` at time point ``index`` in a new process, measured whole."""
        cycle = self.job.spec.cycle(0)
        assert cycle is not None
        conf = self.conf(events)
        (self.folder / "conf" / "spark-defaults.conf").write_text(
            "".join(f"{k} {v}\n" for k, v in conf.items()), encoding="utf-8")
        command = [str(spark_pipelines()), "run", "--spec", str((self.folder / "spark-pipeline.yml").resolve())]
        if index not in cycle.time_points.deliver:
            command += ["--refresh", ",".join(self.job.spec.sources)]
        env = dict(os.environ, SPARK_CONF_DIR=str((self.folder / "conf").resolve()), PYSPARK_PYTHON=sys.executable,
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        return measured_command(index, command, events, env, cwd=self.folder)

    def result_path(self) -> Path:
        """Where the materialized view's rows are (a managed parquet table)."""
        return self.warehouse / RESULT


__all__ = ["DESIGNS", "RESULT", "SdpProject", "flows_source", "spark_pipelines"]
