"""Golden bytes from Kafka 4.1's own serializers for the versions Kafka 4.x added (KIP-896 era).

tests/protocol/java/Golden41.java writes each case with kafka-clients / kafka-metadata 4.1.0 from the
Kafka 4.1 distribution; this test builds the same values with kraftwire's generated classes, decodes
Kafka's bytes to them and re-encodes them byte for byte. Under CI=true a missing JDK or distribution
fails instead of skipping.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from kraftwire.protocol.messages import clear_elr_record as cer
from kraftwire.protocol.messages import describe_cluster_request as dcq
from kraftwire.protocol.messages import describe_cluster_response as dcs
from kraftwire.protocol.messages import describe_groups_response as dgs
from kraftwire.protocol.messages import fetch_request as fq
from kraftwire.protocol.messages import fetch_response as fs
from kraftwire.protocol.messages import init_producer_id_request as ipq
from kraftwire.protocol.messages import init_producer_id_response as ips
from kraftwire.protocol.messages import list_offsets_request as loq
from kraftwire.protocol.messages import message_class
from kraftwire.protocol.messages import metadata_request as mq
from kraftwire.protocol.messages import metadata_response as ms
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages import offset_fetch_request as ofq
from kraftwire.protocol.messages import partition_change_record as pcr
from kraftwire.protocol.messages import partition_record as prr
from kraftwire.protocol.messages import produce_request as pq
from kraftwire.protocol.messages import produce_response as ps
from kraftwire.protocol.messages import update_features_request as ufq
from kraftwire.protocol.messages import update_features_response as ufs
from kraftwire.protocol.messages import vote_request as vq
from kraftwire.protocol.messages import vote_response as vs

from . import kafka_java
from .test_golden_java import CLUSTER, META, TOPIC, U1, U2

pytestmark = pytest.mark.java


@pytest.fixture(scope="session")
def golden41() -> dict[str, bytes | str]:
    reason = kafka_java.missing_41_reason()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Kafka 4.1 golden bytes need: {reason}")
        print(f"\nskipping Kafka 4.1 golden-bytes tests: {reason}", file=sys.stderr)
        pytest.skip(reason)
    return kafka_java.run_golden_41()


EXPECTED: dict[str, Any] = {
    "FetchRequest:18": lambda: fq.FetchRequest(
        max_wait_ms=500, min_bytes=1, max_bytes=1048576, isolation_level=0, session_id=0, session_epoch=-1,
        cluster_id=CLUSTER, replica_state=fq.ReplicaState(replica_id=3, replica_epoch=-1),
        topics=[fq.FetchTopic(topic_id=TOPIC, partitions=[fq.FetchPartition(
            partition=0, fetch_offset=1234, partition_max_bytes=65536, log_start_offset=10,
            current_leader_epoch=7, last_fetched_epoch=6, replica_directory_id=U2, high_watermark=900)])]),
    "FetchResponse:18": lambda: fs.FetchResponse(
        throttle_time_ms=0, session_id=0,
        responses=[fs.FetchableTopicResponse(topic_id=TOPIC, partitions=[fs.PartitionData(
            partition_index=0, high_watermark=1000, last_stable_offset=1000, log_start_offset=5, records=None,
            current_leader=fs.LeaderIdAndEpoch(leader_id=2, leader_epoch=9))])],
        node_endpoints=[fs.NodeEndpoint(node_id=2, host="c2.example", port=9093)]),
    "VoteRequest:2": lambda: vq.VoteRequest(
        cluster_id=CLUSTER, voter_id=2, topics=[vq.TopicData(topic_name=META, partitions=[vq.PartitionData(
            partition_index=0, candidate_epoch=5, candidate_id=1, candidate_directory_id=U1,
            voter_directory_id=U2, last_offset_epoch=4, last_offset=1200, pre_vote=True)])]),
    "VoteResponse:2": lambda: vs.VoteResponse(
        topics=[vs.TopicData(topic_name=META, partitions=[vs.PartitionData(
            partition_index=0, leader_id=-1, leader_epoch=4, vote_granted=True)])],
        node_endpoints=[vs.NodeEndpoint(node_id=1, host="c1.example", port=9093)]),
    "MetadataRequest:13": lambda: mq.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                     include_topic_authorized_operations=False),
    "MetadataResponse:13": lambda: ms.MetadataResponse(
        throttle_time_ms=0, cluster_id=CLUSTER, controller_id=1, error_code=129,
        brokers=[ms.MetadataResponseBroker(node_id=1, host="b1.example", port=9092)],
        topics=[ms.MetadataResponseTopic(name="alpha", topic_id=TOPIC, partitions=[ms.MetadataResponsePartition(
            partition_index=0, leader_id=1, leader_epoch=4, replica_nodes=[1, 2], isr_nodes=[1],
            offline_replicas=[])])]),
    "DescribeClusterRequest:2": lambda: dcq.DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=True),
    "DescribeClusterResponse:2": lambda: dcs.DescribeClusterResponse(
        throttle_time_ms=0, cluster_id=CLUSTER, controller_id=1, brokers=[
            dcs.DescribeClusterBroker(broker_id=1, host="b1.example", port=9092, is_fenced=False),
            dcs.DescribeClusterBroker(broker_id=2, host="b2.example", port=9092, rack="r2", is_fenced=True)]),
    "UpdateFeaturesRequest:2": lambda: ufq.UpdateFeaturesRequest(
        timeout_ms=30000, validate_only=True, feature_updates=[
            ufq.FeatureUpdateKey(feature="metadata.version", max_version_level=27, upgrade_type=1),
            ufq.FeatureUpdateKey(feature="group.version", max_version_level=1, upgrade_type=1)]),
    "UpdateFeaturesResponse:2": lambda: ufs.UpdateFeaturesResponse(throttle_time_ms=0, error_code=0,
                                                                   error_message=None),
    "ProduceRequest:13": lambda: pq.ProduceRequest(
        transactional_id=None, acks=-1, timeout_ms=30000,
        topic_data=[pq.TopicProduceData(topic_id=TOPIC, partition_data=[pq.PartitionProduceData(
            index=0, records=None)])]),
    "ProduceResponse:13": lambda: ps.ProduceResponse(
        throttle_time_ms=0, responses=[ps.TopicProduceResponse(topic_id=TOPIC, partition_responses=[
            ps.PartitionProduceResponse(index=0, error_code=0, base_offset=42, log_append_time_ms=-1,
                                        log_start_offset=0)])]),
    "OffsetCommitRequest:10": lambda: ocq.OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=3, member_id="m-1",
        topics=[ocq.OffsetCommitRequestTopic(topic_id=TOPIC, partitions=[ocq.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=77, committed_leader_epoch=2, committed_metadata="meta")])]),
    "OffsetFetchRequest:10": lambda: ofq.OffsetFetchRequest(
        require_stable=True, groups=[ofq.OffsetFetchRequestGroup(
            group_id="g", member_id="m-1", member_epoch=3,
            topics=[ofq.OffsetFetchRequestTopics(topic_id=TOPIC, partition_indexes=[0, 1])])]),
    "ListOffsetsRequest:10": lambda: loq.ListOffsetsRequest(
        replica_id=-1, isolation_level=1, timeout_ms=15000, topics=[loq.ListOffsetsTopic(
            name=META, partitions=[loq.ListOffsetsPartition(partition_index=0, current_leader_epoch=4,
                                                           timestamp=-1)])]),
    "InitProducerIdRequest:6": lambda: ipq.InitProducerIdRequest(
        transactional_id="txn-1", transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1,
        enable2_pc=True, keep_prepared_txn=True),
    "InitProducerIdResponse:6": lambda: ips.InitProducerIdResponse(
        throttle_time_ms=0, error_code=0, producer_id=4000, producer_epoch=2, ongoing_txn_producer_id=3999,
        ongoing_txn_producer_epoch=1),
    "DescribeGroupsResponse:6": lambda: dgs.DescribeGroupsResponse(
        throttle_time_ms=0, groups=[dgs.DescribedGroup(
            error_code=69, error_message="Group g is not a classic group.", group_id="g", group_state="",
            protocol_type="", protocol_data="", members=[])]),
    "PartitionRecord:2": lambda: prr.PartitionRecord(
        partition_id=0, topic_id=TOPIC, replicas=[1, 2, 3], isr=[1], leader=1, leader_epoch=6,
        partition_epoch=9, directories=[U1, U2, U1], eligible_leader_replicas=[2], last_known_elr=[3]),
    "PartitionChangeRecord:2": lambda: pcr.PartitionChangeRecord(
        partition_id=0, topic_id=TOPIC, isr=[1, 2], eligible_leader_replicas=[], last_known_elr=[3]),
    "ClearElrRecord:0": lambda: cer.ClearElrRecord(topic_name="alpha"),
}
CASES_41 = [(case.split(":")[0], int(case.split(":")[1])) for case in EXPECTED]


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_kafka41_bytes_decode_to_the_same_values_and_reencode_identically(golden41, case) -> None:
    name, version = case.split(":")
    wire = golden41[case]
    assert isinstance(wire, bytes), f"Golden41.java could not build {case}: {wire}"
    cls = message_class(name)
    expected = EXPECTED[case]()
    decoded = cls.decode(wire, int(version))
    assert decoded == expected, f"{case}: decoded values differ from what Kafka 4.1 was given"
    assert expected.encode(int(version)) == wire, f"{case}: kraftwire's bytes differ from Kafka 4.1's"


def test_every_case_printed_by_java_is_checked(golden41) -> None:
    assert set(golden41) == set(EXPECTED)


def test_new_versions_are_the_newest_kraftwire_knows() -> None:
    """Each case is its message's newest version: schemas/ stops where Kafka 4.1 stops."""
    for name, version in CASES_41:
        assert message_class(name).MAX_VERSION == version, name
