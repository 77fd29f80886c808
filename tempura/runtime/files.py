"""Folder operations on the file systems Spark writes to: local paths and cluster URIs alike.

States, landed source intervals and outputs are folders Spark writes. Committing one is a
rename of a finished temporary folder, which Hadoop's ``FileSystem`` does atomically on local
disks and HDFS. Going through Hadoop's API (over the JVM Spark already runs) rather than
``os`` keeps every path a URI the cluster understands, so a job moves from ``local[*]`` to a
cluster without code changes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from tempura.errors import ExecutionError, TempuraError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def uri(path: str | Path) -> str:
    """``path`` as a URI Spark and Hadoop read: URIs as given, local paths made absolute."""
    text = str(path)
    if "://" in text or text.startswith("file:"):
        return text
    # not Path.as_uri(): it percent-encodes characters such as '=', which Hadoop keeps literally
    return "file://" + str(Path(text).resolve())


def local_folder(value: str | Path, what: str = "workdir") -> Path:
    """``value`` (a path, or a ``file:`` URI) as an absolute local path. A URI of another file
    system raises :class:`TempuraError`: the job's manifests, lock and history are written through
    the local file system (on a cluster, a mount every machine shares)."""
    text = str(value)
    other = re.match(r"([A-Za-z][A-Za-z0-9+.-]*)://", text)
    if other and other.group(1).lower() != "file":
        raise TempuraError(f"{what} {text}: a {other.group(1)}:// {what} is not supported: tempura writes the job's "
                           f"manifests, lock and history through the local file system; use a local path or a mount "
                           f"every machine of the cluster shares")
    if not text.lower().startswith("file:"):
        return Path(text).absolute()
    parsed = urlparse(text)
    if parsed.netloc not in ("", "localhost"):
        raise TempuraError(f"{what} {text}: a file URI names a local path (file:///path), not host '{parsed.netloc}'")
    return Path(unquote(parsed.path)).absolute()


class Files:
    """Hadoop file-system calls for the folders of one Spark session."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._jvm: Any = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str | Path) -> tuple[Any, Any]:
        hadoop = self._jvm.org.apache.hadoop.fs.Path(uri(path))
        return hadoop.getFileSystem(self._conf), hadoop

    def exists(self, path: str | Path) -> bool:
        fs, p = self._path(path)
        return bool(fs.exists(p))

    def delete(self, path: str | Path) -> None:
        """Delete a folder (or file) and everything under it; nothing if it is absent."""
        fs, p = self._path(path)
        if fs.exists(p):
            fs.delete(p, True)

    def mkdirs(self, path: str | Path) -> None:
        fs, p = self._path(path)
        fs.mkdirs(p)

    def rename(self, source: str | Path, target: str | Path) -> None:
        """Move ``source`` to ``target`` (which must not exist): the commit of a folder."""
        fs, s = self._path(source)
        _, t = self._path(target)
        if fs.exists(t):
            raise ExecutionError(f"cannot commit {source}: {target} already exists")
        parent = t.getParent()
        if parent is not None and not fs.exists(parent):
            fs.mkdirs(parent)
        if not fs.rename(s, t):
            raise ExecutionError(f"cannot rename {source} to {target}")

    def copy(self, source: str | Path, target: str | Path) -> None:
        """Copy a folder recursively (``target`` must not exist)."""
        fs, s = self._path(source)
        _, t = self._path(target)
        if not self._jvm.org.apache.hadoop.fs.FileUtil.copy(fs, s, fs, t, False, self._conf):
            raise ExecutionError(f"cannot copy {source} to {target}")

    def children(self, path: str | Path) -> list[str]:
        """The names directly under a folder ([] if it is absent)."""
        fs, p = self._path(path)
        if not fs.exists(p):
            return []
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(p))

    def data_files(self, path: str | Path) -> list[tuple[str, int, int]]:
        """Every data file under a folder, recursively: (URI, size, modification time in ms).
        Hidden files (``.``, ``_``: Spark's and Hadoop's markers) are left out, as Spark's readers
        leave them out."""
        fs, p = self._path(path)
        if not fs.exists(p):
            return []
        root = str(fs.makeQualified(p).toUri().getPath()).rstrip("/")
        found = []
        files = fs.listFiles(p, True)
        while files.hasNext():
            status = files.next()
            qualified = status.getPath()
            relative = str(qualified.toUri().getPath())[len(root):].strip("/")
            if any(part.startswith((".", "_")) for part in relative.split("/")):
                continue
            found.append((str(qualified.toUri()), int(status.getLen()), int(status.getModificationTime())))
        return sorted(found)

    def size(self, path: str | Path) -> int:
        """Bytes under a folder."""
        fs, p = self._path(path)
        return int(fs.getContentSummary(p).getLength()) if fs.exists(p) else 0
