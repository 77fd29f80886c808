"""The SparkSession's settings: tempura's defaults, the caller's overrides, and driver JVM options
added to tempura's logging configuration rather than replacing it."""

from __future__ import annotations

from tempura.runtime.spark import DEFAULT_CONF, LOG4J_CONFIG, session_settings


def test_defaults_are_overridden_and_java_options_keep_the_logging_configuration() -> None:
    logging = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
    assert session_settings() == {**DEFAULT_CONF, "spark.driver.extraJavaOptions": logging}
    settings = session_settings({"spark.sql.shuffle.partitions": "1", "spark.driver.extraJavaOptions": "-Xss4m"})
    assert settings["spark.sql.shuffle.partitions"] == "1"
    assert settings["spark.driver.extraJavaOptions"] == f"{logging} -Xss4m"
    assert settings["spark.driver.memory"] == DEFAULT_CONF["spark.driver.memory"]
    assert LOG4J_CONFIG.exists()
