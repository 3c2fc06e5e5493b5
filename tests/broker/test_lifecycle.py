"""The broker lifecycle state machine, driven by hand: time, answers, failures."""

from __future__ import annotations

import uuid
from dataclasses import replace

from kraftwire.broker.lifecycle import BrokerLifecycle, BrokerState, LifecycleConfig
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.broker_heartbeat_response import BrokerHeartbeatResponse
from kraftwire.protocol.messages.broker_registration_response import BrokerRegistrationResponse

CFG = LifecycleConfig(node_id=4, cluster_id="c1", incarnation_id=uuid.UUID(int=77),
                      listeners=(("PLAINTEXT", "127.0.0.1", 9092, 0),), features=(("metadata.version", 1, 21),),
                      log_dirs=(uuid.UUID(int=1000),), rack="r1", heartbeat_interval_ms=500,
                      session_timeout_ms=3000, retry_backoff_ms=50, max_backoff_ms=400, shutdown_heartbeat_ms=100)


def hb(fenced=True, caught_up=True, shut=False, error=0):
    return BrokerHeartbeatResponse(error_code=int(error), is_caught_up=caught_up, is_fenced=fenced,
                                   should_shut_down=shut)


def registered(now=0, epoch=10):
    m = BrokerLifecycle(CFG)
    send = m.poll(now, -1)
    assert send.kind == "register"
    m.on_registration(now, BrokerRegistrationResponse(broker_epoch=epoch))
    return m


def running(now=0, epoch=10):
    m = registered(now, epoch)
    send = m.poll(now, epoch)
    assert send.kind == "heartbeat" and not send.request.want_fence
    m.on_heartbeat(now, hb(fenced=False))
    assert m.state == BrokerState.RUNNING
    return m


def test_registration_carries_identity_listeners_rack_features_and_dirs():
    m = BrokerLifecycle(CFG)
    assert m.state == BrokerState.STARTING and not m.serving
    send = m.poll(0, -1)
    r = send.request
    assert (r.broker_id, r.cluster_id, r.incarnation_id, r.rack) == (4, "c1", uuid.UUID(int=77), "r1")
    assert [(x.name, x.host, x.port, x.security_protocol) for x in r.listeners] == [("PLAINTEXT", "127.0.0.1", 9092, 0)]
    assert [(f.name, f.min_supported_version, f.max_supported_version) for f in r.features] == [
        ("metadata.version", 1, 21)]
    assert r.log_dirs == [uuid.UUID(int=1000)]
    assert m.poll(0, -1) is None, "one request in flight at a time"


def test_recovery_wants_fence_until_caught_up_to_its_registration_then_runs():
    m = registered(epoch=10)
    assert m.state == BrokerState.RECOVERY
    first = m.poll(0, 5)
    assert first.kind == "heartbeat" and first.request.want_fence and first.request.current_metadata_offset == 5
    assert first.request.broker_epoch == 10
    m.on_heartbeat(1, hb(fenced=True, caught_up=False))
    assert m.poll(2, 7) is None, "next heartbeat waits for the interval"
    # The metadata offset reaches the registration record: ask to be unfenced at once.
    send = m.poll(3, 10)
    assert send is not None and not send.request.want_fence
    m.on_heartbeat(4, hb(fenced=True))
    assert m.state == BrokerState.RECOVERY and not m.serving
    assert m.poll(100, 12) is None and m.next_deadline() == 504
    send = m.poll(504, 12)
    assert not send.request.want_fence
    m.on_heartbeat(505, hb(fenced=False))
    assert m.state == BrokerState.RUNNING and m.serving


def test_heartbeats_follow_the_interval_and_back_off_on_failures():
    m = running(now=0)
    assert m.next_deadline() == 500
    assert m.poll(499, 20) is None
    send = m.poll(500, 20)
    assert send is not None
    m.on_failure(600)
    assert m.controller_stale
    assert m.next_deadline() == 650
    m.poll(650, 20)
    m.on_failure(700)
    assert m.next_deadline() == 800     # doubled
    m.poll(800, 20)
    m.on_heartbeat(810, hb(fenced=False))
    assert m.next_deadline() == 1310    # back to the interval after a success


def test_fenced_by_the_controller_goes_back_to_recovery_then_recovers():
    m = running()
    m.poll(500, 30)
    m.on_heartbeat(500, hb(fenced=True))
    assert m.state == BrokerState.RECOVERY and not m.serving
    assert m.poll(1000, 30).request.want_fence is False
    m.on_heartbeat(1000, hb(fenced=False))
    assert m.state == BrokerState.RUNNING and m.serving


def test_lease_loss_fences_locally_and_registers_again_with_the_same_incarnation():
    m = running(now=0)
    m.poll(500, 30)
    m.on_failure(2500)
    assert m.serving  # lease still held until 3000
    send = m.poll(3001, 30)
    assert m.state == BrokerState.RECOVERY and not m.registered and not m.serving
    assert send.kind == "register" and send.request.incarnation_id == uuid.UUID(int=77)
    assert send.request.previous_broker_epoch == 10
    m.on_registration(3100, BrokerRegistrationResponse(broker_epoch=10))
    assert m.registered and m.state == BrokerState.RECOVERY
    send = m.poll(3100, 40)
    assert not send.request.want_fence
    m.on_heartbeat(3150, hb(fenced=False))
    assert m.state == BrokerState.RUNNING


def test_stale_broker_epoch_triggers_a_new_registration():
    m = running()
    m.poll(500, 30)
    m.on_heartbeat(510, hb(error=Errors.STALE_BROKER_EPOCH))
    assert not m.registered and m.state == BrokerState.RECOVERY
    send = m.poll(510, 30)
    assert send.kind == "register"
    m.on_registration(520, BrokerRegistrationResponse(broker_epoch=44))
    assert m.broker_epoch == 44
    send = m.poll(520, 30)
    assert send.request.want_fence, "caught up to the new registration only at offset 44"


def test_duplicate_registration_is_retried_until_the_old_session_expires():
    """A broker restarted within broker.session.timeout.ms retries, as Kafka's does (issue #12 item 4)."""
    m = BrokerLifecycle(CFG)
    m.poll(0, -1)
    dup = BrokerRegistrationResponse(error_code=int(Errors.DUPLICATE_BROKER_REGISTRATION))
    m.on_registration(1, dup)
    assert m.state == BrokerState.STARTING and m.fatal is None
    assert any("retrying until its session expires" in e for e in m.drain_events())
    assert m.poll(2, -1) is None, "backs off before retrying"
    assert m.poll(1 + CFG.retry_backoff_ms, -1).kind == "register"
    m.on_registration(100, dup)
    assert m.poll(100 + CFG.retry_backoff_ms, -1) is None, "the back-off grows"
    assert m.poll(100 + 2 * CFG.retry_backoff_ms, -1).kind == "register"
    m.on_registration(200, BrokerRegistrationResponse(broker_epoch=77))
    assert m.registered and m.broker_epoch == 77 and m.state == BrokerState.RECOVERY


def test_a_broker_whose_id_stays_taken_gives_up_after_the_initial_registration_timeout():
    m = BrokerLifecycle(replace(CFG, initial_registration_timeout_ms=5000))
    dup = BrokerRegistrationResponse(error_code=int(Errors.DUPLICATE_BROKER_REGISTRATION))
    now = 0
    while m.state != BrokerState.SHUTDOWN and now < 10_000:
        send = m.poll(now, -1)
        if send is not None:
            m.on_registration(now, dup)
        now += 10
    assert m.state == BrokerState.SHUTDOWN and 5000 < now <= 5100
    assert "initial.broker.registration.timeout.ms" in m.fatal and "DUPLICATE_BROKER_REGISTRATION" in m.fatal


def test_registration_errors_are_retried_with_backoff_and_not_controller_marks_the_channel():
    m = BrokerLifecycle(CFG)
    m.poll(0, -1)
    m.on_registration(10, BrokerRegistrationResponse(error_code=int(Errors.NOT_CONTROLLER)))
    assert m.controller_stale and m.state == BrokerState.STARTING
    assert m.poll(20, -1) is None
    assert m.poll(60, -1).kind == "register"
    m.on_registration(70, BrokerRegistrationResponse(error_code=int(Errors.UNSUPPORTED_VERSION)))
    assert m.state == BrokerState.STARTING and m.next_deadline() == 170
    m.poll(170, -1)
    m.on_registration(180, BrokerRegistrationResponse(error_code=int(Errors.INCONSISTENT_CLUSTER_ID)))
    assert m.state == BrokerState.SHUTDOWN and m.fatal


def test_controlled_shutdown_asks_until_told_to_shut_down():
    m = running()
    m.begin_shutdown(100)
    assert m.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN
    send = m.poll(100, 30)
    assert send.request.want_shut_down and not send.request.want_fence
    m.on_heartbeat(120, hb(fenced=False, shut=False))
    assert m.state == BrokerState.PENDING_CONTROLLED_SHUTDOWN
    assert m.next_deadline() == 220      # the faster shutdown pace
    send = m.poll(220, 31)
    assert send.request.want_shut_down
    m.on_heartbeat(230, hb(fenced=True, shut=True))
    assert m.state == BrokerState.SHUTDOWN and m.fatal is None


def test_shutdown_before_registration_is_immediate_and_lease_loss_ends_a_pending_shutdown():
    m = BrokerLifecycle(CFG)
    m.begin_shutdown(0)
    assert m.state == BrokerState.SHUTDOWN
    m = running()
    m.begin_shutdown(100)
    m.poll(100, 30)
    m.on_failure(200)
    m.poll(3100, 30)
    assert m.state == BrokerState.SHUTDOWN and m.fatal is None


def test_events_describe_transitions():
    m = running()
    events = m.drain_events()
    assert any("STARTING -> RECOVERY" in e for e in events)
    assert any("RECOVERY -> RUNNING" in e for e in events)
    assert m.drain_events() == []
