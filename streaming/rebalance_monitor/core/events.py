"""Canonical event model, schema v1 (contract section 1).

Each event is an immutable dataclass. `parse_event` turns one record value (bytes, str or an already
decoded dict) into an event or a `Rejected` with a reason from a small closed set. The per-type field
specifications below are the single source for both the parser and the JSON Schema in
`conf/event-schema-v1.json` (see `json_schema()`).

This module is the one import of the event layer; the model is `event_model.py`, parsing `event_parsing.py`,
the JSON form and schema `event_json.py`, an event rebuilt from a value the parser has already accepted (without
checking it again) `checked_events.py`.
"""
from __future__ import annotations

from .checked_events import event_from_checked_dict, event_from_checked_text
from .event_json import event_to_dict, json_schema
from .event_model import *  # noqa: F403 (every name of the model: __all__)
from .event_model import __all__ as _model_names
from .event_parsing import (COMMON, COORDINATOR_ACTIONS, EVENT_TYPES, MEMBER_OPTIONAL, MEMBER_SPEC, SPECS,
                            loads_json, parse_event, use_fast_json)

__all__ = [*_model_names, "event_from_checked_dict", "event_from_checked_text", "event_to_dict", "json_schema",
           "COMMON", "COORDINATOR_ACTIONS", "EVENT_TYPES", "MEMBER_OPTIONAL", "MEMBER_SPEC", "SPECS", "loads_json",
           "parse_event", "use_fast_json"]
