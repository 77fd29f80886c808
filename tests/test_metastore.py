"""Catalog tables on an embedded Hive metastore (Derby, in a temporary warehouse, as pyspark ships
it), in a subprocess whose own session has Hive support (the suite's session cannot gain it):
``tempura run`` over a Hive parquet fact table partitioned by day and a Hive text dimension
(whose files only the table reads), delivering into a snapshot table and a delta table, at two
time points (under ``ivm``); each table then holds what ``spark.sql`` gives over that time
point's snapshot.
The process's session is the one tempura runs on (an active session is used as it is)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

QUERY = ("SELECT i.colour, SUM(s.price) AS total, COUNT(*) AS n FROM sales s JOIN items i ON s.item = i.item "
         "GROUP BY i.colour")

SCRIPT = r'''
import json, sys
from pathlib import Path
from pyspark.sql import SparkSession

root = Path(sys.argv[1])
query = sys.argv[2]
spark = (SparkSession.builder.master("local[1]").appName("metastore")
         .config("spark.sql.warehouse.dir", str(root / "warehouse"))
         .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                 f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true")
         .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={root} -XX:TieredStopAtLevel=1")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
         .config("spark.sql.session.timeZone", "UTC")
         .enableHiveSupport().getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.sql("CREATE DATABASE shop")
spark.sql("CREATE TABLE shop.sales (item INT, price INT, arrived_at TIMESTAMP) PARTITIONED BY (day STRING) "
          "STORED AS PARQUET")
spark.sql("CREATE TABLE shop.items (item INT, colour STRING) STORED AS TEXTFILE")
spark.sql("INSERT INTO shop.items VALUES (1, 'red'), (2, 'blue'), (3, 'red')")

from tempura.cli import main

batches = [("d1", "(1, 10, TIMESTAMP '2026-03-01 01:00:00'), (2, 5, TIMESTAMP '2026-03-01 02:00:00')"),
           ("d2", "(1, 7, TIMESTAMP '2026-03-01 07:00:00'), (3, 1, TIMESTAMP '2026-03-01 08:00:00')")]
out = {"engine": spark.conf.get("spark.sql.catalogImplementation"), "points": []}
for index, (day, values) in enumerate(batches, start=1):
    spark.sql(f"INSERT INTO shop.sales PARTITION (day = '{day}') VALUES {values}")
    now = f"2026-03-01T{6 * index:02d}:01:00"
    try:
        main(["run", str(root / "specs"), "--now", now, "--workdir", str(root / "work"), "--method", "ivm"],
             standalone_mode=False)
    except SystemExit as exit:
        assert not exit.code, exit.code
    spark.table("shop.sales").where(f"arrived_at <= TIMESTAMP '2026-03-01 {6 * index:02d}:00:00'") \
        .createOrReplaceTempView("sales")
    spark.table("shop.items").createOrReplaceTempView("items")
    delta = spark.sql("SELECT colour, SUM(total * __m) AS total, SUM(n * __m) AS n FROM shop.changes "
                      "GROUP BY colour HAVING SUM(n * __m) <> 0")
    out["points"].append({
        "expected": sorted(tuple(r) for r in spark.sql(query).collect()),
        "snapshot": sorted(tuple(r) for r in spark.table("shop.report").collect()),
        "delta": sorted(tuple(r) for r in delta.collect()),
        "partitions": spark.sql("SHOW PARTITIONS shop.changes").count(),
        "report_provider": {r[0]: r[1] for r in spark.sql("DESCRIBE TABLE EXTENDED shop.report").collect()}.get("Provider"),
    })
print(json.dumps(out))
'''


def test_hive_tables_in_and_out_deliver_each_snapshot(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    schedule = "schedule:\n  start: '2026-03-01T00:00:00'\n  every: 6h\n  points: 2\n  deliver: every\n"
    sources = ("sources:\n  sales:\n    table: shop.sales\n    arrival: {column: arrived_at}\n"
               "  items:\n    table: shop.items\n    arrival: {by: file}\n")
    for name, output in (("report", "{table: shop.report}"), ("changes", "{table: shop.changes, mode: delta}")):
        (specs / f"{name}.yaml").write_text(f"name: {name}\nquery: {QUERY}\n{sources}{schedule}output: {output}\n")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), QUERY], cwd=tmp_path,
                          env={**os.environ, "PYSPARK_PYTHON": sys.executable}, capture_output=True, text=True,
                          timeout=600, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    found = json.loads(lines[-1])
    assert found["engine"] == "hive"
    for index, point in enumerate(found["points"], start=1):
        assert point["expected"], f"t{index}: the reference is empty: the check would prove little"
        assert point["snapshot"] == point["expected"], f"t{index}: the snapshot table: {point}"
        assert point["delta"] == point["expected"], f"t{index}: the delta table's partitions: {point}"
        assert point["partitions"] == index
        assert point["report_provider"] == "parquet"
