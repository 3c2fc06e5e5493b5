"""A node meeting a metadata.version or feature level it lacks stays up and says why, once (issue 17).

Before: ``CRITICAL cannot apply committed metadata: unsupported metadata.version level 27`` and the
node exited. Now replay stops at an unsupported metadata.version (the broker stays fenced, the voter
never activates its controller) and one line names the level and the release that needs it.
"""

from __future__ import annotations

import logging
import uuid
from types import SimpleNamespace

import pytest

from kraftwire.broker.metadata import BrokerMetadataListener
from kraftwire.controller import QuorumController
from kraftwire.core.controller_role import ControllerRole
from kraftwire.metadata import image_to_records
from kraftwire.metadata.features import bootstrap_records
from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.metadata import encode_record
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.storage.snapshot import frame_snapshot

TID = uuid.UUID(int=42)


def batch(base: int, *msgs) -> RecordBatch:
    return RecordBatch(base, 1, tuple(Record(value=encode_record(m)) for m in msgs))


def future_record() -> Record:
    """A PartitionRecord in a version (3) this kraftwire cannot decode, as a newer release might write."""
    value = bytearray(encode_record(PartitionRecord(partition_id=0, topic_id=TID, replicas=[1], isr=[1]), 2))
    assert value[2] == 2
    value[2] = 3
    return Record(value=bytes(value))


def boot() -> list:
    return [r.message for r in bootstrap_records()]


def mv(level: int) -> FeatureLevelRecord:
    return FeatureLevelRecord(name="metadata.version", feature_level=level)


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_broker_parks_on_a_newer_metadata_version_and_does_not_stop(caplog: pytest.LogCaptureFixture) -> None:
    lst = BrokerMetadataListener()
    stopped: list = []
    lst.on_fatal.append(stopped.append)
    b = boot()
    lst.handle_commit([batch(0, *b)])
    lst.handle_commit([batch(len(b), mv(28))])
    assert lst.fatal is None and stopped == []
    assert lst.parked is not None and "metadata.version 28 (4.2-IV0)" in lst.parked
    # later records (even ones it cannot decode) are not applied and do not stop it either
    lst.handle_commit([RecordBatch(len(b) + 1, 1, (future_record(),))])
    lst.handle_commit([batch(len(b) + 2, TopicRecord(name="t", topic_id=TID))])
    assert lst.fatal is None and lst.image.topic_by_name("t") is None
    lines = _lines(caplog)
    assert len(lines) == 1 and "4.2-IV0" in lines[0] and "Apache Kafka 4.2" in lines[0]


def test_broker_parks_when_the_undecodable_record_comes_in_the_same_batch() -> None:
    lst = BrokerMetadataListener()
    b = boot()
    lst.handle_commit([batch(0, *b)])
    lst.handle_commit([RecordBatch(len(b), 1, (Record(value=encode_record(mv(29))), future_record()))])
    assert lst.fatal is None and lst.parked is not None and "4.2-IV1" in lst.parked


def test_broker_parks_on_a_snapshot_it_cannot_read() -> None:
    src = BrokerMetadataListener()
    src.handle_commit([batch(0, *boot(), mv(28))])
    records = image_to_records(src.image)
    snap = frame_snapshot(SnapshotId(10, 1), records)
    fresh = BrokerMetadataListener()
    fresh.handle_snapshot(10, snap)
    assert fresh.fatal is None and fresh.parked is not None and "metadata.version 28" in fresh.parked


def test_a_broker_follows_elr_level_1_but_a_broken_record_still_stops_it() -> None:
    lst = BrokerMetadataListener()
    lst.handle_commit([batch(0, *boot(), FeatureLevelRecord("eligible.leader.replicas.version", 1))])
    assert lst.parked is None and lst.fatal is None
    lst.handle_commit([RecordBatch(100, 1, (future_record(),))])  # not a newer level: a broken log
    assert lst.fatal is not None and lst.parked is None


class _Core:
    """Just enough of a raft core for ControllerRole.maybe_activate: this node leads, hw is past the start."""

    def __init__(self) -> None:
        self.is_leader = True
        self.epoch = 3
        self.hw = 100
        self.state = SimpleNamespace(epoch_start_offset=5, pending=())
        self.log = SimpleNamespace(end_offset=100)

    @property
    def epoch_start_committed(self) -> bool:   # as RaftCore's: leading, the epoch's first record committed
        return self.is_leader and self.hw > self.state.epoch_start_offset


def _shell() -> ControllerRole:
    role = ControllerRole(1, QuorumController(), bootstrap_records())
    role.attach(_Core(), clock=lambda: 0, append=lambda records: [])
    return role


def test_voter_parks_on_a_newer_metadata_version_and_never_activates(caplog: pytest.LogCaptureFixture) -> None:
    shell = _shell()
    b = boot()
    shell.handle_commit([batch(0, *b)])
    shell.handle_commit([batch(len(b), mv(28)), RecordBatch(len(b) + 1, 1, (future_record(),))])
    assert shell.fatal is None
    assert shell.parked is not None and "4.2-IV0" in shell.parked
    shell.maybe_activate()
    assert not shell.controller.active
    assert len(_lines(caplog)) == 1


def test_voter_replays_but_does_not_activate_under_a_feature_level_it_lacks(
        caplog: pytest.LogCaptureFixture) -> None:
    shell = _shell()
    b = boot()
    shell.handle_commit([batch(0, *b, FeatureLevelRecord("share.version", 1))])
    shell.handle_commit([batch(len(b) + 1, TopicRecord(name="t", topic_id=TID))])
    assert shell.parked is None and shell.fatal is None
    assert shell.controller.committed_image.topic_by_name("t") is not None   # replay goes on
    assert shell.unsupported is not None and "share.version 1" in shell.unsupported
    shell.maybe_activate()
    assert not shell.controller.active
    # the feature goes back to 0 (as `kafka-features.sh disable` does): this voter may lead again
    shell.handle_commit([batch(len(b) + 2, FeatureLevelRecord("share.version", 0))])
    assert shell.unsupported is None
    shell.maybe_activate()
    assert shell.controller.active
    assert len(_lines(caplog)) == 1
