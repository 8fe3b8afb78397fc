package rebalancemonitor.telemetry;

/** Who a snapshot is about: the group and what is known of the member (null where unknown). */
public final class Member {
    public final String group;
    /** "" when the source cannot name it (the client reporter; a push before the member joined). */
    public final String memberId;
    public final String groupInstanceId;
    public final String clientId;
    public final String host;

    public Member(String group, String memberId, String groupInstanceId, String clientId, String host) {
        this.group = group;
        this.memberId = memberId == null ? "" : memberId;
        this.groupInstanceId = groupInstanceId == null || groupInstanceId.isEmpty() ? null : groupInstanceId;
        this.clientId = clientId;
        this.host = host;
    }
}
