"""`HadoopFiles`: the job's file interface (files/) through Hadoop's FileSystem API of the SparkSession's driver JVM
(`Path(uri).getFileSystem(hadoopConfiguration)`), so a local path, `file://`, `s3a://` and `hdfs://` all work as
they do for Spark's own checkpoint. A replacing write is atomic, as a reader sees it:

- the local file system: a temporary file beside the target, written, `hsync`ed (an fsync), renamed over the target
  (rename(2) replaces atomically), then the directory fsynced. (Hadoop's raw local file system, so no `.crc` files
  beside the job's files.)
- object stores whose writes become visible only when the stream closes (S3A, GCS; any store declaring
  `fs.capability.outputstream.abortable`): one direct write with overwrite. A PUT replaces the object whole; there
  is no rename to lean on (S3A's is a copy).
- everything else (HDFS, ...): a temporary file, `hsync`, then `FileContext.rename(..., OVERWRITE)`, which HDFS
  does atomically (what Spark's own checkpoint file manager does); a file system without a FileContext binding gets
  a delete then a rename (not atomic: a crash between leaves no file).

A path without a scheme is what Hadoop makes of it: the default file system, the local one unless `fs.defaultFS`
says otherwise, relative to the working directory. No pyspark import: the session comes in as an argument.
"""
from __future__ import annotations

import os

from .paths import fsync_dir, temporary_beside

# Stores where a written file becomes visible only when its stream is closed, whole (the S3A, GCS connectors).
PUT_ON_CLOSE_SCHEMES = frozenset({"s3a", "s3", "gs"})
ABORTABLE_STREAM = "fs.capability.outputstream.abortable"  # Hadoop's CommonPathCapabilities.ABORTABLE_STREAM



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
        tmp = self._jvm.org.apache.hadoop.fs.Path(temporary_beside(path))
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
