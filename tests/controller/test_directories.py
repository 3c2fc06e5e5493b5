"""JBOD (KIP-858) on the controller (controller/directories.py): AssignReplicasToDirs records each replica's
directory with Kafka's per-partition errors, a directory reported offline in a heartbeat takes its replicas
out of ISRs and leaderships and out of the registration, and a replica in an offline directory is never
elected."""

from __future__ import annotations

import uuid

from kraftwire.metadata.image import UNASSIGNED_DIR
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import assign_replicas_to_dirs_request as aq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord

from .harness import Harness


def jbod_dirs(bid: int) -> list[uuid.UUID]:
    return [uuid.UUID(int=(bid + 1) << 80 | 0x1000 | i) for i in range(2)]


def jbod_cluster(mv: int = 21, brokers=(1, 2, 3)) -> Harness:
    h = Harness(mv=mv)
    for bid in brokers:
        assert h.run(h.registration(bid, dirs=jbod_dirs(bid))).error_code == 0
    for bid in brokers:
        assert not h.heartbeat(bid).is_fenced
    return h


def assign(h: Harness, bid: int, directory: uuid.UUID, topic_id: uuid.UUID, *pids: int, epoch: int | None = None):
    req = aq.AssignReplicasToDirsRequest(
        broker_id=bid, broker_epoch=h.image.brokers[bid].epoch if epoch is None else epoch,
        directories=[aq.DirectoryData(id_=directory, topics=[aq.TopicData(topic_id=topic_id, partitions=[
            aq.PartitionData(p) for p in pids])])])
    return h.run(req)


def codes(resp) -> list[int]:
    return [p.error_code for d in resp.directories for t in d.topics for p in t.partitions]


def dir_of(h: Harness, topic: str, pid: int, bid: int) -> uuid.UUID:
    p = h.topic(topic).partitions[pid]
    return p.directories[p.replicas.index(bid)]


def test_new_replicas_of_a_multi_dir_broker_are_unassigned_until_the_broker_assigns_them() -> None:
    h = jbod_cluster()
    h.create_topic("t", partitions=2, rf=3)
    t = h.topic("t")
    assert all(d == UNASSIGNED_DIR for p in t.partitions.values() for d in p.directories)
    resp = assign(h, 2, jbod_dirs(2)[1], t.id, 0, 1)
    assert resp.error_code == 0 and codes(resp) == [0, 0]
    assert dir_of(h, "t", 0, 2) == dir_of(h, "t", 1, 2) == jbod_dirs(2)[1]
    assert dir_of(h, "t", 0, 1) == UNASSIGNED_DIR
    recs = [r.message for r in h.last.records]
    assert all(type(m) is PartitionChangeRecord and m.isr is None and m.leader == -2 for m in recs)
    # the same assignment again changes nothing
    assert codes(assign(h, 2, jbod_dirs(2)[1], t.id, 0)) == [0] and h.last.records == []


def test_assignment_errors_are_kafkas() -> None:
    h = jbod_cluster(brokers=(1, 2, 3, 4))
    h.create_topic("t", partitions=1, assignments=[[1, 2]])
    t = h.topic("t")
    assert codes(assign(h, 1, jbod_dirs(1)[0], uuid.uuid4(), 0)) == [Errors.UNKNOWN_TOPIC_ID]
    assert codes(assign(h, 1, jbod_dirs(1)[0], t.id, 7)) == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
    assert codes(assign(h, 4, jbod_dirs(4)[0], t.id, 0)) == [Errors.NOT_LEADER_OR_FOLLOWER]
    assert assign(h, 1, jbod_dirs(1)[0], t.id, 0, epoch=12345).error_code == Errors.STALE_BROKER_EPOCH
    assert h.last.records == []


def test_assignment_needs_directory_assignment_metadata_version() -> None:
    h = Harness(mv=14)   # 3.6-IV2: before 3.7-IV2
    h.start_brokers(1)
    h.create_topic("t")
    resp = assign(h, 1, uuid.uuid4(), h.topic("t").id, 0)
    assert resp.error_code == Errors.UNSUPPORTED_VERSION and h.last.records == []


def test_offline_directory_moves_leadership_and_leaves_the_registration() -> None:
    h = jbod_cluster()
    h.create_topic("t", partitions=2, assignments=[[1, 2], [2, 1]])
    t = h.topic("t")
    bad, good = jbod_dirs(1)
    assign(h, 1, bad, t.id, 0)
    assign(h, 1, good, t.id, 1)
    p0, p1 = t.partitions[0], h.topic("t").partitions[1]
    assert p0.leader == 1 and p1.leader == 2
    resp = h.run(BrokerHeartbeatRequest(broker_id=1, broker_epoch=h.image.brokers[1].epoch,
                                        current_metadata_offset=len(h.log) - 1, offline_log_dirs=[bad]))
    assert resp.error_code == 0 and not resp.is_fenced
    moved = h.topic("t").partitions
    assert moved[0].leader == 2 and moved[0].isr == (2,)        # the replica on the failed dir is out
    assert moved[1].isr == (2, 1) and moved[1].leader == 2      # the other dir's replica stays in sync
    assert h.image.brokers[1].directories == (good,)
    change = [r.message for r in h.last.records if type(r.message) is BrokerRegistrationChangeRecord]
    assert len(change) == 1 and change[0].log_dirs == [good] and h.last.records[-1].version == 2
    # the broker keeps reporting the dir: nothing more is written
    h.run(BrokerHeartbeatRequest(broker_id=1, broker_epoch=h.image.brokers[1].epoch,
                                 current_metadata_offset=len(h.log) - 1, offline_log_dirs=[bad]))
    assert h.last.records == []
    # broker 2 fails: broker 1's replica of partition 0 sits in the offline dir and may not lead it
    h.run(BrokerHeartbeatRequest(broker_id=2, broker_epoch=h.image.brokers[2].epoch,
                                 current_metadata_offset=len(h.log) - 1, want_fence=True))
    assert h.topic("t").partitions[0].leader == -1
    assert h.topic("t").partitions[1].leader == 1


def test_a_replica_assigned_to_an_offline_directory_leaves_its_isr() -> None:
    h = jbod_cluster()
    h.create_topic("t", partitions=1, assignments=[[1, 2]])
    t = h.topic("t")
    bad, good = jbod_dirs(1)
    h.run(BrokerHeartbeatRequest(broker_id=1, broker_epoch=h.image.brokers[1].epoch,
                                 current_metadata_offset=len(h.log) - 1, offline_log_dirs=[bad]))
    assert h.image.brokers[1].directories == (good,)
    assert codes(assign(h, 1, bad, t.id, 0)) == [0]
    p = h.topic("t").partitions[0]
    assert dir_of(h, "t", 0, 1) == bad and p.leader == 2 and p.isr == (2,)
