"""An event's time when the client's clock is ahead of the broker's: the broker plugin forwards the client's own
time as `ts` and the push's arrival as `received_ms`; the core (parse_event, with kafka.max_future_skew) decides
which is the event's time, the same in replay and in the job."""
from __future__ import annotations

import io
import json

from rebalance_monitor.config import load_config
from rebalance_monitor.core.events import Rejected, event_to_dict, parse_event
from rebalance_monitor.replay import run_replay

ARRIVAL = 1_700_000_000_000
SKEW = int(load_config(env={}).kafka.max_future_skew)  # the configured default (1 h)


def snapshot(ts, received=None, etype="client_metrics", **kw):
    obj = {"v": 1, "type": etype, "ts": ts, "group": "g", "member_id": "m", "client_id": "c", "source": "kip714",
           **kw}
    if etype == "client_metrics":
        obj.update(interval_ms=5000, last_heartbeat_ms_ago=1000, last_poll_ms_ago=0)
    else:
        obj["reason"] = "the consumer is being closed"
    if received is not None:
        obj["received_ms"] = received
    return json.dumps(obj).encode()


def test_the_default_skew_is_an_hour():
    assert SKEW == 3_600_000


def test_a_client_time_more_than_the_skew_ahead_of_the_arrival_takes_the_arrival():
    for etype in ("client_metrics", "leave"):
        ev = parse_event(snapshot(ARRIVAL + SKEW + 1, ARRIVAL, etype), max_future_ms=SKEW)
        assert not isinstance(ev, Rejected), ev
        assert (ev.type, ev.ts, ev.received_ms) == (etype, ARRIVAL, ARRIVAL)
        # not rejected for it: with the job's clock at the arrival, the client's time would be future_ts
        assert parse_event(snapshot(ARRIVAL + SKEW + 1, ARRIVAL, etype), now_ms=ARRIVAL, max_future_ms=SKEW).ts \
            == ARRIVAL


def test_a_client_time_at_the_limit_or_behind_is_kept():
    for ts in (ARRIVAL + SKEW, ARRIVAL + 5, ARRIVAL - 3_000):
        ev = parse_event(snapshot(ts, ARRIVAL), now_ms=ARRIVAL, max_future_ms=SKEW)
        assert (ev.ts, ev.received_ms) == (ts, ARRIVAL)


def test_the_rule_follows_the_configured_skew():
    skew = int(load_config(env={}, overrides={"kafka.max_future_skew": "5s"}).kafka.max_future_skew)
    assert skew == 5000
    assert parse_event(snapshot(ARRIVAL + 5001, ARRIVAL), max_future_ms=skew).ts == ARRIVAL
    assert parse_event(snapshot(ARRIVAL + 5000, ARRIVAL), max_future_ms=skew).ts == ARRIVAL + 5000
    assert parse_event(snapshot(ARRIVAL + 5001, ARRIVAL), max_future_ms=SKEW).ts == ARRIVAL + 5001


def test_an_event_without_its_arrival_keeps_todays_rule():
    ahead = ARRIVAL + SKEW + 1
    assert parse_event(snapshot(ahead), max_future_ms=SKEW).ts == ahead  # no clock: kept
    rej = parse_event(snapshot(ahead), now_ms=ARRIVAL, max_future_ms=SKEW)
    assert isinstance(rej, Rejected) and rej.reason == "future_ts"
    assert parse_event(snapshot(ARRIVAL, None), now_ms=ARRIVAL, max_future_ms=SKEW).received_ms is None
    # a type that has no arrival time: the key is not one of its fields, and changes nothing
    hb = {"v": 1, "type": "heartbeat", "ts": ahead, "group": "g", "member_id": "m", "generation": 1, "error": None,
          "received_ms": ARRIVAL}
    assert parse_event(json.dumps(hb), max_future_ms=SKEW).ts == ahead
    assert parse_event(json.dumps(hb), now_ms=ARRIVAL, max_future_ms=SKEW).reason == "future_ts"


def test_the_arrival_time_taken_meets_the_wall_clock_rule():
    # the broker's own clock far ahead of the job's: the event is future_ts at its arrival time too
    rej = parse_event(snapshot(ARRIVAL + 3 * SKEW, ARRIVAL + 2 * SKEW), now_ms=ARRIVAL, max_future_ms=SKEW)
    assert isinstance(rej, Rejected) and rej.reason == "future_ts"


def test_a_bad_arrival_time_is_rejected():
    assert parse_event(snapshot(ARRIVAL, "x"), max_future_ms=SKEW).reason == "bad_type:received_ms"
    assert parse_event(snapshot(ARRIVAL, 1.5), max_future_ms=SKEW).reason == "bad_type:received_ms"
    assert parse_event(snapshot(ARRIVAL, -1), max_future_ms=SKEW).reason == "bad_value:received_ms"
    assert parse_event(snapshot(ARRIVAL, 1 << 53), max_future_ms=SKEW).reason == "bad_value:received_ms"


def test_the_event_taken_parses_to_itself_without_the_skew():
    """What the job's decode stage hands on, parsed again by its processor (which has no skew), is the same."""
    ev = parse_event(snapshot(ARRIVAL + SKEW + 1, ARRIVAL), max_future_ms=SKEW)
    assert parse_event(json.dumps(event_to_dict(ev))) == ev


def _group_time_in_replay(skew: str) -> int:
    """The time of group g's status at the end of a replay of a snapshot two hours ahead of its arrival and a
    poll a second after the arrival."""
    cfg = load_config(env={}, overrides={"kafka.max_future_skew": skew})
    poll = {"v": 1, "type": "poll", "ts": ARRIVAL + 1000, "group": "g", "member_id": "m"}
    lines = [snapshot(ARRIVAL + 7_200_000, ARRIVAL).decode(), json.dumps(poll)]
    out, err = io.StringIO(), io.StringIO()
    assert run_replay(cfg, "events", io.StringIO("\n".join(lines) + "\n"), out, err, with_status=True) == 0
    [status] = [r for r in map(json.loads, out.getvalue().splitlines()) if r["kind"] == "group_status"]
    return status["ts"]


def test_replay_decides_with_the_configured_skew():
    assert _group_time_in_replay("1h") == ARRIVAL + 1000  # the snapshot at its arrival: the poll is the newest
    assert _group_time_in_replay("3h") == ARRIVAL + 7_200_000  # the snapshot at the client's time
