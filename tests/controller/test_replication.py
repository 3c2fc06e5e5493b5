"""CreateTopics, DeleteTopics, CreatePartitions, AlterPartition (KIP-497), ElectLeaders."""

import uuid

import pytest

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_partitions_request as cpq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import delete_topics_request as dtq
from kraftwire.protocol.messages import elect_leaders_request as elq
from kraftwire.protocol.messages.allocate_producer_ids_request import AllocateProducerIdsRequest

from .harness import Harness


@pytest.fixture
def h() -> Harness:
    h = Harness()
    h.start_brokers(1, 2, 3, racks={1: "a", 2: "b", 3: "c"})
    return h


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad name", "ü", "a/b"])
def test_invalid_topic_names(h: Harness, name: str) -> None:
    assert h.create_topic(name).error_code == Errors.INVALID_TOPIC_EXCEPTION


def test_create_topic_records_and_response(h: Harness) -> None:
    r = h.create_topic("a" * 249, 3, 3, configs={"retention.ms": "1000"})
    assert r.error_code == 0 and r.num_partitions == 3 and r.replication_factor == 3
    t = h.topic("a" * 249)
    assert t.id == r.topic_id and len(t.partitions) == 3
    assert h.image.configs[(2, "a" * 249)] == {"retention.ms": "1000"}
    leaders = set()
    for p in t.partitions.values():
        assert sorted(p.replicas) == [1, 2, 3] and p.isr == p.replicas and p.leader == p.replicas[0]
        assert p.leader_epoch == 0 and p.partition_epoch == 0 and len(p.directories) == 3
        leaders.add(p.leader)
    assert leaders == {1, 2, 3}
    assert {c.name: c.value for c in r.configs}["retention.ms"] == "1000"


def test_create_topic_errors(h: Harness) -> None:
    h.create_topic("t")
    assert h.create_topic("t").error_code == Errors.TOPIC_ALREADY_EXISTS
    assert h.create_topic("a.b").error_code == 0
    assert h.create_topic("a_b").error_code == Errors.INVALID_TOPIC_EXCEPTION
    assert h.create_topic("x", 0, 1).error_code == Errors.INVALID_PARTITIONS
    assert h.create_topic("x", -2, 1).error_code == Errors.INVALID_PARTITIONS
    assert h.create_topic("x", 1, 0).error_code == Errors.INVALID_REPLICATION_FACTOR
    assert h.create_topic("x", 1, 4).error_code == Errors.INVALID_REPLICATION_FACTOR
    assert h.create_topic("x", configs={"nope": "1"}).error_code == Errors.INVALID_CONFIG
    assert h.create_topic("x", configs={"retention.ms": "abc"}).error_code == Errors.INVALID_CONFIG
    assert h.create_topic("x", configs={"min.insync.replicas": "0"}).error_code == Errors.INVALID_CONFIG
    assert h.create_topic("x", configs={"cleanup.policy": "compact,bogus"}).error_code == Errors.INVALID_CONFIG
    assert "x" not in h.image.topic_ids


def test_defaults_minus_one(h: Harness) -> None:
    h2 = Harness(default_num_partitions=4, default_replication_factor=2)
    h2.start_brokers(1, 2)
    r = h2.create_topic("t", -1, -1)
    assert r.num_partitions == 4 and r.replication_factor == 2


def test_duplicate_names_in_request(h: Harness) -> None:
    req = ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic("d", 1, 1), ctq.CreatableTopic("d", 1, 1),
                                          ctq.CreatableTopic("ok", 1, 1)])
    r = h.run(req)
    assert [(t.name, t.error_code) for t in r.topics] == [("d", Errors.INVALID_REQUEST), ("ok", 0)]


def test_validate_only(h: Harness) -> None:
    n = len(h.log)
    r = h.create_topic("v", 2, 2, validate_only=True)
    assert r.error_code == 0 and r.num_partitions == 2 and len(h.log) == n
    assert "v" not in h.image.topic_ids


def test_manual_assignments(h: Harness) -> None:
    r = h.create_topic("m", assignments=[[3, 1], [2, 3]])
    assert r.error_code == 0
    assert h.topic("m").partitions[0].replicas == (3, 1) and h.topic("m").partitions[0].leader == 3
    assert h.create_topic("m2", assignments=[[1, 9]]).error_code == Errors.INVALID_REPLICA_ASSIGNMENT
    assert h.create_topic("m2", assignments=[[1, 1]]).error_code == Errors.INVALID_REPLICA_ASSIGNMENT
    assert h.create_topic("m2", assignments=[[1], [1, 2]]).error_code == Errors.INVALID_REPLICA_ASSIGNMENT
    assert h.create_topic("m2", assignments=[[]]).error_code == Errors.INVALID_REPLICA_ASSIGNMENT
    t = ctq.CreatableTopic("m3", 1, -1, assignments=[ctq.CreatableReplicaAssignment(0, [1])])
    assert h.run(ctq.CreateTopicsRequest(topics=[t])).topics[0].error_code == Errors.INVALID_REQUEST
    t = ctq.CreatableTopic("m3", -1, -1, assignments=[ctq.CreatableReplicaAssignment(1, [1])])
    assert h.run(ctq.CreateTopicsRequest(topics=[t])).topics[0].error_code == Errors.INVALID_REPLICA_ASSIGNMENT


def test_manual_assignment_with_fenced_brokers(h: Harness) -> None:
    h.register(4)  # registered, fenced
    r = h.create_topic("f", assignments=[[4, 1]])
    assert r.error_code == 0
    p = h.topic("f").partitions[0]
    assert p.isr == (1,) and p.leader == 1
    assert h.create_topic("g", assignments=[[4]]).error_code == Errors.INVALID_REPLICA_ASSIGNMENT


def test_rack_aware_placement() -> None:
    h = Harness()
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    h.start_brokers(*racks, racks=racks)
    h.create_topic("r", 60, 3)
    counts: dict[int, int] = {}
    for p in h.topic("r").partitions.values():
        assert len({racks[b] for b in p.replicas}) == 3
        counts[p.leader] = counts.get(p.leader, 0) + 1
    assert set(counts.values()) == {10}


def test_fenced_brokers_not_used_for_placement(h: Harness) -> None:
    h.register(4)
    h.create_topic("p", 20, 3)
    assert all(4 not in p.replicas for p in h.topic("p").partitions.values())


def test_delete_topics_by_name_and_id(h: Harness) -> None:
    a = h.create_topic("a", configs={"retention.ms": "5"}).topic_id
    b = h.create_topic("b").topic_id
    r = h.run(dtq.DeleteTopicsRequest(topic_names=["a", "zz"]), version=5)
    assert [(x.name, x.error_code) for x in r.responses] == [("a", 0), ("zz", Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert "a" not in h.image.topic_ids and a not in h.image.topics
    assert (2, "a") not in h.image.configs
    r = h.run(dtq.DeleteTopicsRequest(topics=[dtq.DeleteTopicState(None, b),
                                              dtq.DeleteTopicState(None, uuid.uuid4())]))
    assert r.responses[0].error_code == 0 and r.responses[0].name == "b"
    assert r.responses[1].error_code == Errors.UNKNOWN_TOPIC_ID
    assert not h.image.topics


def test_create_partitions(h: Harness) -> None:
    h.create_topic("c", 2, 2)
    req = cpq.CreatePartitionsRequest(topics=[cpq.CreatePartitionsTopic("c", 5, None)])
    assert h.run(req).results[0].error_code == 0
    t = h.topic("c")
    assert sorted(t.partitions) == [0, 1, 2, 3, 4] and all(len(p.replicas) == 2 for p in t.partitions.values())
    bad = [cpq.CreatePartitionsTopic("c", 5, None), cpq.CreatePartitionsTopic("nope", 2, None)]
    r = h.run(cpq.CreatePartitionsRequest(topics=bad))
    assert [x.error_code for x in r.results] == [Errors.INVALID_PARTITIONS, Errors.UNKNOWN_TOPIC_OR_PARTITION]
    manual = cpq.CreatePartitionsTopic("c", 6, [cpq.CreatePartitionsAssignment([3, 1])])
    assert h.run(cpq.CreatePartitionsRequest(topics=[manual])).results[0].error_code == 0
    assert h.topic("c").partitions[5].replicas == (3, 1)
    wrong = cpq.CreatePartitionsTopic("c", 8, [cpq.CreatePartitionsAssignment([3, 1])])
    r = h.run(cpq.CreatePartitionsRequest(topics=[wrong]))
    assert r.results[0].error_code == Errors.INVALID_REPLICA_ASSIGNMENT
    wrong = cpq.CreatePartitionsTopic("c", 7, [cpq.CreatePartitionsAssignment([3])])
    r = h.run(cpq.CreatePartitionsRequest(topics=[wrong]))
    assert r.results[0].error_code == Errors.INVALID_REPLICA_ASSIGNMENT
    n = len(h.log)
    v = cpq.CreatePartitionsRequest(topics=[cpq.CreatePartitionsTopic("c", 9, None)], validate_only=True)
    assert h.run(v).results[0].error_code == 0 and len(h.log) == n


# -- AlterPartition -------------------------------------------------------------------------------------

@pytest.fixture
def ap(h: Harness) -> Harness:
    h.create_topic("t", 1, assignments=[[1, 2, 3]])
    return h


def _pr(resp):
    return resp.topics[0].partitions[0]


def test_alter_partition_shrink_and_expand(ap: Harness) -> None:
    r = _pr(ap.alter_partition(1, "t", 0, [1, 2]))
    assert r.error_code == 0 and r.isr == [1, 2] and r.leader_id == 1
    assert r.partition_epoch == 1 and r.leader_epoch == 0  # no epoch bump on shrink at 3.9
    r = _pr(ap.alter_partition(1, "t", 0, [1, 2, 3]))
    assert r.error_code == 0 and r.isr == [1, 2, 3] and r.partition_epoch == 2
    assert ap.topic("t").partitions[0].isr == (1, 2, 3)


def test_alter_partition_shrink_bumps_leader_epoch_before_3_6() -> None:
    h = Harness(mv=11)
    h.start_brokers(1, 2)
    h.create_topic("t", assignments=[[1, 2]])
    r = _pr(h.alter_partition(1, "t", 0, [1], version=2))
    assert r.error_code == 0 and r.leader_epoch == 1


def test_alter_partition_error_matrix(ap: Harness) -> None:
    p = ap.topic("t").partitions[0]
    cases = [
        (dict(bid=1, isr=[1, 2], leader_epoch=p.leader_epoch + 1), Errors.NOT_CONTROLLER),
        (dict(bid=1, isr=[1, 2], partition_epoch=p.partition_epoch + 1), Errors.NOT_CONTROLLER),
        (dict(bid=1, isr=[1, 2], leader_epoch=p.leader_epoch - 1), Errors.FENCED_LEADER_EPOCH),
        (dict(bid=2, isr=[1, 2]), Errors.INVALID_REQUEST),
        (dict(bid=1, isr=[1, 2], partition_epoch=p.partition_epoch - 1), Errors.INVALID_UPDATE_VERSION),
        (dict(bid=1, isr=[2, 3]), Errors.INVALID_REQUEST),          # leader not in ISR
        (dict(bid=1, isr=[1, 4]), Errors.INVALID_REQUEST),          # not a replica
        (dict(bid=1, isr=[1, 1]), Errors.INVALID_REQUEST),          # duplicate
        (dict(bid=1, isr=[1, 2], epochs={2: 999}), Errors.INELIGIBLE_REPLICA),
        (dict(bid=1, isr=[1, 2], recovery=1), Errors.INVALID_REQUEST),
    ]
    for kw, err in cases:
        bid = kw.pop("bid")
        isr = kw.pop("isr")
        assert _pr(ap.alter_partition(bid, "t", 0, isr, **kw)).error_code == err, (kw, err)
    assert ap.topic("t").partitions[0] == p
    r = ap.alter_partition(1, "t", 7, [1])
    assert _pr(r).error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    r = ap.alter_partition(1, "nope", 0, [1])
    assert _pr(r).error_code == Errors.UNKNOWN_TOPIC_ID
    r = ap.alter_partition(1, "nope", 0, [1], version=1)
    assert _pr(r).error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    r = ap.alter_partition(1, "t", 0, [1], broker_epoch=12345)
    assert r.error_code == Errors.STALE_BROKER_EPOCH


def test_alter_partition_ineligible_replicas(ap: Harness) -> None:
    ap.alter_partition(1, "t", 0, [1, 2])
    ap.heartbeat(3, want_fence=True)
    assert _pr(ap.alter_partition(1, "t", 0, [1, 2, 3])).error_code == Errors.INELIGIBLE_REPLICA
    assert _pr(ap.alter_partition(1, "t", 0, [1, 2, 3], version=1)).error_code == Errors.OPERATION_NOT_ATTEMPTED
    ap.heartbeat(3)  # unfenced again
    assert _pr(ap.alter_partition(1, "t", 0, [1, 2, 3])).error_code == 0


def test_alter_partition_shutting_down_replica_ineligible() -> None:
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("t", assignments=[[1, 2]])
    h.create_topic("u", assignments=[[3, 1]])
    h.alter_partition(1, "t", 0, [1])
    h.heartbeat(3, want_shut_down=True)
    assert h.image.brokers[3].in_controlled_shutdown
    h.create_topic("v", assignments=[[1, 3]])
    assert _pr(h.alter_partition(1, "v", 0, [1, 3])).error_code == Errors.INELIGIBLE_REPLICA


def test_alter_partition_many_partitions_in_one_request(h: Harness) -> None:
    from kraftwire.protocol.messages import alter_partition_request as apq
    h.create_topic("m", 3, assignments=[[1, 2], [1, 3], [2, 1]])
    t = h.topic("m")
    parts = [apq.PartitionData(partition_index=i, leader_epoch=0, partition_epoch=0,
                               new_isr_with_epochs=[apq.BrokerState(1, -1)]) for i in (0, 1)]
    parts.append(apq.PartitionData(partition_index=2, leader_epoch=0, partition_epoch=0,
                                   new_isr_with_epochs=[apq.BrokerState(1, -1)]))
    req = apq.AlterPartitionRequest(broker_id=1, broker_epoch=h.image.brokers[1].epoch,
                                    topics=[apq.TopicData(topic_id=t.id, partitions=parts)])
    r = h.run(req)
    codes = [p.error_code for p in r.topics[0].partitions]
    assert codes == [0, 0, Errors.INVALID_REQUEST]
    assert h.topic("m").partitions[0].isr == (1,) and h.topic("m").partitions[1].isr == (1,)
    assert len(h.last.records) == 2


def test_elect_leaders(h: Harness) -> None:
    h.create_topic("e", assignments=[[1, 2]])
    h.heartbeat(1, want_fence=True)
    assert h.topic("e").partitions[0].leader == 2
    h.heartbeat(1)  # unfenced; not yet in ISR
    req = elq.ElectLeadersRequest(election_type=0, topic_partitions=[elq.TopicPartitions("e", [0, 5])])
    r = h.run(req)
    codes = [x.error_code for x in r.replica_election_results[0].partition_result]
    assert codes == [Errors.PREFERRED_LEADER_NOT_AVAILABLE, Errors.UNKNOWN_TOPIC_OR_PARTITION]
    h.alter_partition(2, "e", 0, [2, 1])
    r = h.run(req)
    assert r.replica_election_results[0].partition_result[0].error_code == 0
    assert h.topic("e").partitions[0].leader == 1
    r = h.run(req)
    assert r.replica_election_results[0].partition_result[0].error_code == Errors.ELECTION_NOT_NEEDED


def test_unclean_election() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    h.create_topic("u", assignments=[[1, 2]])
    h.alter_partition(1, "u", 0, [1])
    h.heartbeat(1, want_fence=True)
    p = h.topic("u").partitions[0]
    assert p.leader == -1 and p.isr == (1,)
    req = elq.ElectLeadersRequest(election_type=1, topic_partitions=[elq.TopicPartitions("u", [0])])
    assert h.run(req).replica_election_results[0].partition_result[0].error_code == 0
    p = h.topic("u").partitions[0]
    assert p.leader == 2 and p.isr == (2,) and p.leader_recovery_state == 1


def test_auto_rebalance_moves_back_to_preferred() -> None:
    h = Harness(auto_leader_rebalance=True, leader_imbalance_check_interval_ms=1000)
    h.start_brokers(1, 2)
    h.create_topic("r", assignments=[[1, 2]])
    h.heartbeat(1, want_fence=True)
    h.heartbeat(1)
    h.alter_partition(2, "r", 0, [2, 1])
    assert h.topic("r").partitions[0].leader == 2
    h.tick(2000)
    assert h.topic("r").partitions[0].leader == 1


def test_allocate_producer_ids(h: Harness) -> None:
    e = h.image.brokers[1].epoch
    r = h.run(AllocateProducerIdsRequest(broker_id=1, broker_epoch=e))
    assert (r.producer_id_start, r.producer_id_len) == (0, 1000)
    r = h.run(AllocateProducerIdsRequest(broker_id=1, broker_epoch=e))
    assert r.producer_id_start == 1000
    r = h.run(AllocateProducerIdsRequest(broker_id=1, broker_epoch=e + 1))
    assert r.error_code == Errors.STALE_BROKER_EPOCH
