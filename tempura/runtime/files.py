"""Folder operations on the file systems Spark writes to: local paths and cluster URIs alike.

States, landed source intervals and outputs are folders Spark writes. Committing one is a
rename of a finished temporary folder, which Hadoop's ``FileSystem`` does atomically on local
disks and HDFS. Going through Hadoop's API (over the JVM Spark already runs) rather than
``os`` keeps every path a URI the cluster understands, so a job moves from ``local[*]`` to a
cluster without code changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tempura.errors import ExecutionError
from tempura.runtime.storage import Uri, is_uri

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def uri(path: str | Path | Uri) -> str:
    """``path`` as a URI Spark and Hadoop read: URIs as given, local paths made absolute."""
    text = str(path)
    if is_uri(text):
        return text
    # not Path.as_uri(): it percent-encodes characters such as '=', which Hadoop keeps literally
    return "file://" + str(Path(text).resolve())


class Files:
    """Hadoop file-system calls for the folders of one Spark session."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._jvm: Any = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str | Path | Uri) -> tuple[Any, Any]:
        hadoop = self._jvm.org.apache.hadoop.fs.Path(uri(path))
        return hadoop.getFileSystem(self._conf), hadoop

    def exists(self, path: str | Path | Uri) -> bool:
        fs, p = self._path(path)
        return bool(fs.exists(p))

    def delete(self, path: str | Path | Uri) -> None:
        """Delete a folder (or file) and everything under it; nothing if it is absent."""
        fs, p = self._path(path)
        if fs.exists(p):
            fs.delete(p, True)

    def mkdirs(self, path: str | Path | Uri) -> None:
        fs, p = self._path(path)
        fs.mkdirs(p)

    def rename(self, source: str | Path | Uri, target: str | Path | Uri) -> None:
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

    def copy(self, source: str | Path | Uri, target: str | Path | Uri) -> None:
        """Copy a folder recursively (``target`` must not exist)."""
        fs, s = self._path(source)
        _, t = self._path(target)
        if not self._jvm.org.apache.hadoop.fs.FileUtil.copy(fs, s, fs, t, False, self._conf):
            raise ExecutionError(f"cannot copy {source} to {target}")

    def link(self, files: list[str], target: str | Path | Uri) -> None:
        """Make each of ``files`` (URIs) appear in folder ``target`` (created; it must not exist),
        numbered in the order given so that two files of one name from different folders do not
        meet: hard links where the file system has them (a local disk), else byte copies. A hard
        link keeps the file's bytes even when the original is later removed."""
        import os
        import shutil
        from urllib.parse import unquote, urlparse

        fs, t = self._path(target)
        if fs.exists(t):
            raise ExecutionError(f"cannot link files into {target}: it already exists")
        fs.mkdirs(t)
        local = str(t.toUri().getPath()) if str(t.toUri().getScheme()) == "file" else None
        for n, name in enumerate(files):
            base = f"{n:05d}-{name.rstrip('/').rsplit('/', 1)[-1]}"
            source = urlparse(name)
            if local is not None and source.scheme == "file":
                destination = os.path.join(local, base)
                try:
                    os.link(unquote(source.path), destination)
                except OSError:  # another device, or links not supported: a copy
                    shutil.copyfile(unquote(source.path), destination)
                continue
            s_fs, s = self._path(name)
            if not self._jvm.org.apache.hadoop.fs.FileUtil.copy(s_fs, s, fs, self._jvm.org.apache.hadoop.fs.Path(t, base),
                                                               False, self._conf):
                raise ExecutionError(f"cannot copy {name} into {target}")

    def children(self, path: str | Path | Uri) -> list[str]:
        """The names directly under a folder ([] if it is absent)."""
        fs, p = self._path(path)
        if not fs.exists(p):
            return []
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(p))

    def data_files(self, path: str | Path | Uri) -> list[tuple[str, int, int]]:
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

    def holds_data(self, path: str | Path | Uri) -> bool:
        """Whether a folder holds a data file (as :meth:`data_files` finds them), listing no more
        than up to the first."""
        fs, p = self._path(path)
        if not fs.exists(p):
            return False
        root = str(fs.makeQualified(p).toUri().getPath()).rstrip("/")
        files = fs.listFiles(p, True)
        while files.hasNext():
            relative = str(files.next().getPath().toUri().getPath())[len(root):].strip("/")
            if not any(part.startswith((".", "_")) for part in relative.split("/")):
                return True
        return False

    def size(self, path: str | Path | Uri) -> int:
        """Bytes under a folder."""
        fs, p = self._path(path)
        return int(fs.getContentSummary(p).getLength()) if fs.exists(p) else 0
