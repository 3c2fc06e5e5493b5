"""The PartitionRecord fast path (``kraftwire.metadata.fast``) against the generic decode-and-replay
path on the same bytes: same partitions, same images, same errors, in every record version."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.controller import QuorumController
from kraftwire.metadata import EMPTY_IMAGE, ImageLoader, MetadataDelta
from kraftwire.metadata.fast import clear_states, partition_from_value, replay_value
from kraftwire.metadata.features import bootstrap_records
from kraftwire.metadata.snapshot import image_from_snapshot
from kraftwire.protocol.errors import DecodeError
from kraftwire.protocol.messages.begin_transaction_record import BeginTransactionRecord
from kraftwire.protocol.messages.end_transaction_record import EndTransactionRecord
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.register_broker_record import RegisterBrokerRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.metadata import decode_record, encode_record
from kraftwire.protocol.records import Record, RecordBatch
from tests.protocol.schema_strategies import filled, message_strategy

VERSIONS = (0, 1, 2)


def _generic(msg: PartitionRecord):
    """The Partition the generic path builds for ``msg`` (its topic created first)."""
    delta = MetadataDelta(EMPTY_IMAGE)
    delta.replay(TopicRecord("t", msg.topic_id))
    delta.replay(msg)
    return delta.partitions(msg.topic_id)[msg.partition_id]


def _outcome(fn, value: bytes):
    try:
        return fn(value)
    except DecodeError:
        return "error"


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fast_partition_equals_generic(version: int, data) -> None:
    msg = data.draw(message_strategy("PartitionRecord", version))   # tagged and unknown tagged fields too
    value = encode_record(msg, version)
    expected = (msg.topic_id, msg.partition_id, _generic(decode_record(value).message))
    assert partition_from_value(value) == expected
    assert partition_from_value(value) == expected      # now from the shared states
    other = PartitionRecord(**{a: getattr(msg, a) for a, _, _ in PartitionRecord._SPEC})
    other.partition_id, other.topic_id = msg.partition_id ^ 1, uuid.uuid4()
    assert partition_from_value(encode_record(other, version)) == (other.topic_id, other.partition_id, expected[2])


@pytest.mark.parametrize("version", VERSIONS)
def test_filled_record_with_every_field(version: int) -> None:
    msg = filled("PartitionRecord", version)
    value = encode_record(msg, version)
    tid, pid, p = partition_from_value(value)
    assert (tid, pid, p) == (msg.topic_id, msg.partition_id, _generic(msg))
    assert p.leader_recovery_state == msg.leader_recovery_state != 0     # a tagged field in every version
    if version >= 1:
        assert p.directories == tuple(msg.directories) != ()
    if version >= 2:
        assert p.elr and p.last_known_elr


def _fast_or_generic(value: bytes):
    """What the replay paths do: the fast path, or the generic decoder where it declines."""
    return partition_from_value(value) or decode_record(value)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_malformed_values_fail_alike(version: int, data) -> None:
    value = encode_record(data.draw(message_strategy("PartitionRecord", version)), version)
    cut = data.draw(st.integers(0, len(value) - 1))
    for bad in (value[:cut], value + b"\x00"):
        clear_states()
        generic = _outcome(decode_record, bad)
        fast = _outcome(_fast_or_generic, bad)
        assert (generic == "error") == (fast == "error"), bad
        fast = _outcome(_fast_or_generic, bad)          # a second look (shared states) agrees too
        assert (generic == "error") == (fast == "error"), bad


def test_other_records_and_frames_take_the_generic_path() -> None:
    topic = encode_record(TopicRecord("t", uuid.uuid4()))
    assert partition_from_value(topic) is None
    msg = PartitionRecord(0, uuid.uuid4(), [1], [1], leader=1)
    value = encode_record(msg, 2)
    assert partition_from_value(b"\x02" + value[1:]) is None                # another frame version
    assert partition_from_value(value[:2] + b"\x09" + value[3:]) is None    # a version nobody knows
    assert partition_from_value(memoryview(value)) == partition_from_value(value)


def _log() -> list[RecordBatch]:
    """Brokers, topics, partitions in every version, a transaction, changes, a re-created partition."""
    recs = [r.message for r in bootstrap_records()]
    recs += [RegisterBrokerRecord(broker_id=b, incarnation_id=uuid.UUID(int=b + 1), broker_epoch=b,
                                  log_dirs=[uuid.UUID(int=(b + 1) << 64)]) for b in range(4)]
    values: list[bytes] = [encode_record(r) for r in recs]
    for t in range(6):
        tid = uuid.UUID(int=(t + 1) << 80)
        values.append(encode_record(TopicRecord(f"t{t}", tid)))
        txn = t == 3
        if txn:
            values.append(encode_record(BeginTransactionRecord(name="create")))
        for p in range(20):
            reps = [(t + p + k) % 4 for k in range(3)]
            v = p % 3
            pr = PartitionRecord(p, tid, reps, reps[: 1 + p % 3], leader=reps[0] if p % 5 else -1,
                                 leader_epoch=p % 2, partition_epoch=p % 4,
                                 directories=[uuid.UUID(int=(b + 1) << 64) for b in reps] if v else [],
                                 eligible_leader_replicas=[reps[2]] if v == 2 and p % 4 == 2 else None,
                                 leader_recovery_state=1 if v and p == 7 else 0)
            values.append(encode_record(pr, v))
        if txn:
            values.append(encode_record(EndTransactionRecord()))
        values.append(encode_record(PartitionChangeRecord(partition_id=2, topic_id=tid, isr=[(t + 2) % 4],
                                                          leader=(t + 2) % 4)))
        values.append(encode_record(PartitionRecord(5, tid, [0, 1], [1], leader=1, leader_epoch=9), 0))
    return [RecordBatch(i, 1, tuple(Record(value=v) for v in values[i:i + 7])) for i in range(0, len(values), 7)]


def _generic_image(batches: list[RecordBatch]):
    loader = ImageLoader(EMPTY_IMAGE)
    for b in batches:
        for r in b.records:
            loader.replay(decode_record(r.value).message)
    return loader.image


def test_controller_replay_builds_the_generic_image() -> None:
    batches = _log()
    expected = _generic_image(batches)
    fast = QuorumController()
    fast.replay_batches(batches)
    slow = QuorumController()
    for b in batches:
        for i, r in enumerate(b.records):
            slow.replay(b.base_offset + i, decode_record(r.value))
    assert fast.image == slow.image == expected
    assert fast.index.leaders == slow.index.leaders and fast.index.leaderless == slow.index.leaderless
    assert fast._committed_offset == slow._committed_offset
    # replaying again skips what is applied; a second controller resumes halfway
    fast.replay_batches(batches)
    assert fast.image == expected
    half = QuorumController()
    half.replay_batches(batches[: len(batches) // 2])
    half.replay_batches(batches)
    assert half.image == expected


def test_snapshot_load_and_replay_value_build_the_generic_image() -> None:
    batches = _log()
    expected = _generic_image(batches)
    assert image_from_snapshot(batches) == expected
    loader = ImageLoader(EMPTY_IMAGE)
    seen = [replay_value(loader, r.value) for b in batches for r in b.records]
    assert loader.image == expected
    assert any(m is None for m in seen) and any(type(m) is TopicRecord for m in seen)
