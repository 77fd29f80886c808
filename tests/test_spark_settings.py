"""The SparkSession's settings: tempura's defaults, the caller's overrides, and driver JVM options
added to tempura's logging configuration rather than replacing it; Spark's own planning settings
given back while a user's query runs through ``spark.sql``."""

from __future__ import annotations

from typing import Any

import pytest

from tempura.runtime.spark import DEFAULT_CONF, LOG4J_CONFIG, session_settings


def test_defaults_are_overridden_and_java_options_keep_the_logging_configuration() -> None:
    logging = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
    assert session_settings() == {**DEFAULT_CONF, "spark.driver.extraJavaOptions": logging}
    settings = session_settings({"spark.sql.shuffle.partitions": "1", "spark.driver.extraJavaOptions": "-Xss4m"})
    assert settings["spark.sql.shuffle.partitions"] == "1"
    assert settings["spark.driver.extraJavaOptions"] == f"{logging} -Xss4m"
    assert settings["spark.driver.memory"] == DEFAULT_CONF["spark.driver.memory"]
    assert LOG4J_CONFIG.exists()


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
