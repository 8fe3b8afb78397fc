"""The job's own durable files (the exported-metrics snapshot, the history and dead-letter files), written where
Spark writes its checkpoint. One small interface (`read_bytes`, `write_bytes`, `exists`, `mkdirs`, `list`,
`delete`, `describe`), two implementations; paths are strings, a URI or a plain path. A service below the rooms
that keep files (`spark/`, `metrics/`); it imports none of them.

| module | holds |
| --- | --- |
| `paths.py` | `join` (a path or a URI), `scheme_of`, the temporary file of a replacing write, `fsync_dir` |
| `local.py` | `LocalFiles`: the interface with Python's own calls, local paths only (no JVM) |
| `hadoop.py` | `HadoopFiles`: the interface through Hadoop's FileSystem API on the Spark driver's JVM (what the job uses) |
"""
from __future__ import annotations

from .hadoop import HadoopFiles
from .local import LocalFiles
from .paths import join, scheme_of

__all__ = ["HadoopFiles", "LocalFiles", "join", "scheme_of"]
