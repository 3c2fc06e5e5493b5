"""Authorization on a live node: unauthorized inter-node, admin and enveloped requests get Kafka's errors and
append nothing to the metadata log; the same requests from a super user do append."""

from __future__ import annotations

import uuid

import anyio
import pytest

from kraftwire.broker.envelope import host_bytes, serialize_principal
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import decode_response, encode_request
from kraftwire.protocol.messages import alter_partition_request as apq
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import incremental_alter_configs_request as iacq
from kraftwire.protocol.messages.begin_quorum_epoch_request import BeginQuorumEpochRequest
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.protocol.messages.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from kraftwire.protocol.messages.describe_acls_request import DescribeAclsRequest
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.envelope_request import EnvelopeRequest
from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from kraftwire.protocol.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kraftwire.protocol.messages.vote_request import VoteRequest
from kraftwire.security.authorizer import CLUSTER, CLUSTER_ACTION, CREATE, DESCRIBE, PREFIXED, READ

from .acl_helpers import grant
from .harness import secure_node

pytestmark = pytest.mark.anyio
CLUSTER_ID = "kw-security-test-001"
CLUSTER_DENIED = Errors.CLUSTER_AUTHORIZATION_FAILED
TOPIC_DENIED = Errors.TOPIC_AUTHORIZATION_FAILED


def topic(name: str, rf: int = 2) -> ctq.CreatableTopic:
    return ctq.CreatableTopic(name=name, num_partitions=1, replication_factor=rf)


def enveloped(body, version: int, principal: str) -> EnvelopeRequest:
    return EnvelopeRequest(request_data=encode_request(body, version, 77, "forwarded-admin")[4:],
                           request_principal=serialize_principal(principal), client_host_address=host_bytes("10.1.2.3"))


async def start_brokers(admin: Connection, sn) -> None:
    """Register brokers 101 and 102 and heartbeat them unfenced (as the super user)."""
    for bid in (101, 102):
        r = await admin.request(brq.BrokerRegistrationRequest(
            broker_id=bid, cluster_id=CLUSTER_ID, incarnation_id=uuid.uuid4(),
            listeners=[brq.Listener("PLAINTEXT", "127.0.0.1", 9000 + bid, 0)],
            features=[brq.Feature(n, lo, hi) for n, (lo, hi) in BROKER_SUPPORTED_FEATURES.items()], rack=None, log_dirs=[uuid.uuid4()]), 4, 10)
        assert r.error_code == 0, r
        epoch = r.broker_epoch
        for _ in range(50):
            hb = await admin.request(BrokerHeartbeatRequest(broker_id=bid, broker_epoch=epoch,
                                                            current_metadata_offset=sn.end_offset + 10), 1, 10)
            assert hb.error_code == 0, hb
            if not hb.is_fenced:
                break
            await anyio.sleep(0.05)
        else:
            raise AssertionError(f"broker {bid} stayed fenced")


def shrink_isr(sn, name: str, keep: int) -> apq.AlterPartitionRequest:
    image = sn.node.voter.controller.controller.committed_image
    t = image.topic_by_name(name)
    p = t.partitions[0]
    return apq.AlterPartitionRequest(broker_id=p.leader, broker_epoch=image.brokers[p.leader].epoch, topics=[
        apq.TopicData(topic_id=t.id, partitions=[apq.PartitionData(
            partition_index=0, leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
            new_isr_with_epochs=[apq.BrokerState(keep, image.brokers[keep].epoch)])])])


async def test_inter_node_apis_need_cluster_action_and_write_nothing(certs):
    async with secure_node(certs) as sn, anyio.create_task_group() as tg:
        admin = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("admin"))
        bob = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("bob", mechanism="SCRAM-SHA-512"))
        await start_brokers(admin, sn)
        created = await admin.request(ctq.CreateTopicsRequest(topics=[topic("orders")]), 7, 10)
        assert created.topics[0].error_code == 0
        leader = sn.node.voter.controller.controller.committed_image.topic_by_name("orders").partitions[0].leader
        keep = leader

        # AlterPartition from a non-super user: refused, nothing appended, ISR unchanged
        before = sn.end_offset
        r = await bob.request(shrink_isr(sn, "orders", keep), 3, 10)
        assert r.error_code == CLUSTER_DENIED
        await anyio.sleep(0.2)
        assert sn.end_offset == before
        assert len(sn.node.voter.controller.controller.committed_image.topic_by_name("orders").partitions[0].isr) == 2

        # the same request from the super user is valid and appends a PartitionChangeRecord
        r = await admin.request(shrink_isr(sn, "orders", keep), 3, 10)
        assert r.error_code == 0 and r.topics[0].partitions[0].error_code == 0, r
        assert sn.end_offset > before
        assert sn.node.voter.controller.controller.committed_image.topic_by_name("orders").partitions[0].isr == (keep,)

        # Envelope from a non-super user: refused before the inner request is even looked at
        before = sn.end_offset
        r = await bob.request(enveloped(ctq.CreateTopicsRequest(topics=[topic("sneaky", 1)]), 7, "User:admin"), 0, 10)
        assert r.error_code == CLUSTER_DENIED and r.response_data is None
        # other CLUSTER_ACTION APIs: registration, heartbeat, raft
        reg = await bob.request(brq.BrokerRegistrationRequest(
            broker_id=103, cluster_id=CLUSTER_ID, incarnation_id=uuid.uuid4(),
            features=[brq.Feature(n, lo, hi) for n, (lo, hi) in BROKER_SUPPORTED_FEATURES.items()], log_dirs=[uuid.uuid4()]), 4, 10)
        assert reg.error_code == CLUSTER_DENIED
        hb = await bob.request(BrokerHeartbeatRequest(broker_id=101, broker_epoch=0), 1, 10)
        assert hb.error_code == CLUSTER_DENIED
        assert (await bob.request(VoteRequest(cluster_id=CLUSTER_ID), 1, 10)).error_code == CLUSTER_DENIED
        assert (await bob.request(BeginQuorumEpochRequest(cluster_id=CLUSTER_ID), 1, 10)).error_code == CLUSTER_DENIED
        fetch = await bob.request(FetchRequest(replica_state=ReplicaState(replica_id=2, replica_epoch=-1), topics=[
            FetchTopic(topic_id=uuid.UUID(int=1), partitions=[FetchPartition(partition=0)])]), 17, 10)
        assert fetch.error_code == CLUSTER_DENIED and fetch.responses == []
        await anyio.sleep(0.2)
        assert sn.end_offset == before
        assert sn.node.voter.controller.controller.committed_image.topic_by_name("sneaky") is None
        assert 103 not in sn.node.voter.controller.controller.committed_image.brokers

        # an ACL granting CLUSTER_ACTION lets bob through
        await grant(sn, "User:bob", CLUSTER_ACTION, CLUSTER, "kafka-cluster")
        r = await bob.request(enveloped(ctq.CreateTopicsRequest(topics=[topic("granted", 1)]), 7, "User:admin"), 0, 10)
        assert r.error_code == 0
        _, inner = decode_response(r.response_data, 19, 7)
        assert inner.topics[0].error_code == 0
        tg.cancel_scope.cancel()


async def test_enveloped_requests_are_authorized_as_the_inner_principal(certs):
    async with secure_node(certs) as sn, anyio.create_task_group() as tg:
        admin = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("admin"))
        await start_brokers(admin, sn)
        before = sn.end_offset
        # the forwarding broker (admin, a super user) is allowed; the client inside is bob, who may not create
        r = await admin.request(enveloped(ctq.CreateTopicsRequest(topics=[topic("bobs", 1)]), 7, "User:bob"), 0, 10)
        assert r.error_code == 0
        corr, inner = decode_response(r.response_data, 19, 7)
        assert corr == 77 and [(t.name, t.error_code) for t in inner.topics] == [("bobs", TOPIC_DENIED)]
        acl = AclCreation(resource_type=2, resource_name="x", resource_pattern_type=3, principal="User:bob", host="*",
                          operation=CREATE, permission_type=3)
        r = await admin.request(enveloped(CreateAclsRequest(creations=[acl]), 3, "User:bob"), 0, 10)
        _, inner = decode_response(r.response_data, 30, 3)
        assert [x.error_code for x in inner.results] == [CLUSTER_DENIED]
        await anyio.sleep(0.2)
        assert sn.end_offset == before

        # alice may create topics starting with "alice-": one topic created, the other refused, in one request
        await grant(sn, "User:alice", CREATE, name="alice-", pattern=PREFIXED)
        before = sn.end_offset
        req = ctq.CreateTopicsRequest(topics=[topic("alice-1", 1), topic("zzz", 1)])
        r = await admin.request(enveloped(req, 7, "User:alice"), 0, 10)
        _, inner = decode_response(r.response_data, 19, 7)
        assert sorted((t.name, t.error_code) for t in inner.topics) == [("alice-1", 0), ("zzz", TOPIC_DENIED)]
        # alice has no DESCRIBE_CONFIGS: the created topic's configs are withheld (v5+)
        made = next(t for t in inner.topics if t.name == "alice-1")
        assert made.topic_config_error_code == TOPIC_DENIED and made.configs == [] and made.num_partitions == -1
        image = sn.node.voter.controller.controller.committed_image
        assert image.topic_by_name("alice-1") is not None and image.topic_by_name("zzz") is None
        assert sn.end_offset > before
        tg.cancel_scope.cancel()


async def test_admin_and_read_apis_for_an_unprivileged_user(certs):
    async with secure_node(certs) as sn, anyio.create_task_group() as tg:
        admin = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("admin"))
        bob = sn.connection(tg, "SASL_SSL", sn.sasl("bob", mechanism="PLAIN", listener="SASL_SSL"))
        await start_brokers(admin, sn)
        assert (await admin.request(ctq.CreateTopicsRequest(topics=[topic("orders")]), 7, 10)).topics[0].error_code == 0
        before = sn.end_offset

        r = await bob.request(ctq.CreateTopicsRequest(topics=[topic("mine", 1)]), 7, 10)
        assert [(t.name, t.error_code) for t in r.topics] == [("mine", TOPIC_DENIED)]
        r = await bob.request(DeleteTopicsRequest(topics=[DeleteTopicState(name="orders")]), 6, 10)
        assert [(t.name, t.error_code) for t in r.responses] == [("orders", TOPIC_DENIED)]
        tid = sn.node.voter.controller.controller.committed_image.topic_by_name("orders").id
        r = await bob.request(DeleteTopicsRequest(topics=[DeleteTopicState(name=None, topic_id=tid)]), 6, 10)
        assert [(t.name, t.error_code) for t in r.responses] == [(None, TOPIC_DENIED)]   # name hidden: no DESCRIBE
        r = await bob.request(iacq.IncrementalAlterConfigsRequest(resources=[
            iacq.AlterConfigsResource(2, "orders", [iacq.AlterableConfig("retention.ms", 0, "1000")]),
            iacq.AlterConfigsResource(4, "", [iacq.AlterableConfig("log.cleaner.threads", 0, "2")])]), 1, 10)
        assert sorted(x.error_code for x in r.responses) == sorted([TOPIC_DENIED, CLUSTER_DENIED])
        acl = AclCreation(resource_type=2, resource_name="orders", resource_pattern_type=3, principal="User:bob",
                          host="*", operation=READ, permission_type=3)
        r = await bob.request(CreateAclsRequest(creations=[acl]), 3, 10)
        assert [x.error_code for x in r.results] == [CLUSTER_DENIED]
        r = await bob.request(DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                                  permission_type=1), 3, 10)
        assert r.error_code == CLUSTER_DENIED
        await anyio.sleep(0.2)
        assert sn.end_offset == before

        # Metadata: hidden when listing everything, TOPIC_AUTHORIZATION_FAILED when asked by name
        r = await bob.request(MetadataRequest(topics=None), 12, 10)
        assert r.topics == []
        r = await bob.request(MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), 12, 10)
        assert [(t.name, t.error_code) for t in r.topics] == [("orders", TOPIC_DENIED)]
        r = await admin.request(MetadataRequest(topics=None), 12, 10)
        assert [t.name for t in r.topics] == ["__cluster_metadata"]   # a controller lists only its own log
        # DESCRIBE on the topic shows it, with the authorized operations bitfield
        await grant(sn, "User:bob", DESCRIBE)
        r = await bob.request(MetadataRequest(topics=None, include_topic_authorized_operations=True), 12, 10)
        assert [(t.name, t.topic_authorized_operations) for t in r.topics] == [("__cluster_metadata", 1 << DESCRIBE)]
        r = await bob.request(DescribeClusterRequest(include_cluster_authorized_operations=True), 1, 10)
        assert r.cluster_authorized_operations == 0
        r = await admin.request(DescribeClusterRequest(include_cluster_authorized_operations=True), 1, 10)
        assert r.cluster_authorized_operations & (1 << CLUSTER_ACTION)
        # consumer Fetch of __cluster_metadata without READ
        fetch = await bob.request(FetchRequest(max_wait_ms=5000, topics=[FetchTopic(
            topic_id=uuid.UUID(int=1), partitions=[FetchPartition(partition=0, partition_max_bytes=1 << 20)])],
            replica_state=ReplicaState(replica_id=-1)), 17, 10)
        assert [p.error_code for t in fetch.responses for p in t.partitions] == [TOPIC_DENIED]
        tg.cancel_scope.cancel()


async def test_requests_before_authentication_close_the_connection(certs):
    async with secure_node(certs) as sn, anyio.create_task_group() as tg:
        before = sn.end_offset
        # no SASL login on a SASL listener: ApiVersions is answered, CreateTopics closes the connection
        conn = Connection(tg, "127.0.0.1", sn.port("SASL_PLAINTEXT"), client_id="anon")
        with pytest.raises(RequestFailed):
            await conn.request(ctq.CreateTopicsRequest(topics=[topic("anon", 1)]), 7, 5)
        assert conn.versions  # ApiVersions was answered
        # a wrong password
        with pytest.raises(RequestFailed, match="SASL_AUTHENTICATION_FAILED"):
            await sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("admin", "nope")).request(MetadataRequest(), 12, 5)
        await anyio.sleep(0.2)
        assert sn.end_offset == before
        assert sn.node.voter.controller.controller.committed_image.topic_by_name("anon") is None
        tg.cancel_scope.cancel()
