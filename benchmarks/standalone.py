"""A Spark standalone cluster on this machine: one master and one worker, started from pyspark's
own ``bin/spark-class``, bound to 127.0.0.1 only, and stopped by their process ids.

Used by the cluster tests (``tests/test_cluster.py``, marked ``cluster``) and by ``tempura bench
cluster``. A driver reaches it as ``spark://127.0.0.1:<port>``, for example through
``TEMPURA_SPARK_MASTER``. The worker runs in a mount namespace of its own when ``private`` names a
folder: a fresh, empty file system is mounted over that folder for the worker and its executors
only, so that they do not see what the driver writes there, and the driver does not see what they
write (a workdir that is not shared, as on a cluster whose machines each have their own disks).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

HOST = "127.0.0.1"
CORES = 2
MEMORY = "2g"


class ClusterError(RuntimeError):
    """The cluster did not start: what its logs said last."""


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _environment(logs: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_MASTER_HOST": HOST,
        "SPARK_LOG_DIR": str(logs),
        "SPARK_NO_DAEMONIZE": "1",
    })
    return env


@dataclass
class Standalone:
    """A running master and worker; :meth:`stop` ends both."""

    folder: Path
    port: int
    ui_port: int
    master: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    _logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.port}"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in (self.master, self.worker) if p is not None]

    def state(self) -> dict[str, Any]:
        """The master's view of the cluster (its web UI's JSON): workers, cores, applications."""
        with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=5) as response:
            return dict(json.loads(response.read().decode("utf-8")))

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def log_tail(self, lines: int = 8) -> str:
        out = []
        for name in ("master.log", "worker.log"):
            path = self.folder / name
            if path.exists():
                text = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
                out.append(f"{name}: " + " | ".join(text[-lines:]))
        return "\n".join(out)

    def stop(self) -> None:
        """Stop the worker, then the master: SIGTERM, and SIGKILL after 20 s."""
        for process in (self.worker, self.master):
            if process is None or process.poll() is not None:
                continue
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for handle in self._logs:
            handle.close()
        self._logs.clear()

    def __enter__(self) -> Standalone:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def can_mount_privately() -> bool:
    """Whether this process may give a child a mount namespace of its own (``unshare --mount``
    needs root, or a user namespace the system allows)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True)
    return probe.returncode == 0


def start(folder: Path, private: Path | None = None, timeout: float = 90.0) -> Standalone:
    """Start a master and a worker (:data:`CORES` cores, :data:`MEMORY`) with their logs and the
    worker's folder under ``folder``; returns once the worker has registered. ``private``: a folder
    the worker sees as empty and its own (see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = _environment(folder / "logs")
    spark_class = str(spark_home() / "bin" / "spark-class")
    cluster = Standalone(folder, free_port(), free_port())
    master_log = open(folder / "master.log", "wb")
    worker_log = open(folder / "worker.log", "wb")
    cluster._logs += [master_log, worker_log]
    # Each in its own process group, so that stopping it stops the JVM spark-class runs.
    cluster.master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(cluster.port),
         "--webui-port", str(cluster.ui_port)],
        env=env, stdout=master_log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait(cluster, lambda: _listening(cluster.port), timeout, "the master did not listen")
        worker = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--cores", str(CORES),
                  "--memory", MEMORY, "--webui-port", str(free_port()), "--work-dir", str(folder / "worker"), cluster.url]
        if private is not None:
            private.mkdir(parents=True, exist_ok=True)
            if not can_mount_privately():
                raise ClusterError("a private folder for the worker needs a mount namespace (unshare --mount)")
            mount = 'mount -t tmpfs tempura-private "$0" && exec "$@"'
            worker = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(private), *worker]
        cluster.worker = subprocess.Popen(worker, env=env, stdout=worker_log, stderr=subprocess.STDOUT,
                                          start_new_session=True)
        _wait(cluster, lambda: cluster.alive_workers() == 1, timeout, "the worker did not register")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((HOST, port)) == 0


def _wait(cluster: Standalone, ready: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        for process in (cluster.master, cluster.worker):
            if process is not None and process.poll() is not None:
                raise ClusterError(f"{what}: it exited with {process.returncode}\n{cluster.log_tail()}")
        time.sleep(0.5)
    raise ClusterError(f"{what} within {timeout:.0f} s\n{cluster.log_tail()}")


__all__ = ["CORES", "HOST", "MEMORY", "ClusterError", "Standalone", "can_mount_privately", "free_port", "spark_home",
           "start"]
