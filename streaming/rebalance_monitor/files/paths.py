"""Paths of the job's own files: a URI or a plain path, joined and told apart by scheme; the temporary file a
replacing write goes through; a directory made durable."""
from __future__ import annotations

import os
from urllib.parse import urlparse


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


def temporary_beside(path: str) -> str:
    """The temporary file a replacing write of `path` goes through: hidden, in the same directory."""
    head, _, name = path.rpartition("/")
    return f"{head}/.{name}.tmp" if head else f".{name}.tmp"



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
