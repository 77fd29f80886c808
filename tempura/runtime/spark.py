"""The SparkSession factory: one session per process, and whose settings win.

Spark's settings belong to the user. tempura uses a session that is already active (a notebook,
a script) as it is. Otherwise it creates one, and a setting the user gave wins over tempura's
own, in this order (``docs/runtime.md``, *Spark's settings*):

1. what the launch gave (:func:`launch_settings`): ``spark-submit``'s flags, its properties file
   (``--properties-file``, else ``spark-defaults.conf`` in ``SPARK_CONF_DIR`` or
   ``SPARK_HOME/conf``), ``PYSPARK_SUBMIT_ARGS``;
2. ``TEMPURA_SPARK_MASTER``, for the master;
3. the caller's (a spec's ``spark:`` section: ``master`` and ``conf``);
4. tempura's defaults: :data:`GENERAL_CONF` always, and :data:`SMALL_MACHINE_CONF` only for a
   local master in a JVM tempura started itself.

The application is named after the spec (``tempura:<name>``) unless the launch named it. Driver
JVM options get tempura's logging configuration added in front, never replaced, and the options
of the class-data archive (:mod:`tempura.runtime.class_archive`) at the end.
"""

from __future__ import annotations

import atexit
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from tempura.errors import TempuraError
from tempura.runtime.class_archive import ENV as ARCHIVE_ENV
from tempura.runtime.class_archive import ArchivePlan, archive_folder, archive_key, finish_archive, java_binary, java_version, plan_archive

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MASTER_ENV = "TEMPURA_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"
APP_NAME = "tempura"

# For a local master in a JVM tempura starts: a few shuffle partitions, a modest driver, no UI.
SMALL_MACHINE_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.driver.memory": "2g",
    "spark.ui.enabled": "false",
}

# Wherever tempura creates the session: results' timestamps in one zone, no progress bars drawn
# over tempura's own output, and parquet's reads counted in the bytes a task read. Parquet's
# vectored reads fetch column chunks on threads of their own, which Hadoop's per-thread
# statistics (Spark's input metrics) do not see: a scan of a whole table then counts its footers
# only, and every landing's and fragment's bytes read is wrong by orders of magnitude.
#
# And the code Spark generates for a plan kept for 2,000 plans rather than Spark's 100. A process
# that runs standing queries runs each fragment's plan once per cycle, between the landings,
# the other fragments and other queries; with 100 entries, the code of a cycle's fragments was
# gone by the next cycle, compiled again and run cold (docs/runtime.md, *Metrics*).
CODEGEN_CACHE = "spark.sql.codegen.cache.maxEntries"
GENERAL_CONF: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.hadoop.parquet.hadoop.vectored.io.enabled": "false",
    CODEGEN_CACHE: "2000",
}

DEFAULT_CONF: dict[str, str] = {**SMALL_MACHINE_CONF, **GENERAL_CONF}

JAVA_OPTIONS = "spark.driver.extraJavaOptions"

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")

# Whether this process's JVM was started by :func:`get_spark` (a session stopped and created
# again keeps tempura's defaults).
_STARTED_JVM = False

# spark-submit's flags that stand for a setting.
_FLAGS = {"--master": "spark.master", "--name": "spark.app.name", "--driver-memory": "spark.driver.memory",
          "--driver-java-options": JAVA_OPTIONS, "--deploy-mode": "spark.submit.deployMode",
          "--executor-memory": "spark.executor.memory", "--executor-cores": "spark.executor.cores",
          "--num-executors": "spark.executor.instances", "--total-executor-cores": "spark.cores.max"}


class JavaMissing(TempuraError):
    """No usable Java runtime for Spark."""


def check_java(minimum: int = 17) -> int:
    """The Java major version on the PATH (or JAVA_HOME); raises :class:`JavaMissing` if older
    than ``minimum`` or absent."""
    java = java_binary()
    if not java or not os.path.exists(java):
        raise JavaMissing(f"Spark needs Java {minimum} or newer, and no 'java' was found (install a JDK or JRE)")
    out = java_version(java)
    version = out.split('"')[1] if '"' in out else ""
    major = int(version.split(".")[1] if version.startswith("1.") else version.split(".")[0] or 0)
    if major < minimum:
        raise JavaMissing(f"Spark needs Java {minimum} or newer; found Java {version or 'unknown'} at {java}")
    return major


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file as Spark reads ``spark-defaults.conf``: ``key value``, ``key=value``
    or ``key: value`` per line, ``#`` and ``!`` comments, a trailing backslash continuing the
    line; values trimmed."""
    out: dict[str, str] = {}
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = pending + raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        cut = next((i for i, c in enumerate(line) if c in "=: \t" and (i == 0 or line[i - 1] != "\\")), len(line))
        key, rest = line[:cut], line[cut:].lstrip()
        if rest[:1] in ("=", ":"):
            rest = rest[1:]
        if key:
            out[key] = rest.strip()
    return out


def spark_home() -> Path:
    """Spark's home: ``SPARK_HOME``, else the installed pyspark package."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).parent


def launch_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings a JVM that pyspark launches now would get from the user: its properties
    file (``--properties-file`` in ``PYSPARK_SUBMIT_ARGS``, else ``spark-defaults.conf`` in
    ``SPARK_CONF_DIR`` or ``SPARK_HOME/conf``), then ``PYSPARK_SUBMIT_ARGS``'s own flags."""
    env = os.environ if environ is None else environ
    args = shlex.split(env.get("PYSPARK_SUBMIT_ARGS", ""))
    flags: dict[str, str] = {}
    properties: Path | None = None
    for n, arg in enumerate(args):
        flag, equals, inline = arg.partition("=")
        value = inline if equals else (args[n + 1] if n + 1 < len(args) else "")
        if flag == "--conf":
            key, _, setting = value.partition("=")
            flags[key] = setting
        elif flag == "--properties-file":
            properties = Path(value)
        elif flag in _FLAGS:
            flags[_FLAGS[flag]] = value
    if properties is None:
        folder = Path(env["SPARK_CONF_DIR"]) if env.get("SPARK_CONF_DIR") else spark_home() / "conf"
        properties = folder / "spark-defaults.conf"
    given = read_properties(properties) if properties.is_file() else {}
    return {key: value for key, value in {**given, **flags}.items() if key.startswith("spark.")}


@dataclass(frozen=True)
class SessionSettings:
    """What tempura sets on a session it creates: the master (``None``: the launch's), the
    settings, and the application's name (``None``: the launch's)."""

    master: str | None
    conf: dict[str, str]
    app_name: str | None


def session_settings(
    launch: Mapping[str, str], master: str | None = None, conf: Mapping[str, str] | None = None,
    app_name: str = APP_NAME, starts_jvm: bool = True, environ: Mapping[str, str] | None = None,
) -> SessionSettings:
    """The settings of a session created now, the launch's settings being ``launch`` (see the
    module's order); ``starts_jvm``: whether creating it starts the JVM (so that tempura's
    small-machine defaults and driver JVM options can apply)."""
    env = os.environ if environ is None else environ
    chosen = None if "spark.master" in launch else (env.get(MASTER_ENV) or master or DEFAULT_MASTER)
    effective = launch.get("spark.master") or chosen or DEFAULT_MASTER
    defaults = {**(SMALL_MACHINE_CONF if starts_jvm and effective.startswith("local") else {}), **GENERAL_CONF}
    settings = {key: value for key, value in {**defaults, **(conf or {})}.items() if key not in launch}
    if starts_jvm:
        logging = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
        settings[JAVA_OPTIONS] = " ".join(
            filter(None, (logging, launch.get(JAVA_OPTIONS, ""), (conf or {}).get(JAVA_OPTIONS, ""))))
    else:
        settings.pop(JAVA_OPTIONS, None)
    settings.pop("spark.master", None)
    named = "spark.app.name" in launch or "spark.app.name" in (conf or {})
    return SessionSettings(chosen, settings, None if named else app_name)


def get_spark(
    master: str | None = None, conf: Mapping[str, str] | None = None, app_name: str = APP_NAME
) -> SparkSession:
    """The process's SparkSession: the active one as it is, else one created with the settings
    :func:`session_settings` chooses (``master`` and ``conf``: the caller's, e.g. a spec's)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if SparkContext._active_spark_context is not None:  # a context without a session (a script's)
        return SparkSession.builder.getOrCreate()
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    global _STARTED_JVM
    running = (SparkContext._gateway is not None and not _STARTED_JVM) or "PYSPARK_GATEWAY_PORT" in os.environ
    if running:  # spark-submit (or the user's code) started the JVM, with the user's settings
        SparkContext._ensure_initialized()
        launch = dict(SparkConf().getAll())
        if launch.get("spark.app.name") == os.path.basename(sys.argv[0] if sys.argv else ""):
            launch.pop("spark.app.name")  # spark-submit's name for an unnamed application: its file
    else:
        launch = launch_settings()
    chosen = session_settings(launch, master, conf, app_name, starts_jvm=not running)
    archive = None if running else _class_archive(chosen.conf.get(JAVA_OPTIONS, ""))
    if archive is not None and archive.options:
        chosen.conf[JAVA_OPTIONS] = f"{chosen.conf[JAVA_OPTIONS]} {archive.options}"
    builder = SparkSession.builder
    if chosen.master is not None:
        builder = builder.master(chosen.master)
    if chosen.app_name is not None:
        builder = builder.appName(chosen.app_name)
    for key, value in chosen.conf.items():
        builder = builder.config(key, value)
    _STARTED_JVM = _STARTED_JVM or not running
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _quiet_error_loggers()
    if archive is not None and archive.writing is not None:
        atexit.register(_write_class_archive, archive)  # after the report below: atexit runs the last first
    if os.environ.get(PROCESS_REPORT):
        atexit.register(_report_process, spark, os.environ[PROCESS_REPORT])
    return spark


def _archive_place() -> tuple[Path, str] | str:
    """The class-data archive's folder and key for this Java and Spark, or why there is none."""
    folder = archive_folder()
    if folder is None:
        return f"off ({ARCHIVE_ENV})"
    java, jars = java_binary(), spark_home() / "jars"
    if not java or not jars.is_dir():
        return "none (no java, or no Spark jars)"
    return folder, archive_key(java, jars)


def _class_archive(java_options: str) -> ArchivePlan | None:
    """The class-data archive's plan for the driver JVM started now (:mod:`tempura.runtime.class_archive`),
    or ``None`` when it is turned off or cannot be."""
    place = _archive_place()
    if isinstance(place, str):
        return None
    try:
        return plan_archive(*place, java_options)
    except OSError:  # an unwritable cache: run without
        return None


def _write_class_archive(archive: ArchivePlan) -> None:
    """At exit, when this process's JVM writes the class-data archive: stop Spark, let the JVM
    exit (it writes the archive as it does) and move the archive into place."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    proc = getattr(SparkContext._gateway, "proc", None)
    code = None
    if proc is not None and proc.stdin is not None:
        try:
            proc.stdin.close()  # the JVM exits when its standard input closes
            code = proc.wait(timeout=300)
        except (OSError, subprocess.TimeoutExpired):
            code = None
    if code == 0:
        finish_archive(archive)
    elif archive.writing is not None:
        archive.writing.unlink(missing_ok=True)


WORKLOAD = """
SELECT a.k, COUNT(*) AS n, SUM(b.v) AS total, MAX(a.d) AS last,
       RANK() OVER (ORDER BY SUM(b.v) DESC) AS place
FROM t a JOIN t b ON a.k = b.k LEFT JOIN t c ON a.id = c.id + 1
WHERE a.d >= DATE '2020-01-01'
GROUP BY a.k
"""


def prepare_class_archive() -> str:
    """Write the archive now if there is none, by a JVM that reads and writes parquet and runs a
    join, an aggregate and a window through Spark SQL (the classes a run loads), so that the
    JVMs started after it map it; a line saying where it is, or why there is none."""
    import tempfile

    place = _archive_place()
    if isinstance(place, str):
        return f"class-data archive: {place}"
    folder, key = place
    final = folder / f"{key}.jsa"
    if final.is_file():
        return f"class-data archive: {final}"
    spark = get_spark(master="local[1]", app_name="tempura:class-archive")
    if "ArchiveClassesAtExit" not in (spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", "") or ""):
        return "class-data archive: none (another process is writing it, or the launch sets its own)"
    with tempfile.TemporaryDirectory() as tmp:
        frame = spark.range(2000).selectExpr("id", "id % 7 AS k", "CAST(id AS DOUBLE) AS v",
                                             "DATE_ADD(DATE '2020-01-01', CAST(id % 400 AS INT)) AS d")
        frame.write.parquet(f"{tmp}/t")
        spark.read.parquet(f"{tmp}/t").createOrReplaceTempView("t")
        spark.sql(WORKLOAD).write.mode("overwrite").parquet(f"{tmp}/out")
        spark.read.parquet(f"{tmp}/out").collect()
    return f"class-data archive: {final}, written as this process exits"


# When set, the file a process that started Spark writes its own CPU seconds to as it exits:
# Python's and the JVM's (the driver, and in local mode the executors), for a benchmark to add
# what the process itself cost to what its Spark jobs did.
PROCESS_REPORT = "TEMPURA_PROCESS_REPORT"


def _report_process(spark: SparkSession, path: str) -> None:
    """Write this process's CPU seconds to ``path`` (runs at exit, before Spark stops)."""
    import json
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    jvm_seconds = 0.0
    try:  # the JVM's user and system time, from the kernel's account of its process (Linux)
        pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        jvm_seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except Exception:  # the JVM has gone already, or no /proc
        pass
    Path(path).write_text(json.dumps({"python_cpu_seconds": own.ru_utime + own.ru_stime, "jvm_cpu_seconds": jvm_seconds}))


def _quiet_error_loggers() -> None:
    """PySpark logs each Spark error it converts to a Python exception, with the JVM's stack
    trace, as JSON on standard error; tempura reports the errors it catches itself, in one line."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # an older PySpark logs nothing of the kind
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
