"""The job's own files (files/): through Hadoop's FileSystem API (files/hadoop.py) on the shared session's JVM: a local
directory (as a path and as a file:// URI) and a bucket of the local S3 server (s3a://, Hadoop's S3A from
var/spark-jars). Each write replaces the file whole and leaves nothing beside it."""
from __future__ import annotations

import os

import pytest

from rebalance_monitor.files import HadoopFiles, LocalFiles, join

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _roundtrip(files, base: str, mode: str | None = None) -> None:
    target = join(base, "dir", "state.json")
    assert not files.exists(target)
    with pytest.raises(FileNotFoundError):
        files.read_bytes(target)
    assert files.list(join(base, "dir")) == []
    files.write_bytes(target, b'{"n": 1}', **({"mode": mode} if mode else {}))
    files.write_bytes(target, b'{"n": 2}\n' * 1000, **({"mode": mode} if mode else {}))   # replaces it
    assert files.read_bytes(target) == b'{"n": 2}\n' * 1000
    files.write_bytes(join(base, "dir", "empty"), b"")
    assert files.read_bytes(join(base, "dir", "empty")) == b""
    # nothing beside the files: no temporary, no Hadoop .crc checksum files
    assert files.list(join(base, "dir")) == ["empty", "state.json"]
    files.mkdirs(join(base, "dir", "sub"))
    assert files.exists(join(base, "dir", "sub"))
    assert files.delete(target) and not files.exists(target)
    assert not files.delete(target)
    assert files.delete(join(base, "dir"), recursive=True) and files.list(join(base, "dir")) == []


def test_local_paths_and_file_uris(spark, tmp_path):
    files = HadoopFiles(spark)
    assert files.write_mode(str(tmp_path / "x")) == "posix-rename"
    _roundtrip(files, str(tmp_path / "plain"))
    _roundtrip(files, f"file://{tmp_path}/uri")
    # the generic way (HDFS and other file systems with an atomic rename): FileContext.rename(OVERWRITE)
    _roundtrip(files, str(tmp_path / "fc"), mode="rename-overwrite")
    assert files.describe(str(tmp_path / "x")) == f"file:{tmp_path}/x"
    # what Hadoop wrote is what Python reads, and the other way round
    files.write_bytes(str(tmp_path / "h.bin"), bytes(range(256)))
    assert LocalFiles().read_bytes(str(tmp_path / "h.bin")) == bytes(range(256))
    LocalFiles().write_bytes(str(tmp_path / "p.bin"), b"\x00\xff")
    assert files.read_bytes(f"file://{tmp_path}/p.bin") == b"\x00\xff"
    assert sorted(os.listdir(tmp_path)) == ["fc", "h.bin", "p.bin", "plain", "uri"]   # no .crc files
    # Hadoop's IOExceptions come out as Python's OSError (a sink or the snapshot then fails as a disk would)
    with pytest.raises(OSError) as err:
        files.write_bytes(str(tmp_path / "h.bin" / "below-a-file"), b"x")
    assert not isinstance(err.value, FileNotFoundError)


def test_local_files_without_a_jvm(tmp_path):
    _roundtrip(LocalFiles(), str(tmp_path / "plain"))
    with pytest.raises(ValueError, match="only local paths"):
        LocalFiles().write_bytes("s3a://bucket/x", b"")


def test_s3a(spark, s3_bucket):
    files = HadoopFiles(spark)
    name, uri = s3_bucket
    assert files.write_mode(f"{uri}/x") == "put"   # one PUT replaces the object whole: no rename on S3
    _roundtrip(files, f"{uri}/prefix")
    assert files.describe(f"{uri}/a/b") == f"s3a://{name}/a/b"
    big = os.urandom(3 * 1024 * 1024)
    files.write_bytes(f"{uri}/big.bin", big)
    assert files.read_bytes(f"{uri}/big.bin") == big
