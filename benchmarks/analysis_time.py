"""``tempura bench analysis-time``: what asking Spark's analyzer adds to planning a query.

tempura takes a query's result names and types from Spark's analysis of the text, types what
sqlglot cannot by Spark's analyzer, and carves what it does not plan natively into opaque parts
that Spark analyzes. This benchmark plans each TPC-H query (over empty views of the TPC-H
tables, and the shipped statistics of scale 0.01) twice, alternating, ``repeat`` rounds each:

- **with Spark**: ``spark_result`` of the text, then binding with Spark's types and analysis;
- **without Spark**: binding from the declared schemas alone (names read from the text).

It reports, for the front end alone (parse, bind) and for the whole planning (front end and the
cost-based optimizer), the median seconds of all 22 queries under each contender and their
ratio; and Spark's analysis of the texts alone, the floor of what asking Spark adds. JSON to ``out/analysis-time.json``.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from tempura import tpch

CONTENDERS = ("with Spark", "without Spark")


def run(out: Path, repeat: int = 5, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    from benchmarks.tvr_planning import STATS
    from tempura.optimizer.optimizer import Optimizer
    from tempura.runtime import get_spark
    from tempura.runtime.executor import analyzed_types, spark_result
    from tempura.sql import parse_query
    from tempura.stats import Estimator, TableStats

    spark = get_spark()
    for table, columns in tpch.SCHEMA.items():
        nulls = ", ".join(f"CAST(NULL AS {ty}) AS {c}" for c, ty in columns.items())
        spark.sql(f"SELECT {nulls} WHERE FALSE").createOrReplaceTempView(table)
    stats = {n: TableStats.from_json(s) for n, s in json.loads(STATS.read_text(encoding="utf-8")).items()}
    texts = [tpch.query_text(n) for n in tpch.query_names()]

    def front(text: str, with_spark: bool) -> Any:
        if with_spark:
            return parse_query(text, tpch.SCHEMA, "spark", analyzed_types(spark), spark_result(spark, text),
                               lambda part: spark_result(spark, part))
        return parse_query(text, tpch.SCHEMA, "spark")

    def whole(text: str, with_spark: bool) -> Any:
        return Optimizer(Estimator(lambda t: stats[t.lower()])).plan(front(text, with_spark))

    for text in texts:  # warm: Spark's first analyses and Python's imports are not planning
        whole(text, True)
        whole(text, False)
    report: dict[str, Any] = {"queries": len(texts), "repeat": repeat}
    for label, step in (("front end", front), ("planning", whole)):
        seconds: dict[str, list[float]] = {c: [] for c in CONTENDERS}
        for r in range(repeat):
            order = CONTENDERS if r % 2 == 0 else CONTENDERS[::-1]
            for contender in order:
                start = time.perf_counter()
                for text in texts:
                    step(text, contender == "with Spark")
                seconds[contender].append(time.perf_counter() - start)
        medians = {c: statistics.median(v) for c, v in seconds.items()}
        report[label] = {"median_seconds": medians, "seconds": seconds,
                         "ratio_with_to_without": medians["with Spark"] / medians["without Spark"],
                         "added_ms_per_query": 1000 * (medians["with Spark"] - medians["without Spark"]) / len(texts)}
        if progress is not None:
            progress(f"{label}: {medians['with Spark']:.2f}s with Spark, {medians['without Spark']:.2f}s without")
    alone = []
    for _ in range(repeat):  # the floor of what asking Spark adds: its analysis of each text, alone
        start = time.perf_counter()
        for text in texts:
            spark_result(spark, text)
        alone.append(time.perf_counter() - start)
    report["spark analysis alone"] = {"median_seconds": statistics.median(alone), "seconds": alone,
                                      "ms_per_query": 1000 * statistics.median(alone) / len(texts)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "analysis-time.json").write_text(json.dumps(report, indent=2))
    return report
