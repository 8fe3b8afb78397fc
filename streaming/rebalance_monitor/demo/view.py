"""What `rebalance-monitor demo` shows: the board kept from the job's output records, the live view rendered
from it, and the plain lines of `--no-live`.

Times are local clock times; causes name the member's client id (or member id) and wrap instead of being cut;
timeouts name the member's client id and host; lag is offset lag and time lag, as the exporter shows them. A member
the core reports at risk (a `member_at_risk` record: silent for core.early_warning_percent of its session timeout or
max.poll.interval.ms) gets an early warning line before its timeout (naming its client id and host when known),
and the group's row shows its largest poll-gap ratio, red from POLL_WARN_RATIO on.
"""
from __future__ import annotations

import threading
import time
from collections import deque

from ..cluster_stamp import FIELD as CLUSTER_FIELD
from ..core.expected import mismatch_text
from ..core.vocabulary import RecordKind

LOG_LINES = 12  # the live view's "what happened" panel
ALERT_LINES = 6  # its "warnings and timeouts" panel: the members' early warnings and timeouts stay in sight
PENDING_LINES = 10_000  # said and not yet taken by the line mode (take_new): kept while it falls behind
LAG_EVERY_S = 30.0  # the line mode says a group's lag when it changed, at most this often
# the group's largest poll-gap ratio (kafka_consumergroup_poll_gap_ratio, from the group_status records) is shown
# red from here (the core's default early warning, core.early_warning_percent)
POLL_WARN_RATIO = 0.5


def early_warning_text(g: str, r: dict, names: dict) -> str:
    """The line of a `member_at_risk` record: who, and for how long of which limit it has been silent."""
    member = r["member_id"]
    name = who(r) if r.get("client_id") else names.get(member)
    name = f"{name} (member {member})" if name else member
    limit, seen, warn = r.get("limit_ms"), r.get("last_seen_ms"), r.get("warn_ms")
    share = f"{(warn - seen) / limit:.0%}" if limit and isinstance(seen, int) and isinstance(warn, int) else "?"
    if r.get("risk") == "poll":
        return f"poll early warning in {g}: {name} has not polled for {share} of its max.poll.interval.ms"
    return f"session early warning in {g}: {name} has not sent a heartbeat for {share} of its session timeout"


def clock(ms: int | None) -> str:
    """Epoch milliseconds as a local clock time (`14:03:07.250`)."""
    if ms is None:
        return "?"
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) + f".{int(ms) % 1000:03d}"


def who(entry: dict) -> str:
    """A member as a person reads it: client id and host when known, else the member id."""
    name = entry.get("client_id") or entry.get("member_id") or ""
    host = entry.get("host")
    return f"{name}@{host}" if name and host else name


def cause_text(causes: list[dict]) -> str:
    return ", ".join(c["cause"] + (f" ({who(c)})" if who(c) else "") for c in causes)


def _or_dash(value) -> str:
    return "-" if value is None else str(value)


def lag_text(lag) -> str:
    if lag is None:
        return "-"
    offsets, seconds = lag
    return f"{offsets} records" + (f", {seconds:.1f} s behind" if seconds is not None else "")


class GroupBoard:
    """What the view shows, kept from the job's output records (called from the job's batch handler). A group is
    a row per Kafka cluster (the records' `kafka_cluster`): the same name on two clusters is two groups. Lines name
    a group of a cluster other than `home` as `group@cluster`."""

    def __init__(self, clock=time.monotonic, prefix: str = "", home: str = "default"):
        self.prefix = prefix  # only groups whose name starts with it (the demo's: not the monitor's own readers')
        self.home = home
        self.lock = threading.Lock()
        self.groups: dict[tuple[str, str], dict] = {}   # (cluster, group) -> its row
        self.log: list[str] = []  # the last LOG_LINES lines (the live view)
        self.alerts: list[str] = []  # the last ALERT_LINES early warnings and timeouts (the live view)
        self.pending: deque[str] = deque(maxlen=PENDING_LINES)  # every line, until the line mode takes it
        self.generations = 0
        self.clock = clock
        self.names: dict[str, str] = {}  # member id -> client id@host, from the causes that named them

    def _row(self, key: tuple[str, str]) -> dict:
        return self.groups.setdefault(key, {"type": "?", "state": "?", "generation": None, "members": 0,
                                              "cause": "",
                                              "storm": False, "timeouts": 0, "lag": None, "poll_gap": None})

    def on_records(self, batch_id, records, dead) -> None:
        with self.lock:
            for r in records:
                g = r.get("group")
                if g and g.startswith(self.prefix):
                    self._apply((r.get(CLUSTER_FIELD) or self.home, g), r)

    def shown(self, key: tuple[str, str]) -> str:
        """A group as the lines name it: `group`, or `group@cluster` when not of the home cluster."""
        cluster, group = key
        return group if cluster == self.home else f"{group}@{cluster}"

    def _apply(self, key: tuple[str, str], r: dict) -> None:
        row = self._row(key)
        g = self.shown(key)
        kind = r["kind"]
        if r.get("group_type") and kind in (RecordKind.GROUP_STATUS, RecordKind.GENERATION):
            row["type"] = r["group_type"]  # classic, consumer, streams or share
        if kind == RecordKind.GROUP_STATUS:
            if r["state"] != row["state"]:
                was = row["state"]
                self._say(r.get("ts"), f"{g} is {r['state']}" + (f" (was {was})" if was != "?" else "")
                          + (f", generation {r['generation']}" if r.get("generation") is not None else "")
                          + f", {r['members']} members")
            row.update(state=r["state"], generation=r["generation"], members=r["members"], storm=r["in_storm"],
                       poll_gap=r.get("max_poll_gap_ratio"))
        elif kind == RecordKind.GENERATION:
            self.generations += 1
            causes = cause_text(r["causes"])
            for c in r["causes"]:
                if c.get("member_id") and c.get("client_id"):
                    self.names[c["member_id"]] = who(c)
            row.update(generation=r["generation"], cause=causes, members=len(r["members"]))
            dur = f"{r['duration_ms']} ms" if r["duration_ms"] is not None else "?"
            self._say(r.get("completed_ms"), f"generation {r['generation']} of {g}: {len(r['members'])} members, "
                      f"{dur}, caused by {causes}; moved {_or_dash(r.get('partitions_moved'))}, {mismatch_text(r)}")
        elif kind == RecordKind.MEMBER_AT_RISK:
            self._say(r.get("warn_ms"), early_warning_text(g, r, self.names), alert=True)
        elif kind == RecordKind.MEMBER_TIMEOUT:
            row["timeouts"] += 1
            self._say(r.get("detected_ms"), f"{r['timeout']} timeout of {who(r)} in {g} (member {r['member_id']}; "
                      f"last seen {clock(r['last_seen_ms'])}, deadline {clock(r['deadline_ms'])})", alert=True)
        elif kind == RecordKind.STORM:
            # a running storm's record repeats when its pattern changes: said as that, not as a new storm
            key = (r.get("started_ms"), r["ended_ms"] is None)
            if key == row.get("storm_said") and r.get("pattern") == row.get("storm_pattern"):
                return
            pattern = f" ({r['pattern']})" if r.get("pattern") else ""
            if r["ended_ms"] is not None:
                what = "ended"
            elif key == row.get("storm_said"):
                what = "goes on"
            else:
                what = "started"
            row.update(storm=r["ended_ms"] is None, storm_said=key, storm_pattern=r.get("pattern"))
            self._say(r.get("ts"), f"storm {what} in {g}: {r['rebalances']} rebalances in "
                      f"{r['window_ms'] // 1000} s{pattern}")

    def _say(self, ms: int | None, line: str, alert: bool = False) -> None:
        at = clock(ms) if ms is not None else time.strftime("%H:%M:%S")
        self.log.append(f"{at} {line}")
        del self.log[:-LOG_LINES]
        if alert:  # kept in a panel of its own: a busy fleet's generations do not push it out of sight
            self.alerts.append(f"{at} {line}")
            del self.alerts[:-ALERT_LINES]
        self.pending.append(f"{at} {line}")

    def note(self, line: str) -> None:
        """A line of the demo's own (not of a record), at the current time."""
        with self.lock:
            self._say(None, line)

    def take_new(self) -> list[str]:
        """The lines said since the last call, each once (the line mode: an operator's log)."""
        with self.lock:
            new = list(self.pending)
            self.pending.clear()
        return new

    def set_lag(self, lags: dict[tuple[str, str], tuple]) -> None:
        """{(cluster, group): (offset lag, time lag in seconds or None)} from the exporter (`lag_by_group`)."""
        with self.lock:
            for key, v in lags.items():
                key = (key[0] or self.home, key[1])
                if key in self.groups:
                    self.groups[key]["lag"] = v

    def lag_changes(self) -> list[str]:
        """One line per group whose offset lag changed since it was last said, at most every LAG_EVERY_S (the
        line mode's lag column)."""
        out = []
        now = self.clock()
        with self.lock:
            for key, row in sorted(self.groups.items()):
                g = self.shown(key)
                lag = row.get("lag")
                # the offset lag: an idle group's time lag grows by itself, which is not news
                if lag is not None and lag[0] != row.get("lag_said") and now - row.get("lag_said_at", -LAG_EVERY_S) \
                        >= LAG_EVERY_S:
                    row["lag_said"], row["lag_said_at"] = lag[0], now
                    out.append(f"{time.strftime('%H:%M:%S')} lag of {g}: {lag_text(lag)}")
        return out


def gap_text(ratio) -> str:
    """The group's largest poll-gap ratio, red from POLL_WARN_RATIO on."""
    if ratio is None:
        return "-"
    return f"[bold red]{ratio:.2f}[/]" if ratio >= POLL_WARN_RATIO else f"{ratio:.2f}"


def render(board: GroupBoard, url: str, phase: str, log_path: str | None = None):
    """The live view: one header panel, one table row per group, the latest events."""
    from rich.console import Group
    from rich.panel import Panel
    from rich.table import Table

    t = Table(title="consumer groups", expand=True)
    t.add_column("group", no_wrap=True)
    with board.lock:
        several = len({cluster for cluster, _ in board.groups}) > 1
    if several:
        t.add_column("cluster", no_wrap=True)
    for col in ("type", "state", "gen", "members"):
        t.add_column(col, no_wrap=True)
    t.add_column("last cause", overflow="fold", ratio=1)
    for col in ("storm", "timeouts", "poll gap"):
        t.add_column(col, no_wrap=True)
    t.add_column("lag", overflow="fold", min_width=24)
    with board.lock:
        for (cluster, name), r in sorted(board.groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            t.add_row(name, *((cluster,) if several else ()), r.get("type", "?"), r["state"], str(r["generation"]), str(r["members"]), r["cause"],
                      "[bold red]STORM[/]" if r["storm"] else "-", str(r["timeouts"]), gap_text(r["poll_gap"]),
                      lag_text(r["lag"]))
        lines = "\n".join(board.log) or "waiting for the first generation..."
        alerts = "\n".join(board.alerts) or "none yet"
    head = f"metrics: {url}/metrics   workload: {phase}   (Ctrl-C to stop)"
    if log_path:
        head += f"\nSpark, Kafka and client logs: {log_path}"
    return Group(Panel(head, title="rebalance-monitor demo"), t,
                 Panel(alerts, title="early warnings and timeouts", expand=True),
                 Panel(lines, title="what happened", expand=True))


def lag_by_group(updater) -> dict[tuple[str, str], tuple]:
    """{(cluster, group): (offset lag, time lag in seconds or None)} as the exporter shows them."""
    offsets: dict[tuple[str, str], int] = {}
    seconds: dict[tuple[str, str], float] = {}
    try:
        from prometheus_client.parser import text_string_to_metric_families

        from ..metrics.catalogue import CLUSTER_LABEL, GROUP_LABEL, LAG_SECONDS, LAG_SUM

        for fam in text_string_to_metric_families(updater.render()):
            if fam.name == LAG_SUM.name:
                for s in fam.samples:
                    offsets[(s.labels.get(CLUSTER_LABEL, ""), s.labels[GROUP_LABEL])] = int(s.value)
            elif fam.name == LAG_SECONDS.name:
                for s in fam.samples:
                    seconds[(s.labels.get(CLUSTER_LABEL, ""), s.labels[GROUP_LABEL])] = float(s.value)
    except Exception:  # noqa: BLE001 - the view is best effort
        pass
    return {g: (v, seconds.get(g)) for g, v in offsets.items()}
