"""Registration's duplicate-directory check through the directory index (controller/dir_index.py):
the same answers as Kafka's scan of every registration, after re-registrations, unregistrations,
failover, a standby's replay and a snapshot load."""

from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.metadata.image import EMPTY_IMAGE
from kraftwire.metadata.snapshot import image_to_records
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.unregister_broker_request import UnregisterBrokerRequest
from kraftwire.protocol.metadata import decode_record, encode_record

from .harness import Harness, dir_for, inc_for


def _taken(h: Harness, bid: int, owner: int) -> bool:
    r = h.run(h.registration(bid, dirs=[dir_for(owner)]))
    if r.error_code == 0:
        return False
    assert r.error_code == Errors.INVALID_REGISTRATION
    return True


def _scan_owner(h: Harness, directory, bid: int) -> int | None:
    """What Kafka's scan answers: a broker other than ``bid`` registered with ``directory``."""
    return next((b.id for b in h.image.brokers.values() if b.id != bid and directory in b.directories), None)


def test_index_agrees_with_a_scan_after_reregistration_and_unregistration() -> None:
    h = Harness()
    h.start_brokers(1, 2, 3)
    assert _taken(h, 9, 2)
    # broker 2 comes back (new incarnation, once fenced) with another directory: its old one is free
    h.now = 60_000
    h.tick()
    req = h.registration(2, gen=1, dirs=[dir_for(20)])
    assert h.run(req).error_code == 0
    assert _scan_owner(h, dir_for(2), 9) is None and not _taken(h, 9, 2)
    # broker 3 unregisters: its directory is free as well
    assert h.run(UnregisterBrokerRequest(broker_id=3)).error_code == 0
    assert not _taken(h, 10, 3)
    # broker 1 still holds its own, and may re-register with it (same id is not a conflict)
    assert _taken(h, 11, 1)
    assert h.run(h.registration(1)).error_code == 0
    for d, bid in ((dir_for(20), 12), (dir_for(1), 13), (dir_for(2), 14)):
        assert h.ctl.dirs.owner(h.image, [d], bid) == _scan_owner(h, d, bid)


def test_uncommitted_registration_is_forgotten_on_deactivation() -> None:
    h = Harness()
    h.start_brokers(1)
    assert h.run(h.registration(5), commit=False).error_code == 0
    assert h.ctl.dirs.owner(h.image, [dir_for(5)], 6) == 5
    h.ctl.deactivate()
    h.ctl.activate(2, h.ctl.next_offset, h.now)
    assert h.ctl.dirs.owner(h.image, [dir_for(5)], 6) is None
    assert h.ctl.dirs.owner(h.image, [dir_for(1)], 6) == 1


def test_standby_replay_and_snapshot_load_know_the_directories() -> None:
    h = Harness()
    h.start_brokers(1, 2)
    standby = QuorumController(ControllerConfig(cluster_id="test-cluster", max_idle_interval_ms=0))
    for off, rec in h.log:
        standby.replay(off, decode_record(encode_record(rec.message, rec.version)))
    assert standby.dirs.owner(standby.image, [dir_for(2)], 7) == 2
    loaded = QuorumController()
    loaded.load_snapshot(EMPTY_IMAGE.replay_all(image_to_records(h.ctl.committed_image)), len(h.log))
    assert loaded.dirs.owner(loaded.image, [dir_for(9), dir_for(1)], 7) == 1
    assert loaded.dirs.owner(loaded.image, [dir_for(1)], 1) is None
    assert inc_for(1) == h.image.brokers[1].incarnation_id
