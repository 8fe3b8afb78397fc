"""The result type shared by the Kafka-native input decoders (broker coordinator logs, `__consumer_offsets`)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Decoded:
    """What one input record (a log line, or one `__consumer_offsets` record) turned into.

    * `events`: canonical event dicts (contract section 1), zero or more.
    * `rejected_reason`: set when the record looked like something this decoder handles but could not be
      decoded, e.g. `truncated:GroupMetadataValue.members[2].client_id` or `unparsed_coordinator_line`.
      The prefix before `:` is the reason class, fit for a counter label.
    * `detail`: free text for humans (never used for counting).
    * `skipped`: the record is not meant for this decoder (e.g. a log line of another broker component).
    * `record_type`: what was recognised, e.g. `OffsetCommit v3`, `GroupMetadata v4`,
      `ConsumerGroupMetadata v0`, `OffsetCommit tombstone` or `log:stabilized` -- for counting.
    """

    events: list[dict] = field(default_factory=list)
    rejected_reason: str | None = None
    detail: str = ""
    skipped: bool = False
    record_type: str | None = None

    @property
    def ok(self) -> bool:
        return self.rejected_reason is None and not self.skipped

    @property
    def reason_class(self) -> str | None:
        return None if self.rejected_reason is None else self.rejected_reason.split(":", 1)[0]
