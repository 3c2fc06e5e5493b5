"""Where each request's error response carries the error: the table behind ``error_response``.

Mirrors Kafka's ``AbstractRequest.getErrorResponse`` per API (clients/.../common/requests/*Request.java):
either a top-level ErrorCode, or one entry per entry of the request (topic, partition, resource, group,
creation, filter ...) each carrying the error. A spec maps response field names (as in the schema) to a
Python expression over ``code``, ``message``, ``version``, ``self`` (the request), ``item`` (the request
entry being mirrored) and ``R`` (the response module), or to ``Each`` (one response entry per request
entry). Fields a version does not have are skipped; wherever an ErrorCode is set to ``code`` and its
struct has an ErrorMessage in that version, the message goes there too.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Each:
    """One response entry per element of the request array ``source`` (or of the iterable ``expr``)."""

    source: str | None
    fields: dict[str, object] = field(default_factory=dict)
    expr: str | None = None
    when: str | None = None  # extra version condition (Kafka's own version switches)


@dataclass
class Spec:
    fields: dict[str, object]
    none_if: str | None = None  # Kafka sends no response at all (Produce with acks=0)


CODE = {"ErrorCode": "code"}
TOP = Spec(CODE)
NO_NODE = {"NodeId": "-1", "Host": "''", "Port": "-1"}

SPECS: dict[str, Spec] = {
    "AddRaftVoter": TOP,
    "AllocateProducerIds": TOP,
    "AssignReplicasToDirs": TOP,
    "AlterClientQuotas": Spec({"Entries": Each("Entries", {
        "Entity": Each("Entity", {"EntityType": "item.entity_type", "EntityName": "item.entity_name"}),
        **CODE})}),
    "AlterConfigs": Spec({"Responses": Each("Resources", {
        "ResourceType": "item.resource_type", "ResourceName": "item.resource_name", **CODE})}),
    "AlterPartition": TOP,
    "AlterPartitionReassignments": Spec({**CODE, "Responses": Each("Topics", {
        "Name": "item.name", "Partitions": Each("Partitions", {"PartitionIndex": "item.partition_index", **CODE})})}),
    "AlterUserScramCredentials": Spec({"Results": Each(
        None, {"User": "item", **CODE},
        expr="sorted({d.name for d in self.deletions} | {u.name for u in self.upsertions})")}),
    "ApiVersions": Spec({**CODE, "ApiKeys": (
        "[R.ApiVersion(api_key=self.API_KEY, min_version=self.MIN_VERSION, max_version=self.MAX_VERSION)]"
        " if code == 35 else []")}),  # KIP-511: UNSUPPORTED_VERSION names ApiVersions' own range
    "BeginQuorumEpoch": TOP,
    "BrokerHeartbeat": TOP,
    "BrokerRegistration": TOP,
    "ControllerRegistration": TOP,
    "CreateDelegationToken": TOP,
    "CreateAcls": Spec({"Results": Each("Creations", dict(CODE))}),
    "CreatePartitions": Spec({"Results": Each("Topics", {"Name": "item.name", **CODE})}),
    "CreateTopics": Spec({"Topics": Each("Topics", {"Name": "item.name", **CODE})}),
    "DeleteAcls": Spec({"FilterResults": Each("Filters", dict(CODE))}),
    "DeleteTopics": Spec({"Responses": [
        Each("TopicNames", {"Name": "item", **CODE}),
        Each("Topics", {"Name": "item.name", "TopicId": "item.topic_id", **CODE})]}),
    "DescribeAcls": TOP,
    "DescribeDelegationToken": TOP,
    "DescribeClientQuotas": Spec({**CODE, "Entries": "None"}),
    "DescribeCluster": TOP,
    "DescribeConfigs": Spec({"Results": Each("Resources", {
        "ResourceType": "item.resource_type", "ResourceName": "item.resource_name", **CODE})}),
    "DescribeGroups": Spec({"Groups": Each("Groups", {
        "GroupId": "item", **CODE, "GroupState": "''", "ProtocolType": "''", "ProtocolData": "''",
        "AuthorizedOperations": "-2147483648"})}),
    "DescribeQuorum": TOP,
    "RemoveRaftVoter": TOP,
    "DescribeTopicPartitions": Spec({"Topics": Each("Topics", {"Name": "item.name", **CODE, "IsInternal": "False"})}),
    "DescribeUserScramCredentials": Spec({**CODE, "Results": Each("Users", dict(CODE))}),
    "ElectLeaders": Spec({**CODE, "ReplicaElectionResults": Each("TopicPartitions", {
        "Topic": "item.topic", "PartitionResult": Each("Partitions", {"PartitionId": "item", **CODE})})}),
    "EndQuorumEpoch": TOP,
    "ExpireDelegationToken": TOP,
    "Envelope": TOP,
    "Fetch": Spec({**CODE, "SessionId": "self.session_id", "Responses": Each("Topics", {
        "Topic": "item.topic", "TopicId": "item.topic_id", "Partitions": Each("Partitions", {
            "PartitionIndex": "item.partition", **CODE, "HighWatermark": "-1"})},
        when="version < 13")}),  # 13+: the top-level code alone
    "FetchSnapshot": TOP,
    "FindCoordinator": Spec({**CODE, **NO_NODE, "Coordinators": Each("CoordinatorKeys", {
        "Key": "item", **NO_NODE, **CODE})}),
    "Heartbeat": TOP,
    "IncrementalAlterConfigs": Spec({"Responses": Each("Resources", {
        "ResourceName": "item.resource_name", "ResourceType": "item.resource_type", **CODE})}),
    "InitProducerId": Spec({**CODE, "ProducerId": "-1", "ProducerEpoch": "-1"}),
    "JoinGroup": Spec({**CODE, "GenerationId": "-1", "ProtocolName": "None if version >= 7 else ''",
                       "Leader": "''", "MemberId": "''"}),
    "LeaveGroup": TOP,
    "ListConfigResources": TOP,
    "ListGroups": TOP,
    "ListPartitionReassignments": Spec({**CODE, "Topics": Each("Topics", {
        "Name": "item.name", "Partitions": Each("PartitionIndexes", {"PartitionIndex": "item"})})}),
    "ListOffsets": Spec({"Topics": Each("Topics", {"Name": "item.name", "Partitions": Each("Partitions", {
        "PartitionIndex": "item.partition_index", **CODE, "Offset": "-1", "Timestamp": "-1"})})}),
    "Metadata": Spec({"Topics": Each("Topics", {
        "Name": "'' if item.name is None else item.name", "TopicId": "item.topic_id", **CODE,
        "IsInternal": "False"})}),
    "OffsetCommit": Spec({"Topics": Each("Topics", {"Name": "item.name", "Partitions": Each("Partitions", {
        "PartitionIndex": "item.partition_index", **CODE})})}),
    "OffsetFetch": Spec({
        "Topics": Each("Topics", {"Name": "item.name", "Partitions": Each("PartitionIndexes", {
            "PartitionIndex": "item", "CommittedOffset": "-1", "Metadata": "''", **CODE})},
            when="version < 2"),  # 2-7: the top-level code alone
        **CODE,
        "Groups": Each("Groups", {"GroupId": "item.group_id", **CODE})}),
    "Produce": Spec({"Responses": Each("TopicData", {"Name": "item.name", "PartitionResponses": Each(
        "PartitionData", {"Index": "item.index", **CODE, "BaseOffset": "-1", "LogAppendTimeMs": "-1",
                          "LogStartOffset": "-1"})})}, none_if="self.acks == 0"),
    "RenewDelegationToken": TOP,
    "SaslAuthenticate": TOP,
    "SaslHandshake": TOP,
    "SyncGroup": TOP,
    "UnregisterBroker": TOP,
    "UpdateFeatures": TOP,
    "UpdateRaftVoter": TOP,
    "Vote": TOP,
}
