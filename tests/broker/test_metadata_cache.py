"""Metadata/DescribeCluster answers from a broker image (pure): listeners, fencing, ids, errors."""

from __future__ import annotations

import uuid

from kraftwire.broker.metadata_cache import LocalView, describe_cluster_response, metadata_response
from kraftwire.metadata import EMPTY_IMAGE
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kraftwire.protocol.messages.metadata_response import MetadataResponse
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.register_broker_record import BrokerEndpoint, RegisterBrokerRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.messages.unfence_broker_record import UnfenceBrokerRecord

T1 = uuid.UUID(int=0xABC)
T2 = uuid.UUID(int=0xDEF)


def image():
    recs = []
    for bid, listeners in ((1, ["PLAINTEXT", "INTERNAL"]), (2, ["PLAINTEXT"]), (3, ["INTERNAL"]), (4, ["PLAINTEXT"])):
        recs.append(RegisterBrokerRecord(broker_id=bid, broker_epoch=bid * 10, incarnation_id=uuid.uuid4(),
                                         rack=f"r{bid}", end_points=[BrokerEndpoint(n, f"h{bid}", 9000 + bid, 0)
                                                                     for n in listeners]))
        if bid != 4:
            recs.append(UnfenceBrokerRecord(id_=bid, epoch=bid * 10))
    recs += [TopicRecord(name="orders", topic_id=T1), TopicRecord(name="__consumer_offsets", topic_id=T2)]
    recs += [PartitionRecord(partition_id=0, topic_id=T1, replicas=[1, 2], isr=[1, 2], leader=1),
             PartitionRecord(partition_id=1, topic_id=T1, replicas=[3, 1], isr=[3, 1], leader=3),
             PartitionRecord(partition_id=2, topic_id=T1, replicas=[2, 1], isr=[2, 1], leader=2, leader_epoch=5),
             PartitionRecord(partition_id=0, topic_id=T2, replicas=[1], isr=[1], leader=1)]
    recs.append(PartitionChangeRecord(partition_id=2, topic_id=T1, leader=-1, isr=[]))
    return EMPTY_IMAGE.replay_all(recs)


def local(serving=True, node_id=2):
    return LocalView(node_id=node_id, host=f"h{node_id}", port=9000 + node_id, rack=f"r{node_id}", serving=serving,
                     raft_leader_known=True, raft_epoch=7, voters=(100, 101, 102))


def md(req, version=12, serving=True, listener="PLAINTEXT", node_id=2) -> MetadataResponse:
    resp = metadata_response(req, version, image=image(), listener=listener, local=local(serving, node_id),
                             cluster_id="cid")
    resp.encode(version)  # every answer must be encodable in the asked version
    return resp


def test_all_topics_with_brokers_on_the_requests_listener():
    resp = md(MetadataRequest(topics=None))
    assert [(b.node_id, b.host, b.port, b.rack) for b in resp.brokers] == [(1, "h1", 9001, "r1"),
                                                                          (2, "h2", 9002, "r2")]
    assert resp.controller_id == 2 and resp.cluster_id == "cid"
    names = [t.name for t in resp.topics]
    assert names == ["__cluster_metadata", "__consumer_offsets", "orders"]
    internal = {t.name: t.is_internal for t in resp.topics}
    assert internal == {"__cluster_metadata": True, "__consumer_offsets": True, "orders": False}
    orders = resp.topics[2]
    assert orders.topic_id == T1
    parts = {p.partition_index: p for p in orders.partitions}
    assert (parts[0].error_code, parts[0].leader_id, parts[0].replica_nodes, parts[0].isr_nodes) == (0, 1, [1, 2], [1, 2])
    assert parts[1].error_code == Errors.LISTENER_NOT_FOUND       # broker 3 has no PLAINTEXT endpoint
    assert parts[2].error_code == Errors.LEADER_NOT_AVAILABLE and parts[2].leader_id == -1
    assert parts[2].leader_epoch == 6
    cm = resp.topics[0].partitions[0]
    assert (cm.leader_id, cm.leader_epoch) == (2, 7) and 2 in cm.replica_nodes


def test_listener_not_found_is_leader_not_available_before_v6_and_other_listeners_list_other_brokers():
    old = md(MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), version=5)
    assert {p.partition_index: p.error_code for p in old.topics[0].partitions}[1] == Errors.LEADER_NOT_AVAILABLE
    internal = md(MetadataRequest(topics=None), listener="INTERNAL", node_id=3)
    assert [b.node_id for b in internal.brokers] == [1, 3]


def test_topics_by_name_and_id_and_unknown_ones():
    resp = md(MetadataRequest(topics=[MetadataRequestTopic(name="orders"), MetadataRequestTopic(name="nope"),
                                      MetadataRequestTopic(name=None, topic_id=T2),
                                      MetadataRequestTopic(name=None, topic_id=uuid.UUID(int=5))]))
    assert [(t.name, t.error_code) for t in resp.topics] == [
        ("orders", 0), ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION), ("__consumer_offsets", 0),
        (None, Errors.UNKNOWN_TOPIC_ID)]
    v0 = md(MetadataRequest(topics=[]), version=0)
    assert len(v0.topics) == 3
    assert md(MetadataRequest(topics=[]), version=1).topics == []


def test_a_fenced_broker_answers_retriably_but_still_serves_its_metadata_log():
    resp = md(MetadataRequest(topics=None), serving=False)
    by_name = {t.name: t for t in resp.topics}
    assert by_name["orders"].error_code == Errors.LEADER_NOT_AVAILABLE and by_name["orders"].partitions == []
    assert Errors(by_name["orders"].error_code).retriable
    assert by_name["__cluster_metadata"].error_code == 0
    assert resp.controller_id == 1   # clients are pointed at a serving broker
    assert 2 in [b.node_id for b in resp.brokers]
    dc = describe_cluster_response(DescribeClusterRequest(), 1, image=image(), listener="PLAINTEXT",
                                   local=local(False), cluster_id="cid")
    assert dc.error_code == Errors.REQUEST_TIMED_OUT and Errors(dc.error_code).retriable


def test_describe_cluster_lists_live_brokers_and_refuses_controller_endpoints():
    dc = describe_cluster_response(DescribeClusterRequest(), 1, image=image(), listener="PLAINTEXT",
                                   local=local(), cluster_id="cid")
    assert (dc.error_code, dc.controller_id, dc.cluster_id) == (0, 2, "cid")
    assert [(b.broker_id, b.rack) for b in dc.brokers] == [(1, "r1"), (2, "r2")]
    dc.encode(1)
    dc = describe_cluster_response(DescribeClusterRequest(endpoint_type=2), 1, image=image(), listener="PLAINTEXT",
                                   local=local(), cluster_id="cid")
    assert dc.error_code == Errors.MISMATCHED_ENDPOINT_TYPE
    dc = describe_cluster_response(DescribeClusterRequest(endpoint_type=9), 1, image=image(), listener="PLAINTEXT",
                                   local=local(), cluster_id="cid")
    assert dc.error_code == Errors.UNSUPPORTED_ENDPOINT_TYPE


def test_describe_cluster_v2_lists_fenced_brokers_only_when_asked():
    def dc(version, **kw):
        resp = describe_cluster_response(DescribeClusterRequest(**kw), version, image=image(), listener="PLAINTEXT",
                                         local=local(), cluster_id="cid")
        back = type(resp).decode(resp.encode(version), version)
        return [(b.broker_id, b.is_fenced) for b in back.brokers]

    assert dc(2) == [(1, False), (2, False)]
    assert dc(2, include_fenced_brokers=True) == [(1, False), (2, False), (4, True)]   # 4 never unfenced
    assert dc(1, include_fenced_brokers=True) == [(1, False), (2, False)]              # no such field before v2


def test_metadata_v13_answers_with_a_top_level_error_code():
    resp = md(MetadataRequest(topics=None), version=13)
    back = MetadataResponse.decode(resp.encode(13), 13)
    assert back.error_code == 0 and [t.name for t in back.topics][0] == "__cluster_metadata"


def test_describe_topic_partitions_pages_through_every_topic_with_elrs():
    from kraftwire.broker.metadata_cache import describe_topic_partitions_response
    from kraftwire.protocol.messages import describe_topic_partitions_request as dtpq
    from kraftwire.protocol.messages.describe_topic_partitions_response import DescribeTopicPartitionsResponse

    img = image().replay(PartitionChangeRecord(partition_id=0, topic_id=T1, isr=[1], eligible_leader_replicas=[2],
                                               last_known_elr=[]))

    def page(limit, cursor=None, topics=()):
        req = dtpq.DescribeTopicPartitionsRequest(topics=[dtpq.TopicRequest(n) for n in topics],
                                                  response_partition_limit=limit, cursor=cursor)
        resp = describe_topic_partitions_response(req, image=img, listener="PLAINTEXT", local=local())
        back = DescribeTopicPartitionsResponse.decode(resp.encode(0), 0)
        got = [(t.name, [p.partition_index for p in t.partitions]) for t in back.topics]
        nxt = back.next_cursor and (back.next_cursor.topic_name, back.next_cursor.partition_index)
        return back, got, nxt

    _, got, nxt = page(2)
    assert (got, nxt) == ([("__cluster_metadata", [0]), ("__consumer_offsets", [0])], ("orders", 0))
    back, got, nxt = page(2, dtpq.Cursor("orders", 0))
    assert (got, nxt) == ([("orders", [0, 1])], ("orders", 2))
    p0 = back.topics[0].partitions[0]
    assert (p0.isr_nodes, p0.eligible_leader_replicas, p0.last_known_elr) == ([1], [2], [])
    _, got, nxt = page(2, dtpq.Cursor("orders", 2))
    assert (got, nxt) == ([("orders", [2])], None)
    back, got, _ = page(2000, topics=("orders", "nope"))
    assert [(t.name, t.error_code) for t in back.topics] == [("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION), ("orders", 0)]
    assert back.topics[1].partitions[2].error_code == Errors.LEADER_NOT_AVAILABLE
    bad, _, _ = page(10, dtpq.Cursor("other", 0), topics=("orders",))
    assert bad.topics[0].error_code == Errors.INVALID_REQUEST
