"""Child-process member: `python -m rebalance_monitor.workload.child '{"spec": {...}, "events_topic": T}'`.

Prints `SYNCED <member_id> <generation>` on stdout each time it gets an assignment for a new
generation; SIGTERM closes the consumer gracefully and flushes the events; SIGKILL is a crash.
"""
from __future__ import annotations

import json
import signal
import sys
import threading
import time


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    payload = json.loads(argv[0])
    from rebalance_monitor.instrument.emitter import KafkaEmitter
    from rebalance_monitor.workload.member_runners import make_member
    from rebalance_monitor.workload.live_members import MemberSpec

    spec = MemberSpec(**payload["spec"])
    emitter = KafkaEmitter(spec.bootstrap, payload["events_topic"], client_id=f"rm-events-{spec.client_id}")
    member = make_member(spec, emitter).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    last_gen = None
    while not stop.is_set() and member.alive:
        snap = member.snapshot()
        if snap.state == "STABLE" and snap.generation >= 0 and snap.generation != last_gen and snap.member_id:
            last_gen = snap.generation
            emitter.flush(timeout=2)
            print(f"SYNCED {snap.member_id} {snap.generation}", flush=True)
        time.sleep(0.05)
    member.stop(timeout=15)
    emitter.close(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
