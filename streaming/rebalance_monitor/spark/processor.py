"""The Spark stateful processor: the core's `GroupRunner` (core/runner.py) for every group, keyed by the group's
`__consumer_offsets` partition, in event time, woken by processing-time timers.

The grouping key is a shard: the `__consumer_offsets` partition a group lives on (`kafka.offsets_topic_partitions`
of them), as in Kafka's own coordinator. A shard's state holds its groups (a map state, one runner snapshot per
group, read and written only for the groups that run), its `ClusterLog` (the cluster-wide events that reach its
groups: a coordinator move of that partition, partition counts) and when each of its groups next needs to run.
A cluster-wide event thus reaches exactly the groups it concerns, as in `replay`, which runs the same runner.

It runs under `transformWithState` in processing-time mode (rows in, rows out). In that mode Spark runs a batch
at every trigger even with no input, and fires the timers due by then, so a silent group is woken with no side
channel. A group's clock stays event time (`core/group_clock.LiveClock`): Spark's watermark, or its own newest
event less the release delay; it follows the wall clock from the append of a live newest record, else once that
has stood still for the delay. A shard keeps one timer, at the earliest wake-up of its groups; it is replaced only
when an earlier one is needed (a timer earlier than needed fires, runs nothing due, and sets the next one).

Rows in: see decoding/decoded_rows.py (heartbeats and polls as columns, other events as JSON text; `cluster` rows
carry a cluster-wide event to each shard it concerns). Rows out: `kind` (a record kind, or `dead_letter`), `group`,
`ts`, `payload` (the record as JSON). Shard `CLUSTER_SHARD` carries what concerns no group's state: a decoded
batch's clock row (its highest event time and the records it read, for the driver's figures), `end_offsets`
records and the decoder's dead letters, all passed through.
"""
from __future__ import annotations

import time
from operator import itemgetter

import orjson
from pyspark.sql import Row
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from ..core.events import REASON_LATE, loads_json
from ..core.group_clock import LiveClock
from ..core.runner import ClusterLog, GroupRunner
from ..core import records
from ..core.settings import CoreSettings
from ..core.vocabulary import RecordKind
from ..decoding.decoded_rows import CLUSTER_SHARD
from ..decoding.json_parser import use_fastest_available
from ..gc_pause import gc_paused
from .job_items import JobItems, NewRows, dumps
from .output_commits import last_commits
from .runner_cache import RunnerCache, new_token, process_cache
from .start_marks import StartMarks

OUTPUT_SCHEMA = "kind string, group string, ts long, payload string"
GROUP_KEY_SCHEMA = "group string"
STATE_SCHEMA = "state string"
# driver-only record: a decoded batch's highest event time (ts; 0: none), the Kafka timestamp of that
# event's record (append_ms), the number of records it read, and the groups groups.allow/deny left out
CLOCK_KIND = "clock"


OutputRow = Row("kind", "group", "ts", "payload")
_OUTPUT_FIELDS = list(OutputRow)


def output_rows(out: list[tuple]) -> list:
    """`OutputRow(*r)` of each of `out`, at a third of its cost: the same Row (a tuple with its `__fields__`; the
    field list is shared, as nothing changes it)."""
    new, set_field, fields = tuple.__new__, object.__setattr__, _OUTPUT_FIELDS
    rows = []
    for r in out:
        row = new(Row, r)
        set_field(row, "__fields__", fields)
        rows.append(row)
    return rows


def _record_rows(records: list[dict]) -> list[tuple]:
    return [(r["kind"], r["group"], int(r.get("ts") or 0), dumps(r)) for r in records]


def dead_letter_row(group: str, ts: int, reason: str, raw: str, detail: str = "") -> tuple:
    return (RecordKind.DEAD_LETTER, group, ts, dumps(records.dead_letter(group, ts, reason=reason, detail=detail,
                                                                          raw=raw)))


class _Shard:
    """A shard's own state: its cluster log, each group's next wake-up (wall clock), the registered timer, the
    token of the run that wrote it (spark/runner_cache.py) and the job's start markers (spark/start_marks.py)."""

    __slots__ = ("cluster", "wakes", "timer", "token", "marks")

    def __init__(self, cluster: ClusterLog, wakes: dict, timer: int | None, token: int | None = None,
                 marks: StartMarks | None = None):
        self.cluster = cluster
        self.wakes = wakes
        self.timer = timer
        self.token = token
        self.marks = marks if marks is not None else StartMarks()


class GroupProcessor(StatefulProcessor):
    """`clock`'s options (core/group_clock.LiveClock): `follow_wall`, `started_ms` (the job's start, wall clock;
    set on the driver when the plan is built), `flush_to_ms`, `follow_watermark`, `drain`, `horizon_ms`. `visit_every_batch`:
    every group in state runs at every trigger (`run --once`, whose last batch must reach every group).
    `cache_bytes`: the bound of the worker's runner cache (spark/runner_cache.py; 0: read every group from the
    state store at every run); `cluster`: the Kafka cluster of the query (a worker may run several clusters'
    queries: each has its own cache)."""

    def __init__(self, settings: CoreSettings | None = None, emit_status: bool = True,
                 release_delay_ms: int | None = None, *, follow_wall: bool = True, started_ms: int | None = None,
                 flush_to_ms: int | None = None, visit_every_batch: bool = False, follow_watermark: bool = True,
                 drain: bool = False, horizon_ms: int = 0, cache_bytes: int = 0, cluster: str = "default"):
        self.settings = settings or CoreSettings()
        self.cluster = cluster
        self.cache_bytes = cache_bytes
        self.emit_status = emit_status
        started = int(time.time() * 1000) if started_ms is None else started_ms
        self.clock = LiveClock(release_delay_ms, started, follow_wall=follow_wall, follow_watermark=follow_watermark,
                               flush_to_ms=flush_to_ms, drain=drain, horizon_ms=horizon_ms)
        # once a shard has read the input as it stood at the start (spark/start_marks.py), no start to wait for
        self.read_clock = LiveClock(release_delay_ms, 0, follow_wall=follow_wall, follow_watermark=follow_watermark,
                                    flush_to_ms=flush_to_ms, drain=drain, horizon_ms=horizon_ms)
        self.visit_every_batch = visit_every_batch
        self._batch = None  # (batch time, watermark) of the batch under way
        self._ran: set = set()  # shards that already ran in this batch

    def init(self, handle) -> None:
        use_fastest_available()  # this Python worker parses the events that travel as JSON text with orjson
        self.handle = handle
        self.groups = handle.getMapState("groups", GROUP_KEY_SCHEMA, STATE_SCHEMA)
        self.shard = handle.getValueState("shard", STATE_SCHEMA)
        self.cache: RunnerCache = process_cache(self.cache_bytes, self.settings, self.cluster)
        self._batch = None
        self._ran = set()

    def _ran_in_batch(self, shard, timer_values) -> bool:
        """Note that `shard` runs in this batch; True if it already had."""
        batch = (timer_values.getCurrentProcessingTimeInMs(), timer_values.getCurrentWatermarkInMs())
        if batch != self._batch:
            self._batch = batch
            self._ran = set()
        if shard in self._ran:
            return True
        self._ran.add(shard)
        return False

    # --- state ------------------------------------------------------------------------------
    def _load_shard(self) -> _Shard:
        value = self.shard.get()
        if value is None:
            return _Shard(ClusterLog(), {}, None)
        snap = loads_json(value[0])
        return _Shard(ClusterLog.from_state(snap["c"]), snap["w"], snap["t"], snap.get("k"),
                      StartMarks.from_state(snap.get("s")))

    def _save_shard(self, st: _Shard, wall_ms: int) -> bool:
        """Keep the shard's state under a new token, and its one timer at the earliest wake-up of its groups;
        False when the shard has nothing left to keep (its state is cleared)."""
        want = min(st.wakes.values()) if st.wakes else None
        timer = st.timer
        if timer is not None and not (want is not None and wall_ms < timer <= want):
            if timer > wall_ms:  # timers at or before this batch's time have fired, or are firing
                self.handle.deleteTimer(timer)
            timer = None
        if want is not None and timer is None:
            self.handle.registerTimer(want)
            timer = want
        if not st.wakes and not st.cluster.entries:
            self.shard.clear()
            return False
        st.token = new_token()
        self.shard.update((dumps({"c": st.cluster.to_state(), "w": st.wakes, "t": timer, "k": st.token,
                                  "s": st.marks.to_state()}),))
        return True

    def _run_group(self, group: str, new: NewRows | None, st: _Shard, watermark: int, wall_ms: int,
                   cached: dict, kept: dict, clock: LiveClock) -> list[tuple]:
        """Run one group at this batch (its new rows, if any); returns its output rows. The group's runner comes
        from `cached` (the worker's runners, valid for this shard) or the state store; once written back, it
        goes into `kept`."""
        hit = cached.pop(group, None)
        if hit is not None:
            runner = hit[0]
        else:
            value = self.groups.getValue((group,))
            if value is not None:
                runner = GroupRunner.from_state(loads_json(value[0]), self.settings)
            else:
                runner = GroupRunner.new(group, self.settings)
        out: list[tuple] = []
        if new is not None:
            late, new.keys = runner.split_late(new.keys)
            if late:
                late, standing = runner.settle_late(late, new)
                out.extend(_record_rows(standing))
            frontier = runner.monitor.clock_ms
            for ts, _, i in late:
                out.append(dead_letter_row(group, ts, REASON_LATE, JobItems.raw(new.item(i), ts, group),
                                           f"ts {ts} is behind what the group already processed ({frontier})"))
        release = clock.release_point(runner, watermark, wall_ms, new is not None,
                                           new.appended_ms if new is not None else None)
        # of the commits, each partition's last (spark/output_commits.py)
        records = last_commits(runner.run(release, JobItems, st.cluster, new))
        g = runner.monitor
        if self.emit_status and g.dirty:
            records.append(g.status(max(release, g.clock_ms)))
        out.extend(_record_rows(records))
        if runner.is_done(release):
            self.groups.removeKey((group,))
            st.wakes.pop(group, None)
        else:
            snapshot = dumps(runner.to_state())
            self.groups.updateValue((group,), (snapshot,))
            kept[group] = (runner, len(snapshot))
            if self.visit_every_batch:
                st.wakes[group] = wall_ms + 1
            else:
                st.wakes[group] = clock.wake_wall_ms(runner, runner.due_ms(st.cluster), release, wall_ms)
        return out

    def _run_shard(self, shard, new_rows, timer_values) -> list[tuple]:
        """Run a shard at this batch: the groups with new rows, every group when cluster-wide events arrived,
        and the groups due by now."""
        watermark = timer_values.getCurrentWatermarkInMs()
        wall_ms = timer_values.getCurrentProcessingTimeInMs()
        st = self._load_shard()
        cached = self.cache.take(shard, st.token)
        groups: dict = {}
        every = False  # every group of the shard runs (cluster-wide events, or the input read as of the start)
        if new_rows is not None:
            groups = new_rows.groups
            for ts, _, text in new_rows.cluster:
                st.cluster.add(ts, text)
            if new_rows.cluster:
                st.cluster.trim(self.settings.group_idle_ttl_ms)
            was = st.marks.caught_up(self.clock.started_ms)
            for marker in new_rows.marks:
                st.marks.note(marker, self.clock.started_ms)
            every = bool(new_rows.cluster) or (not was and st.marks.caught_up(self.clock.started_ms))
        run = dict.fromkeys(groups)
        for group, at in st.wakes.items():
            if at <= wall_ms or every:
                run.setdefault(group, None)
        clock = self.read_clock if st.marks.caught_up(self.clock.started_ms) else self.clock
        out: list[tuple] = []
        kept: dict = {}
        for group in run:
            out.extend(self._run_group(group, groups.get(group), st, watermark, wall_ms, cached, kept, clock))
        if self._save_shard(st, wall_ms):
            for group, hit in cached.items():  # groups that did not run: as the state store still has them
                if group in st.wakes:
                    kept[group] = hit
            self.cache.keep(shard, st.token, kept, wall_ms)
        return out

    # --- Spark callbacks --------------------------------------------------------------------
    def handleInputRows(self, key, rows, timerValues):
        shard = key[0]
        if shard == CLUSTER_SHARD:
            yield from _passthrough(rows)
            return
        self._ran_in_batch(shard, timerValues)
        with gc_paused():  # (the rows out too: built with the collector on, they set off its full collections)
            out = output_rows(self._run_shard(shard, _ShardRows(rows), timerValues))
        yield from out

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        shard = key[0]
        if shard == CLUSTER_SHARD or self._ran_in_batch(shard, timerValues):
            # A shard that ran its rows in this batch also ran every group due by then, and set its next timer.
            return
        with gc_paused():
            out = output_rows(self._run_shard(shard, None, timerValues))
        yield from out

    def close(self) -> None:
        pass


_ROW_FIELDS = ("kind", "group", "ts", "ord", "num", "payload", "packed")  # of DECODED_SCHEMA


class _ShardRows:
    """A shard's rows of one batch: each group's packed events (`groups`: group -> `NewRows`), the
    cluster-wide events that reach the shard (`cluster`: (ts, order, JSON text), sorted) and the job's start
    markers read (`marks`, spark/start_marks.py)."""

    def __init__(self, rows):
        packs: dict[str, list] = {}
        self.cluster: list[tuple] = []
        self.marks: list[str] = []
        fields = get = None
        for row in rows:
            # the fields by position (a Row's access by name looks its name up in its field list each time), the
            # positions found again whenever a row comes with other fields (Spark's rows share one field list)
            names = row.__fields__
            if names is not fields and names != fields:
                get = itemgetter(*(names.index(name) for name in _ROW_FIELDS))
            fields = names
            kind, group, ts, order, appended, payload, packed = get(row)
            if kind == "events":
                packs.setdefault(group, []).append((ts, None if appended != appended else appended, packed))
            elif kind == "cluster":
                self.cluster.append((ts, order, payload))
            elif kind == "wake":
                self.marks.append(payload)
        self.cluster.sort()
        self.groups = {group: NewRows(p) for group, p in packs.items()}


def _passthrough(rows):
    """The rows of `CLUSTER_SHARD`: clock rows become clock records; dead letters and records pass through."""
    for row in rows:
        kind, ts = row.kind, row.ts
        if kind == "tick":
            if row.ord:  # a decoded batch's clock row (a batch of wake-up records only reads none)
                num = row.num
                append = None if num is None or num != num else int(num)
                clock = {"kind": CLOCK_KIND, "group": "", "ts": int(ts), "append_ms": append, "records": row.ord}
                if row.payload:  # the groups that groups.allow/deny left out, topic ids left as ids
                    note = orjson.loads(row.payload)
                    if isinstance(note, dict):
                        clock["unresolved_topic_ids"] = note.get("unresolved_topic_ids") or {}
                        note = note.get("left_out") or []
                    if note:
                        clock["left_out"] = note
                yield OutputRow(CLOCK_KIND, "", int(ts), dumps(clock))
        elif kind == "dead_letter":
            yield OutputRow("dead_letter", "", int(ts), row.payload)
        elif kind == "record":
            rec = orjson.loads(row.payload)
            yield OutputRow(rec["kind"], rec["group"], int(ts), row.payload)
