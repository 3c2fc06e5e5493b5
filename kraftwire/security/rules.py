"""Per-API authorization rules (what Kafka's KafkaApis / ControllerApis require), used by ``RequestGate``.

Inter-node APIs need CLUSTER_ACTION on the cluster; admin writes need CREATE/DELETE/ALTER/ALTER_CONFIGS
on the topic or cluster; reads need READ or DESCRIBE on the topic; group APIs need READ or DESCRIBE
on the group. Each rule returns None (allowed as is) or an ``Outcome``.
"""

from __future__ import annotations

from typing import Any

from kraftwire.group.responses import (
    find_coordinator_response,
    heartbeat_response,
    join_response,
    leave_response,
    sync_response,
)
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_configs_response as acr
from kraftwire.protocol.messages import create_partitions_response as cpr
from kraftwire.protocol.messages import create_topics_response as ctr
from kraftwire.protocol.messages import delete_topics_response as dtr
from kraftwire.protocol.messages import describe_configs_response as dcr
from kraftwire.protocol.messages import describe_groups_response as dgr
from kraftwire.protocol.messages import fetch_response as fr
from kraftwire.protocol.messages import incremental_alter_configs_response as iacr
from kraftwire.protocol.messages import list_offsets_response as lor
from kraftwire.protocol.messages import offset_commit_response as ocr
from kraftwire.protocol.messages import offset_fetch_response as ofr
from kraftwire.protocol.messages.begin_quorum_epoch_response import BeginQuorumEpochResponse
from kraftwire.protocol.messages.describe_quorum_response import DescribeQuorumResponse
from kraftwire.protocol.messages.end_quorum_epoch_response import EndQuorumEpochResponse
from kraftwire.protocol.messages.envelope_response import EnvelopeResponse
from kraftwire.protocol.messages.fetch_snapshot_response import FetchSnapshotResponse
from kraftwire.protocol.messages.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kraftwire.protocol.messages.metadata_response import MetadataResponseTopic
from kraftwire.protocol.messages.offset_commit_response import OffsetCommitResponse
from kraftwire.protocol.messages.vote_response import VoteResponse
from kraftwire.protocol.runtime import replace
from kraftwire.security.access import Access, Outcome, Rule
from kraftwire.security.authorizer import (
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_ACTION,
    CLUSTER_NAME,
    CREATE,
    CREATE_TOKENS,
    DELETE,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    USER,
    WRITE,
)

TOPIC_DENIED = int(Errors.TOPIC_AUTHORIZATION_FAILED)
GROUP_DENIED = int(Errors.GROUP_AUTHORIZATION_FAILED)
CLUSTER_DENIED = int(Errors.CLUSTER_AUTHORIZATION_FAILED)
TXN_DENIED = int(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
CLUSTER_MESSAGE = "Cluster authorization failed."
INT32_MIN = -2147483648


# -- whole-request cluster checks ---------------------------------------------------------------
def _controller_api(operation: int) -> Rule:
    """A controller API that needs ``operation`` on the cluster (error response from the controller's table)."""
    def rule(a: Access, body: Any, version: int) -> Outcome | None:
        if a.cluster(operation):
            return None
        return Outcome(deny=body.error_response(version, Errors.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_MESSAGE))
    return rule


def _cluster_action(make: Any) -> Rule:
    def rule(a: Access, body: Any, version: int) -> Outcome | None:
        return None if a.cluster(CLUSTER_ACTION) else Outcome(deny=make(error_code=CLUSTER_DENIED))
    return rule


def _describe_quorum(a: Access, body: Any, version: int) -> Outcome | None:
    return None if a.cluster(DESCRIBE) else Outcome(deny=DescribeQuorumResponse(error_code=CLUSTER_DENIED))


def _envelope(a: Access, body: Any, version: int) -> Outcome | None:
    if a.cluster(CLUSTER_ACTION):
        return None
    return Outcome(deny=EnvelopeResponse(response_data=None, error_code=CLUSTER_DENIED))


# -- delegation tokens ----------------------------------------------------------------------------
def _create_token(a: Access, body: Any, version: int) -> Outcome | None:
    """A token for someone else needs CREATE_TOKENS on that user (a token for oneself needs nothing)."""
    owner = f"{body.owner_principal_type}:{body.owner_principal_name}" if body.owner_principal_name else None
    if owner is None or owner == a.principal or a.allowed(CREATE_TOKENS, USER, owner):
        return None
    return Outcome(deny=body.error_response(version, Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED))


def _token_holder(a: Access, body: Any, version: int) -> Outcome | None:
    """Renew/Expire/Describe need no ACL: who may act on a token is the token's own business."""
    return None


# -- reads ----------------------------------------------------------------------------------------
def _fetch_partition_error(index: int, version: int, code: int) -> fr.PartitionData:
    return fr.PartitionData(partition_index=index, error_code=code, high_watermark=-1, last_stable_offset=-1,
                            log_start_offset=-1, aborted_transactions=None if version >= 4 else [], records=b"")


def _fetch(a: Access, body: Any, version: int) -> Outcome | None:
    replica = body.replica_state.replica_id if version >= 15 else body.replica_id
    if replica >= 0:    # a replica (voter or observer) fetching the metadata log
        if a.cluster(CLUSTER_ACTION):
            return None
        if version >= 7:
            return Outcome(deny=fr.FetchResponse(error_code=CLUSTER_DENIED, session_id=0, responses=[]))
        return Outcome(deny=fr.FetchResponse(responses=[
            fr.FetchableTopicResponse(topic=t.topic, partitions=[
                _fetch_partition_error(p.partition, version, TOPIC_DENIED) for p in t.partitions])
            for t in body.topics]))

    def ok(t: Any) -> bool:
        name = t.topic if version < 13 else a.topic_name(t.topic_id)
        return name is None or a.topic(READ, name)

    kept, denied = a.partition(body.topics, ok)
    if not denied:
        return None
    errors = [fr.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=[
        _fetch_partition_error(p.partition, version, TOPIC_DENIED) for p in t.partitions]) for t in denied]
    if not kept:
        return Outcome(deny=fr.FetchResponse(session_id=0, responses=errors))
    return Outcome(body=replace(body, topics=kept), finish=lambda r: _extend(r, "responses", errors))


def _list_offsets(a: Access, body: Any, version: int) -> Outcome | None:
    kept, denied = a.partition(body.topics, lambda t: a.topic(DESCRIBE, t.name))
    if not denied:
        return None
    errors = [lor.ListOffsetsTopicResponse(name=t.name, partitions=[
        lor.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=TOPIC_DENIED)
        for p in t.partitions]) for t in denied]
    if not kept:
        return Outcome(deny=lor.ListOffsetsResponse(topics=errors))
    return Outcome(body=replace(body, topics=kept), finish=lambda r: _extend(r, "topics", errors))


def _metadata(a: Access, body: Any, version: int) -> Outcome:
    requested = body.topics
    by_name = {t.name for t in requested or () if t.name is not None}
    topic_ops = version >= 8 and body.include_topic_authorized_operations
    cluster_ops = 8 <= version <= 10 and body.include_cluster_authorized_operations

    def finish(resp: Any) -> Any:
        topics = []
        for t in resp.topics:
            if t.name is None or a.topic(DESCRIBE, t.name, log=requested is not None):
                if topic_ops and t.name is not None:
                    t.topic_authorized_operations = a.operations(TOPIC, t.name)
                topics.append(t)
            elif requested is not None:
                named = t.name in by_name
                topics.append(MetadataResponseTopic(error_code=TOPIC_DENIED, name=t.name if named else None,
                                                    topic_id=t.topic_id if not named and version >= 10
                                                    else type(t.topic_id)(int=0), is_internal=False,
                                                    partitions=[]))
        resp.topics = topics
        if cluster_ops:
            resp.cluster_authorized_operations = a.operations(CLUSTER, CLUSTER_NAME)
        return resp

    return Outcome(finish=finish)


def _describe_cluster(a: Access, body: Any, version: int) -> Outcome | None:
    if not body.include_cluster_authorized_operations:
        return None

    def finish(resp: Any) -> Any:
        resp.cluster_authorized_operations = a.operations(CLUSTER, CLUSTER_NAME)
        return resp

    return Outcome(finish=finish)


def _produce(a: Access, body: Any, version: int) -> Outcome | None:
    def key(t: Any) -> Any:
        return t.name if version < 13 else t.topic_id

    def name(t: Any) -> str | None:
        return t.name if version < 13 else a.topic_name(t.topic_id)

    denied = {key(t) for t in body.topic_data if (n := name(t)) is not None and not a.topic(WRITE, n)}
    if not denied:
        return None

    def finish(resp: Any) -> Any:
        for t in resp.responses:
            if key(t) in denied:
                for p in t.partition_responses:
                    p.error_code, p.error_message = TOPIC_DENIED, None
        return resp

    return Outcome(finish=finish)


# -- admin writes -----------------------------------------------------------------------------
def _create_topics(a: Access, body: Any, version: int) -> Outcome | None:
    if a.cluster(CREATE, log=False):
        kept, denied = list(body.topics), []
    else:
        kept, denied = a.partition(body.topics, lambda t: a.topic(CREATE, t.name))
    errors = [ctr.CreatableTopicResult(name=t.name, error_code=TOPIC_DENIED, error_message="Authorization failed.")
              for t in denied]
    if not kept:
        return Outcome(deny=ctr.CreateTopicsResponse(topics=errors))

    def finish(resp: Any) -> Any:
        if version >= 5:
            for t in resp.topics:
                if t.error_code == 0 and not a.topic(DESCRIBE_CONFIGS, t.name, log=False):
                    t.topic_config_error_code, t.configs = TOPIC_DENIED, []
                    t.num_partitions = t.replication_factor = -1
        resp.topics.extend(errors)
        return resp

    return Outcome(body=replace(body, topics=kept) if denied else body, finish=finish)


def _delete_topics(a: Access, body: Any, version: int) -> Outcome | None:
    if a.cluster(DELETE, log=False):
        return None
    if version < 6:
        kept, denied = a.partition(body.topic_names, lambda n: a.topic(DELETE, n))
        errors = [dtr.DeletableTopicResult(name=n, error_code=TOPIC_DENIED) for n in denied]
        new_body = replace(body, topic_names=kept)
    else:
        kept, errors = [], []
        for t in body.topics:
            name = t.name or a.topic_name(t.topic_id)
            if name is None or a.topic(DELETE, name):
                kept.append(t)
                continue
            shown = t.name if t.name else (name if a.topic(DESCRIBE, name, log=False) else None)
            errors.append(dtr.DeletableTopicResult(name=shown, topic_id=t.topic_id, error_code=TOPIC_DENIED))
        new_body = replace(body, topics=kept)
    if not errors:
        return None
    if not kept:
        return Outcome(deny=dtr.DeleteTopicsResponse(responses=errors))
    return Outcome(body=new_body, finish=lambda r: _extend(r, "responses", errors))


def _create_partitions(a: Access, body: Any, version: int) -> Outcome | None:
    kept, denied = a.partition(body.topics, lambda t: a.topic(ALTER, t.name))
    if not denied:
        return None
    errors = [cpr.CreatePartitionsTopicResult(t.name, TOPIC_DENIED, None) for t in denied]
    if not kept:
        return Outcome(deny=cpr.CreatePartitionsResponse(results=errors))
    return Outcome(body=replace(body, topics=kept), finish=lambda r: _extend(r, "results", errors))


def _config_error(a: Access, operation: int, resource_type: int, name: str) -> int:
    """0 when allowed, else the error code for this config resource type."""
    if resource_type == 2:                  # TOPIC
        return 0 if a.topic(operation, name) else TOPIC_DENIED
    if resource_type in (4, 8, 16):         # BROKER, BROKER_LOGGER, CLIENT_METRICS
        return 0 if a.cluster(operation) else CLUSTER_DENIED
    if resource_type == 32:                 # GROUP
        return 0 if a.allowed(operation, GROUP, name) else GROUP_DENIED
    return 0                                # the handler rejects unknown types


def _configs(operation: int, make_error: Any, make_response: Any, items: str) -> Rule:
    def rule(a: Access, body: Any, version: int) -> Outcome | None:
        kept, errors = [], []
        for r in body.resources:
            code = _config_error(a, operation, r.resource_type, r.resource_name)
            if code:
                errors.append(make_error(code, r))
            else:
                kept.append(r)
        if not errors:
            return None
        if not kept:
            return Outcome(deny=make_response(errors))
        return Outcome(body=replace(body, resources=kept), finish=lambda resp: _extend(resp, items, errors))
    return rule


# -- groups ---------------------------------------------------------------------------------------
def _group_read(deny: Any) -> Rule:
    def rule(a: Access, body: Any, version: int) -> Outcome | None:
        return None if a.allowed(READ, GROUP, body.group_id) else Outcome(deny=deny(version))
    return rule


def _topic_ok(a: Access, op: int, t: Any, version: int, ids_from: int) -> bool:
    """``t`` named by name, or by id from ``ids_from`` (an id nobody knows passes: the handler answers
    UNKNOWN_TOPIC_ID, as Kafka resolves ids before it authorizes)."""
    name = t.name if version < ids_from else a.topic_name(t.topic_id)
    return name is None or a.topic(op, name)


def _describe_topic_partitions(a: Access, body: Any, version: int) -> Outcome:
    """DESCRIBE on each topic: asked by name, a denied one answers TOPIC_AUTHORIZATION_FAILED; asked for all,
    denied ones are left out (Kafka's DescribeTopicPartitionsRequestHandler)."""
    asked = bool(body.topics)

    def finish(resp: Any) -> Any:
        topics = []
        for t in resp.topics:
            if t.error_code == 0 and not a.topic(DESCRIBE, t.name, log=asked):
                if not asked:
                    continue
                t.error_code, t.partitions, t.topic_id = TOPIC_DENIED, [], type(t.topic_id)(int=0)
            topics.append(t)
        resp.topics = topics
        return resp

    return Outcome(finish=finish)


def _offset_commit(a: Access, body: Any, version: int) -> Outcome | None:
    def errors_for(topics: list[Any], code: int) -> list[Any]:
        return [ocr.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            ocr.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions]) for t in topics]

    if not a.allowed(READ, GROUP, body.group_id):
        return Outcome(deny=OffsetCommitResponse(topics=errors_for(body.topics, GROUP_DENIED)))
    kept, denied = a.partition(body.topics, lambda t: _topic_ok(a, READ, t, version, 10))
    if not denied:
        return None
    errors = errors_for(denied, TOPIC_DENIED)
    if not kept:
        return Outcome(deny=OffsetCommitResponse(topics=errors))
    return Outcome(body=replace(body, topics=kept), finish=lambda r: _extend(r, "topics", errors))


def _offset_fetch(a: Access, body: Any, version: int) -> Outcome | None:
    if version >= 8:
        return _offset_fetch_groups(a, body, version)
    topic_cls, part_cls = ofr.OffsetFetchResponseTopic, ofr.OffsetFetchResponsePartition

    def errors_for(topics: list[Any], code: int) -> list[Any]:
        return [topic_cls(name=t.name, partitions=[part_cls(partition_index=i, committed_offset=-1, metadata="",
                                                            error_code=code) for i in t.partition_indexes])
                for t in topics]

    if not a.allowed(DESCRIBE, GROUP, body.group_id):
        if version >= 2:
            return Outcome(deny=ofr.OffsetFetchResponse(error_code=GROUP_DENIED, topics=[]))
        return Outcome(deny=ofr.OffsetFetchResponse(topics=errors_for(body.topics or [], GROUP_DENIED)))
    if body.topics is None:
        return Outcome(finish=lambda r: _filter_topics(a, r, "topics"))
    kept, denied = a.partition(body.topics, lambda t: a.topic(DESCRIBE, t.name))
    if not denied:
        return None
    errors = errors_for(denied, TOPIC_DENIED)
    if not kept:
        return Outcome(deny=ofr.OffsetFetchResponse(topics=errors))
    return Outcome(body=replace(body, topics=kept), finish=lambda r: _extend(r, "topics", errors))


def _offset_fetch_groups(a: Access, body: Any, version: int) -> Outcome | None:
    kept_groups, group_errors = [], []
    topic_errors: dict[str, list[Any]] = {}
    changed = False
    for g in body.groups:
        if not a.allowed(DESCRIBE, GROUP, g.group_id):
            group_errors.append(ofr.OffsetFetchResponseGroup(group_id=g.group_id, topics=[], error_code=GROUP_DENIED))
            changed = True
            continue
        if g.topics is not None:
            kept, denied = a.partition(g.topics, lambda t: _topic_ok(a, DESCRIBE, t, version, 10))
            if denied:
                changed = True
                g = replace(g, topics=kept)
                topic_errors[g.group_id] = [ofr.OffsetFetchResponseTopics(name=t.name, topic_id=t.topic_id, partitions=[
                    ofr.OffsetFetchResponsePartitions(partition_index=i, committed_offset=-1, metadata="",
                                                      error_code=TOPIC_DENIED) for i in t.partition_indexes])
                    for t in denied]
        kept_groups.append(g)
    any_all_topics = any(g.topics is None for g in kept_groups)
    if not changed and not any_all_topics:
        return None
    if not kept_groups:
        return Outcome(deny=ofr.OffsetFetchResponse(groups=group_errors))
    asked_all = {g.group_id for g in kept_groups if g.topics is None}

    def finish(resp: Any) -> Any:
        for g in resp.groups:
            if g.group_id in asked_all:
                _filter_topics(a, g, "topics")
            g.topics.extend(topic_errors.get(g.group_id, []))
        resp.groups.extend(group_errors)
        return resp

    return Outcome(body=replace(body, groups=kept_groups), finish=finish)


def _find_coordinator(a: Access, body: Any, version: int) -> Outcome | None:
    if body.key_type == 1:
        rtype, code = TRANSACTIONAL_ID, TXN_DENIED
    else:
        rtype, code = GROUP, GROUP_DENIED
    if version < 4:
        if a.allowed(DESCRIBE, rtype, body.key):
            return None
        return Outcome(deny=find_coordinator_response(version, [(body.key, code, -1, "", -1)]))
    kept, denied = a.partition(body.coordinator_keys, lambda k: a.allowed(DESCRIBE, rtype, k))
    if not denied:
        return None
    errors = [Coordinator(key=k, node_id=-1, host="", port=-1, error_code=code, error_message=None) for k in denied]
    if not kept:
        return Outcome(deny=FindCoordinatorResponse(coordinators=errors))
    return Outcome(body=replace(body, coordinator_keys=kept), finish=lambda r: _extend(r, "coordinators", errors))


def _describe_groups(a: Access, body: Any, version: int) -> Outcome | None:
    kept, denied = a.partition(body.groups, lambda g: a.allowed(DESCRIBE, GROUP, g))
    errors = [dgr.DescribedGroup(error_code=GROUP_DENIED, group_id=g) for g in denied]
    with_ops = version >= 3 and body.include_authorized_operations
    if not kept:
        return Outcome(deny=dgr.DescribeGroupsResponse(groups=errors))

    def finish(resp: Any) -> Any:
        if with_ops:
            for g in resp.groups:
                g.authorized_operations = a.operations(GROUP, g.group_id)
        resp.groups.extend(errors)
        return resp

    return Outcome(body=replace(body, groups=kept) if denied else body, finish=finish)


def _list_groups(a: Access, body: Any, version: int) -> Outcome | None:
    if a.cluster(DESCRIBE, log=False):
        return None

    def finish(resp: Any) -> Any:
        resp.groups = [g for g in resp.groups if a.allowed(DESCRIBE, GROUP, g.group_id, log=False)]
        return resp

    return Outcome(finish=finish)


# -- helpers --------------------------------------------------------------------------------------
def _extend(resp: Any, attr: str, extra: list[Any]) -> Any:
    getattr(resp, attr).extend(extra)
    return resp


def _filter_topics(a: Access, holder: Any, attr: str) -> Any:
    def name(t: Any) -> str | None:
        return t.name or a.topic_name(getattr(t, "topic_id", None))

    setattr(holder, attr, [t for t in getattr(holder, attr) if (n := name(t)) is None or a.topic(DESCRIBE, n, log=False)])
    return holder


def _open(a: Access, body: Any, version: int) -> Outcome | None:
    """Needs no authorization (Kafka's ApiVersions: any connection may ask)."""
    return None


RULES: dict[int, Rule] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.LIST_CONFIG_RESOURCES: _controller_api(DESCRIBE_CONFIGS),   # a broker's, from its image
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.JOIN_GROUP: _group_read(lambda v: join_response(v, GROUP_DENIED, "")),
    ApiKey.HEARTBEAT: _group_read(lambda v: heartbeat_response(v, GROUP_DENIED)),
    ApiKey.LEAVE_GROUP: _group_read(lambda v: leave_response(v, GROUP_DENIED, [])),
    ApiKey.SYNC_GROUP: _group_read(lambda v: sync_response(v, GROUP_DENIED)),
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.API_VERSIONS: _open,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.DESCRIBE_ACLS: _controller_api(DESCRIBE),
    ApiKey.CREATE_ACLS: _controller_api(ALTER),
    ApiKey.DELETE_ACLS: _controller_api(ALTER),
    ApiKey.DESCRIBE_CONFIGS: _configs(
        DESCRIBE_CONFIGS, lambda c, r: dcr.DescribeConfigsResult(c, None, r.resource_type, r.resource_name, []),
        lambda errs: dcr.DescribeConfigsResponse(results=errs), "results"),
    ApiKey.ALTER_CONFIGS: _configs(
        ALTER_CONFIGS, lambda c, r: acr.AlterConfigsResourceResponse(c, None, r.resource_type, r.resource_name),
        lambda errs: acr.AlterConfigsResponse(responses=errs), "responses"),
    ApiKey.CREATE_PARTITIONS: _create_partitions,
    ApiKey.ELECT_LEADERS: _controller_api(ALTER),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs(
        ALTER_CONFIGS, lambda c, r: iacr.AlterConfigsResourceResponse(c, None, r.resource_type, r.resource_name),
        lambda errs: iacr.IncrementalAlterConfigsResponse(responses=errs), "responses"),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: _controller_api(ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: _controller_api(DESCRIBE),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _controller_api(DESCRIBE_CONFIGS),
    ApiKey.ALTER_CLIENT_QUOTAS: _controller_api(ALTER_CONFIGS),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _controller_api(DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _controller_api(ALTER),
    ApiKey.VOTE: _cluster_action(VoteResponse),
    ApiKey.BEGIN_QUORUM_EPOCH: _cluster_action(BeginQuorumEpochResponse),
    ApiKey.END_QUORUM_EPOCH: _cluster_action(EndQuorumEpochResponse),
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
    ApiKey.ALTER_PARTITION: _controller_api(CLUSTER_ACTION),
    ApiKey.UPDATE_FEATURES: _controller_api(ALTER),
    ApiKey.ENVELOPE: _envelope,
    ApiKey.FETCH_SNAPSHOT: _cluster_action(FetchSnapshotResponse),
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.BROKER_REGISTRATION: _controller_api(CLUSTER_ACTION),
    ApiKey.BROKER_HEARTBEAT: _controller_api(CLUSTER_ACTION),
    ApiKey.UNREGISTER_BROKER: _controller_api(ALTER),   # Kafka requires ALTER here
    ApiKey.ALLOCATE_PRODUCER_IDS: _controller_api(CLUSTER_ACTION),
    ApiKey.CONTROLLER_REGISTRATION: _controller_api(CLUSTER_ACTION),
    ApiKey.ASSIGN_REPLICAS_TO_DIRS: _controller_api(CLUSTER_ACTION),
    ApiKey.CREATE_DELEGATION_TOKEN: _create_token,
    ApiKey.RENEW_DELEGATION_TOKEN: _token_holder,      # the controller checks owner/renewers
    ApiKey.EXPIRE_DELEGATION_TOKEN: _token_holder,     # likewise
    ApiKey.DESCRIBE_DELEGATION_TOKEN: _token_holder,   # shows the caller's own tokens only
    ApiKey.ADD_RAFT_VOTER: _controller_api(ALTER),   # Kafka: ALTER on the cluster
    ApiKey.REMOVE_RAFT_VOTER: _controller_api(ALTER),
    ApiKey.UPDATE_RAFT_VOTER: _controller_api(CLUSTER_ACTION),   # voter to leader
}
