"""The broker's image: committed batches replayed through the controller's code, snapshots, fatal records."""

from __future__ import annotations

import uuid

from kraftwire.broker.metadata import BrokerMetadataListener
from kraftwire.metadata import image_to_records
from kraftwire.metadata.features import bootstrap_records
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.remove_topic_record import RemoveTopicRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.metadata import MetadataRecord, encode_record
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.storage.snapshot import frame_snapshot

TID = uuid.UUID(int=42)


def batch(base: int, *msgs) -> RecordBatch:
    return RecordBatch(base, 1, tuple(Record(value=encode_record(m, 0)) for m in msgs))


def test_committed_batches_build_the_image_and_duplicates_are_ignored():
    lst = BrokerMetadataListener()
    changes = []
    lst.on_change.append(lambda: changes.append(1))
    boot = [r.message for r in bootstrap_records()]
    lst.handle_commit([batch(0, *boot)])
    lst.handle_commit([batch(len(boot), TopicRecord(name="t", topic_id=TID),
                             PartitionRecord(partition_id=0, topic_id=TID, replicas=[1], isr=[1], leader=1))])
    assert lst.applied_offset == len(boot) + 1
    assert lst.image.topic_by_name("t").partitions[0].leader == 1
    lst.handle_commit([batch(len(boot), TopicRecord(name="t", topic_id=TID))])  # redelivered: skipped
    assert lst.fatal is None and changes


def test_a_record_that_does_not_apply_stops_the_broker():
    lst = BrokerMetadataListener()
    seen = []
    lst.on_fatal.append(seen.append)
    lst.handle_commit([batch(0, RemoveTopicRecord(topic_id=TID))])   # no such topic
    assert lst.fatal is not None and seen == [lst.fatal]
    lst.handle_commit([batch(1, TopicRecord(name="t", topic_id=TID))])
    assert lst.image.topic_by_name("t") is None, "nothing is applied after a fatal record"


def test_a_snapshot_replaces_the_image_and_replay_continues_after_it():
    source = BrokerMetadataListener()
    boot = [r.message for r in bootstrap_records()]
    source.handle_commit([batch(0, *boot, TopicRecord(name="t", topic_id=TID),
                                PartitionRecord(partition_id=0, topic_id=TID, replicas=[1], isr=[1], leader=1))])
    end = source.applied_offset + 1
    batches = frame_snapshot(SnapshotId(end, 1), image_to_records(source.image))
    fresh = BrokerMetadataListener()
    fresh.handle_snapshot(end, batches)
    assert fresh.fatal is None
    assert fresh.applied_offset == end - 1
    assert fresh.image.topic_by_name("t") == source.image.topic_by_name("t")
    fresh.handle_commit([batch(end, TopicRecord(name="u", topic_id=uuid.UUID(int=43)))])
    assert fresh.image.topic_by_name("u") is not None and fresh.applied_offset == end


def test_records_below_a_loaded_snapshot_are_not_replayed_twice():
    lst = BrokerMetadataListener()
    lst.load_snapshot(10, [r.message if isinstance(r, MetadataRecord) else r for r in bootstrap_records()]
                      + [TopicRecord(name="t", topic_id=TID)])
    lst.handle_commit([batch(5, TopicRecord(name="t", topic_id=TID))])
    assert lst.fatal is None and lst.applied_offset == 9
