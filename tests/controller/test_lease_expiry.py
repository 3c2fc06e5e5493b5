"""Lease expiry with thousands of brokers (issue #12): a tick fences a bounded number of stale
brokers, the rest at the next ticks; registered brokers that have not heartbeated yet (fenced) are
not rescanned at every look and do not keep the timer busy."""

from kraftwire.controller.controller import FENCES_PER_TICK
from kraftwire.protocol.messages.broker_registration_change_record import BrokerRegistrationChangeRecord

from .harness import Harness


def _fenced_ids(records) -> list[int]:
    return [r.message.broker_id for r in records
            if type(r.message) is BrokerRegistrationChangeRecord and r.message.fenced == 1]


def test_a_tick_fences_a_bounded_number_and_the_next_ticks_the_rest() -> None:
    n = 2 * FENCES_PER_TICK + 5
    h = Harness(session_timeout_ms=1000)
    h.start_brokers(*range(1, n + 1))
    fenced: list[int] = []
    ticks = 0
    h.now = 5000
    while True:
        if len(fenced) < n:
            assert h.ctl.next_deadline() <= h.now, "stale leases left: the timer comes back at once"
        got = _fenced_ids(h.tick())
        if not got:
            break
        assert len(got) <= FENCES_PER_TICK
        fenced += got
        ticks += 1
    assert sorted(fenced) == list(range(1, n + 1)) and ticks == 3
    assert all(b.fenced for b in h.image.brokers.values())


def test_fenced_brokers_not_heartbeating_do_not_keep_the_timer_busy() -> None:
    h = Harness(session_timeout_ms=1000)
    for bid in range(1, 201):          # registered, fenced, never heartbeating
        h.register(bid)
    h.now = 100
    h.start_brokers(500)               # one live broker, its lease from 100
    h.now = 1050                       # the 200 fenced leases ran out, the live one's has not
    assert h.ctl.next_deadline() <= h.now
    assert h.tick() == []
    deadline = h.ctl.next_deadline()
    assert deadline == 100 + 1000 + 1, "the live broker's lease end, not a fenced one's past deadline"
    h.now = deadline
    assert _fenced_ids(h.tick()) == [500]
    assert h.ctl.next_deadline() > h.now
    # a fenced broker that heartbeats again is unfenced and gets a lease like any other
    r = h.heartbeat(7)
    assert r.error_code == 0 and not r.is_fenced
    h.now += 1001
    assert _fenced_ids(h.tick()) == [7]
