"""The catalogue of coordinator messages the monitor reads: (kind, regular expression, handler) for every line
that means an event, and the known lines that mean none."""
from __future__ import annotations

import re

from .streams_lines import STREAMS_RULES


G = r"(?P<group>.+?)"
GEN = r"(?P<gen>-?\d+)"
TP = r"(?: \((?:__consumer_offsets)-(?P<p>\d+)\))?"
PARTITION = r"(?:\[__consumer_offsets,(?P<pa>\d+)\]|__consumer_offsets-(?P<pb>\d+))"
END = r"\.*\s*$"


def upto(stop: str) -> str:
    """Any characters up to the words `stop` (a regular expression), never across them. A classic member id is
    the client id (any characters: kafka-go's `host (github.com/segmentio/kafka-go)` has spaces and parentheses)
    and a UUID, so each pattern anchors it on the words that follow it, never on its characters; and since it
    cannot cross them, a line repeating those words costs linear time, not quadratic."""
    return rf"(?:(?!{stop}).)+"


IN_GROUP = upto(" in group ")
HAS_LEFT = upto(" has left group ")

# (kind, regex, handler name) — handlers below turn a match into events; a streams group's first (streams_lines.py:
# its lines' `[GroupId G][MemberId M]` prefix is no consumer group's `[GroupId G]`)
RULES: list[tuple[str, re.Pattern, str]] = STREAMS_RULES + [(k, re.compile(p), h) for k, p, h in [
    ("rebalance_started",
     rf"Preparing to (?:rebalance|restabilize) group (?P<group>{upto(' in state | with old generation ')})"
     rf"(?: in state (?P<state>\w+))? with old generation {GEN}{TP}(?: \(reason: (?P<reason>.*)\))?{END}", "rebalance"),
    ("assignment_received",
     rf"Assignment received from leader(?: (?P<leader>{upto(' for group ')}))? for group {G} for generation {GEN}"
     r"(?:\. The group has (?P<n>\d+) members, (?P<static>\d+) of which are static)?" + END, "completed"),
    ("stabilized", rf"Stabilized group {G} generation {GEN}{TP}(?: with (?P<n>\d+) members)?{END}", "stabilized"),
    ("member_added", rf"Pending dynamic member with id (?P<member>{upto(' joins group ')}) joins group {G} in "
                     rf"(?P<state>\w+) state\. Adding to the group now{END}", "added"),
    ("member_added", rf"Static member with groupInstanceId=(?P<inst>{upto(' and unknown ')}) and unknown member id "
                     rf"joins group {G} in (?P<state>\w+) state\. Created a new member id "
                     rf"(?P<member>{upto(' for this ')}) for this member and add(?:ed)? to the group{END}", "added"),
    ("member_failed", rf"Member (?P<member>{IN_GROUP}) in group {G} has failed, removing it from the group{END}",
     "member_failed"),
    ("pending_member_expired", rf"Pending member (?P<member>{IN_GROUP}) in group {G} has been removed after session "
                               rf"timeout expiration{END}", "pending_expired"),
    ("member_left", rf"Member (?P<mm>MemberMetadata\(.*\)) has left group {G} through explicit `LeaveGroup`"
                    rf"(?: request|; client reason: (?P<reason>.*?))?\s*$", "left_metadata"),
    ("member_left", rf"Member\[group\.instance\.id (?P<inst>{upto(', member.id ')}), member\.id "
                    rf"(?P<member>{upto('] in group ')})\] in group {G} has left, removing it from the group{END}",
     "left"),
    ("member_left", rf"Member (?P<member>{IN_GROUP}) in group {G} has left, removing it from the group{END}", "left"),
    ("member_left", rf"Pending member (?P<member>{upto(' is leaving ')}) is leaving group {G}{END}", "left"),
    ("member_left", rf"Pending member with memberId=(?P<member>{HAS_LEFT}) has left group {G} through explicit "
                    rf"`LeaveGroup` request{END}", "left"),
    ("member_left", rf"\[Group (?P<group>.+?)\] (?:Dynamic |Pending )?[Mm]ember (?P<member>{HAS_LEFT}) has left "
                    rf"group through explicit `LeaveGroup` request(?:; client reason: (?P<reason>.*?))?\s*$", "left"),
    ("member_left", rf"\[Group (?P<group>.+?)\] Static [Mm]ember (?P<member>{upto(' with instance id ')}) with "
                    rf"instance id (?P<inst>{HAS_LEFT}) has left group through explicit `LeaveGroup` request"
                    rf"(?:; client reason: (?P<reason>.*?))?\s*$", "left"),
    ("static_member_replaced",
     rf"Static member (?P<inst>{upto(' of group ')}) of group (?P<group>{upto(' with unknown ')}) with unknown member "
     rf"id rejoins, assigning new member id (?P<new>{upto(', while old ')}), while old member id "
     rf"(?P<old>{upto(' will be removed')}) will be removed{END}", "static_replaced"),
    ("static_member_replaced",
     rf"Static member with groupInstanceId=(?P<inst>{upto(' and unknown ')}) and unknown member id joins group {G} in "
     rf"(?P<state>\w+) state\. Replacing previously mapped member (?P<old>{upto(' with this ')}) with this "
     rf"groupInstanceId{END}", "static_replaced"),
    ("static_member_replaced",
     r"\[GroupId (?P<group>.+?)\] Static member with instance id (?P<inst>\S+) re-joins the (?:consumer|streams) "
     r"group(?: using the \w+ protocol)?\. Created a new member (?P<new>\S+) to replace the existing member "
     rf"(?P<old>\S+?){END}", "static_replaced"),
    ("static_member_replaced_no_group",
     r"Static member (?P<inst>\S+) with unknown member id rejoins, assigning new member id (?P<new>\S+), "
     rf"while old member (?P<old>\S+) will be removed{END}", "none"),
    ("join_timeout", rf"Group {G} removed dynamic members who haven't joined: (?P<set>.*?){END}", "join_timeout"),
    ("sync_timeout", rf"Group {G} removed members who haven't sent their sync requests?: (?P<set>.*?){END}",
     "sync_timeout"),
    ("group_empty", rf"Group {G} with generation {GEN} is now empty{TP}{END}", "empty"),
    ("group_dead", rf"Group {G} generation {GEN} is dead and removed{END}", "deleted"),
    ("group_dead", rf"Group {G} transitioned to Dead in generation {GEN}{END}", "deleted"),
    ("groups_deleted", r"The following groups were deleted: (?P<groups>.*?)\. A total of \d+ offsets were removed"
                       + END, "groups_deleted"),
    ("groups_deleted", rf"The following groups were deleted: (?P<groups>.*?){END}", "groups_deleted"),
    ("coordinator_elected", r"Elected as the group coordinator for partition (?P<p>\d+)(?: in epoch (?P<e>-?\d+))?"
                            + END, "elected"),
    ("coordinator_resigned", r"Resign(?:ed|ing) as the group coordinator for partition (?P<p>\d+)"
                             rf"(?: in epoch (?P<e>-?\d+|\S+))?{END}", "resigned"),
    ("partition_loading", rf"Scheduling loading of (?:offsets and group )?metadata from {PARTITION}"
                          rf"(?: (?:for|with) epoch (?P<e>-?\d+))?{END}", "elected"),
    ("partition_loading", rf"^Loading offsets and group metadata from {PARTITION}{END}", "elected"),
    # 4.x: the new coordinator logs no election or loading line at INFO; a group loaded from its
    # __consumer_offsets partition (the line's prefix names it) proves this broker took the partition over
    ("group_loaded", rf"^Loaded (?:consumer|classic|share|streams) group {G} with -?\d+ members{END}", "loaded"),
    ("partition_unloading", rf"Scheduling unloading of (?:offsets and group )?metadata (?:from|for) {PARTITION}"
                            rf"(?: (?:for|with) epoch (?P<e>.*?))?{END}", "resigned"),
    ("partition_unloading", rf"Removed \d+ cached groups for {PARTITION} on follower transition{END}", "resigned"),
    # KIP-848 (consumer / share / streams groups)
    ("epoch_bumped", r"\[GroupId (?P<group>.+?)\] Bumped group epoch to (?P<epoch>-?\d+)"
                     rf"(?: with metadata hash (?P<hash>-?\d+))?{END}", "epoch_bumped"),
    ("target_assignment", r"\[GroupId (?P<group>.+?)\] Computed a new target assignment for epoch (?P<epoch>-?\d+) "
                          r"with '(?P<assignor>[^']*)' assignor in (?P<ms>\d+) ?ms(?::.*)?" + END, "target"),
    ("member_fenced", r"\[GroupId (?P<group>.+?)\] Member (?P<member>\S+) fenced from the group because "
                      rf"(?P<reason>.*?){END}", "fenced"),
    # KIP-932: a share member's new assignment (GroupMetadataManager.maybeReconcile of a share group: no revoked
    # partitions, a consumer member's line names them) -> its sync at that epoch
    ("share_member_assignment", r"\[GroupId (?P<group>.+?)\] Member (?P<member>\S+) new assignment state: "
                                r"epoch=(?P<epoch>-?\d+), previousEpoch=-?\d+, state=(?P<state>\w+), "
                                rf"assignedPartitions=\[(?P<parts>[^\]]*)\]{END}", "share_assignment"),
    ("member_left", r"\[GroupId (?P<group>.+?)\] Member (?P<member>\S+) left the (?:consumer|share|streams) group"
                    + END, "left"),
    ("member_left", r"\[GroupId (?P<group>.+?)\] Static [Mm]ember (?P<member>\S+) with instance id (?P<inst>\S+) "
                    rf"left the (?:consumer|streams) group{END}", "left"),
    ("member_joined", r"\[GroupId (?P<group>.+?)\] (?:Static )?[Mm]ember (?P<member>\S+)(?: with instance id "
                      r"(?P<inst>\S+))? joins the (?P<kind>consumer|share|streams) group(?: using the (?P<proto>\w+) "
                      rf"protocol)?{END}", "joined"),
]]

# Coordinator messages that carry no rebalance event: recognised and counted only.
KNOWN_NO_EVENT = [re.compile(p) for p in [
    r"^(?:Starting up|Startup complete|Shutting down|Shutdown complete)\.?$",
    r"(?:Dynamic|Static) [Mm]ember (?:with )?.*unknown member id (?:joins|rejoins)",
    r"Adding new static member .+ to group",
    r"Static member .*(?:will not trigger|joins during)",
    r"Request memberId=.+ for static member with groupInstanceId=.* is fenced by",
    r"(?:Un)?[Ll]oading group metadata for .* with generation -?\d+",
    r"\[GroupId=.*\] Unload(?:ed|ing) group metadata for (?:group epoch|generation)",
    r"Finished (?:un)?loading ",
    r"(?:Already loading|Not loading|Not removing|Offset load from|Attempted to load) ",
    r"Removed -?\d+ (?:expired offsets|offsets associated|cached offsets)",
    r"The following offsets of the group .* were deleted",
    r"could not complete rebalance because no members rejoined",
    r"Attempt to add rejoining member",
    r"(?:Setting|Sending) empty assignments? ",
    r"Failed to (?:write empty metadata|persist metadata)",
    r"Received (?:unexpected )?notification of (?:heartbeat|sync) expiration",
    r"Member id .+ was not found in .* during heartbeat",
    r"Member .+ has already been removed from the group",
    r"Group leader \[memberId: .*\] failed to join before the rebalance timeout",
    r"Group .* is dead, skipping rebalance stage",
    r"\[GroupId .*\] (?:Computed new subscription metadata|Computed new metadata hash: -?\d+"
    r"|Member \S+ updated its subscribed topics"
    r"|Member \S+ new assignment state|Member \S+ transitioned from|Dynamic member with unknown member id"
    r"|Static member \S+ with instance id \S+ (?:cannot join|is fenced)"
    r"|Static Member \S+ with instance id \S+ temporarily left|Creating a simple consumer group"
    r"|Could not fence|Received .*)",
    r"Cannot (?:downgrade|upgrade) ",
    r"Generated \d+ tombstone records",
    r"Skipped the materialization",
    r"has received offset commits from consumers as well as transactional producers",
    r"Loaded (?:offsets and group )?metadata from .* with buffer larger",
    r"Unknown (?:message key|record type)",
    r"is no longer a coordinator for the group",
    r"has moved away from \d+ after transaction marker",
    r"(?:Started unloading|Ignored (?:load completion|loading|unloading)|The coordinator .* is already"
    r"|Closing coordinator runtime|Coordinator runtime (?:closed|is already)|The write event |Failed to enqueue)",
    r"Group coordinator is already ",
    r"Static member .* loaded with member id .+ at generation -?\d+",
    r"Loading group metadata for .* with generation|Group .* is over capacity",
    # a share group's share-partition state (KIP-932): its topics initialised or deleted, not its membership
    r"Existing deleting entries found in share group |Initializing topic .+ for share group .+ found in deleting "
    r"state|Some topics for share group id .+ were not found in the metadata image",
]]
