"""The job folder's own small files on any file system: where a workdir is, and how its
manifests, lock, plans, run history documents and statistics are read and written.

A workdir is a local path or a URI (``scheme://…``, or ``file:…``). :func:`location` turns what
the user gave into a :class:`~pathlib.Path` (a local path, made absolute) or a :class:`Uri` (any
URI, ``file://`` included, kept as given: ``pathlib`` would collapse its ``//``). Both join with
``/``, so the job folder's layout (:mod:`tempura.runtime.store`) is written once for both.

:class:`Storage` is everything the job folder needs beyond the folders Spark writes: read a small
text file, write one atomically (a temporary name, then a rename), create one only if it is
absent (the lock), list, delete, move, sizes of the files under a folder (the manifests'
inventories), a file's modification time, and the rows of a parquet folder (``check --deep``).
:func:`storage_for` picks the implementation from the location's type:

- :class:`LocalStorage` for a local path: ``os`` and ``pathlib``, no Spark (``tempura check`` and
  ``tempura history`` answer at once);
- :class:`HadoopStorage` for a URI: Hadoop's ``FileSystem`` API over the JVM of the process's
  SparkSession (the one :mod:`tempura.runtime.files` uses for Spark's folders), so a workdir on
  HDFS, an object store or any file system Hadoop has a connector for works unchanged.

How atomic each step is depends on the file system, and is what Hadoop's ``FileSystem`` contract
says: a rename of a file is atomic on local disks and HDFS, and a copy then a delete on object
stores (a reader may briefly find a replaced file absent there). ``create(path, overwrite=false)``
fails if the file exists, atomically on HDFS; on an object store as atomically as its connector
makes a create without overwrite (a conditional write where it sends one, else a check then a
write).
Hadoop's local file system checks existence and then opens, so on a ``file:`` URI the lock is
created as for a local path (``os.link``), the one step not taken through Hadoop. Hadoop's local
file system is used raw (without its ``.crc`` side files): a manifest carries its own checksum.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union
from urllib.parse import urlparse

from tempura.atomic import write_text
from tempura.errors import TempuraError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")


class StorageError(TempuraError):
    """A workdir's file system cannot be reached (no Hadoop file system for its scheme)."""


def is_uri(text: str) -> bool:
    """Whether ``text`` names a URI (``scheme://…`` or ``file:…``), not a local path: a relative
    folder with a colon in its name stays a folder."""
    return bool(_SCHEME.match(text)) or text.lower().startswith("file:")


@dataclass(frozen=True)
class Uri:
    """A location on a file system Hadoop reads and writes, joined with ``/`` like a path."""

    text: str

    def __post_init__(self) -> None:
        stripped = self.text.rstrip("/")
        if stripped and not stripped.endswith(":") and not stripped.endswith(":/"):
            object.__setattr__(self, "text", stripped)

    def __truediv__(self, part: str) -> Uri:
        return Uri(f"{self.text}/{str(part).strip('/')}")

    def __str__(self) -> str:
        return self.text

    @property
    def name(self) -> str:
        return self.text.rsplit("/", 1)[-1]

    @property
    def parent(self) -> Uri:
        return Uri(self.text.rsplit("/", 1)[0])

    @property
    def scheme(self) -> str:
        return self.text.split(":", 1)[0].lower()

    def local_path(self) -> Path | None:
        """The local path a ``file:`` URI names (``None`` for another scheme), its characters
        taken literally, as Hadoop takes them (``%20`` is not a space)."""
        if self.scheme != "file":
            return None
        return Path(urlparse(self.text).path)


Location = Union[Path, Uri]


def location(value: str | Path | Uri, what: str = "workdir") -> Location:
    """Where ``value`` (a path, or a URI) is: a local path made absolute (as of now: the working
    folder may change later), or a :class:`Uri` as given. A ``file`` URI naming another host
    raises :class:`TempuraError`."""
    if isinstance(value, Uri):
        return value
    text = str(value)
    if not is_uri(text):
        return Path(text).absolute()
    if text.lower().startswith("file:"):
        host = urlparse(text).netloc
        if host not in ("", "localhost"):
            raise TempuraError(f"{what} {text}: a file URI names a local path (file:///path), not host '{host}'")
    return Uri(text)


def as_location(value: str | Path | Uri) -> Location:
    """``value`` as a location, relative paths left relative."""
    if isinstance(value, (Path, Uri)):
        return value
    return Uri(value) if is_uri(value) else Path(value)


class Storage:
    """The operations on a job folder's small files; paths are locations of one file system.
    Errors reading or writing are :class:`OSError` (``strerror`` says why)."""

    def read_text(self, path: Location) -> str | None:
        """The file's text (UTF-8); ``None`` if it does not exist."""
        raise NotImplementedError

    def write_atomically(self, path: Location, text: str) -> None:
        """Write ``text`` to a temporary file beside ``path``, then rename it over ``path``: a
        reader finds the old file or the new one, complete (where renames are atomic)."""
        raise NotImplementedError

    def create_exclusive(self, path: Location, text: str) -> bool:
        """Create ``path`` holding ``text`` if no file is there; ``False`` if one is."""
        raise NotImplementedError

    def exists(self, path: Location) -> bool:
        raise NotImplementedError

    def is_dir(self, path: Location) -> bool:
        raise NotImplementedError

    def children(self, path: Location) -> list[str]:
        """The names directly under a folder, sorted ([] if it is absent)."""
        raise NotImplementedError

    def files(self, folder: Location) -> dict[str, int]:
        """The data files under a folder, by path relative to it, with their sizes. Hidden files
        and folders (``.``, ``_``: checksums and markers) are left out, as Spark's readers leave
        them out."""
        raise NotImplementedError

    def delete(self, path: Location) -> None:
        """Delete a file, or a folder and everything under it; nothing if it is absent."""
        raise NotImplementedError

    def move(self, source: Location, target: Location) -> None:
        """Rename ``source`` to ``target``, which must not exist."""
        raise NotImplementedError

    def share(self, source: Location, target: Location) -> None:
        """Make the data files of folder ``source`` appear under folder ``target`` too (which
        must not exist), leaving ``source`` as it is: hard links where the file system has them,
        else copies."""
        raise NotImplementedError

    def mkdirs(self, path: Location) -> None:
        raise NotImplementedError

    def modified(self, path: Location) -> float | None:
        """The file's modification time (seconds since the epoch); ``None`` if it is absent."""
        raise NotImplementedError

    def parquet_rows(self, folder: Location) -> int:
        """The rows of a parquet folder, from its files' footers."""
        raise NotImplementedError


class LocalStorage(Storage):
    """The local file system, through ``os``."""

    def read_text(self, path: Location) -> str | None:
        try:
            return Path(str(path)).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def write_atomically(self, path: Location, text: str) -> None:
        target = Path(str(path))
        write_text(target, text, _temporary_prefix(target.name))

    def create_exclusive(self, path: Location, text: str) -> bool:
        target = Path(str(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f"{target.name}.{secrets.token_hex(8)}")
        temporary.write_text(text, encoding="utf-8")
        try:
            os.link(temporary, target)  # fails if the file exists: atomic, and never seen half written
            return True
        except FileExistsError:
            return False
        finally:
            temporary.unlink(missing_ok=True)

    def exists(self, path: Location) -> bool:
        return Path(str(path)).exists()

    def is_dir(self, path: Location) -> bool:
        return Path(str(path)).is_dir()

    def children(self, path: Location) -> list[str]:
        folder = Path(str(path))
        return sorted(os.listdir(folder)) if folder.is_dir() else []

    def files(self, folder: Location) -> dict[str, int]:
        root = Path(str(folder))
        found: dict[str, int] = {}
        for parent, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            for name in names:
                if not name.startswith((".", "_")):
                    path = Path(parent) / name
                    found[path.relative_to(root).as_posix()] = path.stat().st_size
        return found

    def delete(self, path: Location) -> None:
        target = Path(str(path))
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)

    def move(self, source: Location, target: Location) -> None:
        destination = Path(str(target))
        if destination.exists():
            raise FileExistsError(errno.EEXIST, f"{destination} exists")
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.rename(str(source), destination)

    def share(self, source: Location, target: Location) -> None:
        root, into = Path(str(source)), Path(str(target))
        if into.exists():
            raise FileExistsError(errno.EEXIST, f"{into} exists")
        for name in self.files(root):
            destination = into / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(root / name, destination)
            except OSError:  # another device, or links not supported: a copy
                shutil.copyfile(root / name, destination)

    def mkdirs(self, path: Location) -> None:
        Path(str(path)).mkdir(parents=True, exist_ok=True)

    def modified(self, path: Location) -> float | None:
        try:
            return Path(str(path)).stat().st_mtime
        except FileNotFoundError:
            return None

    def parquet_rows(self, folder: Location) -> int:
        import pyarrow.parquet as pq

        root = Path(str(folder))
        return sum(pq.read_metadata(root / name).num_rows for name in self.files(root) if name.endswith(".parquet"))


LOCAL = LocalStorage()


class HadoopStorage(Storage):
    """Any file system Hadoop has a connector for, through ``org.apache.hadoop.fs.FileSystem``
    over the JVM of ``spark`` (by default the process's session, started on first use if there
    is none: :func:`tempura.runtime.get_spark`)."""

    def __init__(self, spark: SparkSession | None = None) -> None:
        self._spark = spark
        self._jvm: Any = None

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            from tempura.runtime.spark import get_spark

            self._spark = get_spark()
        return self._spark

    def _fs(self, where: Location) -> tuple[Any, Any]:
        if self._jvm is None:
            self._jvm = self.spark.sparkContext._jvm
            self._conf: Any = self.spark.sparkContext._jsc.hadoopConfiguration()
            self._checksummed: Any = self._jvm.java.lang.Class.forName("org.apache.hadoop.fs.ChecksumFileSystem")
        from py4j.protocol import Py4JJavaError

        path = self._jvm.org.apache.hadoop.fs.Path(_hadoop_text(where))
        try:
            fs = path.getFileSystem(self._conf)
        except Py4JJavaError as error:
            raise StorageError(f"{where}: {error.java_exception.getMessage()} (the file system's Hadoop connector "
                               f"must be on Spark's classpath, and its settings in Spark's Hadoop configuration)") from None
        if self._checksummed.isInstance(fs):  # the local file system: without its .crc side files
            fs = fs.getRawFileSystem()
        return fs, path

    def _call(self, what: str, where: Location, action: Any) -> Any:
        """``action()``, a Java exception turned into an :class:`OSError` naming ``where``."""
        from py4j.protocol import Py4JJavaError

        try:
            return action()
        except Py4JJavaError as error:
            java = error.java_exception
            kind = str(java.getClass().getSimpleName())
            code = errno.EEXIST if kind == "FileAlreadyExistsException" else (
                errno.ENOENT if kind == "FileNotFoundException" else errno.EIO)
            raise OSError(code, f"cannot {what} {where}: {kind}: {java.getMessage()}") from None

    def read_text(self, path: Location) -> str | None:
        fs, p = self._fs(path)
        if not fs.exists(p):
            return None

        def read() -> bytes:
            stream = fs.open(p)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()

        try:
            data = self._call("read", path, read)
        except FileNotFoundError:
            return None
        return data.decode("utf-8")

    def _write(self, fs: Any, p: Any, text: str, overwrite: bool) -> None:
        stream = fs.create(p, overwrite)
        try:
            stream.write(bytearray(text.encode("utf-8")))
            stream.hsync()
        finally:
            stream.close()

    def write_atomically(self, path: Location, text: str) -> None:
        temporary = path.parent / f"{_temporary_prefix(path.name)}{secrets.token_hex(8)}.tmp"
        fs, tmp = self._fs(temporary)
        _, target = self._fs(path)
        self._call("write", temporary, lambda: self._write(fs, tmp, text, True))
        try:
            self._replace(fs, tmp, target, path)
        except BaseException:
            fs.delete(tmp, False)
            raise

    def _replace(self, fs: Any, source: Any, target: Any, where: Location) -> None:
        """Rename ``source`` over ``target``: one rename where it replaces (the local file
        system), HDFS's rename with ``OVERWRITE`` (atomic), else a delete then a rename."""
        try:
            if self._call("rename", where, lambda: fs.rename(source, target)):
                return
        except FileExistsError:
            pass
        if not fs.exists(target):
            raise OSError(errno.EIO, f"cannot rename {source} to {where}")
        from py4j.protocol import Py4JError

        rename = self._jvm.org.apache.hadoop.fs.Options.Rename
        gateway: Any = self.spark.sparkContext._gateway
        options = gateway.new_array(rename, 1)
        options[0] = rename.OVERWRITE
        try:
            fs.rename(source, target, options)  # public on HDFS; protected elsewhere
            return
        except Py4JError:
            pass
        self._call("replace", where, lambda: fs.delete(target, False))
        if not self._call("rename", where, lambda: fs.rename(source, target)):
            raise OSError(errno.EIO, f"cannot rename {source} to {where}")

    def create_exclusive(self, path: Location, text: str) -> bool:
        local = path.local_path() if isinstance(path, Uri) else None
        if local is not None:  # Hadoop's local file system checks, then creates: not atomic
            return LOCAL.create_exclusive(local, text)
        fs, p = self._fs(path)
        try:
            self._call("create", path, lambda: self._write(fs, p, text, False))
            return True
        except FileExistsError:
            return False
        except OSError:
            if fs.exists(p):
                return False
            raise

    def exists(self, path: Location) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p))

    def is_dir(self, path: Location) -> bool:
        fs, p = self._fs(path)
        return bool(fs.exists(p)) and bool(fs.getFileStatus(p).isDirectory())

    def children(self, path: Location) -> list[str]:
        fs, p = self._fs(path)
        if not fs.exists(p) or not fs.getFileStatus(p).isDirectory():
            return []
        return sorted(str(status.getPath().getName()) for status in fs.listStatus(p))

    def files(self, folder: Location) -> dict[str, int]:
        fs, p = self._fs(folder)
        if not fs.exists(p):
            return {}
        root = str(fs.makeQualified(p).toUri().getPath()).rstrip("/")
        found: dict[str, int] = {}
        listing = fs.listFiles(p, True)
        while listing.hasNext():
            status = listing.next()
            relative = str(status.getPath().toUri().getPath())[len(root):].strip("/")
            if not any(part.startswith((".", "_")) for part in relative.split("/")):
                found[relative] = int(status.getLen())
        return found

    def delete(self, path: Location) -> None:
        fs, p = self._fs(path)
        if fs.exists(p):
            self._call("delete", path, lambda: fs.delete(p, True))

    def move(self, source: Location, target: Location) -> None:
        fs, s = self._fs(source)
        _, t = self._fs(target)
        if fs.exists(t):
            raise FileExistsError(errno.EEXIST, f"{target} exists")
        parent = t.getParent()
        if parent is not None and not fs.exists(parent):
            fs.mkdirs(parent)
        if not self._call("rename", source, lambda: fs.rename(s, t)):
            raise OSError(errno.EIO, f"cannot rename {source} to {target}")

    def share(self, source: Location, target: Location) -> None:
        fs, s_path = self._fs(source)
        _, t_path = self._fs(target)
        if fs.exists(t_path):
            raise FileExistsError(errno.EEXIST, f"{target} exists")
        conf = self.spark.sparkContext._jsc.hadoopConfiguration()
        copied = self._call("copy", source, lambda: self._jvm.org.apache.hadoop.fs.FileUtil.copy(fs, s_path, fs, t_path, False, conf))
        if not copied:
            raise OSError(errno.EIO, f"cannot copy {source} to {target}")

    def mkdirs(self, path: Location) -> None:
        fs, p = self._fs(path)
        self._call("make", path, lambda: fs.mkdirs(p))

    def modified(self, path: Location) -> float | None:
        fs, p = self._fs(path)
        if not fs.exists(p):
            return None
        return int(fs.getFileStatus(p).getModificationTime()) / 1000.0

    def parquet_rows(self, folder: Location) -> int:
        """Through Spark (its count of a parquet folder reads the footers' row counts only); a
        file Spark cannot read is an :class:`OSError` with the first line of Spark's error."""
        from tempura.runtime.executor import spark_error_message

        try:
            return int(self.spark.read.parquet(_hadoop_text(folder)).count())
        except Exception as error:  # noqa: BLE001 - Spark's and the JVM's errors alike
            raise OSError(errno.EIO, spark_error_message(error)) from None


def _hadoop_text(where: Location) -> str:
    return str(where) if isinstance(where, Uri) else "file://" + str(Path(str(where)).absolute())


def _temporary_prefix(name: str) -> str:
    """The start of a temporary file's name beside ``name``: hidden, and ``<name>.`` for a hidden
    file (``.lock.…``: what belongs to the lock is named after it)."""
    return f"{name}." if name.startswith(".") else f".{name}."


def storage_for(where: Location, spark: SparkSession | None = None) -> Storage:
    """The storage of ``where``: local for a path; for a URI, Hadoop's over ``spark`` (by
    default the process's session, started on first use if there is none)."""
    if not isinstance(where, Uri):
        return LOCAL
    return HadoopStorage(spark)


__all__ = ["LOCAL", "HadoopStorage", "LocalStorage", "Location", "Storage", "StorageError", "Uri", "as_location", "is_uri", "location",
           "storage_for"]
