"""The request gate's per-API rules, without a network: what reaches the handler, what the client gets back,
and that every answer encodes at the request's version."""

from __future__ import annotations

import uuid

import anyio
import pytest

from kraftwire.group.responses import heartbeat_response
from kraftwire.metadata.image import AclEntry, MetadataImage, Topic
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request, encode_response
from kraftwire.protocol.messages import describe_configs_request as dcq
from kraftwire.protocol.messages import describe_configs_response as dcr
from kraftwire.protocol.messages import describe_groups_response as dgr
from kraftwire.protocol.messages import fetch_request as fq
from kraftwire.protocol.messages import fetch_response as fr
from kraftwire.protocol.messages import list_groups_response as lgr
from kraftwire.protocol.messages import list_offsets_request as loq
from kraftwire.protocol.messages import list_offsets_response as lor
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages import offset_commit_response as ocr
from kraftwire.protocol.messages import offset_fetch_request as ofq
from kraftwire.protocol.messages import offset_fetch_response as ofr
from kraftwire.protocol.messages import produce_request as pq
from kraftwire.protocol.messages import produce_response as pr
from kraftwire.protocol.messages.delete_topics_request import DeleteTopicsRequest
from kraftwire.protocol.messages.delete_topics_response import DeletableTopicResult, DeleteTopicsResponse
from kraftwire.protocol.messages.describe_groups_request import DescribeGroupsRequest
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.protocol.messages.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kraftwire.protocol.messages.heartbeat_request import HeartbeatRequest
from kraftwire.protocol.messages.join_group_request import JoinGroupRequest
from kraftwire.protocol.messages.list_groups_request import ListGroupsRequest
from kraftwire.protocol.messages.request_header import RequestHeader
from kraftwire.protocol.messages.sync_group_request import SyncGroupRequest
from kraftwire.protocol.requests import RequestContext
from kraftwire.security.authorizer import (
    ALLOW,
    ALTER_CONFIGS,
    CLUSTER,
    DELETE,
    DENY,
    DESCRIBE,
    GROUP,
    LITERAL,
    PREFIXED,
    READ,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    AclAuthorizer,
)
from kraftwire.security.gate import RequestGate

pytestmark = pytest.mark.anyio
TOPIC_DENIED, GROUP_DENIED = Errors.TOPIC_AUTHORIZATION_FAILED, Errors.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = Errors.CLUSTER_AUTHORIZATION_FAILED
ORDERS_ID = uuid.uuid4()


def image(*acls: AclEntry) -> MetadataImage:
    return MetadataImage(acls={uuid.uuid4(): a for a in acls},
                         topics={ORDERS_ID: Topic(ORDERS_ID, "orders")}, topic_ids={"orders": ORDERS_ID})


def allow(rtype, name, op, pattern=LITERAL, principal="User:alice"):
    return AclEntry(rtype, name, pattern, principal, "*", op, ALLOW)


class Run:
    """One gated request: ``seen`` is the body the handler got (None if it was not called)."""

    def __init__(self, img: MetadataImage, respond=None):
        self.gate = RequestGate(AclAuthorizer(lambda: img.acls), lambda: img)
        self.respond = respond
        self.seen = None

    async def __call__(self, key: int, version: int, body, principal: str = "User:alice"):
        """As the node core's door applies the decision (core/api_door.py)."""
        header = RequestHeader(request_api_key=key, request_api_version=version, correlation_id=7, client_id="t")
        ctx = RequestContext("L", "SASL_PLAINTEXT", "10.0.0.1", 1234, principal)
        outcome = self.gate.check(Request(header, body), ctx)
        if outcome is not None and outcome.deny is not None:
            answer = outcome.deny
        else:
            if outcome is not None and outcome.body is not None:
                body = outcome.body
            self.seen = body
            answer = self.respond(body)
            if outcome is not None and outcome.finish is not None:
                answer = outcome.finish(answer)
        encode_response(answer, key, version, 7)   # every answer must encode at the request's version
        return answer


async def test_fetch_filters_topics_by_read_and_answers_at_once_when_nothing_is_left():
    def respond(body):
        return fr.FetchResponse(responses=[fr.FetchableTopicResponse(topic=t.topic, partitions=[
            fr.PartitionData(partition_index=0, records=b"")]) for t in body.topics])

    run = Run(image(allow(TOPIC, "orders", READ)), respond)
    body = fq.FetchRequest(replica_id=-1, topics=[fq.FetchTopic(topic="orders", partitions=[fq.FetchPartition(0)]),
                                                  fq.FetchTopic(topic="secret", partitions=[fq.FetchPartition(0)])])
    resp = await run(1, 12, body)
    assert [t.topic for t in run.seen.topics] == ["orders"]
    assert {t.topic: t.partitions[0].error_code for t in resp.responses} == {"orders": 0, "secret": TOPIC_DENIED}
    run.seen = None
    only_secret = fq.FetchRequest(replica_id=-1, max_wait_ms=30000,
                                  topics=[fq.FetchTopic(topic="secret", partitions=[fq.FetchPartition(0)])])
    resp = await run(1, 4, only_secret)
    assert run.seen is None and resp.responses[0].partitions[0].error_code == TOPIC_DENIED
    # v13+: topics by id; an unknown id goes to the handler (UNKNOWN_TOPIC_ID there)
    unknown = uuid.uuid4()
    body = fq.FetchRequest(replica_state=fq.ReplicaState(replica_id=-1), topics=[
        fq.FetchTopic(topic_id=ORDERS_ID, partitions=[fq.FetchPartition(0)]),
        fq.FetchTopic(topic_id=unknown, partitions=[fq.FetchPartition(0)])])
    run.respond = lambda b: fr.FetchResponse(responses=[])
    await run(1, 17, body)
    assert [t.topic_id for t in run.seen.topics] == [ORDERS_ID, unknown]


async def test_replica_fetch_needs_cluster_action_at_every_version():
    run = Run(image(), lambda b: fr.FetchResponse())
    body = fq.FetchRequest(replica_id=5, topics=[fq.FetchTopic(topic="__cluster_metadata",
                                                              partitions=[fq.FetchPartition(0)])])
    old = await run(1, 6, body)
    assert old.responses[0].partitions[0].error_code == TOPIC_DENIED
    new = await run(1, 12, body)
    assert new.error_code == CLUSTER_DENIED and run.seen is None


async def test_list_offsets_needs_describe_and_produce_needs_write():
    run = Run(image(allow(TOPIC, "orders", DESCRIBE)), lambda b: lor.ListOffsetsResponse(topics=[
        lor.ListOffsetsTopicResponse(t.name, [lor.ListOffsetsPartitionResponse(0)]) for t in b.topics]))
    body = loq.ListOffsetsRequest(topics=[loq.ListOffsetsTopic("orders", [loq.ListOffsetsPartition(0)]),
                                          loq.ListOffsetsTopic("secret", [loq.ListOffsetsPartition(0)])])
    resp = await run(2, 7, body)
    assert {t.name: t.partitions[0].error_code for t in resp.topics} == {"orders": 0, "secret": TOPIC_DENIED}

    run = Run(image(allow(TOPIC, "orders", WRITE)), lambda b: pr.ProduceResponse(responses=[
        pr.TopicProduceResponse(name=t.name, partition_responses=[pr.PartitionProduceResponse(0, int(Errors.INVALID_TOPIC_EXCEPTION))])
        for t in b.topic_data]))
    body = pq.ProduceRequest(acks=-1, topic_data=[pq.TopicProduceData(name="orders", partition_data=[pq.PartitionProduceData(0)]),
                                                  pq.TopicProduceData(name="secret", partition_data=[pq.PartitionProduceData(0)])])
    resp = await run(0, 9, body)
    assert {t.name: t.partition_responses[0].error_code for t in resp.responses} == {
        "orders": Errors.INVALID_TOPIC_EXCEPTION, "secret": TOPIC_DENIED}


async def test_produce_v13_names_topics_by_id():
    from kraftwire.core.produce import refuse_produce
    from kraftwire.protocol.metadata import METADATA_TOPIC_ID

    other = uuid.UUID(int=0x77)
    body = pq.ProduceRequest(acks=-1, topic_data=[pq.TopicProduceData(topic_id=METADATA_TOPIC_ID,
                                                                      partition_data=[pq.PartitionProduceData(0)]),
                                                  pq.TopicProduceData(topic_id=other,
                                                                      partition_data=[pq.PartitionProduceData(0)])])
    run = Run(image(allow(TOPIC, "orders", WRITE)), lambda b: refuse_produce(b, 13).body)
    resp = await run(0, 13, body)
    back = pr.ProduceResponse.decode(resp.encode(13), 13)
    assert {t.topic_id: t.partition_responses[0].error_code for t in back.responses} == {
        METADATA_TOPIC_ID: TOPIC_DENIED, other: Errors.UNKNOWN_TOPIC_ID}
    run = Run(image(allow(TOPIC, "__cluster_metadata", WRITE)), lambda b: refuse_produce(b, 13).body)
    resp = await run(0, 13, body)
    assert {t.topic_id: t.partition_responses[0].error_code for t in resp.responses} == {
        METADATA_TOPIC_ID: Errors.INVALID_TOPIC_EXCEPTION, other: Errors.UNKNOWN_TOPIC_ID}


async def test_delete_topics_v5_by_name_and_cluster_delete():
    run = Run(image(allow(TOPIC, "orders", DELETE)), lambda b: DeleteTopicsResponse(responses=[
        DeletableTopicResult(name=n) for n in b.topic_names]))
    resp = await run(20, 5, DeleteTopicsRequest(topic_names=["orders", "secret"]))
    assert run.seen.topic_names == ["orders"]
    assert {r.name: r.error_code for r in resp.responses} == {"orders": 0, "secret": TOPIC_DENIED}
    run = Run(image(allow(CLUSTER, "kafka-cluster", DELETE)), lambda b: DeleteTopicsResponse(responses=[]))
    await run(20, 5, DeleteTopicsRequest(topic_names=["orders", "secret"]))
    assert run.seen.topic_names == ["orders", "secret"]


async def test_configs_by_resource_type():
    def respond(b):
        return dcr.DescribeConfigsResponse(results=[dcr.DescribeConfigsResult(0, None, r.resource_type,
                                                                              r.resource_name, []) for r in b.resources])

    run = Run(image(allow(TOPIC, "orders", ALTER_CONFIGS)), respond)  # ALTER_CONFIGS implies DESCRIBE_CONFIGS
    body = dcq.DescribeConfigsRequest(resources=[dcq.DescribeConfigsResource(2, "orders", None),
                                                 dcq.DescribeConfigsResource(2, "secret", None),
                                                 dcq.DescribeConfigsResource(4, "1", None),
                                                 dcq.DescribeConfigsResource(32, "g1", None)])
    resp = await run(32, 4, body)
    assert [r.resource_name for r in run.seen.resources] == ["orders"]
    assert {r.resource_name: r.error_code for r in resp.results} == {
        "orders": 0, "secret": TOPIC_DENIED, "1": CLUSTER_DENIED, "g1": GROUP_DENIED}


async def test_group_membership_apis_need_group_read():
    run = Run(image(allow(GROUP, "app-", READ, PREFIXED)), lambda b: pytest.fail("must not reach the coordinator"))
    for key, version, body in ((11, 5, JoinGroupRequest(group_id="other", member_id="")),
                               (11, 9, JoinGroupRequest(group_id="other", member_id="")),
                               (14, 5, SyncGroupRequest(group_id="other")),
                               (12, 4, HeartbeatRequest(group_id="other"))):
        resp = await run(key, version, body)
        assert resp.error_code == GROUP_DENIED
    allowed = Run(image(allow(GROUP, "app-", READ, PREFIXED)), lambda b: heartbeat_response(4, 0))
    assert (await allowed(12, 4, HeartbeatRequest(group_id="app-1"))).error_code == 0


async def test_offset_commit_needs_group_read_and_topic_read():
    def respond(b):
        return ocr.OffsetCommitResponse(topics=[ocr.OffsetCommitResponseTopic(name=t.name, partitions=[
            ocr.OffsetCommitResponsePartition(p.partition_index, 0) for p in t.partitions]) for t in b.topics])

    run = Run(image(allow(GROUP, "g", READ), allow(TOPIC, "orders", READ)), respond)
    parts = [ocq.OffsetCommitRequestPartition(0, 5)]
    body = ocq.OffsetCommitRequest(group_id="g", topics=[ocq.OffsetCommitRequestTopic(name="orders", partitions=parts),
                                                         ocq.OffsetCommitRequestTopic(name="secret", partitions=parts)])
    resp = await run(8, 8, body)
    assert {t.name: t.partitions[0].error_code for t in resp.topics} == {"orders": 0, "secret": TOPIC_DENIED}
    body.group_id = "other"
    resp = await run(8, 8, body)
    assert {t.partitions[0].error_code for t in resp.topics} == {GROUP_DENIED}


async def test_describe_topic_partitions_needs_describe_per_topic():
    from kraftwire.protocol.messages import describe_topic_partitions_request as dtpq
    from kraftwire.protocol.messages import describe_topic_partitions_response as dtpr

    def respond(b):
        names = [t.name for t in b.topics] or ["orders", "secret"]
        return dtpr.DescribeTopicPartitionsResponse(topics=[dtpr.DescribeTopicPartitionsResponseTopic(
            name=n, topic_id=ORDERS_ID, partitions=[dtpr.DescribeTopicPartitionsResponsePartition(partition_index=0)])
            for n in names])

    run = Run(image(allow(TOPIC, "orders", DESCRIBE)), respond)
    named = await run(75, 0, dtpq.DescribeTopicPartitionsRequest(topics=[dtpq.TopicRequest("orders"),
                                                                       dtpq.TopicRequest("secret")]))
    assert [(t.name, t.error_code, len(t.partitions)) for t in named.topics] == [
        ("orders", 0, 1), ("secret", TOPIC_DENIED, 0)]
    every = await run(75, 0, dtpq.DescribeTopicPartitionsRequest(topics=[]))
    assert [t.name for t in every.topics] == ["orders"]


async def test_offset_commit_v10_authorizes_topics_by_id():
    from kraftwire.protocol.metadata import METADATA_TOPIC_ID

    def respond(b):
        return ocr.OffsetCommitResponse(topics=[ocr.OffsetCommitResponseTopic(topic_id=t.topic_id, partitions=[
            ocr.OffsetCommitResponsePartition(p.partition_index, 0) for p in t.partitions]) for t in b.topics])

    unknown = uuid.UUID(int=0x99)
    run = Run(image(allow(GROUP, "g", READ), allow(TOPIC, "orders", READ)), respond)
    parts = [ocq.OffsetCommitRequestPartition(0, 5)]
    body = ocq.OffsetCommitRequest(group_id="g", topics=[
        ocq.OffsetCommitRequestTopic(topic_id=t, partitions=parts) for t in (ORDERS_ID, METADATA_TOPIC_ID, unknown)])
    resp = await run(8, 10, body)
    back = ocr.OffsetCommitResponse.decode(resp.encode(10), 10)
    # orders allowed; the metadata topic denied; an unknown id is left to the coordinator (UNKNOWN_TOPIC_ID)
    assert {t.topic_id: t.partitions[0].error_code for t in back.topics} == {
        ORDERS_ID: 0, METADATA_TOPIC_ID: TOPIC_DENIED, unknown: 0}
    assert [t.topic_id for t in run.seen.topics] == [ORDERS_ID, unknown]


async def test_offset_fetch_single_group_and_batched():
    def respond(b):
        names = [t.name for t in b.topics] if b.topics is not None else ["orders", "secret"]
        return ofr.OffsetFetchResponse(topics=[ofr.OffsetFetchResponseTopic(n, [
            ofr.OffsetFetchResponsePartition(0, 3, -1, "", 0)]) for n in names])

    run = Run(image(allow(GROUP, "g", DESCRIBE), allow(TOPIC, "orders", DESCRIBE)), respond)
    resp = await run(9, 7, ofq.OffsetFetchRequest(group_id="g", topics=None))       # all topics: filtered
    assert [t.name for t in resp.topics] == ["orders"]
    resp = await run(9, 1, ofq.OffsetFetchRequest(group_id="x", topics=[ofq.OffsetFetchRequestTopic("orders", [0])]))
    assert resp.topics[0].partitions[0].error_code == GROUP_DENIED                   # v0-1: per partition
    resp = await run(9, 7, ofq.OffsetFetchRequest(group_id="x", topics=None))
    assert resp.error_code == GROUP_DENIED

    def respond8(b):
        return ofr.OffsetFetchResponse(groups=[ofr.OffsetFetchResponseGroup(g.group_id, [
            ofr.OffsetFetchResponseTopics(name=n, partitions=[ofr.OffsetFetchResponsePartitions(0, 3, -1, "", 0)])
            for n in ([t.name for t in g.topics] if g.topics is not None else ["orders", "secret"])], 0)
            for g in b.groups])

    run8 = Run(image(allow(GROUP, "g", DESCRIBE), allow(TOPIC, "orders", DESCRIBE)), respond8)
    body = ofq.OffsetFetchRequest(groups=[
        ofq.OffsetFetchRequestGroup("g", topics=[ofq.OffsetFetchRequestTopics(name="orders", partition_indexes=[0]),
                                                 ofq.OffsetFetchRequestTopics(name="secret", partition_indexes=[0])]),
        ofq.OffsetFetchRequestGroup("x", topics=None)])
    resp = await run8(9, 9, body)
    by = {g.group_id: g for g in resp.groups}
    assert by["x"].error_code == GROUP_DENIED
    assert {t.name: t.partitions[0].error_code for t in by["g"].topics} == {"orders": 0, "secret": TOPIC_DENIED}


async def test_find_coordinator_describe_groups_and_list_groups():
    img = image(allow(GROUP, "g", DESCRIBE), allow(TRANSACTIONAL_ID, "tx", DESCRIBE))
    run = Run(img, lambda b: FindCoordinatorResponse(coordinators=[
        Coordinator(k, 1, "h", 9092, 0, None) for k in b.coordinator_keys]))
    resp = await run(10, 4, FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "h"]))
    assert {c.key: c.error_code for c in resp.coordinators} == {"g": 0, "h": GROUP_DENIED}
    resp = await run(10, 3, FindCoordinatorRequest(key="nope", key_type=1))
    assert resp.error_code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED

    run = Run(img, lambda b: dgr.DescribeGroupsResponse(groups=[dgr.DescribedGroup(group_id=g, group_state="Empty")
                                                                for g in b.groups]))
    resp = await run(15, 5, DescribeGroupsRequest(groups=["g", "h"], include_authorized_operations=True))
    by = {g.group_id: g for g in resp.groups}
    assert by["h"].error_code == GROUP_DENIED and by["g"].authorized_operations == 1 << DESCRIBE

    run = Run(img, lambda b: lgr.ListGroupsResponse(groups=[lgr.ListedGroup("g", "consumer"),
                                                            lgr.ListedGroup("h", "consumer")]))
    resp = await run(16, 4, ListGroupsRequest())
    assert [g.group_id for g in resp.groups] == ["g"]
    resp = await run(16, 4, ListGroupsRequest(), principal="User:ops")
    assert resp.groups == []


async def test_deny_acl_beats_a_wildcard_allow_in_the_gate():
    img = image(AclEntry(TOPIC, "*", LITERAL, "User:*", "*", 2, ALLOW),
                AclEntry(TOPIC, "orders", LITERAL, "User:alice", "10.0.0.1", READ, DENY))
    run = Run(img, lambda b: lor.ListOffsetsResponse(topics=[]))
    body = fq.FetchRequest(replica_id=-1, topics=[fq.FetchTopic(topic="orders", partitions=[fq.FetchPartition(0)])])
    resp = await run(1, 12, body)
    assert resp.responses[0].partitions[0].error_code == TOPIC_DENIED
    with anyio.fail_after(1):
        resp = await run(2, 7, loq.ListOffsetsRequest(topics=[loq.ListOffsetsTopic("orders", [
            loq.ListOffsetsPartition(0)])]))
    assert resp.topics == []     # DESCRIBE still allowed: a DENY READ does not deny DESCRIBE
