"""The brokers' Apache Kafka release as their ApiVersions answer tells it, for the KIP-848 server assignors' rules
(core/assignors `server_rules_release`).

A broker answers ApiVersions with the newest version of each API key it serves and the feature ranges it supports.
Those change between minor releases and not between patch releases: `release_fingerprints.py` (generated from each
release's own jars by scripts/api_versions_table.py, held against real 3.9.2, 4.0.0 and 4.4.0 brokers) tells
3.9, 4.0, 4.1, 4.2, 4.3 and 4.4 apart, and no two patches of one minor. Where the patches of a minor share server
assignor rules (all but 4.0), the guess is the newest of them, which the core treats alike. 4.0.0 and 4.0.1/4.0.2
answer alike and their uniform assignors differ: that is said, not guessed (`release` None), so the monitor keeps
what it knows otherwise (the configuration's `kafka.broker_release`, a broker's AppInfoParser line) and, knowing
nothing, the newest rules, which 4.0.1 and 4.0.2 follow (docs/assignors.md, "What each source can tell apart").

`release_from_api_versions` is pure; `ask_release` asks live brokers with kafka-python (the base install).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

from rebalance_monitor.core.assignors import parse_release, server_rules_release

from .release_fingerprints import API_MAXIMA, API_NAMES, METADATA_VERSION, RELEASES, SUPPORTED_FEATURES

__all__ = ["CONDITIONAL_KEYS", "ReleaseGuess", "ask_api_versions", "ask_release", "ask_releases", "combined",
           "release_from_api_versions"]

log = logging.getLogger(__name__)

# API keys a broker serves only when configured to: client telemetry (KIP-714) needs a telemetry reporter among its
# metric reporters. In the table's rows, left out of the comparison when the answer lacks them.
CONDITIONAL_KEYS = frozenset({71, 72})
NEWEST, OLDEST = RELEASES[-1], RELEASES[0]
_AMBIGUOUS_ADVICE = "set kafka.broker_release, or ship the brokers' AppInfoParser line"


@dataclass(frozen=True)
class ReleaseGuess:
    """What an ApiVersions answer says of the broker's release. `release`: the MAJOR.MINOR.PATCH to hand the core,
    None when the answer cannot tell; `candidates`: the known releases whose brokers answer so (oldest first);
    `basis`: one line saying what told it."""

    release: str | None
    candidates: tuple[str, ...]
    basis: str


def maxima(api_versions: Mapping[Any, Any]) -> dict[int, int]:
    """{API key: newest version} of an answer given as {key: (min, max)} (kafka-python's form; a key may be its
    ApiKey enum) or as {key: max}."""
    return {int(k): int(v[1] if isinstance(v, (tuple, list)) else v) for k, v in api_versions.items()}


def feature_ranges(features: Mapping[str, Any] | None) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
    """(supported, finalized) ranges of `features`: {name: (min, max)} (the supported ranges), or kafka-python's
    `describe_features()` form {name: {"supported": (min, max), "finalized": (min, max), ...}}."""
    supported: dict[str, tuple[int, int]] = {}
    finalized: dict[str, tuple[int, int]] = {}
    for name, value in (features or {}).items():
        if isinstance(value, Mapping):
            if value.get("supported") is not None:
                supported[name] = tuple(int(x) for x in value["supported"])
            if value.get("finalized") is not None:
                finalized[name] = tuple(int(x) for x in value["finalized"])
        else:
            supported[name] = tuple(int(x) for x in value)
    return supported, finalized


def _name(key: int) -> str:
    return f"{API_NAMES.get(key, 'key')} ({key})"


def _differences(answer: dict[int, int], row: dict[int, int]) -> list[str]:
    """Where the answer differs from a table row: 'Name (key) v<answer> not v<row>' ('-' for a key not served)."""
    out = []
    for key in sorted(set(answer) | set(row)):
        if key in CONDITIONAL_KEYS and key not in answer:
            continue
        if answer.get(key) != row.get(key):
            a, r = answer.get(key), row.get(key)
            out.append(f"{_name(key)} {'-' if a is None else f'v{a}'} not {'-' if r is None else f'v{r}'}")
    return out


def _feature_differences(supported: dict[str, tuple[int, int]], release: str) -> list[str]:
    """Where the answer's supported features differ from the release's row ('name (min, max) not (min, max)'),
    compared on the features the answer names (a caller may give only some)."""
    row = SUPPORTED_FEATURES[release]
    return [f"{name} {rng} not {row.get(name, '-')}" for name, rng in supported.items() if row.get(name) != rng]


def _matches(answer: dict[int, int], release: str) -> bool:
    return not _differences(answer, API_MAXIMA[release])


def _mv_name(level: int) -> str:
    names = {lvl: name for lvl, name in METADATA_VERSION.values()}
    return f"metadata.version {names.get(level, f'level {level}')}"


def _beyond_newest(answer: dict[int, int], supported: dict, finalized: dict) -> str | None:
    """Why the answer is a broker newer than the table's newest release, or None: it serves every key of that row at
    that version or higher, and more; or it supports (or its cluster runs) a metadata.version above that release's."""
    row = API_MAXIMA[NEWEST]
    keys = [k for k in row if k not in CONDITIONAL_KEYS or k in answer]
    if all(answer.get(k, -1) >= row[k] for k in keys):
        more = _differences(answer, row)
        if more:
            return f"it advertises more than {NEWEST} ({'; '.join(more[:3])}{'; ...' if len(more) > 3 else ''})"
    newest_level = METADATA_VERSION[NEWEST][0]
    level = max(r[1] for r in (supported.get("metadata.version", (0, 0)), finalized.get("metadata.version", (0, 0))))
    if level > newest_level:
        return f"it supports {_mv_name(level)}, above {NEWEST}'s {_mv_name(newest_level)}"
    return None


def _below_oldest(answer: dict[int, int], supported: dict) -> str | None:
    """Why the answer is a broker older than the table's oldest release, or None: it serves no key of that row
    above that row's version, and fewer keys or older versions; or it supports an older metadata.version only."""
    row = API_MAXIMA[OLDEST]
    if all(k in row and v <= row[k] for k, v in answer.items()) and _differences(answer, row):
        return f"it advertises less than {OLDEST} ({'; '.join(_differences(answer, row)[:3])})"
    level = supported.get("metadata.version", (0, None))[1]
    if level is not None and level < METADATA_VERSION[OLDEST][0]:
        return f"it supports {_mv_name(level)} at most, below {OLDEST}'s"
    return None


def _rules_differ(candidates: tuple[str, ...]) -> str | None:
    """How the candidates' server assignor rules differ ('4.0.0: 4.0.0's; 4.0.1, 4.0.2: 4.4.0's'), None when they
    all follow the same ones."""
    by_rules: dict[str | None, list[str]] = {}
    for c in candidates:
        by_rules.setdefault(server_rules_release(c), []).append(c)
    if len(by_rules) < 2:
        return None
    return "; ".join(f"{', '.join(cs)}: " + (f"{rules}'s" if rules else "none reproduced")
                     for rules, cs in by_rules.items())


def release_from_api_versions(api_versions: Mapping[Any, Any],
                              features: Mapping[str, Any] | None = None) -> ReleaseGuess:
    """The release a broker's ApiVersions answer names. `api_versions`: {API key: (min, max)} or {key: max};
    `features`: its supported feature ranges, or kafka-python's `describe_features()` form (supported and finalized).

    An answer equal to the table's rows of some releases (the telemetry keys compared only when answered) -> those
    candidates; when supported features are given they must equal the candidates' too. Candidates whose server
    assignors follow one set of rules -> the newest of them; rules that differ (4.0.0 against 4.0.1 and 4.0.2) ->
    None, said in `basis`. An answer beyond the newest row -> the newest known release; below the oldest or unlike
    every row -> None."""
    answer = maxima(api_versions)
    supported, finalized = feature_ranges(features)
    by_api = tuple(r for r in RELEASES if _matches(answer, r))
    candidates = by_api
    if supported and by_api:
        candidates = tuple(r for r in by_api if not _feature_differences(supported, r))
        if not candidates:
            unlike = "; ".join(_feature_differences(supported, by_api[-1]))
            return ReleaseGuess(None, by_api, f"ApiVersions answers as {', '.join(by_api)}, but the supported features "
                                              f"are not theirs ({unlike}; unstable feature versions enabled?): "
                                              "not guessed")
    floor = finalized.get("metadata.version", (0, 0))[1]
    cluster = f"; the cluster runs {_mv_name(floor)}" if floor else ""
    if candidates:
        differ = _rules_differ(candidates)
        if differ:
            return ReleaseGuess(None, candidates, f"ApiVersions answers as {', '.join(candidates)} alike, whose server "
                                                  f"assignor rules differ ({differ}): not guessed; {_AMBIGUOUS_ADVICE}"
                                                  f"{cluster}")
        release = max(candidates, key=parse_release)
        alike = (f" ({', '.join(candidates)} answer alike; one set of server assignor rules)"
                 if len(candidates) > 1 else "")
        return ReleaseGuess(release, candidates, f"ApiVersions answers as {release}{alike}{cluster}")
    newer = _beyond_newest(answer, supported, finalized)
    if newer:
        return ReleaseGuess(NEWEST, (), f"a broker newer than {NEWEST}, the newest release known: {newer}; "
                                        f"judged by {NEWEST}'s rules")
    older = _below_oldest(answer, supported)
    if older:
        return ReleaseGuess(None, (), f"a broker older than {OLDEST}, the oldest release known: {older}")
    nearest = min(RELEASES[::-1], key=lambda r: len(_differences(answer, API_MAXIMA[r])))
    diff = _differences(answer, API_MAXIMA[nearest])
    return ReleaseGuess(None, (), f"ApiVersions answers as no known release (nearest {nearest}, {len(diff)} "
                                  f"difference(s): {'; '.join(diff[:3])}{'; ...' if len(diff) > 3 else ''})")


def combined(guesses: Mapping[int, ReleaseGuess]) -> ReleaseGuess:
    """One guess for brokers that each answered (node id -> guess): their release when they all name the same one,
    else None (brokers of different releases, as in a rolling upgrade, or one that cannot tell)."""
    if not guesses:
        return ReleaseGuess(None, (), "no broker answered ApiVersions")
    if len(guesses) == 1:
        return next(iter(guesses.values()))
    releases = {g.release for g in guesses.values()}
    candidates = tuple(r for r in RELEASES if any(r in g.candidates for g in guesses.values()))
    nodes = ", ".join(str(n) for n in sorted(guesses))
    if len(releases) == 1 and None not in releases:
        first = guesses[min(guesses)]
        return ReleaseGuess(first.release, candidates, f"brokers {nodes} alike: {first.basis}")
    each = "; ".join(f"{n}: {guesses[n].release or ' or '.join(guesses[n].candidates) or 'unknown'}"
                     for n in sorted(guesses))
    return ReleaseGuess(None, candidates, f"brokers answer unlike ({each}): not guessed; {_AMBIGUOUS_ADVICE}")


def _admin(client_or_connection):
    """(kafka-python KafkaAdminClient, whether it is ours to close) of a KafkaAdminClient, a KafkaConnection
    (kafka_connection.py) or a bootstrap string."""
    if hasattr(client_or_connection, "_manager"):
        return client_or_connection, False
    from kafka.admin import KafkaAdminClient

    if hasattr(client_or_connection, "kafka_python"):
        conf = client_or_connection.kafka_python()
    elif isinstance(client_or_connection, str):
        conf = {"bootstrap_servers": client_or_connection}
    else:
        raise TypeError(f"ask_release needs a KafkaAdminClient, a KafkaConnection or a bootstrap string, "
                        f"not {type(client_or_connection).__name__}")
    conf.setdefault("client_id", "rebalance-monitor-broker-facts")
    return KafkaAdminClient(**conf), True


def _answer(response) -> tuple[dict[int, tuple[int, int]], dict[str, dict]]:
    from kafka import errors as Errors

    error = Errors.for_code(response.error_code)
    if error is not Errors.NoError:
        raise error(f"ApiVersions failed: {response}")
    api = {int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys}
    features: dict[str, dict] = {}
    for f in response.supported_features or ():
        features.setdefault(f.name, {})["supported"] = (int(f.min_version), int(f.max_version))
    for f in response.finalized_features or ():
        features.setdefault(f.name, {})["finalized"] = (int(f.min_version_level), int(f.max_version_level))
    return api, features


def ask_api_versions(client_or_connection) -> dict[int, tuple[dict[int, tuple[int, int]], dict[str, dict]]]:
    """Each broker's own ApiVersions answer, {node id: ({API key: (min, max)}, {feature: {"supported": (min, max),
    "finalized": (min, max)}})}, asked of every broker in the cluster's metadata (a broker that does not answer is
    left out, with a warning; none answering raises the last error).

    Asked with a request of our own to each broker (kafka-python 3's connection manager): the versions
    kafka-python keeps per connection may be the bootstrap broker's, clamped, and hold no features."""
    from kafka.protocol.metadata import ApiVersionsRequest

    admin, own = _admin(client_or_connection)
    manager = admin._manager
    answers, last_error = {}, None

    async def ask(node_id):
        request = ApiVersionsRequest(client_software_name=manager.config["client_software_name"],
                                     client_software_version=manager.config["client_software_version"],
                                     min_version=3)
        return await manager.send(request, node_id=node_id)

    try:
        for node_id in sorted(b.node_id for b in manager.cluster.brokers()):
            try:
                answers[node_id] = _answer(manager.run(ask, node_id))
            except Exception as e:  # one broker down (a rolling restart) leaves the others' answers
                log.warning("broker %s did not answer ApiVersions: %s", node_id, e)
                last_error = e
    finally:
        if own:
            admin.close()
    if not answers and last_error is not None:
        raise last_error
    return answers


def ask_releases(client_or_connection) -> dict[int, ReleaseGuess]:
    """Each broker's guess, {node id: ReleaseGuess}, from its own ApiVersions answer."""
    return {node: release_from_api_versions(api, features)
            for node, (api, features) in ask_api_versions(client_or_connection).items()}


def ask_release(client_or_connection) -> ReleaseGuess:
    """The brokers' release as their ApiVersions answers tell it (`combined` over every broker that answered).
    `client_or_connection`: a kafka-python KafkaAdminClient, a KafkaConnection, or a bootstrap string."""
    return combined(ask_releases(client_or_connection))
