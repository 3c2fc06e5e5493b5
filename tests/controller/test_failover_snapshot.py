"""Failover, deactivation, replay errors, transactions, snapshot round trips."""

import uuid

import pytest

from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.metadata import EMPTY_IMAGE, ImageLoader, MetadataReplayError, SnapshotPolicy, image_to_records
from kraftwire.protocol.messages.abort_transaction_record import AbortTransactionRecord
from kraftwire.protocol.messages.begin_transaction_record import BeginTransactionRecord
from kraftwire.protocol.messages.client_quota_record import ClientQuotaRecord, EntityData
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.protocol.messages.delegation_token_record import DelegationTokenRecord
from kraftwire.protocol.messages.end_transaction_record import EndTransactionRecord
from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.messages.fence_broker_record import FenceBrokerRecord
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.messages.user_scram_credential_record import UserScramCredentialRecord
from kraftwire.protocol.messages.zk_migration_state_record import ZkMigrationStateRecord
from kraftwire.protocol.metadata import decode_record, encode_record

from .harness import Harness


def _standby_from(h: Harness, upto: int | None = None) -> QuorumController:
    sb = QuorumController(ControllerConfig(cluster_id="test-cluster", max_idle_interval_ms=0,
                                           session_timeout_ms=h.config.session_timeout_ms,
                                           auto_leader_rebalance=False))
    for off, rec in h.log[: upto]:
        sb.replay(off, decode_record(encode_record(rec.message, rec.version)))
    return sb


def test_failover_does_not_fence_live_brokers() -> None:
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(1, 2, 3)
    h.create_topic("t", 3, 3)
    h.now = 5000  # long after the last heartbeats as seen by the old leader
    sb = _standby_from(h)
    assert sb.image == h.ctl.committed_image
    assert sb.activate(2, len(h.log) + 1, now=5000) == []
    assert sb.tick(5500) == []
    assert not any(b.fenced for b in sb.image.brokers.values())
    recs = sb.tick(6001)  # nobody heartbeated to the new leader: leases expire now
    assert sum(type(r.message).__name__ == "BrokerRegistrationChangeRecord" for r in recs) == 3


def test_deactivate_reverts_uncommitted_effects() -> None:
    from kraftwire.protocol.messages import create_topics_request as ctq
    h = Harness()
    h.start_brokers(1, 2)
    h.create_topic("t", 2, 2)  # committed
    committed = h.ctl.committed_image
    last_committed = h.ctl.committed_offset
    h.run(h.registration(5), commit=False)
    h.run(ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic("u", 1, 1)]), commit=False)
    h.run(CreateAclsRequest(creations=[AclCreation(2, "x", 3, "User:a", "*", 3, 3)]), commit=False)
    # consecutive uncommitted commands see each other's effects
    assert 5 in h.ctl.image.brokers and "u" in h.ctl.image.topic_ids and h.ctl.image.acls
    assert h.run(ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic("u", 1, 1)]),
                 commit=False).topics[0].error_code == 36
    assert h.ctl.committed_image == committed
    h.ctl.deactivate()
    assert not h.ctl.active
    assert h.ctl.image == committed and 5 not in h.ctl.image.brokers and not h.ctl.image.acls
    assert h.ctl.register_offset(5) is None
    # the standby now follows the committed log from where it stands
    assert h.ctl.next_offset == last_committed + 1
    for off, rec in h.log[last_committed + 1:]:
        h.ctl.replay(off, rec)
    assert 5 in h.ctl.image.brokers and "u" in h.ctl.image.topic_ids


def test_commit_advances_committed_image_in_steps() -> None:
    h = Harness()
    h.start_brokers(1)
    res1 = h.ctl.handle(h.now, h.registration(2))
    h.append(res1.records)
    res2 = h.ctl.handle(h.now, h.registration(3))
    h.append(res2.records)
    h.ctl.handle_commit(res1.commit_offset)
    assert 2 in h.ctl.committed_image.brokers and 3 not in h.ctl.committed_image.brokers
    # the active controller's own records coming back from raft count as commits
    h.ctl.replay(res2.commit_offset, res2.records[0])
    assert 3 in h.ctl.committed_image.brokers


def test_replay_errors_are_loud() -> None:
    img = EMPTY_IMAGE
    with pytest.raises(MetadataReplayError):
        img.replay(FeatureLevelRecord(name="metadata.version", feature_level=0))
    with pytest.raises(MetadataReplayError):
        img.replay(PartitionChangeRecord(partition_id=0, topic_id=uuid.uuid4()))
    with pytest.raises(MetadataReplayError):
        img.replay(FenceBrokerRecord(id_=1, epoch=1))
    tid = uuid.uuid4()
    img = img.replay(TopicRecord("t", tid))
    with pytest.raises(MetadataReplayError):
        img.replay(TopicRecord("t", uuid.uuid4()))
    h = Harness()
    h.start_brokers(1)
    with pytest.raises(MetadataReplayError):
        h.image.replay(FenceBrokerRecord(id_=1, epoch=h.image.brokers[1].epoch + 1))


def test_standby_replay_stops_on_bad_record() -> None:
    sb = QuorumController()
    with pytest.raises(MetadataReplayError):
        sb.replay(0, PartitionChangeRecord(partition_id=0, topic_id=uuid.uuid4()))
        sb.image  # noqa: B018 - materializing may be where it fails


def test_transactions() -> None:
    loader = ImageLoader()
    loader.replay(FeatureLevelRecord(name="metadata.version", feature_level=21))
    loader.replay(BeginTransactionRecord(name="t"))
    loader.replay(TopicRecord("a", uuid.uuid4()))
    assert "a" not in loader.image.topic_ids
    loader.replay(EndTransactionRecord())
    assert "a" in loader.image.topic_ids
    loader.replay(BeginTransactionRecord(name="t2"))
    loader.replay(TopicRecord("b", uuid.uuid4()))
    loader.replay(AbortTransactionRecord(reason="x"))
    assert "b" not in loader.image.topic_ids
    with pytest.raises(MetadataReplayError):
        loader.replay(EndTransactionRecord())


def _rich() -> Harness:
    h = Harness()
    h.start_brokers(1, 2, 3, racks={1: "a", 2: "b", 3: "a"})
    h.register(4)
    h.heartbeat(2, want_shut_down=True)
    h.create_topic("t", 5, 3, configs={"retention.ms": "9"})
    h.create_topic("u", 2, 1)
    h.alter_partition(h.topic("u").partitions[0].leader, "u", 0, list(h.topic("u").partitions[0].isr))
    h.run(CreateAclsRequest(creations=[AclCreation(2, "x", 4, "User:a", "*", 3, 3)]))
    extra = [
        ClientQuotaRecord(entity=[EntityData("user", "bob"), EntityData("client-id", None)], key="producer_byte_rate",
                          value=1024.0),
        UserScramCredentialRecord(name="bob", mechanism=1, salt=b"s", stored_key=b"k", server_key=b"v",
                                  iterations=4096),
        DelegationTokenRecord(owner="User:bob", requester="User:bob", renewers=["User:x"], issue_timestamp=1,
                              max_timestamp=3, expiration_timestamp=2, token_id="tok"),
        ZkMigrationStateRecord(zk_migration_state=0),
        FeatureLevelRecord(name="group.version", feature_level=1),
    ]
    h.ctl._latest = h.ctl._latest.replay_all(extra)  # state not reachable through commands yet
    return h


def test_snapshot_round_trip() -> None:
    h = _rich()
    img = h.ctl.image
    recs = image_to_records(img)
    assert recs[0].message.name == "metadata.version"
    framed = [decode_record(encode_record(r.message, r.version)) for r in recs]
    assert EMPTY_IMAGE.replay_all(framed) == img
    loader = ImageLoader()
    for r in framed:
        loader.replay(r)
    assert loader.image == img


def test_standby_loads_snapshot_then_follows() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    h.create_topic("t", 2, 2)
    snap_end = len(h.log)
    image = EMPTY_IMAGE.replay_all(image_to_records(h.ctl.committed_image))
    h.create_topic("u", 1, 2)
    sb = QuorumController()
    sb.load_snapshot(image, snap_end)
    for off, rec in h.log[snap_end:]:
        sb.replay(off, rec)
    assert sb.image == h.ctl.committed_image
    assert sb.committed_offset == len(h.log) - 1


def test_snapshot_policy() -> None:
    p = SnapshotPolicy(max_records=10, max_bytes=0)
    assert not p.note_committed(5, 100)
    assert p.note_committed(5, 100)
    p.snapshot_taken(10)
    assert not p.due and p.last_snapshot_offset == 10
    q = SnapshotPolicy(max_bytes=1000)
    assert q.note_committed(1, 1000)


def test_noop_records_when_idle() -> None:
    h = Harness(max_idle_interval_ms=500)
    assert h.ctl.next_deadline() == 500
    recs = h.tick(500)
    assert [type(r.message).__name__ for r in recs] == ["NoOpRecord"]
    assert h.tick(700) == []
