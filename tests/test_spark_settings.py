"""The SparkSession's settings: the user's win (a launch's properties file and flags, then a
spec's ``spark:`` section, then tempura's defaults, the small-machine ones only for a local master
in a JVM tempura starts); a ``spark-submit`` run keeps its master and settings, in a subprocess;
Spark's own planning settings given back while a user's query runs through ``spark.sql``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tempura.runtime.spark import (
    CODEGEN_CACHE,
    GENERAL_CONF,
    LOG4J_CONFIG,
    MASTER_ENV,
    SMALL_MACHINE_CONF,
    launch_settings,
    read_properties,
    session_settings,
)

LOGGING = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
PARTITIONS = "spark.sql.shuffle.partitions"


def test_a_properties_file_is_read_as_spark_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "spark-defaults.conf"
    path.write_text("# a comment\n! another\n\nspark.master   local[1]\nspark.a=1\nspark.b : two words \n"
                    "spark.c  first \\\n    second\n   spark.d\tx=y\n")
    assert read_properties(path) == {"spark.master": "local[1]", "spark.a": "1", "spark.b": "two words",
                                     "spark.c": "first second", "spark.d": "x=y"}


def test_the_launch_settings_are_the_properties_file_then_the_submit_flags(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text(f"{PARTITIONS} 64\nspark.app.name fromfile\nnot.spark 1\n")
    env = {"SPARK_CONF_DIR": str(tmp_path),
           "PYSPARK_SUBMIT_ARGS": "--master local[1] --conf spark.sql.shuffle.partitions=8 --driver-memory 3g pyspark-shell"}
    assert launch_settings(env) == {PARTITIONS: "8", "spark.app.name": "fromfile", "spark.master": "local[1]",
                                    "spark.driver.memory": "3g"}
    other = tmp_path / "other.conf"
    other.write_text("spark.x 1\n")
    assert launch_settings({"SPARK_CONF_DIR": str(tmp_path), "PYSPARK_SUBMIT_ARGS": f"--properties-file {other}"}) == {
        "spark.x": "1"}
    assert launch_settings({"SPARK_CONF_DIR": str(tmp_path / "absent")}) == {}


def test_tempuras_defaults_apply_only_where_the_user_gave_nothing() -> None:
    bare = session_settings({}, environ={})
    assert bare.master == "local[*]" and bare.app_name == "tempura"
    assert bare.conf == {**SMALL_MACHINE_CONF, **GENERAL_CONF, "spark.driver.extraJavaOptions": LOGGING}

    spec = {PARTITIONS: "3", "spark.sql.adaptive.enabled": "false", "spark.driver.extraJavaOptions": "-Xss4m"}
    launch = {PARTITIONS: "64", "spark.master": "local[1]", "spark.driver.extraJavaOptions": "-Da=1"}
    chosen = session_settings(launch, "local[2]", spec, "tempura:daily", environ={MASTER_ENV: "spark://h:7077"})
    assert chosen.master is None  # the launch's
    assert PARTITIONS not in chosen.conf  # the launch's 64 stands
    assert chosen.conf["spark.sql.adaptive.enabled"] == "false"  # the spec's
    assert chosen.conf["spark.ui.enabled"] == "false"  # a local master, in a JVM tempura starts
    assert chosen.conf["spark.driver.extraJavaOptions"] == f"{LOGGING} -Da=1 -Xss4m"
    assert chosen.app_name == "tempura:daily"

    spec_only = session_settings({}, "local[2]", spec, environ={})
    assert spec_only.master == "local[2]" and spec_only.conf[PARTITIONS] == "3"
    assert session_settings({}, "local[2]", environ={MASTER_ENV: "local[3]"}).master == "local[3]"


def test_a_cluster_or_a_jvm_started_by_someone_else_gets_no_small_machine_defaults() -> None:
    cluster = session_settings({}, "spark://127.0.0.1:7077", environ={})
    assert cluster.master == "spark://127.0.0.1:7077"
    assert not set(SMALL_MACHINE_CONF) & set(cluster.conf) and GENERAL_CONF.items() <= cluster.conf.items()
    submitted = session_settings({"spark.master": "local[1]", "spark.app.name": "nightly"},
                                 conf={"spark.driver.extraJavaOptions": "-Xss4m"}, starts_jvm=False, environ={})
    assert submitted.master is None and submitted.app_name is None
    assert submitted.conf == GENERAL_CONF  # no JVM options: the JVM runs already


@pytest.mark.spark
def test_the_session_tempura_starts_keeps_the_generated_code_of_2000_plans(spark: Any) -> None:
    """Spark's cache of generated code is static: set when the session starts, or never. The
    suite's session is started by tempura's ``get_spark``, as every run's is."""
    assert GENERAL_CONF[CODEGEN_CACHE] == "2000"
    assert spark.conf.get(CODEGEN_CACHE) == "2000"
    assert spark.sparkContext.getConf().get(CODEGEN_CACHE) == "2000"


def _run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[dict[str, Any], str]:
    """The JSON line a subprocess printed last, and all it printed."""
    done = subprocess.run(command, env={**os.environ, "PYSPARK_PYTHON": sys.executable, **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return json.loads(lines[-1]), done.stdout


SHOW = """
import json
from pyspark.sql import SparkSession
spark = SparkSession.getActiveSession()
get = spark.conf.get
print(json.dumps({"master": spark.sparkContext.master, "app": spark.sparkContext.appName,
                  "partitions": get("spark.sql.shuffle.partitions"), "ui": get("spark.ui.enabled", "unset"),
                  "adaptive": get("spark.sql.adaptive.enabled")}))
"""


@pytest.mark.spark
def test_a_spark_submit_run_keeps_the_users_master_and_settings(tmp_path: Path) -> None:
    """``spark-submit --master local[1] --conf …`` of tempura's command line (the file
    ``tempura submit-file`` names, run from a file that then prints the session's settings): the
    query runs, and the session has spark-submit's master and setting, and its UI (no
    small-machine defaults in a JVM tempura did not start)."""
    import tempura.__main__ as entry

    (tmp_path / "t.csv").write_text("x\n1\n2\n3\n")
    (tmp_path / "catalog.yaml").write_text("tables:\n  t: {path: t.csv, format: csv, options: {header: true}, "
                                           "schema: {x: int}}\n")
    # Named as the entry file is, as spark-submit names an unnamed application after its file.
    (tmp_path / "wrapper").mkdir()
    job = tmp_path / "wrapper" / "__main__.py"
    job.write_text(f"""import runpy, sys
sys.argv = [sys.argv[0], "query", "--catalog", "catalog.yaml", "SELECT SUM(x) AS s FROM t"]
try:
    runpy.run_path({entry.__file__!r}, run_name="__main__")
except SystemExit as exit:
    assert not exit.code, exit.code
""" + SHOW)
    submit = Path(sys.executable).parent / "spark-submit"
    found, printed = _run([str(submit), "--master", "local[1]", "--conf", f"{PARTITIONS}=64", str(job)], {}, tmp_path)
    assert "6" in printed.split()  # the query's one row
    assert found["master"] == "local[1]" and found["partitions"] == "64"
    assert found["ui"] != "false"  # Spark's own default: the UI runs
    assert found["app"] == "tempura"


@pytest.mark.spark
def test_spark_defaults_conf_and_the_spec_both_beat_tempuras_defaults(tmp_path: Path) -> None:
    """A plain process (tempura starts the JVM): ``spark-defaults.conf`` in ``SPARK_CONF_DIR``
    keeps its setting over the spec's, the spec's other setting and master are applied, tempura's
    defaults fill the rest, and the application is named after the spec."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(f"{PARTITIONS} 64\n")
    (tmp_path / "data").mkdir()
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: nightly\nquery: SELECT k, SUM(v) AS v FROM s GROUP BY k\n"
                    "sources:\n  s:\n    path: data\n    format: csv\n    schema: {k: string, v: int, at: timestamp}\n"
                    "    arrival: {column: at}\n"
                    "schedule: {start: '2026-01-01T00:00:00', every: 6h, points: 2}\n"
                    f"spark:\n  master: local[1]\n  conf: {{{PARTITIONS}: 3, spark.sql.adaptive.enabled: false}}\n")
    job = tmp_path / "job.py"
    job.write_text(f"from tempura import StandingQuery\nStandingQuery({str(spec)!r}).spark\n" + SHOW)
    found, _ = _run([sys.executable, str(job)], {"SPARK_CONF_DIR": str(conf), MASTER_ENV: ""}, tmp_path)
    assert found["partitions"] == "64" and found["adaptive"] == "false"
    assert found["master"] == "local[1]" and found["ui"] == "false"
    assert found["app"] == "tempura:nightly"


REORDER = "spark.sql.cbo.joinReorder.enabled"
ADAPTIVE = "spark.sql.adaptive.enabled"
EXCLUDED = "spark.sql.optimizer.excludedRules"


@pytest.mark.spark
def test_a_users_query_plans_by_the_settings_the_session_had_before_tempuras_plans(spark: Any) -> None:
    """After tempura's plans turned Spark's reordering off, ``spark_rows`` of a comma join plans
    it as Spark would (``ReorderJoin`` back on: no cross product), and tempura's settings are in
    force again after it; a setting the user changed since is the user's, inside and after."""
    from tempura.runtime import SparkPlanning, spark_own_planning, spark_rows

    before = {key: spark.conf.get(key, None) for key in (REORDER, ADAPTIVE, EXCLUDED)}
    spark.conf.set(ADAPTIVE, "true")
    spark.conf.unset(EXCLUDED)
    try:
        SparkPlanning().apply(spark)
        assert spark.conf.get(ADAPTIVE) == "false" and "ReorderJoin" in spark.conf.get(EXCLUDED)
        for name in ("a", "b", "c"):
            spark.range(3).withColumnRenamed("id", name).createOrReplaceTempView(f"t{name}")
        comma = "SELECT a FROM ta, tb, tc WHERE a = c AND b < c"

        def first_join() -> str:  # the condition of the join Spark runs first (the innermost)
            plan = spark.sql(comma)._jdf.queryExecution().optimizedPlan().toString()
            return [line for line in plan.splitlines() if "Join Inner" in line][-1]

        assert " = " not in first_join()  # the written order: ta with tb, on no equal keys
        with spark_own_planning(spark):
            assert spark.conf.get(ADAPTIVE) == "true" and spark.conf.get(EXCLUDED, None) in (None, "")
            assert " = " in first_join()  # Spark's ReorderJoin: ta with tc on a = c first
        assert sorted(spark_rows(spark.sql(comma))) == [(1,), (2,), (2,)]
        assert spark.conf.get(ADAPTIVE) == "false" and "ReorderJoin" in spark.conf.get(EXCLUDED)
        mine = "org.apache.spark.sql.catalyst.optimizer.ConvertToLocalRelation"
        spark.conf.set(EXCLUDED, mine)  # the user's own change after tempura's: kept, not reset to unset
        with spark_own_planning(spark):
            assert spark.conf.get(ADAPTIVE) == "true" and spark.conf.get(EXCLUDED) == mine
        assert spark.conf.get(ADAPTIVE) == "false" and spark.conf.get(EXCLUDED) == mine
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
