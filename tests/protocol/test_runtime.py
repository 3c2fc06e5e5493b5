"""Runtime helpers of the generated codecs: the shared UUID cache and the collector pause."""

from __future__ import annotations

import gc
import uuid

from kraftwire.protocol import runtime
from kraftwire.protocol.messages.topic_record import TopicRecord


def test_decoded_uuids_equal_real_ones_and_recent_ones_are_shared() -> None:
    tid = uuid.UUID("7c5d0f3e-2a4b-4c1d-9e8f-0123456789ab")
    wire = TopicRecord("t", tid).encode(0)
    a, b = TopicRecord.decode(wire, 0).topic_id, TopicRecord.decode(wire, 0).topic_id
    assert a == tid and hash(a) == hash(tid) and str(a) == str(tid) and a.bytes == tid.bytes
    assert a is b
    assert runtime.make_uuid(bytearray(tid.bytes)) is a  # any buffer type


def test_the_uuid_cache_stays_bounded_under_distinct_ids() -> None:
    for i in range(3 * runtime.UUID_CACHE_SIZE):
        assert runtime.make_uuid(i.to_bytes(16, "big")).int == i
    assert len(runtime._UUIDS) <= runtime.UUID_CACHE_SIZE


def test_gc_paused_restores_the_collector() -> None:
    assert gc.isenabled()
    with runtime.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with runtime.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
