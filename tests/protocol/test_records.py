"""v2 record batches: round trips for every codec, kafka-python as an independent reader, bad batches."""

from __future__ import annotations

import gzip
import os
import struct
import tracemalloc

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.protocol import records
from kraftwire.protocol.errors import CorruptRecordError, KafkaProtocolError
from kraftwire.protocol.records import Record, RecordBatch, decode_batch, decode_batches, encode_batch


@pytest.fixture(autouse=True, scope="module", params=["python", "aiokafka"])
def record_codec(request):
    """Every test here runs against both record readers: kraftwire's own and aiokafka's C reader."""
    try:
        records.use_record_codec(request.param)
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("aiokafka's C record codec is not installed (pip install aiokafka)")
    yield request.param
    records.use_record_codec("auto")

CODECS = [records.COMPRESSION_NONE, records.COMPRESSION_GZIP, records.COMPRESSION_SNAPPY,
          records.COMPRESSION_LZ4, records.COMPRESSION_ZSTD]
QUICK = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))

blobs = st.none() | st.binary(max_size=40)
record_st = st.builds(Record, value=blobs, key=blobs,
                      headers=st.lists(st.tuples(st.text(max_size=5), blobs), max_size=2).map(tuple),
                      timestamp_delta=st.integers(0, 10**6))
batch_st = st.builds(
    RecordBatch, base_offset=st.integers(0, 2**40), leader_epoch=st.integers(0, 2**31 - 1),
    records=st.lists(record_st, min_size=1, max_size=5).map(tuple), control=st.booleans(),
    base_timestamp=st.integers(0, 2**42), producer_id=st.integers(-1, 2**40),
    producer_epoch=st.integers(-1, 2**15 - 1), base_sequence=st.integers(-1, 2**20),
    transactional=st.booleans(), compression=st.sampled_from(CODECS))


@QUICK
@given(batch_st)
def test_batches_round_trip(batch: RecordBatch) -> None:
    wire = encode_batch(batch)
    back = decode_batch(wire)
    assert back == batch
    assert back.raw == wire


@QUICK
@given(st.lists(batch_st.map(lambda b: RecordBatch(b.base_offset, b.leader_epoch, b.records)), min_size=1,
                max_size=3), st.integers(1, 60))
def test_a_partial_trailing_batch_is_ignored(batches, cut) -> None:
    wires = [encode_batch(b) for b in batches]
    whole = b"".join(wires)
    assert decode_batches(whole) == batches
    partial = whole + wires[0][:min(cut, len(wires[0]) - 1)]
    assert decode_batches(partial) == batches


@QUICK
@given(batch_st.filter(lambda b: b.compression != records.COMPRESSION_SNAPPY))
def test_kafka_python_reads_our_batches(batch: RecordBatch) -> None:
    """kafka-python's DefaultRecordBatch as an independent reader (its snappy wants python-snappy)."""
    from kafka.record.default_records import DefaultRecordBatch

    theirs = DefaultRecordBatch(bytearray(encode_batch(batch)))
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.leader_epoch, theirs.producer_id, theirs.is_control_batch,
            theirs.is_transactional) == (batch.base_offset, batch.leader_epoch, batch.producer_id,
                                         batch.control, batch.transactional)
    if batch.control:
        return  # kafka-python interprets control-record keys; the batch header check above suffices
    got = [(r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in theirs]
    want = [(batch.base_offset + i, batch.base_timestamp + r.timestamp_delta, r.key, r.value,
             [(k, v) for k, v in r.headers]) for i, r in enumerate(batch.records)]
    assert got == want


# -- bad batches -----------------------------------------------------------------------------------

def _batch_with_payload(codec: int, payload: bytes, count: int = 1) -> bytes:
    out = bytearray(records.HEADER.pack(0, records.HEADER_SIZE - 12 + len(payload), 0, 2, 0, codec, count - 1,
                                        0, 0, -1, -1, -1, count))
    out += payload
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def test_crc_mismatch() -> None:
    wire = bytearray(encode_batch(RecordBatch(0, 1, (Record(b"v"),))))
    wire[-2] ^= 0xFF  # the value byte (the last byte is the record's header count)
    with pytest.raises(CorruptRecordError, match="CRC"):
        decode_batch(bytes(wire))
    assert decode_batch(bytes(wire), verify_crc=False).records[0].value == bytes([ord("v") ^ 0xFF])


@pytest.mark.parametrize("codec", [records.COMPRESSION_GZIP, records.COMPRESSION_LZ4, records.COMPRESSION_ZSTD])
def test_decompression_bombs_are_refused_without_inflating(codec) -> None:
    """(Snappy cannot expand more than ~22x, below the 64x limit; its declared lengths are checked below.)"""
    import lz4.frame
    import zstandard

    compress = {
        records.COMPRESSION_GZIP: lambda data: gzip.compress(data, 9),
        records.COMPRESSION_LZ4: lz4.frame.compress,
        records.COMPRESSION_ZSTD: zstandard.ZstdCompressor().compress,
    }[codec]
    payload = compress(bytes(32 << 20))  # 32 MiB of zeros: far beyond 64x any of these payloads
    wire = _batch_with_payload(codec, payload)
    limit = max(1 << 20, 64 * len(wire))
    assert limit < 32 << 20
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError, match="beyond|declares"):
            decode_batch(wire)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * limit + (1 << 20)


def test_snappy_header_declaring_4_gib() -> None:
    with pytest.raises(CorruptRecordError):
        decode_batch(_batch_with_payload(records.COMPRESSION_SNAPPY, b"\xff\xff\xff\xff\x0f" + bytes(10)))
    xerial = b"\x82SNAPPY\x00" + bytes(8) + struct.pack(">i", 6) + b"\xff\xff\xff\xff\x0f\x00"
    with pytest.raises(CorruptRecordError):
        decode_batch(_batch_with_payload(records.COMPRESSION_SNAPPY, xerial))


@pytest.mark.parametrize(("payload", "count"), [
    (b"", 1),  # count says one record, none present
    (b"\x7f" + bytes(3), 1),  # record length beyond the batch
    (b"\x01", -5),  # negative count
    (b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 1),  # 11-byte varint
    (b"\x0c\x00\x80\x80\x80\x80\x80", 1),  # timestamp delta runs past the 6-byte record
    (b"\x0a" + bytes(5), 1),  # a record shorter than its six mandatory fields
])
def test_inconsistent_record_sections(payload, count) -> None:
    with pytest.raises(CorruptRecordError):
        decode_batch(_batch_with_payload(0, payload, count))


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_corrupted_batches_raise_only_corrupt_record_errors(data) -> None:
    batch = data.draw(batch_st)
    wire = bytearray(encode_batch(batch))
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(wire) - 1))
        wire[pos] = data.draw(st.integers(0, 255))
    verify = data.draw(st.booleans())
    try:
        decode_batches(bytes(wire), verify_crc=verify)
    except CorruptRecordError:
        pass


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=200))
def test_garbage_batches(data) -> None:
    try:
        decode_batches(data, verify_crc=False)
    except KafkaProtocolError:
        pass


@QUICK
@given(st.lists(batch_st, min_size=1, max_size=3))
def test_both_readers_decode_the_same_records(record_codec, batches) -> None:
    wire = b"".join(encode_batch(b) for b in batches)
    records.use_record_codec("python")
    try:
        own = decode_batches(wire)
        records.use_record_codec("aiokafka")
        c = decode_batches(wire)
    finally:
        records.use_record_codec(record_codec)
    assert own == c == [RecordBatch(b.base_offset, b.leader_epoch, b.records, b.control, b.base_timestamp,
                                    b.producer_id, b.producer_epoch, b.base_sequence, b.transactional,
                                    b.compression) for b in batches]


def test_auto_uses_the_c_reader_only_for_big_batches(record_codec, monkeypatch) -> None:
    calls = []
    real = records._decode_records_c
    monkeypatch.setattr(records, "_decode_records_c", lambda *a: calls.append(1) or real(*a))
    records.use_record_codec("auto")
    try:
        small = RecordBatch(0, 1, tuple(Record(b"v%d" % i) for i in range(3)))
        big = RecordBatch(3, 1, tuple(Record(b"v%d" % i) for i in range(records.C_MIN_RECORDS)))
        assert decode_batches(encode_batch(small) + encode_batch(big)) == [small, big]
        assert len(calls) == (1 if records.record_codec() == "aiokafka" else 0)
    finally:
        records.use_record_codec(record_codec)
