"""The configuration's value types and their checks: every key's value is converted to its declared type, or the
load fails with a `ConfigError` naming the key, what it expects and what it got (config.py declares the tree).

* a string key takes a YAML string: a number or a boolean there has been rewritten by YAML (`1.10` is 1.1, `010`
  is 8, `no` is false), a list or a mapping is a mistake; either fails, saying to quote the value;
* an integer key takes an integer (or its digits as text), never a float, boolean, list or mapping;
* a boolean key takes true/false (yes/no, 1/0 as text), a duration key `500ms`, `5s`, ... or milliseconds;
* a mapping key (`spark.conf`) takes a mapping of scalars;
* values from the environment (`RM__SECTION__KEY`) are text: read as YAML for the other types, as the text
  itself for a string key, so `RM__KAFKA__EVENTS_TOPIC=2024` is the topic "2024".
"""
from __future__ import annotations

import re
import types
import typing
from dataclasses import MISSING, field, fields, is_dataclass

import yaml

from .core.group_filter import compile_pattern


class ConfigError(ValueError):
    pass


class Duration(int):
    """Milliseconds, written in the file as `500ms`, `5s`, `10m`, `2h`, `7d` or a bare number of ms."""

    UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

    @classmethod
    def parse(cls, key: str, value) -> "Duration":
        if isinstance(value, bool):
            raise ConfigError(f"{key}: expected a duration like 500ms, 5s, 10m, 2h or 7d, got {value!r}")
        if isinstance(value, (int, float)) and value >= 0:
            return cls(int(value))
        if isinstance(value, str):
            m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*", value)
            if m:
                return cls(int(float(m.group(1)) * cls.UNITS[m.group(2) or "ms"]))
        raise ConfigError(f"{key}: expected a duration like 500ms, 5s, 10m, 2h or 7d, got {value!r}")


def group_durations(key: str, text: str | None) -> tuple:
    """((group, ms), ...) of `group=duration[,group=duration...]` (None or empty: none); a bad entry fails naming
    the key."""
    out = []
    for entry in (text or "").split(","):
        if not entry.strip():
            continue
        name, sep, value = entry.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"{key}: expected group=duration[,group=duration...] (e.g. orders=30s), got {text!r}")
        ms = Duration.parse(key, value.strip())
        if ms <= 0:
            raise ConfigError(f"{key}: the duration of {name.strip()!r} must be greater than 0")
        out.append((name.strip(), int(ms)))
    return tuple(out)


class EnvText(str):
    """A value from the environment: text, read as YAML unless the key is a string."""


def choice(*allowed, default=MISSING):
    return field(default=default, metadata={"choices": allowed})


def secret(default=None):
    return field(default=default, metadata={"secret": True})


def regex(default=None):
    """A regular expression of group names, matched against the whole name (core/group_filter.py)."""
    return field(default=default, metadata={"regex": True})


def _type_name(tp) -> str:
    return getattr(tp, "__name__", str(tp))


def _from_env(tp, text: EnvText):
    parsed = yaml.safe_load(text) if text.strip() else str(text)
    if parsed is None:
        return None
    return str(text) if tp is str else parsed


def _shown(value) -> str:
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else repr(value)


def convert(key: str, tp, value, f=None):
    """``value`` as type ``tp`` (the field ``f`` may add choices or a regex check), or ConfigError naming ``key``."""
    meta = f.metadata if f is not None else {}
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        base = next(a for a in args if a is not type(None))
        if isinstance(value, EnvText):
            value = _from_env(base, value)
        if value is None and type(None) in args:
            return None
        tp = base
    elif isinstance(value, EnvText):
        value = _from_env(tp, value)
    if "choices" in meta:
        allowed = meta["choices"]
        if isinstance(value, (list, dict)) or value not in allowed:
            shown = ", ".join("null" if a is None else str(a) for a in allowed)
            raise ConfigError(f"{key}: {_shown(value)} is not allowed; allowed values: {shown}")
        return value
    if value is None:
        raise ConfigError(f"{key}: must not be null (expected {_type_name(tp)})")
    if tp is Duration:
        return Duration.parse(key, value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.lower() in ("true", "1", "yes")
        raise ConfigError(f"{key}: expected true or false, got {_shown(value)}")
    if tp is int:
        if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{key}: expected an integer, got {_shown(value)}")
        if value < 0:
            raise ConfigError(f"{key}: must be zero or more, got {value}")
        return value
    if tp is str:
        if not isinstance(value, str):
            hint = " (quote it in the YAML file: YAML reads it as a number or a boolean)" if isinstance(
                value, (int, float)) else ""
            raise ConfigError(f"{key}: expected a string, got {_shown(value)}{hint}")
        if meta.get("regex"):
            try:
                compile_pattern(value)
            except re.error as exc:
                raise ConfigError(f"{key}: not a valid regular expression: {exc}") from None
        return str(value)
    if tp is dict or typing.get_origin(tp) is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a mapping, got {_shown(value)}")
        return {str(k): _setting(f"{key}.{k}", v) for k, v in value.items()}
    if is_dataclass(tp):
        return build(tp, value, key)
    raise ConfigError(f"{key}: unsupported type {tp}")


def _setting(key: str, value) -> str:
    """One value of a mapping of settings (spark.conf): a scalar, as Spark reads it."""
    if isinstance(value, EnvText):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConfigError(f"{key}: expected a string, number or boolean, got {_shown(value)}")


def build(cls, data, prefix: str = ""):
    """An instance of the dataclass ``cls`` from the mapping ``data`` (unknown keys fail, naming the known)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix or 'config'}: expected a mapping of keys, got {_shown(data)}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    for k in data:
        if k not in known:
            where = f"{prefix}.{k}" if prefix else str(k)
            raise ConfigError(f"{where}: unknown key; allowed keys here: {', '.join(known)}")
    kwargs = {}
    for name, f in known.items():
        key = f"{prefix}.{name}" if prefix else name
        if name in data:
            kwargs[name] = convert(key, hints[name], data[name], f)
        elif is_dataclass(hints[name]):
            kwargs[name] = build(hints[name], {}, key)
    return cls(**kwargs)
