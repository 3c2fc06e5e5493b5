"""Eligible leader replicas (KIP-966) in the controller, as Kafka 4.1 maintains them."""

from __future__ import annotations

from kraftwire.controller.partition_change import Election, build_change
from kraftwire.metadata.features import RecordVersions
from kraftwire.metadata.image import Partition
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import incremental_alter_configs_request as iacq
from kraftwire.protocol.messages import update_features_request as ufq
from tests.controller.harness import Harness

V27 = RecordVersions(27)


def _elr_cluster(min_isr: str = "2") -> tuple[Harness, str]:
    h = Harness(mv=27)
    h.start_brokers(1, 2, 3)
    assert h.create_topic("t", rf=3, assignments=[[1, 2, 3]], configs={"min.insync.replicas": min_isr}).error_code == 0
    return h, "t"


def _fence(h: Harness, bid: int) -> None:
    r = h.heartbeat(bid, want_fence=True)
    assert r.error_code == 0 and r.is_fenced


def _part(h: Harness) -> Partition:
    return h.topic("t").partitions[0]


def test_format_at_41_turns_elr_on_with_a_cluster_min_isr() -> None:
    h = Harness(mv=27)
    assert h.image.features["eligible.leader.replicas.version"] == 1
    assert h.image.configs[(4, "")] == {"min.insync.replicas": "1"}
    static = Harness(mv=27, static_broker_configs={"min.insync.replicas": "2"})
    assert static.image.configs[(4, "")] == {"min.insync.replicas": "2"}
    assert (4, "") not in Harness(mv=25).image.configs          # no ELR before 4.1-IV0: nothing written


def test_replicas_leaving_an_isr_below_min_isr_become_eligible_and_lead_again() -> None:
    h, _ = _elr_cluster()
    _fence(h, 3)                                   # ISR 1,2 is still min ISR: no ELR
    assert (_part(h).isr, _part(h).elr) == ((1, 2), ())
    _fence(h, 2)                                   # ISR 1 < 2: 2 joins the ELR; 3 left earlier and does not
    p = _part(h)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (1, (1,), (2,), ())
    _fence(h, 1)                                   # the ISR may now empty: 1 joins the ELR, leader remembered
    p = _part(h)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (1, 2), (1,))
    assert h.heartbeat(2).error_code == 0           # an ELR member comes back: it leads, cleanly
    p = _part(h)
    assert (p.leader, p.isr, p.elr, p.last_known_elr, p.leader_recovery_state) == (2, (2,), (1,), (), 0)


def test_without_elr_the_last_isr_member_stays() -> None:
    h = Harness(mv=27)
    h.start_brokers(1, 2)
    assert h.run(ufq.UpdateFeaturesRequest(feature_updates=[
        ufq.FeatureUpdateKey("eligible.leader.replicas.version", 0, False, 2)])).error_code == 0
    assert h.create_topic("t", rf=2, assignments=[[1, 2]], configs={"min.insync.replicas": "2"}).error_code == 0
    _fence(h, 2)
    _fence(h, 1)
    p = _part(h)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (1,), (), ())


def test_an_unclean_restart_leaves_the_elr_and_a_clean_one_keeps_it() -> None:
    h, _ = _elr_cluster()
    _fence(h, 3)
    _fence(h, 2)
    assert _part(h).elr == (2,)
    clean = h.registration(2, gen=1)
    clean.previous_broker_epoch = h.image.brokers[2].epoch
    assert h.run(clean).error_code == 0
    assert _part(h).elr == (2,)
    unclean = h.registration(2, gen=2)             # previous epoch -1: it did not shut down cleanly
    assert h.run(unclean).error_code == 0
    p = _part(h)
    assert (p.isr, p.elr) == ((1,), ())


def test_balanced_recovery_elects_the_last_known_leader_alone() -> None:
    h, _ = _elr_cluster()
    _fence(h, 3)
    _fence(h, 2)
    _fence(h, 1)
    for bid in (1, 2):                             # both ELR members restart uncleanly
        assert h.run(h.registration(bid, gen=5)).error_code == 0
    p = _part(h)
    assert (p.leader, p.isr, p.elr, p.last_known_elr) == (-1, (), (), (1,))
    assert h.heartbeat(2).error_code == 0          # 2 is no leader candidate: nothing changes
    assert _part(h).leader == -1
    assert h.heartbeat(1).error_code == 0          # the last known leader may lead, recovering
    p = _part(h)
    assert (p.leader, p.isr, p.last_known_elr, p.leader_recovery_state) == (1, (1,), (), 1)


def test_isr_growth_to_min_isr_clears_the_elr() -> None:
    h, _ = _elr_cluster()
    _fence(h, 3)
    _fence(h, 2)
    assert h.heartbeat(2).error_code == 0
    assert h.alter_partition(1, "t", 0, [1, 2]).error_code == 0
    p = _part(h)
    assert (p.isr, p.elr, p.last_known_elr) == ((1, 2), (), ())


def _alter(h: Harness, rtype: int, name: str, key: str, value: str | None, op: int = 0) -> int:
    req = iacq.IncrementalAlterConfigsRequest(resources=[iacq.AlterConfigsResource(
        resource_type=rtype, resource_name=name, configs=[iacq.AlterableConfig(key, op, value)])])
    return h.run(req).responses[0].error_code


def test_min_isr_changes_clear_elrs_and_broker_level_values_are_refused() -> None:
    h, _ = _elr_cluster()
    _fence(h, 3)
    _fence(h, 2)
    assert _part(h).elr == (2,)
    assert _alter(h, 2, "t", "min.insync.replicas", "1") == 0
    assert [r.type_name for _, r in h.log[-2:]] == ["ConfigRecord", "ClearElrRecord"]
    assert _part(h).elr == ()
    assert _alter(h, 4, "1", "min.insync.replicas", "2") == Errors.INVALID_CONFIG
    assert _alter(h, 4, "", "min.insync.replicas", None, op=1) == Errors.INVALID_CONFIG
    assert _alter(h, 4, "", "min.insync.replicas", "2") == 0
    assert h.log[-1][1].type_name == "ClearElrRecord" and h.log[-1][1].message.topic_name == ""


def test_enabling_elr_writes_the_safety_configs_first() -> None:
    h = Harness(mv=22, static_broker_configs={"min.insync.replicas": "2"})
    h.start_brokers(1)
    assert _alter(h, 4, "1", "min.insync.replicas", "3") == 0
    assert h.run(ufq.UpdateFeaturesRequest(feature_updates=[
        ufq.FeatureUpdateKey("eligible.leader.replicas.version", 1, False, 1)])).error_code == Errors.INVALID_UPDATE_VERSION
    assert h.run(ufq.UpdateFeaturesRequest(feature_updates=[
        ufq.FeatureUpdateKey("metadata.version", 27, False, 1),
        ufq.FeatureUpdateKey("eligible.leader.replicas.version", 1, False, 1)])).error_code == 0
    tail = [(r.type_name, getattr(r.message, "resource_name", None)) for _, r in h.log[-4:]]
    assert tail == [("ConfigRecord", ""), ("ConfigRecord", "1"), ("FeatureLevelRecord", None),
                    ("FeatureLevelRecord", None)]
    assert h.image.configs[(4, "")] == {"min.insync.replicas": "2"}
    assert "min.insync.replicas" not in h.image.configs.get((4, "1"), {})


def test_builder_matches_kafka_rules() -> None:
    import uuid
    tid = uuid.uuid4()
    ok = {1, 2, 3}.__contains__
    p = Partition(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1)
    # leaving a full ISR but staying at min ISR: no ELR fields written
    rec = build_change(tid, 0, p, ok, V27, target_isr=[1, 2], elr=True, min_isr=2)
    assert rec is not None and rec.isr == [1, 2] and rec.eligible_leader_replicas is None
    # below min ISR, the unclean-shutdown replica stays out of the ELR
    rec = build_change(tid, 0, p, ok, V27, target_isr=[1], elr=True, min_isr=3, unclean_shutdown=[3])
    assert rec is not None and rec.eligible_leader_replicas == [2] and rec.isr == [1]
    # an unclean election empties the ELR
    q = Partition(replicas=(1, 2, 3), isr=(), leader=-1, elr=(2,))
    rec = build_change(tid, 0, q, {3}.__contains__, V27, election=Election.UNCLEAN, elr=True, min_isr=2)
    assert rec is not None and (rec.leader, rec.isr, rec.eligible_leader_replicas) == (3, [3], [])
    assert rec.leader_recovery_state == 1
    # nothing to change: no record
    assert build_change(tid, 0, p, ok, V27, elr=True, min_isr=2) is None
