"""The SparkSession factory: one session per process, local by default, a cluster by config.

Defaults suit a small machine (few shuffle partitions, a modest driver, no UI). The master comes
from the caller, else ``TEMPURA_SPARK_MASTER``, else ``local[*]``; any Spark setting can be
overridden through ``conf``; driver JVM options given there are added to tempura's logging
configuration.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from tempura.errors import TempuraError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MASTER_ENV = "TEMPURA_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"

DEFAULT_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.memory": "2g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
}

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


class JavaMissing(TempuraError):
    """No usable Java runtime for Spark."""


def check_java(minimum: int = 17) -> int:
    """The Java major version on the PATH (or JAVA_HOME); raises :class:`JavaMissing` if older
    than ``minimum`` or absent."""
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        raise JavaMissing(f"Spark needs Java {minimum} or newer, and no 'java' was found (install a JDK or JRE)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    version = out.split('"')[1] if '"' in out else ""
    major = int(version.split(".")[1] if version.startswith("1.") else version.split(".")[0] or 0)
    if major < minimum:
        raise JavaMissing(f"Spark needs Java {minimum} or newer; found Java {version or 'unknown'} at {java}")
    return major


def session_settings(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """tempura's defaults overridden by ``conf``; driver JVM options in ``conf`` come after
    tempura's logging configuration rather than replacing it."""
    settings = {**DEFAULT_CONF, **(conf or {})}
    logging = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
    settings["spark.driver.extraJavaOptions"] = " ".join(
        filter(None, (logging, settings.get("spark.driver.extraJavaOptions", ""))))
    return settings


def get_spark(
    master: str | None = None, conf: Mapping[str, str] | None = None, app_name: str = "tempura"
) -> SparkSession:
    """The process's SparkSession, created on first use with tempura's defaults."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = session_settings(conf)
    builder = SparkSession.builder.appName(app_name).master(master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _quiet_error_loggers()
    return spark


def _quiet_error_loggers() -> None:
    """PySpark logs each Spark error it converts to a Python exception, with the JVM's stack
    trace, as JSON on standard error; tempura reports the errors it catches itself, in one line."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # an older PySpark logs nothing of the kind
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
