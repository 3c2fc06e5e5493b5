"""Replay builds ``Partition`` objects through their slots; they must be the dataclass's own objects."""

from __future__ import annotations

import uuid
from dataclasses import fields

from kraftwire.metadata import EMPTY_IMAGE, bootstrap_records
from kraftwire.metadata.image import Partition, _new_partition
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.topic_record import TopicRecord

D1, D2, D3 = (uuid.UUID(int=i << 64) for i in (1, 2, 3))


def test_slot_built_partition_equals_the_dataclass_built_one() -> None:
    values = dict(replicas=(1, 2, 3), isr=(1, 2), leader=1, leader_epoch=4, partition_epoch=7,
                  removing_replicas=(3,), adding_replicas=(4,), leader_recovery_state=1,
                  directories=(D1, D2, D3), elr=(2,), last_known_elr=(3,))
    fast = _new_partition(*(values[f.name] for f in fields(Partition)))
    slow = Partition(**values)
    assert fast == slow and hash(fast) == hash(slow)
    assert type(fast) is Partition
    assert {f.name: getattr(fast, f.name) for f in fields(Partition)} == values


def test_replayed_partitions_carry_every_record_field_and_merges_follow_kafka() -> None:
    tid = uuid.UUID(int=99)
    records = [r.message for r in bootstrap_records()] + [
        TopicRecord(name="t", topic_id=tid),
        PartitionRecord(partition_id=0, topic_id=tid, replicas=[1, 2, 3], isr=[1, 2], leader=2, leader_epoch=5,
                        partition_epoch=9, removing_replicas=[3], adding_replicas=[], leader_recovery_state=0,
                        directories=[D1, D2, D3], eligible_leader_replicas=[1], last_known_elr=[3]),
        PartitionChangeRecord(partition_id=0, topic_id=tid, leader=1, isr=[1]),
    ]
    img = EMPTY_IMAGE.replay_all(records[:-1])
    assert img.partition(tid, 0) == Partition(replicas=(1, 2, 3), isr=(1, 2), leader=2, leader_epoch=5,
                                               partition_epoch=9, removing_replicas=(3,), adding_replicas=(),
                                               leader_recovery_state=0, directories=(D1, D2, D3), elr=(1,),
                                               last_known_elr=(3,))
    after = EMPTY_IMAGE.replay_all(records).partition(tid, 0)
    assert after == Partition(replicas=(1, 2, 3), isr=(1,), leader=1, leader_epoch=6, partition_epoch=10,
                              removing_replicas=(3,), adding_replicas=(), leader_recovery_state=0,
                              directories=(D1, D2, D3), elr=(1,), last_known_elr=(3,))
