"""Golden bytes from Kafka's own serializers (kafka-clients 3.9) against kraftwire's generated codecs.

tests/protocol/java/Golden.java builds each message with Kafka's *Data classes and prints the bytes
Kafka writes. Here the same values are built with kraftwire's classes; for every case kraftwire must
decode Kafka's bytes to exactly those values and encode them back to exactly Kafka's bytes.
The JVM runs once per session for all cases.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from kraftwire.protocol import control, records
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_partition_request as apq
from kraftwire.protocol.messages import alter_partition_response as aps
from kraftwire.protocol.messages import api_versions_request as avq
from kraftwire.protocol.messages import api_versions_response as avs
from kraftwire.protocol.messages import begin_quorum_epoch_request as bqq
from kraftwire.protocol.messages import begin_quorum_epoch_response as bqs
from kraftwire.protocol.messages import broker_heartbeat_request as bhq
from kraftwire.protocol.messages import broker_heartbeat_response as bhs
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import broker_registration_response as brs
from kraftwire.protocol.messages import describe_quorum_request as dqq
from kraftwire.protocol.messages import describe_quorum_response as dqs
from kraftwire.protocol.messages import end_quorum_epoch_request as eqq
from kraftwire.protocol.messages import end_quorum_epoch_response as eqs
from kraftwire.protocol.messages import envelope_request as envq
from kraftwire.protocol.messages import envelope_response as envs
from kraftwire.protocol.messages import fetch_request as fq
from kraftwire.protocol.messages import fetch_response as fs
from kraftwire.protocol.messages import fetch_snapshot_request as fsq
from kraftwire.protocol.messages import fetch_snapshot_response as fss
from kraftwire.protocol.messages import k_raft_version_record as krv
from kraftwire.protocol.messages import leader_change_message as lcm
from kraftwire.protocol.messages import message_class
from kraftwire.protocol.messages import metadata_request as mq
from kraftwire.protocol.messages import metadata_response as ms
from kraftwire.protocol.messages import request_header as rqh
from kraftwire.protocol.messages import response_header as rsh
from kraftwire.protocol.messages import snapshot_footer_record as sfr
from kraftwire.protocol.messages import snapshot_header_record as shr
from kraftwire.protocol.messages import vote_request as vq
from kraftwire.protocol.messages import vote_response as vs
from kraftwire.protocol.messages import voters_record as vr

from . import kafka_java

pytestmark = pytest.mark.java


def java_uuid(msb: int, lsb: int) -> uuid.UUID:
    """The UUID Java's ``new Uuid(msb, lsb)`` denotes (two's-complement longs)."""
    return uuid.UUID(int=((msb & (1 << 64) - 1) << 64) | (lsb & (1 << 64) - 1))


U1 = java_uuid(0x0101010101010101, 0x1111111111111111)
U2 = java_uuid(0x0202020202020202, 0x2222222222222222)
U3 = java_uuid(0x0303030303030303, 0x3333333333333333)
TOPIC = java_uuid(0x7A7A7A7A00000001, 0x8000000000000042 - (1 << 64))
META = "__cluster_metadata"
CLUSTER = "golden-cluster"
TS = 1700000000123


@pytest.fixture(scope="session")
def golden() -> dict[str, bytes | str]:
    reason = kafka_java.missing_reason()
    if reason:
        print(f"\nskipping Kafka golden-bytes tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    return kafka_java.run_golden()


# -- the same values, built with kraftwire's classes (mirrors Golden.java) ---------------------------

def plain_batch_records() -> tuple[records.Record, ...]:
    return (records.Record(b"value-one", b"k1", (), 0), records.Record(b"value-two", None, (), 5),
            records.Record(None, b"k3", (), 9))


def plain_batch() -> bytes:
    return records.encode_batch(records.RecordBatch(100, 6, plain_batch_records(), base_timestamp=TS))


def fetch_request(v: int) -> Any:
    p = fq.FetchPartition(partition=0, fetch_offset=1234, partition_max_bytes=65536)
    if v >= 5:
        p.log_start_offset = 10
    if v >= 9:
        p.current_leader_epoch = 7
    if v >= 12:
        p.last_fetched_epoch = 6
    if v >= 17:
        p.replica_directory_id = U2
    t = fq.FetchTopic(partitions=[p])
    if v <= 12:
        t.topic = META
    else:
        t.topic_id = TOPIC
    d = fq.FetchRequest(max_wait_ms=500, min_bytes=1, topics=[t])
    if v >= 3:
        d.max_bytes = 1048576
    if v >= 4:
        d.isolation_level = 1
    if v >= 7:
        d.session_id, d.session_epoch = 42, 5
        f = fq.ForgottenTopic(partitions=[1, 2])
        if v <= 12:
            f.topic = "old-topic"
        else:
            f.topic_id = U3
        d.forgotten_topics_data = [f]
    if v >= 11:
        d.rack_id = "rack-a"
    if v >= 12:
        d.cluster_id = CLUSTER
    if v <= 14:
        d.replica_id = 3
    else:
        d.replica_state = fq.ReplicaState(replica_id=3, replica_epoch=77)
    return d


def fetch_response(v: int) -> Any:
    p0 = fs.PartitionData(partition_index=0, high_watermark=1000, records=plain_batch())
    if v >= 4:
        p0.last_stable_offset = 990
        p0.aborted_transactions = [fs.AbortedTransaction(producer_id=9000, first_offset=950)]
    if v >= 5:
        p0.log_start_offset = 5
    p1 = fs.PartitionData(partition_index=1, error_code=Errors.NOT_LEADER_OR_FOLLOWER, high_watermark=-1)
    if v >= 12:
        p0.diverging_epoch = fs.EpochEndOffset(epoch=4, end_offset=800)
        p0.snapshot_id = fs.SnapshotId(end_offset=700, epoch=3)
        p1.current_leader = fs.LeaderIdAndEpoch(leader_id=2, leader_epoch=9)
        p1.unknown_tagged_fields = [(5, b"\x01\x02\x03")]
    if v >= 4:
        p1.aborted_transactions = None
    t = fs.FetchableTopicResponse(partitions=[p0, p1])
    if v <= 12:
        t.topic = META
    else:
        t.topic_id = TOPIC
    d = fs.FetchResponse(responses=[t])
    if v >= 1:
        d.throttle_time_ms = 25
    if v >= 7:
        d.session_id = 42
    if v >= 16:
        d.node_endpoints = [fs.NodeEndpoint(2, "broker-2.example", 9092, "r2"),
                            fs.NodeEndpoint(3, "h3", 9093, None)]
    return d


def fetch_snapshot_request(v: int) -> Any:
    p = fsq.PartitionSnapshot(partition=0, current_leader_epoch=5, position=8192,
                              snapshot_id=fsq.SnapshotId(end_offset=1000, epoch=4))
    if v >= 1:
        p.replica_directory_id = U2
    return fsq.FetchSnapshotRequest(cluster_id=CLUSTER, replica_id=2, max_bytes=1048576,
                                    topics=[fsq.TopicSnapshot(name=META, partitions=[p])])


def fetch_snapshot_response(v: int) -> Any:
    p = fss.PartitionSnapshot(index=0, snapshot_id=fss.SnapshotId(1000, 4),
                              current_leader=fss.LeaderIdAndEpoch(1, 5), size=4096, position=8192,
                              unaligned_records=plain_batch())
    d = fss.FetchSnapshotResponse(topics=[fss.TopicSnapshot(name=META, partitions=[p])])
    if v >= 1:
        d.node_endpoints = [fss.NodeEndpoint(1, "c1.example", 9093)]
    return d


def vote_request(v: int) -> Any:
    p = vq.PartitionData(partition_index=0, candidate_epoch=5, candidate_id=1, last_offset_epoch=4,
                         last_offset=1200)
    d = vq.VoteRequest(cluster_id=CLUSTER, topics=[vq.TopicData(META, [p])])
    if v >= 1:
        p.candidate_directory_id, p.voter_directory_id = U1, U2
        d.voter_id = 2
    return d


def vote_response(v: int) -> Any:
    p = vs.PartitionData(partition_index=0, leader_id=-1, leader_epoch=5, vote_granted=True)
    d = vs.VoteResponse(topics=[vs.TopicData(META, [p])])
    if v >= 1:
        d.node_endpoints = [vs.NodeEndpoint(1, "c1.example", 9093)]
    return d


def begin_quorum_epoch_request(v: int) -> Any:
    p = bqq.PartitionData(partition_index=0, leader_id=1, leader_epoch=5)
    d = bqq.BeginQuorumEpochRequest(cluster_id=CLUSTER, topics=[bqq.TopicData(META, [p])])
    if v >= 1:
        p.voter_directory_id = U2
        d.voter_id = 2
        d.leader_endpoints = [bqq.LeaderEndpoint("CONTROLLER", "c1.example", 9093)]
    return d


def begin_quorum_epoch_response(v: int) -> Any:
    d = bqs.BeginQuorumEpochResponse(topics=[bqs.TopicData(META, [bqs.PartitionData(0, 0, 1, 5)])])
    if v >= 1:
        d.node_endpoints = [bqs.NodeEndpoint(1, "c1.example", 9093)]
    return d


def end_quorum_epoch_request(v: int) -> Any:
    p = eqq.PartitionData(partition_index=0, leader_id=1, leader_epoch=5)
    d = eqq.EndQuorumEpochRequest(cluster_id=CLUSTER, topics=[eqq.TopicData(META, [p])])
    if v == 0:
        p.preferred_successors = [2, 3]
    else:
        p.preferred_candidates = [eqq.ReplicaInfo(2, U2), eqq.ReplicaInfo(3, U3)]
        d.leader_endpoints = [eqq.LeaderEndpoint("CONTROLLER", "c1.example", 9093)]
    return d


def end_quorum_epoch_response(v: int) -> Any:
    p = eqs.PartitionData(partition_index=0, error_code=Errors.FENCED_LEADER_EPOCH, leader_id=1, leader_epoch=6)
    d = eqs.EndQuorumEpochResponse(topics=[eqs.TopicData(META, [p])])
    if v >= 1:
        d.node_endpoints = [eqs.NodeEndpoint(1, "c1.example", 9093)]
    return d


def describe_quorum_request(v: int) -> Any:
    return dqq.DescribeQuorumRequest(topics=[dqq.TopicData(META, [dqq.PartitionData(0)])])


def _replica(v: int, rid: int, directory: uuid.UUID, leo: int, ts: int) -> Any:
    r = dqs.ReplicaState(replica_id=rid, log_end_offset=leo)
    if v >= 1:
        r.last_fetch_timestamp = r.last_caught_up_timestamp = ts
    if v >= 2:
        r.replica_directory_id = directory
    return r


def describe_quorum_response(v: int) -> Any:
    p = dqs.PartitionData(partition_index=0, leader_id=1, leader_epoch=5, high_watermark=1500,
                          current_voters=[_replica(v, 1, U1, 1600, TS), _replica(v, 2, U2, 1500, TS - 100)],
                          observers=[_replica(v, 7, U3, 1400, -1)])
    d = dqs.DescribeQuorumResponse(topics=[dqs.TopicData(META, [p])])
    if v >= 2:
        d.error_message = None
        p.error_message = "all good"
        d.nodes = [dqs.Node(1, [dqs.Listener("CONTROLLER", "c1.example", 9093)])]
    return d


def alter_partition_request(v: int) -> Any:
    t = apq.TopicData(partitions=[_alter_partition(v)])
    if v <= 1:
        t.topic_name = "alpha"
    else:
        t.topic_id = TOPIC
    return apq.AlterPartitionRequest(broker_id=1, broker_epoch=100, topics=[t])


def _alter_partition(v: int) -> Any:
    p = apq.PartitionData(partition_index=0, leader_epoch=4, partition_epoch=8)
    if v >= 1:
        p.leader_recovery_state = 1
    if v <= 2:
        p.new_isr = [1, 2]
    else:
        p.new_isr_with_epochs = [apq.BrokerState(1, 100), apq.BrokerState(2, 101)]
    return p


def alter_partition_response(v: int) -> Any:
    ok = aps.PartitionData(partition_index=0, leader_id=1, leader_epoch=4, isr=[1, 2], partition_epoch=9)
    fenced = aps.PartitionData(partition_index=1, error_code=Errors.FENCED_LEADER_EPOCH, leader_id=-1,
                               leader_epoch=-1, isr=[], partition_epoch=-1)
    t = aps.TopicData(partitions=[ok, fenced])
    if v <= 1:
        t.topic_name = "alpha"
    else:
        t.topic_id = TOPIC
    return aps.AlterPartitionResponse(throttle_time_ms=0, topics=[t])


def broker_registration_request(v: int) -> Any:
    d = brq.BrokerRegistrationRequest(
        broker_id=4, cluster_id=CLUSTER, incarnation_id=U3,
        listeners=[brq.Listener("PLAINTEXT", "b4.example", 9092, 0), brq.Listener("SSL", "b4.example", 9094, 1)],
        features=[brq.Feature("metadata.version", 1, 21), brq.Feature("kraft.version", 0, 1)], rack="r4")
    if v >= 1:
        d.is_migrating_zk_broker = True
    if v >= 2:
        d.log_dirs = [U1, U2]
    if v >= 3:
        d.previous_broker_epoch = 55
    return d


def broker_heartbeat_request(v: int) -> Any:
    d = bhq.BrokerHeartbeatRequest(broker_id=4, broker_epoch=77, current_metadata_offset=12345,
                                   want_fence=False, want_shut_down=True)
    if v >= 1:
        d.offline_log_dirs = [U2]
    return d


def api_versions_request(v: int) -> Any:
    d = avq.ApiVersionsRequest()
    if v >= 3:
        d.client_software_name, d.client_software_version = "kraftwire-golden", "1.2.3"
        d.unknown_tagged_fields = [(7, b"future")]
    return d


def api_versions_response(v: int) -> Any:
    d = avs.ApiVersionsResponse(api_keys=[avs.ApiVersion(1, 0, 17), avs.ApiVersion(18, 0, 4),
                                          avs.ApiVersion(52, 0, 1)])
    if v >= 1:
        d.throttle_time_ms = 12
    if v >= 3:
        d.supported_features = [avs.SupportedFeatureKey("kraft.version", 0, 1),
                                avs.SupportedFeatureKey("metadata.version", 1, 21)]
        d.finalized_features_epoch = 88
        d.finalized_features = [avs.FinalizedFeatureKey("metadata.version", 21, 1)]
        d.zk_migration_ready = True
    return d


def metadata_request(v: int) -> Any:
    topics = [mq.MetadataRequestTopic(name="alpha")]
    if v >= 12:
        topics.append(mq.MetadataRequestTopic(topic_id=TOPIC, name=None))
    d = mq.MetadataRequest(topics=topics)
    if v >= 4:
        d.allow_auto_topic_creation = False
    if 8 <= v <= 10:
        d.include_cluster_authorized_operations = True
    if v >= 8:
        d.include_topic_authorized_operations = True
    return d


def metadata_response(v: int) -> Any:
    b1 = ms.MetadataResponseBroker(node_id=1, host="b1.example", port=9092)
    b2 = ms.MetadataResponseBroker(node_id=2, host="b2.example", port=9093, rack=None)
    if v >= 1:
        b1.rack = "r1"
    p = ms.MetadataResponsePartition(partition_index=0, leader_id=1, replica_nodes=[1, 2, 3], isr_nodes=[1, 2])
    if v >= 5:
        p.offline_replicas = [3]
    if v >= 7:
        p.leader_epoch = 4
    alpha = ms.MetadataResponseTopic(name="alpha", partitions=[p])
    missing = ms.MetadataResponseTopic(error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, name="missing")
    if v >= 8:
        alpha.topic_authorized_operations = 0x0FF8
    if v >= 10:
        alpha.topic_id = TOPIC
    topics = [alpha, missing]
    if v >= 12:
        topics.append(ms.MetadataResponseTopic(error_code=Errors.UNKNOWN_TOPIC_ID, name=None, topic_id=U3))
    d = ms.MetadataResponse(brokers=[b1, b2], topics=topics)
    if v >= 1:
        d.controller_id = 1
    if v >= 2:
        d.cluster_id = CLUSTER
    if v >= 3:
        d.throttle_time_ms = 3
    if 8 <= v <= 10:
        d.cluster_authorized_operations = 0x1234
    return d


def leader_change(v: int) -> Any:
    dirs = {1: U1, 2: U2, 3: U3}
    voters = [lcm.Voter(i, dirs[i] if v >= 1 else uuid.UUID(int=0)) for i in (1, 2, 3)]
    return lcm.LeaderChangeMessage(version=v, leader_id=1, voters=voters, granting_voters=voters[:2])


def voters_record(v: int) -> Any:
    return vr.VotersRecord(version=0, voters=[
        vr.Voter(i, d, [vr.Endpoint("CONTROLLER", f"c{i}.example", 9093)], vr.KRaftVersionFeature(0, 1))
        for i, d in ((1, U1), (2, U2))])


EXPECTED: dict[str, Callable[[int], Any]] = {
    "FetchRequest": fetch_request,
    "FetchResponse": fetch_response,
    "FetchSnapshotRequest": fetch_snapshot_request,
    "FetchSnapshotResponse": fetch_snapshot_response,
    "VoteRequest": vote_request,
    "VoteResponse": vote_response,
    "BeginQuorumEpochRequest": begin_quorum_epoch_request,
    "BeginQuorumEpochResponse": begin_quorum_epoch_response,
    "EndQuorumEpochRequest": end_quorum_epoch_request,
    "EndQuorumEpochResponse": end_quorum_epoch_response,
    "DescribeQuorumRequest": describe_quorum_request,
    "DescribeQuorumResponse": describe_quorum_response,
    "AlterPartitionRequest": alter_partition_request,
    "AlterPartitionResponse": alter_partition_response,
    "EnvelopeRequest": lambda v: envq.EnvelopeRequest(b"inner-request-bytes", b"User:alice", b"\x7f\x00\x00\x01"),
    "EnvelopeResponse": lambda v: envs.EnvelopeResponse(response_data=b"inner-response"),
    "BrokerRegistrationRequest": broker_registration_request,
    "BrokerRegistrationResponse": lambda v: brs.BrokerRegistrationResponse(broker_epoch=77),
    "BrokerHeartbeatRequest": broker_heartbeat_request,
    "BrokerHeartbeatResponse": lambda v: bhs.BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False),
    "ApiVersionsRequest": api_versions_request,
    "ApiVersionsResponse": api_versions_response,
    "MetadataRequest": metadata_request,
    "MetadataResponse": metadata_response,
    "LeaderChangeMessage": leader_change,
    "VotersRecord": voters_record,
    "KRaftVersionRecord": lambda v: krv.KRaftVersionRecord(version=0, k_raft_version=1),
    "SnapshotHeaderRecord": lambda v: shr.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=TS),
    "SnapshotFooterRecord": lambda v: sfr.SnapshotFooterRecord(version=0),
    "RequestHeader": lambda v: rqh.RequestHeader(1, 12, 77, "golden-client") if v >= 1 else rqh.RequestHeader(1, 12, 77),
    "ResponseHeader": lambda v: rsh.ResponseHeader(77),
}
SPECIAL: dict[str, Any] = {
    "EnvelopeResponse:0:null": envs.EnvelopeResponse(response_data=None, error_code=Errors.NOT_CONTROLLER),
}

# Every case Golden.java prints, by (message, version). Keep in step with its main().
CASES = (
    [("FetchRequest", v) for v in (0, 4, 12, 13, 15, 17)]
    + [("FetchResponse", v) for v in (0, 4, 12, 13, 16, 17)]
    + [(n, v) for n in ("FetchSnapshotRequest", "FetchSnapshotResponse", "VoteRequest", "VoteResponse",
                        "BeginQuorumEpochRequest", "BeginQuorumEpochResponse", "EndQuorumEpochRequest",
                        "EndQuorumEpochResponse", "BrokerHeartbeatRequest", "BrokerHeartbeatResponse",
                        "LeaderChangeMessage", "ResponseHeader") for v in (0, 1)]
    + [(n, v) for n in ("DescribeQuorumRequest", "DescribeQuorumResponse", "RequestHeader") for v in (0, 1, 2)]
    + [(n, v) for n in ("AlterPartitionRequest", "AlterPartitionResponse") for v in (0, 1, 2, 3)]
    + [("EnvelopeRequest", 0), ("EnvelopeResponse", 0)]
    + [(n, v) for n in ("BrokerRegistrationRequest", "BrokerRegistrationResponse", "ApiVersionsRequest",
                        "ApiVersionsResponse") for v in range(5)]
    + [(n, v) for n in ("MetadataRequest", "MetadataResponse") for v in (0, 1, 4, 8, 9, 10, 12)]
    + [(n, 0) for n in ("VotersRecord", "KRaftVersionRecord", "SnapshotHeaderRecord", "SnapshotFooterRecord")]
)


def _check(golden: dict, case: str, name: str, version: int, expected: Any) -> None:
    wire = golden[case]
    assert isinstance(wire, bytes), f"Golden.java could not build {case}: {wire}"
    cls = message_class(name)
    decoded = cls.decode(wire, version)
    assert decoded == expected, f"{case}: decoded values differ from what Kafka was given"
    assert expected.encode(version) == wire, f"{case}: kraftwire's bytes differ from Kafka's"
    assert decoded.encode(version) == wire


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
def test_kafka_bytes_decode_to_the_same_values_and_reencode_identically(golden, name, version) -> None:
    _check(golden, f"{name}:{version}", name, version, EXPECTED[name](version))


@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_special_cases(golden, case) -> None:
    name, version, _ = case.split(":")
    _check(golden, case, name, int(version), SPECIAL[case])


def test_every_case_printed_by_java_is_checked(golden) -> None:
    covered = {f"{n}:{v}" for n, v in CASES} | set(SPECIAL)
    messages = {c for c in golden if not c.startswith("records:")}
    assert messages == covered


def test_required_messages_are_covered_at_min_and_max_versions() -> None:
    required = ["FetchRequest", "FetchResponse", "VoteRequest", "VoteResponse", "BeginQuorumEpochRequest",
                "BeginQuorumEpochResponse", "EndQuorumEpochRequest", "EndQuorumEpochResponse",
                "DescribeQuorumRequest", "DescribeQuorumResponse", "AlterPartitionRequest",
                "AlterPartitionResponse", "EnvelopeRequest", "EnvelopeResponse", "BrokerRegistrationRequest",
                "BrokerRegistrationResponse", "BrokerHeartbeatRequest", "BrokerHeartbeatResponse",
                "ApiVersionsRequest", "ApiVersionsResponse", "MetadataRequest", "MetadataResponse",
                "LeaderChangeMessage"]
    from .test_golden_java41 import CASES_41  # versions Kafka 4.x added: golden bytes from 4.1's jars

    for name in required:
        cls = message_class(name)
        versions = {v for n, v in CASES + CASES_41 if n == name}
        assert {cls.MIN_VERSION, cls.MAX_VERSION} <= versions, name


def test_fetch_v12_tagged_fields_are_really_tagged(golden) -> None:
    """The KIP-595 draft put these in the body; Kafka shipped them as tagged fields 0, 1, 2."""
    resp = fs.FetchResponse.decode(golden["FetchResponse:12"], 12)
    p0, p1 = resp.responses[0].partitions
    assert (p0.diverging_epoch.epoch, p0.diverging_epoch.end_offset) == (4, 800)
    assert (p0.snapshot_id.end_offset, p0.snapshot_id.epoch) == (700, 3)
    assert (p1.current_leader.leader_id, p1.current_leader.leader_epoch) == (2, 9)
    assert p1.unknown_tagged_fields == [(5, b"\x01\x02\x03")]
    # the same partition without tagged values is shorter by exactly their encodings
    bare = fetch_response(12)
    for p in bare.responses[0].partitions:
        p.diverging_epoch, p.snapshot_id = fs.EpochEndOffset(), fs.SnapshotId()
        p.current_leader, p.unknown_tagged_fields = fs.LeaderIdAndEpoch(), None
    saved = len(golden["FetchResponse:12"]) - len(bare.encode(12))
    # p0: +2 tag entries: (tag, size, 12-byte struct + 1) + (tag, size, 12 + 1); p1: leader (2+9) + raw (2+3)
    assert saved == (2 + 13) + (2 + 13) + (2 + 9) + (2 + 3)
    req = fq.FetchRequest.decode(golden["FetchRequest:12"], 12)
    assert req.cluster_id == CLUSTER and req.topics[0].partitions[0].last_fetched_epoch == 6


# -- record batches --------------------------------------------------------------------------------

def test_plain_batch_is_byte_identical(golden) -> None:
    assert plain_batch() == golden["records:none"]
    (batch,) = records.decode_batches(golden["records:none"])
    assert (batch.base_offset, batch.leader_epoch, batch.base_timestamp) == (100, 6, TS)
    assert batch.records == plain_batch_records()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_from_kafka_decode(golden, codec) -> None:
    wire = golden[f"records:{codec}"]
    if isinstance(wire, str):
        pytest.skip(f"the JVM could not compress with {codec}: {wire}")
    (batch,) = records.decode_batches(wire)
    assert batch.compression == ["gzip", "snappy", "lz4", "zstd"].index(codec) + 1
    assert (batch.base_offset, batch.leader_epoch, batch.producer_id, batch.producer_epoch,
            batch.base_sequence) == (200, 8, 4000, 2, 17)
    assert batch.records == plain_batch_records()


def test_control_batches_are_byte_identical(golden) -> None:
    lc = control.leader_change_record(1, [1, 2, 3], [1, 2])
    ours = records.encode_batch(records.RecordBatch(500, 9, (lc,), control=True, base_timestamp=TS))
    assert ours == golden["records:leader-change"]
    (batch,) = records.decode_batches(golden["records:leader-change"])
    assert batch.control and control.control_type(batch.records[0]) is control.ControlType.LEADER_CHANGE
    assert lcm.LeaderChangeMessage.decode(batch.records[0].value, 0) == leader_change(0)
    for kind, offset, rec in (("snapshot-header", 0, control.snapshot_header_record(0, TS)),
                              ("snapshot-footer", 3, control.snapshot_footer_record(0))):
        ours = records.encode_batch(records.RecordBatch(offset, 9, (rec,), control=True, base_timestamp=TS))
        assert ours == golden[f"records:{kind}"], kind
