"""`LocalFiles`: the job's file interface on the local file system with Python's own calls, for the code that runs
without a JVM (unit tests, benches, and a local checkpoint's metrics snapshot read before Spark starts)."""
from __future__ import annotations

import os
from urllib.parse import urlparse

from .paths import fsync_dir, scheme_of, temporary_beside


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
        tmp = temporary_beside(target)
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
