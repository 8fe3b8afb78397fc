"""The job's own durable files (the exported-metrics snapshot, the history and dead-letter files), written where
Spark writes its checkpoint: through Hadoop's FileSystem API on the driver, so a local path, `file://`,
`s3a://` and `hdfs://` all work as they do for Spark itself.

Two implementations of one small interface (`read_bytes`, `write_bytes`, `exists`, `mkdirs`, `list`, `delete`):

* `HadoopFiles`: through the SparkSession's JVM (`Path(uri).getFileSystem(hadoopConfiguration)`), what the job
  uses. A replacing write is atomic, as a reader sees it:
  - the local file system: a temporary file beside the target, written, `hsync`ed (an fsync), renamed over
    the target (rename(2) replaces atomically), then the directory fsynced. (Hadoop's raw local file system,
    so no `.crc` files beside the job's files.)
  - object stores whose writes become visible only when the stream closes (S3A, GCS; any store declaring
    `fs.capability.outputstream.abortable`): one direct write with overwrite. A PUT replaces the object
    whole; there is no rename to lean on (S3A's is a copy).
  - everything else (HDFS, ...): a temporary file, `hsync`, then `FileContext.rename(..., OVERWRITE)`, which
    HDFS does atomically (what Spark's own checkpoint file manager does); a file system without a
    FileContext binding gets a delete then a rename (not atomic: a crash between leaves no file).
* `LocalFiles`: the same in plain Python, for the code that runs without a JVM (unit tests, benches).

Paths are strings: a URI or a path (a path without a scheme is what Hadoop makes of it: the default file
system, the local one unless `fs.defaultFS` says otherwise, relative to the working directory).
No pyspark import: the session comes in as an argument.
"""
from __future__ import annotations

import os
from urllib.parse import urlparse

# Stores where a written file becomes visible only when its stream is closed, whole (the S3A, GCS connectors).
PUT_ON_CLOSE_SCHEMES = frozenset({"s3a", "s3", "gs"})
ABORTABLE_STREAM = "fs.capability.outputstream.abortable"  # Hadoop's CommonPathCapabilities.ABORTABLE_STREAM


def join(base: str, *names: str) -> str:
    """`base/name/...` for a path or a URI (os.path.join would do for a path, but `s3a://b` must keep its //)."""
    out = base
    for name in names:
        out = out + name if out.endswith("/") else f"{out}/{name}"
    return out


def scheme_of(path: str) -> str:
    """The URI scheme of `path` ('' for a plain path; a Windows drive letter is not a scheme)."""
    scheme = urlparse(path).scheme
    return scheme if len(scheme) > 1 else ""


def _temporary(path: str) -> str:
    head, _, name = path.rpartition("/")
    return f"{head}/.{name}.tmp" if head else f".{name}.tmp"


class LocalFiles:
    """The interface on the local file system with Python's own calls (no JVM). Plain paths and file:// URIs."""

    def __init__(self, fsync: bool = True) -> None:
        self.fsync = fsync

    @staticmethod
    def _local(path: str) -> str:
        scheme = scheme_of(path)
        if scheme not in ("", "file"):
            raise ValueError(f"{path!r}: only local paths here (LocalFiles); the job writes {scheme}:// through "
                             "Hadoop's FileSystem API (HadoopFiles)")
        return urlparse(path).path if scheme else path

    def read_bytes(self, path: str) -> bytes:
        with open(self._local(path), "rb") as f:
            return f.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        target = self._local(path)
        directory = os.path.dirname(os.path.abspath(target))
        os.makedirs(directory, exist_ok=True)
        tmp = _temporary(target)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
        if self.fsync:
            fsync_dir(directory)

    def exists(self, path: str) -> bool:
        return os.path.exists(self._local(path))

    def mkdirs(self, path: str) -> None:
        os.makedirs(self._local(path), exist_ok=True)

    def list(self, path: str) -> list[str]:
        """The names directly inside directory `path` (sorted; none when it does not exist)."""
        try:
            return sorted(os.listdir(self._local(path)))
        except FileNotFoundError:
            return []

    def delete(self, path: str, recursive: bool = False) -> bool:
        local = self._local(path)
        if os.path.isdir(local) and recursive:
            import shutil

            shutil.rmtree(local)
            return True
        try:
            if os.path.isdir(local):
                os.rmdir(local)
            else:
                os.remove(local)
            return True
        except FileNotFoundError:
            return False

    def describe(self, path: str) -> str:
        return os.path.abspath(self._local(path))


class HadoopFiles:
    """The interface through Hadoop's FileSystem API of `spark`'s driver JVM and Hadoop configuration."""

    def __init__(self, spark, fsync: bool = True) -> None:
        sc = spark.sparkContext
        self._jvm = sc._jvm
        self._gateway = sc._gateway
        self._conf = sc._jsc.hadoopConfiguration()
        self.fsync = fsync

    # --- plumbing ---------------------------------------------------------------------------------
    def _fs(self, path: str):
        """(Hadoop Path, its FileSystem); the raw local one for the local file system (no .crc files)."""
        p = self._jvm.org.apache.hadoop.fs.Path(path)
        fs = p.getFileSystem(self._conf)
        if fs.getUri().getScheme() == "file" and self._checksummed(fs):
            # LocalFileSystem, or a subclass (PySpark's Hive sets fs.file.impl to its ProxyLocalFileSystem): the
            # raw file system under it, which writes no .crc files and renames over an existing file
            fs = fs.getRawFileSystem()
        return p, fs

    def _checksummed(self, fs) -> bool:
        cls = self._jvm.java.lang.Class.forName("org.apache.hadoop.fs.ChecksumFileSystem", False,
                                                fs.getClass().getClassLoader())
        return bool(cls.isInstance(fs))

    def _call(self, path: str, action):
        """Run `action()`, turning Java's FileNotFoundException into FileNotFoundError and its other
        IOExceptions (unreachable store, access denied, a file where a directory should be, ...) into OSError,
        as the same failures of Python's own file calls would be."""
        from py4j.protocol import Py4JJavaError

        try:
            return action()
        except Py4JJavaError as exc:
            cls = exc.java_exception.getClass()
            while cls is not None:
                name = cls.getName()
                if name == "java.io.FileNotFoundException":
                    raise FileNotFoundError(f"{path}: {exc.java_exception.getMessage()}") from exc
                if name == "java.io.IOException":
                    raise OSError(f"{path}: {exc.java_exception.toString()}") from exc
                cls = cls.getSuperclass()
            raise

    def describe(self, path: str) -> str:
        """`path` as Hadoop qualifies it (scheme, authority, absolute path): what the logs should name."""
        def qualified():
            p, fs = self._fs(path)
            return fs.makeQualified(p).toString()

        return self._call(path, qualified)

    def write_mode(self, path: str) -> str:
        """How `write_bytes` replaces a file there: 'posix-rename', 'put', or 'rename-overwrite'."""
        def mode():
            p, fs = self._fs(path)
            scheme = fs.getUri().getScheme()
            if scheme == "file":
                return "posix-rename"
            if scheme in PUT_ON_CLOSE_SCHEMES or fs.hasPathCapability(p, ABORTABLE_STREAM):
                return "put"
            return "rename-overwrite"

        return self._call(path, mode)

    # --- the interface ----------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        def read():
            p, fs = self._fs(path)
            stream = fs.open(p)
            try:
                return bytes(stream.readAllBytes())
            finally:
                stream.close()

        return self._call(path, read)

    def write_bytes(self, path: str, data: bytes, mode: str | None = None) -> None:
        """Replace (or create) the file `path` with `data`, atomically as a reader sees it (see the module
        docstring; `mode` forces one of `write_mode`'s answers, for tests)."""
        self._call(path, lambda: self._write_bytes(path, data, mode or self.write_mode(path)))

    def _write_bytes(self, path: str, data: bytes, mode: str) -> None:
        p, fs = self._fs(path)
        if mode == "put":
            self._write(fs, p, data, sync=False)
            return
        tmp = self._jvm.org.apache.hadoop.fs.Path(_temporary(path))
        self._write(fs, tmp, data, sync=self.fsync)
        if mode == "posix-rename":
            if not fs.rename(tmp, p):
                raise OSError(f"could not rename {tmp.toString()} to {path}")
            if self.fsync:
                fsync_dir(os.path.dirname(fs.makeQualified(p).toUri().getPath()))
        else:
            self._rename_over(fs, tmp, p)

    def _write(self, fs, p, data: bytes, sync: bool) -> None:
        out = fs.create(p, True)
        try:
            if data:
                out.write(bytearray(data))
            if sync and out.hasCapability("hsync"):
                out.hsync()
        finally:
            out.close()

    def _rename_over(self, fs, src, dst) -> None:
        jvm = self._jvm
        hadoop_fs = jvm.org.apache.hadoop.fs
        try:
            fc = hadoop_fs.FileContext.getFileContext(fs.getUri(), self._conf)
        except Exception:  # noqa: BLE001 - no FileContext binding for this scheme: delete, then rename
            fc = None
        if fc is not None:
            rename = getattr(hadoop_fs, "Options$Rename")
            options = self._gateway.new_array(rename, 1)
            options[0] = rename.OVERWRITE
            fc.rename(src, dst, options)
            return
        fs.delete(dst, False)
        if not fs.rename(src, dst):
            raise OSError(f"could not rename {src.toString()} to {dst.toString()}")

    def exists(self, path: str) -> bool:
        def exists():
            p, fs = self._fs(path)
            return bool(fs.exists(p))

        return self._call(path, exists)

    def mkdirs(self, path: str) -> None:
        def mkdirs():
            p, fs = self._fs(path)
            if not fs.mkdirs(p):
                raise OSError(f"could not create the directory {path}")

        self._call(path, mkdirs)

    def list(self, path: str) -> list[str]:
        """The names directly inside directory `path` (sorted; none when it does not exist)."""
        def names():
            p, fs = self._fs(path)
            return sorted(st.getPath().getName() for st in fs.listStatus(p))

        try:
            return self._call(path, names)
        except FileNotFoundError:
            return []

    def delete(self, path: str, recursive: bool = False) -> bool:
        def delete():
            p, fs = self._fs(path)
            return bool(fs.delete(p, recursive))

        return self._call(path, delete)


def fsync_dir(path: str) -> None:
    """fsync a local directory (a rename inside it is then durable); best effort."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
