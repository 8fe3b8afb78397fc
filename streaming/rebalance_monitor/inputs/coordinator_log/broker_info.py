"""What a broker's log says of the broker itself: the release it runs, from the line Kafka's AppInfoParser logs as it
starts (`[2025-03-18 10:00:00,123] INFO Kafka version: 4.0.0 (org.apache.kafka.common.utils.AppInfoParser)`), as a
cluster-wide `broker_release` event: the KIP-848 server assignors' expected assignments follow that release's rules
(docs/assignors.md). The line's logger must be AppInfoParser (`org.apache.kafka.common.utils.AppInfoParser`; from
4.x on `org.apache.kafka.common.utils.internals.AppInfoParser`): a client in another application logs the same
words."""
from __future__ import annotations

import re

from rebalance_monitor.core.vocabulary import EventType

from .line import line_ts

APP_INFO_LOGGERS = ("org.apache.kafka.common.utils.AppInfoParser", "org.apache.kafka.common.utils.internals.AppInfoParser")
VERSION_RE = re.compile(r"(?:^|\s)Kafka version\s*:\s*(?P<release>\d+\.\d+\.\d+(?:[-.+][0-9A-Za-z.+-]*)?)\s*$")


def broker_release_events(message: str, head: str, wrapper_ts: int | None, record_ts_ms) -> list[dict] | None:
    """The `broker_release` event of an AppInfoParser line (`message`: the line without its logger; `head`: where
    its timestamp is), [] when it has no time, None when the line says no release."""
    m = VERSION_RE.search(message)
    if m is None:
        return None
    ts = line_ts(wrapper_ts, head, record_ts_ms)
    if ts is None:
        return []
    return [{"v": 1, "type": EventType.BROKER_RELEASE, "ts": ts, "group": "", "release": m["release"]}]
