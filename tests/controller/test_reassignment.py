"""Partition reassignment on the controller: AlterPartitionReassignments / ListPartitionReassignments with
Kafka 4.1's semantics (start, completion through AlterPartition, cancellation, validation, faults)."""

from __future__ import annotations

import pytest

from kraftwire.controller.reassignment import MAX_RECORDS_PER_USER_OP
from kraftwire.metadata.image import EMPTY_IMAGE
from kraftwire.metadata.snapshot import image_to_records
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_partition_reassignments_request as arq
from kraftwire.protocol.messages import list_partition_reassignments_request as lrq
from kraftwire.protocol.messages.unregister_broker_request import UnregisterBrokerRequest

from .harness import Harness, dir_for

ELR_MV = 27   # 4.1-IV0: eligible leader replicas may be turned on


def _reassign(h: Harness, moves: dict[tuple[str, int], list[int] | None], version: int = 1,
              allow_rf_change: bool = True):
    by_topic: dict[str, list] = {}
    for (topic, pid), replicas in moves.items():
        by_topic.setdefault(topic, []).append(arq.ReassignablePartition(partition_index=pid, replicas=replicas))
    req = arq.AlterPartitionReassignmentsRequest(
        allow_replication_factor_change=allow_rf_change,
        topics=[arq.ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()])
    return h.run(req, version)


def _codes(resp) -> list[int]:
    return [p.error_code for t in resp.responses for p in t.partitions]


def _list(h: Harness, topics: dict[str, list[int]] | None = None):
    req = lrq.ListPartitionReassignmentsRequest(
        topics=None if topics is None else [lrq.ListPartitionReassignmentsTopics(n, ps) for n, ps in topics.items()])
    resp = h.run(req, 0)
    assert resp.error_code == 0
    return {(t.name, p.partition_index): (p.replicas, p.adding_replicas, p.removing_replicas)
            for t in resp.topics for p in t.partitions}


def _part(h: Harness, topic: str = "t", pid: int = 0):
    return h.topic(topic).partitions[pid]


def _ap_code(resp) -> int:
    return resp.topics[0].partitions[0].error_code


@pytest.fixture
def h() -> Harness:
    h = Harness()
    h.start_brokers(1, 2, 3, 4)
    h.create_topic("t", assignments=[[1, 2]])
    return h


def test_move_to_new_brokers_completes_when_targets_join_the_isr(h: Harness) -> None:
    before = _part(h)
    r = _reassign(h, {("t", 0): [3, 4]})
    assert r.error_code == 0 and _codes(r) == [0] and r.allow_replication_factor_change
    p = _part(h)
    assert p.replicas == (3, 4, 1, 2) and p.adding_replicas == (3, 4) and p.removing_replicas == (1, 2)
    assert p.isr == (1, 2) and p.leader == 1 and p.leader_epoch == before.leader_epoch
    assert p.directories == (dir_for(3), dir_for(4), dir_for(1), dir_for(2))
    assert _list(h) == {("t", 0): ([3, 4, 1, 2], [3, 4], [1, 2])}
    assert _ap_code(h.alter_partition(1, "t", 0, [1, 2, 3])) == 0
    assert _part(h).adding_replicas == (3, 4)          # 4 is not in the ISR yet: still moving
    resp = h.alter_partition(1, "t", 0, [1, 2, 3, 4])
    assert _ap_code(resp) == Errors.NEW_LEADER_ELECTED  # the leader was being removed
    p = _part(h)
    assert p.replicas == (3, 4) and p.isr == (3, 4) and p.leader == 3
    assert p.adding_replicas == () and p.removing_replicas == ()
    assert p.directories == (dir_for(3), dir_for(4))
    assert _list(h) == {}


def test_move_keeping_the_leader_bumps_its_epoch(h: Harness) -> None:
    _reassign(h, {("t", 0): [1, 3]})
    assert (_part(h).replicas, _part(h).adding_replicas, _part(h).removing_replicas) == ((1, 3, 2), (3,), (2,))
    epoch = _part(h).leader_epoch
    resp = h.alter_partition(1, "t", 0, [1, 2, 3])
    pd = resp.topics[0].partitions[0]
    assert pd.error_code == 0 and pd.leader_id == 1 and pd.isr == [1, 3] and pd.leader_epoch == epoch + 1
    assert _part(h).replicas == (1, 3) and _part(h).removing_replicas == ()


def test_reordering_completes_at_once(h: Harness) -> None:
    _reassign(h, {("t", 0): [2, 1]})
    p = _part(h)
    assert p.replicas == (2, 1) and p.adding_replicas == () and p.removing_replicas == () and p.leader == 1
    assert _list(h) == {}


def test_shrinking_within_the_isr_completes_at_once(h: Harness) -> None:
    _reassign(h, {("t", 0): [2]})
    p = _part(h)
    assert p.replicas == (2,) and p.isr == (2,) and p.leader == 2 and p.removing_replicas == ()


def test_same_replicas_write_nothing(h: Harness) -> None:
    n = len(h.log)
    r = _reassign(h, {("t", 0): [1, 2]})
    assert _codes(r) == [0] and len(h.log) == n


def test_cancel_reverts_to_the_original_replicas(h: Harness) -> None:
    _reassign(h, {("t", 0): [3, 4]})
    h.alter_partition(1, "t", 0, [1, 2, 3])
    r = _reassign(h, {("t", 0): None})
    assert _codes(r) == [0]
    p = _part(h)
    assert p.replicas == (1, 2) and p.isr == (1, 2) and p.leader == 1
    assert p.adding_replicas == () and p.removing_replicas == ()
    assert p.directories == (dir_for(1), dir_for(2))
    r = _reassign(h, {("t", 0): None})
    assert _codes(r) == [Errors.NO_REASSIGNMENT_IN_PROGRESS]
    assert r.responses[0].partitions[0].error_message == "No partition reassignment is in progress."


def test_cancel_needing_an_unclean_election_is_refused_unless_the_topic_allows_it() -> None:
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("t", assignments=[[1]])
    h.create_topic("u", assignments=[[1]], configs={"unclean.leader.election.enable": "true"})
    for name in ("t", "u"):
        _reassign(h, {(name, 0): [2, 3]})
        h.alter_partition(1, name, 0, [1, 2])
    h.heartbeat(1, want_fence=True)           # 1 leaves: the ISR holds only an adding replica
    assert _part(h, "t").isr == (2,) and _part(h, "t").leader == 2
    r = _reassign(h, {("t", 0): None, ("u", 0): None})
    assert _codes(r) == [Errors.INVALID_REPLICA_ASSIGNMENT, 0]
    assert "unclean leader election" in r.responses[0].partitions[0].error_message
    assert _part(h, "t").adding_replicas == (2, 3)
    u = _part(h, "u")
    assert u.replicas == (1,) and u.isr == (1,) and u.leader == -1 and u.adding_replicas == ()


@pytest.mark.parametrize(("replicas", "code", "text"), [
    ([], Errors.INVALID_REPLICA_ASSIGNMENT, "empty replica list"),
    ([1, 1], Errors.INVALID_REPLICA_ASSIGNMENT, "broker 1 more than once"),
    ([1, 9], Errors.INVALID_REPLICA_ASSIGNMENT, "broker 9, but no such broker is registered"),
])
def test_invalid_targets(h: Harness, replicas: list[int], code: Errors, text: str) -> None:
    before = _part(h)
    r = _reassign(h, {("t", 0): replicas})
    p = r.responses[0].partitions[0]
    assert p.error_code == code and text in p.error_message
    assert _part(h) == before


def test_unknown_topic_and_partition(h: Harness) -> None:
    r = _reassign(h, {("nope", 0): [1], ("t", 5): [1], ("t", 0): [2, 1]})
    msgs = [(p.error_code, p.error_message) for t in r.responses for p in t.partitions]
    assert msgs[0] == (Errors.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope.")
    assert msgs[1] == (Errors.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:5.")
    assert msgs[2] == (0, None)                 # the valid one is applied all the same
    assert _part(h).replicas == (2, 1)


def test_replication_factor_change_refused_when_not_allowed(h: Harness) -> None:
    r = _reassign(h, {("t", 0): [1, 2, 3]}, allow_rf_change=False)
    assert not r.allow_replication_factor_change
    p = r.responses[0].partitions[0]
    assert p.error_code == Errors.INVALID_REPLICATION_FACTOR
    assert p.error_message == "The replication factor is changed from 2 to 3"
    assert _codes(_reassign(h, {("t", 0): [3, 4]}, allow_rf_change=False)) == [0]
    # while moving, the factor is the target's (2), not the union's (4)
    assert _codes(_reassign(h, {("t", 0): [4, 1]}, allow_rf_change=False)) == [0]
    assert _codes(_reassign(h, {("t", 0): [1, 2, 3]}, version=0, allow_rf_change=False)) == [0]  # v0: allowed


def test_target_fenced_midway_stays_pending_until_it_returns(h: Harness) -> None:
    _reassign(h, {("t", 0): [1, 3]})
    h.heartbeat(3, want_fence=True)
    assert _ap_code(h.alter_partition(1, "t", 0, [1, 2, 3])) == Errors.INELIGIBLE_REPLICA
    assert _list(h) == {("t", 0): ([1, 3, 2], [3], [2])}
    h.heartbeat(3)
    assert _ap_code(h.alter_partition(1, "t", 0, [1, 2, 3])) == 0
    assert _part(h).replicas == (1, 3) and _list(h) == {}


def test_target_unregistered_midway_stays_pending_and_can_be_cancelled(h: Harness) -> None:
    _reassign(h, {("t", 0): [1, 3]})
    h.heartbeat(3, want_fence=True)
    r = h.run(UnregisterBrokerRequest(broker_id=3), 0)
    assert r.error_code == 0 and 3 not in h.image.brokers
    assert _list(h) == {("t", 0): ([1, 3, 2], [3], [2])}
    assert _codes(_reassign(h, {("t", 0): [1, 3]})) == [Errors.INVALID_REPLICA_ASSIGNMENT]
    assert _codes(_reassign(h, {("t", 0): None})) == [0]
    assert _part(h).replicas == (1, 2) and _list(h) == {}


def test_leader_moves_during_the_reassignment(h: Harness) -> None:
    _reassign(h, {("t", 0): [2, 3]})
    h.heartbeat(1, want_shut_down=True)        # the leader (being removed) shuts down: 2 leads
    p = _part(h)
    assert p.leader == 2 and p.isr == (2,) and p.adding_replicas == (3,)
    assert _ap_code(h.alter_partition(2, "t", 0, [2, 3])) == 0
    p = _part(h)
    assert p.replicas == (2, 3) and p.isr == (2, 3) and p.leader == 2 and p.removing_replicas == ()


def test_redirect_a_pending_move(h: Harness) -> None:
    _reassign(h, {("t", 0): [3, 4]})
    h.alter_partition(1, "t", 0, [1, 2, 3])
    _reassign(h, {("t", 0): [1, 4]})          # computed from the current replicas [3, 4, 1, 2]
    p = _part(h)
    # nothing is new to [3, 4, 1, 2], so (as in Kafka) the adding list is left as it was: the original
    # replicas stay replicas minus adding, which is what a cancellation goes back to
    assert p.replicas == (1, 4, 2, 3) and p.adding_replicas == (3, 4) and p.removing_replicas == (2, 3)
    h.alter_partition(1, "t", 0, [1, 2, 3, 4])
    assert _part(h).replicas == (1, 4) and _part(h).isr == (1, 4) and _part(h).adding_replicas == ()


def test_list_named_partitions(h: Harness) -> None:
    h.create_topic("u", 2, assignments=[[1, 2], [2, 1]])
    _reassign(h, {("t", 0): [3, 4], ("u", 1): [3, 1]})
    assert set(_list(h)) == {("t", 0), ("u", 1)}
    assert set(_list(h, {"u": [0, 1, 7], "nope": [0]})) == {("u", 1)}
    assert _list(h, {"u": [0]}) == {}


def test_list_answers_from_the_committed_image(h: Harness) -> None:
    res = h.ctl.handle(h.now, arq.AlterPartitionReassignmentsRequest(topics=[arq.ReassignableTopic(
        "t", [arq.ReassignablePartition(0, [3, 4])])]), 1)
    h.append(res.records)                       # appended, not committed
    resp = h.ctl.handle(h.now, lrq.ListPartitionReassignmentsRequest(topics=None), 0).response
    assert resp.topics == []
    h.commit()
    resp = h.ctl.handle(h.now, lrq.ListPartitionReassignmentsRequest(topics=None), 0).response
    assert [t.name for t in resp.topics] == ["t"]


def test_oversized_plan_is_a_policy_violation() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    n = MAX_RECORDS_PER_USER_OP + 1
    h.create_topic("big", n, assignments=[[1]] * n)
    before = len(h.log)
    r = _reassign(h, {("big", i): [2] for i in range(n)})
    assert r.error_code == Errors.POLICY_VIOLATION
    assert r.error_message == "Unable to perform excessively large batch operation."
    assert set(_codes(r)) == {Errors.POLICY_VIOLATION} and len(_codes(r)) == n
    assert len(h.log) == before


def test_snapshot_and_replay_carry_adding_and_removing(h: Harness) -> None:
    from kraftwire.metadata.snapshot import image_from_snapshot, snapshot_batches
    from kraftwire.raft import SnapshotId

    _reassign(h, {("t", 0): [3, 4]})
    image = h.image
    assert EMPTY_IMAGE.replay_all(image_to_records(image)) == image
    assert EMPTY_IMAGE.replay_all(r for _, r in h.log) == image
    # snapshot bytes, read back through the PartitionRecord fast path
    loaded = image_from_snapshot(snapshot_batches(image, SnapshotId(len(h.log), 1)))
    assert loaded == image and loaded.topic_by_name("t").partitions[0].adding_replicas == (3, 4)


def test_with_eligible_leader_replicas() -> None:
    from kraftwire.controller.elr import elr_enabled
    from kraftwire.metadata.features import ELR_VERSION
    from kraftwire.protocol.messages import update_features_request as ufr
    h = Harness(mv=ELR_MV)
    h.start_brokers(1, 2, 3)
    if not elr_enabled(h.image):
        req = ufr.UpdateFeaturesRequest(feature_updates=[ufr.FeatureUpdateKey(ELR_VERSION, 1, 1)])
        assert h.run(req).error_code == 0
    assert elr_enabled(h.image)
    h.create_topic("t", assignments=[[1, 2]], configs={"min.insync.replicas": "2"})
    _reassign(h, {("t", 0): [2, 3]})
    resp = h.alter_partition(1, "t", 0, [1, 2, 3])
    assert _ap_code(resp) == Errors.NEW_LEADER_ELECTED
    p = _part(h)
    assert p.replicas == (2, 3) and p.isr == (2, 3) and p.leader == 2 and p.elr == ()


def test_replication_throttle_configs(h: Harness) -> None:
    """What kafka-reassign-partitions --execute --throttle sets and --verify removes."""
    from kraftwire.protocol.messages import incremental_alter_configs_request as iaq

    def inc(rtype: int, name: str, ops: list[tuple[str, int, str | None]]):
        res = iaq.AlterConfigsResource(rtype, name, [iaq.AlterableConfig(k, op, v) for k, op, v in ops])
        return h.run(iaq.IncrementalAlterConfigsRequest(resources=[res])).responses[0]

    set_, delete = 0, 1
    ok = inc(2, "t", [("leader.replication.throttled.replicas", set_, "0:1,0:2"),
                      ("follower.replication.throttled.replicas", set_, "0:3 , 0:4")])
    assert ok.error_code == 0
    assert h.image.configs[(2, "t")]["leader.replication.throttled.replicas"] == "0:1,0:2"
    assert inc(2, "t", [("leader.replication.throttled.replicas", set_, "*")]).error_code == 0
    assert inc(2, "t", [("leader.replication.throttled.replicas", set_, "")]).error_code == 0
    bad = inc(2, "t", [("follower.replication.throttled.replicas", set_, "0:1,x")])
    assert bad.error_code == Errors.INVALID_CONFIG
    assert bad.error_message == (
        "Invalid value [0:1, x] for configuration follower.replication.throttled.replicas: "
        "follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
        "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
    assert inc(2, "t", [("leader.replication.throttled.replicas", set_, "*,0:1")]).error_code == Errors.INVALID_CONFIG
    for broker in ("1", "2"):
        assert inc(4, broker, [("leader.replication.throttled.rate", set_, "1000000"),
                               ("follower.replication.throttled.rate", set_, "1000000")]).error_code == 0
    assert h.image.configs[(4, "1")]["follower.replication.throttled.rate"] == "1000000"
    assert inc(4, "1", [("leader.replication.throttled.rate", set_, "-1")]).error_code == Errors.INVALID_CONFIG
    assert inc(4, "1", [("follower.replication.throttled.rate", set_, "fast")]).error_code == Errors.INVALID_CONFIG
    # --verify's clean-up deletes all three broker keys, set or not
    r = inc(4, "1", [("leader.replication.throttled.rate", delete, None),
                     ("follower.replication.throttled.rate", delete, None),
                     ("replica.alter.log.dirs.io.max.bytes.per.second", delete, None)])
    assert r.error_code == 0 and "leader.replication.throttled.rate" not in h.image.configs.get((4, "1"), {})
    assert inc(2, "t", [("leader.replication.throttled.replicas", delete, None),
                        ("follower.replication.throttled.replicas", delete, None)]).error_code == 0
    assert "leader.replication.throttled.replicas" not in h.image.configs.get((2, "t"), {})
