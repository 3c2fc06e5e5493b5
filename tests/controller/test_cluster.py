"""Broker registration, heartbeats, leases, fencing, controlled shutdown (KIP-631 as shipped)."""

from kraftwire.controller.cluster import SHUTDOWN_NOW  # noqa: F401
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord
from kraftwire.protocol.messages.controller_registration_request import (
    ControllerRegistrationRequest,
    Feature,
    Listener,
)
from kraftwire.protocol.messages.register_broker_record import RegisterBrokerRecord
from kraftwire.protocol.messages.unregister_broker_request import UnregisterBrokerRequest

from .harness import Harness, dir_for


def test_broker_epoch_is_offset_of_register_record() -> None:
    h = Harness()
    before = len(h.log)
    epoch = h.register(1)
    assert epoch == before
    off, rec = h.log[epoch]
    assert isinstance(rec.message, RegisterBrokerRecord) and rec.message.broker_epoch == epoch
    assert rec.version == 3
    b = h.image.brokers[1]
    assert b.fenced and b.epoch == epoch and b.directories == (dir_for(1),)


def test_registration_errors() -> None:
    h = Harness()
    r = h.run(h.registration(1, cluster_id="other"))
    assert r.error_code == Errors.INCONSISTENT_CLUSTER_ID
    r = h.run(h.registration(1, mv_range=(1, 20)))
    assert r.error_code == Errors.UNSUPPORTED_VERSION
    r = h.run(h.registration(1, dirs=[]))
    assert r.error_code == Errors.INVALID_REGISTRATION
    h.register(2)
    r = h.run(h.registration(1, dirs=[dir_for(2)]))
    assert r.error_code == Errors.INVALID_REGISTRATION
    assert 1 not in h.image.brokers


def test_missing_metadata_version_range_means_level_one() -> None:
    h = Harness()
    req = h.registration(1)
    req.features = []
    assert h.run(req).error_code == Errors.UNSUPPORTED_VERSION


def test_duplicate_registration_of_live_id_rejected() -> None:
    h = Harness()
    h.start_brokers(1)
    r = h.run(h.registration(1, gen=1))
    assert r.error_code == Errors.DUPLICATE_BROKER_REGISTRATION


def test_new_incarnation_allowed_once_fenced_or_lease_expired() -> None:
    h = Harness()
    h.start_brokers(1)
    old = h.image.brokers[1].epoch
    h.now = 20_000  # lease expired; tick fences it
    h.tick()
    assert h.image.brokers[1].fenced
    epoch = h.register(1, gen=1)
    assert epoch > old and h.image.brokers[1].fenced


def test_new_incarnation_before_the_fence_tick_moves_leaders_off() -> None:
    # The old process died; its lease expired but the fencing tick has not run yet when the new
    # incarnation registers. The new (fenced) registration must not be left leading partitions.
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(1, 2, 3)
    h.create_topic("t", 6, 2)
    assert any(p.leader == 1 for p in h.topic("t").partitions.values())
    h.now = 1500
    h.heartbeat(2)
    h.heartbeat(3)
    h.register(1, gen=1)
    assert h.image.brokers[1].fenced
    for p in h.topic("t").partitions.values():
        assert p.leader != 1
        assert 1 not in p.isr or p.isr == (1,)


def test_fenced_broker_id_can_be_taken_without_expiry() -> None:
    h = Harness()
    h.register(1)  # registered but never unfenced
    assert h.register(1, gen=1) > 0


def test_same_incarnation_reregistration_keeps_epoch_and_state() -> None:
    h = Harness()
    h.start_brokers(1)
    epoch = h.image.brokers[1].epoch
    again = h.register(1)
    assert again == epoch
    b = h.image.brokers[1]
    assert not b.fenced and b.epoch == epoch
    # the register offset moved: the broker must catch up to the new record to count as caught up
    r = h.heartbeat(1, offset=epoch)
    assert not r.is_caught_up and not r.is_fenced


def test_heartbeat_stale_epoch() -> None:
    h = Harness()
    epoch = h.register(1)
    r = h.heartbeat(1, epoch=epoch + 100)
    assert r.error_code == Errors.STALE_BROKER_EPOCH
    r = h.heartbeat(7, epoch=3)
    assert r.error_code == Errors.STALE_BROKER_EPOCH


def test_unfence_only_when_caught_up() -> None:
    h = Harness()
    epoch = h.register(1)
    r = h.heartbeat(1, offset=epoch - 1)
    assert r.is_fenced and not r.is_caught_up and h.image.brokers[1].fenced
    assert h.last.records == []
    r = h.heartbeat(1, offset=epoch)
    assert not r.is_fenced and r.is_caught_up
    assert not h.image.brokers[1].fenced
    rec = h.last.records[0].message
    assert isinstance(rec, BrokerRegistrationChangeRecord) and rec.fenced == -1


def test_unfence_waits_for_commit() -> None:
    h = Harness()
    h.register(1)
    res = h.ctl.handle(h.now, _hb(h, 1))
    h.append(res.records)
    assert res.commit_offset == len(h.log) - 1  # response only after the unfence commits
    assert h.ctl.committed_image.brokers[1].fenced and not h.ctl.image.brokers[1].fenced
    h.commit()
    assert not h.ctl.committed_image.brokers[1].fenced


def _hb(h, bid, **kw):
    from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
    b = h.image.brokers[bid]
    return BrokerHeartbeatRequest(broker_id=bid, broker_epoch=b.epoch, current_metadata_offset=len(h.log), **kw)


def test_want_fence_fences() -> None:
    h = Harness()
    h.start_brokers(1)
    r = h.heartbeat(1, want_fence=True)
    assert r.is_fenced and h.image.brokers[1].fenced


def test_lease_expiry_fences_and_moves_leaders_and_isr() -> None:
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(1, 2, 3)
    h.create_topic("t", 6, 3)
    led_by_1 = [pid for pid, p in h.topic("t").partitions.items() if p.leader == 1]
    assert led_by_1
    h.now = 900
    h.heartbeat(2)
    h.heartbeat(3)
    assert h.ctl.next_deadline() == 1001
    assert h.tick(1000) == []
    h.now = 1500
    h.heartbeat(2)
    h.heartbeat(3)
    recs = h.tick(1501)
    assert recs
    assert h.image.brokers[1].fenced
    assert not h.image.brokers[2].fenced and not h.image.brokers[3].fenced
    for pid, p in h.topic("t").partitions.items():
        assert 1 not in p.isr and p.leader in (2, 3)
        if pid in led_by_1:
            assert p.leader_epoch == 1
    # preferred replica order: the new leader is the first remaining ISR member in replica order
    for p in h.topic("t").partitions.values():
        assert p.leader == [r for r in p.replicas if r != 1][0]


def test_last_isr_member_stays_when_fenced() -> None:
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(1)
    h.create_topic("t", 1, 1)
    h.tick(5000)
    p = h.topic("t").partitions[0]
    assert p.leader == -1 and p.isr == (1,)
    # when it comes back and is caught up, it leads again
    h.heartbeat(1)
    p = h.topic("t").partitions[0]
    assert p.leader == 1 and p.leader_epoch == 2


def test_fenced_broker_never_leads_after_unfence_elsewhere() -> None:
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(1, 2)
    h.create_topic("t", 4, 2)
    h.now = 800
    h.heartbeat(2)
    h.tick(1200)
    assert h.image.brokers[1].fenced
    for p in h.topic("t").partitions.values():
        assert p.leader == 2


def test_controlled_shutdown() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    h.create_topic("t", 4, 2)
    assert any(p.leader == 1 for p in h.topic("t").partitions.values())
    r = h.heartbeat(1, want_shut_down=True)
    assert not r.should_shut_down and not r.is_fenced
    assert h.image.brokers[1].in_controlled_shutdown
    for p in h.topic("t").partitions.values():
        assert p.leader == 2 and 1 not in p.isr
    # broker 2 has not seen the shutdown records yet -> not yet
    r = h.heartbeat(2, offset=0)
    r = h.heartbeat(1)
    assert not r.should_shut_down
    h.heartbeat(2)
    r = h.heartbeat(1)
    assert r.should_shut_down and r.is_fenced
    assert h.image.brokers[1].fenced


def test_controlled_shutdown_without_leaderships_is_immediate() -> None:
    h = Harness()
    h.start_brokers(1)
    r = h.heartbeat(1, want_shut_down=True)
    assert r.should_shut_down and h.image.brokers[1].fenced


def test_fenced_broker_may_shut_down_at_once() -> None:
    h = Harness()
    h.register(1)
    r = h.heartbeat(1, want_shut_down=True)
    assert r.should_shut_down and r.is_fenced


def test_unregister_broker() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    h.create_topic("t", 2, 2)
    r = h.run(UnregisterBrokerRequest(broker_id=1))
    assert r.error_code == 0
    assert 1 not in h.image.brokers
    for p in h.topic("t").partitions.values():
        assert 1 not in p.isr and p.leader == 2
    r = h.run(UnregisterBrokerRequest(broker_id=1))
    assert r.error_code == Errors.BROKER_ID_NOT_REGISTERED


def test_controller_registration() -> None:
    h = Harness()
    import uuid
    req = ControllerRegistrationRequest(controller_id=3000, incarnation_id=uuid.uuid4(),
                                        listeners=[Listener("CONTROLLER", "c", 9093, 0)],
                                        features=[Feature("metadata.version", 1, 21)])
    assert h.run(req).error_code == 0
    assert h.image.controllers[3000].listeners[0].port == 9093
    req.features = [Feature("metadata.version", 1, 20)]
    assert h.run(req).error_code == Errors.UNSUPPORTED_VERSION


def test_standby_answers_not_controller() -> None:
    h = Harness()
    h.ctl.deactivate()
    r = h.run(h.registration(1))
    assert r.error_code == Errors.NOT_CONTROLLER


def test_old_metadata_version_uses_fence_records() -> None:
    h = Harness(mv=5, session_timeout_ms=1000)
    req = h.registration(1, dirs=[])
    assert h.run(req).error_code == 0
    h.heartbeat(1)
    assert type(h.last.records[0].message).__name__ == "UnfenceBrokerRecord"
    recs = h.tick(5000)
    assert type(recs[-1].message).__name__ == "FenceBrokerRecord"


def test_controlled_shutdown_at_old_metadata_version_ignores_its_own_stale_offset() -> None:
    # Below 3.3-IV3 the image has no in_controlled_shutdown: the shutting-down broker still looks
    # active there, and its own (pre-shutdown) metadata offset must not hold the shutdown back.
    h = Harness(mv=5)
    for bid in (1, 2):
        assert h.run(h.registration(bid, dirs=[])).error_code == 0
    for bid in (1, 2):
        assert not h.heartbeat(bid).is_fenced
    h.create_topic("t", 2, 2)
    r = h.heartbeat(1, want_shut_down=True, offset=len(h.log) - 1)
    assert not r.should_shut_down
    h.heartbeat(2)   # broker 2 has seen the leadership moves
    r = h.heartbeat(1, want_shut_down=True)
    assert r.should_shut_down


def test_membership_story_is_logged_at_info(caplog) -> None:
    """Registrations, unfencing, controlled shutdown, session expiry and fencing, as an operator reads them."""
    import logging

    caplog.set_level(logging.INFO, logger="kraftwire.controller")
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(1, 2, 3)
    h.create_topic("t", 4, 3)
    h.heartbeat(3, want_shut_down=True)
    h.now = 1500
    h.heartbeat(2)
    h.heartbeat(3)
    h.tick(1501)
    text = caplog.text
    for needle in ("Registering broker 1 (incarnation", "Unfencing broker 2 (epoch",
                   "Broker 3 (epoch", "is in controlled shutdown: moving", "Broker 1's session expired",
                   "Fencing broker 1 (epoch"):
        assert needle in text, needle


def test_sessions_stay_ordered_by_last_contact_and_expire_oldest_first() -> None:
    """Lease expiry reads the oldest sessions only (a full scan per tick starved the loop at 5,000
    brokers); the order by last contact must therefore survive heartbeats and re-registrations."""
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(1, 2, 3, 4)
    h.now = 100
    h.heartbeat(3)
    h.now = 200
    h.heartbeat(1)
    h.now = 300
    h.register(4, gen=0)          # same incarnation: a re-registration renews the lease too
    assert list(h.ctl.sessions) == [2, 3, 1, 4]
    seen = [s.last_seen_ms for s in h.ctl.sessions.values()]
    assert seen == sorted(seen)
    assert h.ctl.next_deadline() == 1001        # broker 2, last seen at 0
    h.now = 1150
    h.heartbeat(4)
    fenced = h.tick(1150)                        # 2 (seen at 0) and 3 (at 100) expired; 1 and 4 did not
    assert fenced
    assert h.image.brokers[2].fenced and h.image.brokers[3].fenced
    assert not h.image.brokers[1].fenced and not h.image.brokers[4].fenced
    assert h.ctl.next_deadline() == 1201        # broker 1, last seen at 200


def test_a_heartbeat_that_writes_nothing_waits_for_pending_changes_not_for_noop_records() -> None:
    """Kafka's controller answers a request that writes nothing once the newest pending write commits (its
    answer was read from the latest, uncommitted state). A pending NoOpRecord changes no state, so an answer
    read past it is the committed state's answer: only writes that change state are waited for."""
    from kraftwire.protocol.messages.create_topics_request import CreatableTopic, CreateTopicsRequest
    from kraftwire.protocol.messages.no_op_record import NoOpRecord

    h = Harness(max_idle_interval_ms=500)
    h.start_brokers(1)
    h.now += 500
    noop = h.ctl.tick(h.now)
    h.append(noop)                                     # written, not committed (the leader's fsync is slow)
    assert [type(r.message) for r in noop] == [NoOpRecord]
    res = h.ctl.handle(h.now, _hb(h, 1))
    assert res.records == [] and res.commit_offset == -1 and res.response.error_code == 0   # answered at once
    h.run(CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=1, replication_factor=1)]),
          commit=False)
    created = len(h.log) - 1
    h.now += 500
    h.append(h.ctl.tick(h.now))                        # another NoOpRecord after the uncommitted create
    assert len(h.log) - 1 > created
    res = h.ctl.handle(h.now, _hb(h, 1))
    assert res.records == [] and res.commit_offset == created   # the create it may have read, not the NoOp
    h.commit()
    assert h.ctl.handle(h.now, _hb(h, 1)).commit_offset == -1


def test_a_new_incarnation_is_logged_as_a_clean_or_unclean_shutdown(caplog) -> None:
    """The registration of a new incarnation says which it was: naming the registered epoch (Kafka's clean
    shutdown, KIP-966) or not (seen as 'unclean' for every restarted Kafka broker before)."""
    import logging

    caplog.set_level(logging.INFO, logger="kraftwire.controller")
    h = Harness()
    h.start_brokers(1, 2)
    for bid, gen, previous in ((1, 1, h.image.brokers[1].epoch), (2, 1, -1)):
        assert h.heartbeat(bid, want_shut_down=True).should_shut_down   # its controlled shutdown
        req = h.registration(bid, gen=gen)
        req.previous_broker_epoch = previous
        assert h.run(req).error_code == 0
    text = caplog.text
    assert "Registering broker 1 (" in text and "it names its previous epoch (clean shutdown)" in text
    assert "its previous incarnation is gone (unclean shutdown)" in text
    assert text.count("(unclean shutdown)") == 1
