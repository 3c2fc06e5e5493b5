"""Kafka v2 record batches (magic 2): the unit the metadata log stores and Fetch carries.

The dataclasses here are what the Raft core, storage and the network shell exchange; encoding
and decoding to Kafka's exact bytes lives in this module too.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch. Metadata records carry only a value; control records a key too."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_delta: int = 0


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A v2 batch: records with consecutive offsets from ``base_offset``, written in one leader epoch."""

    base_offset: int
    leader_epoch: int
    records: tuple[Record, ...]
    control: bool = False
    base_timestamp: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    compression: int = 0
    raw: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)


# ---------------------------------------------------------------------------------------------
# v2 encoding (Kafka's DefaultRecordBatch / DefaultRecord layouts)

import gzip as _gzip  # noqa: E402
import os  # noqa: E402
import struct as _struct  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402


def _crc32c(data: Any) -> int:
    """CRC-32C of ``data``. The ``crc32c`` package is imported at the first use, not with this module
    (its import reads the installed packages' metadata: ~20 ms before a server has opened its log);
    the first call puts its C function in this name's place."""
    global _crc32c
    from crc32c import crc32c

    _crc32c = crc32c
    return crc32c(data)

from kraftwire.protocol.errors import CorruptRecordError  # noqa: E402
from kraftwire.protocol.runtime import gc_paused  # noqa: E402

HEADER = _struct.Struct(">qiibIhiqqqhii")  # base offset .. records count
HEADER_SIZE = HEADER.size  # 61
_LEN_EPOCH_MAGIC = _struct.Struct(">qiib")
_CRC_START = 21  # attributes begin after baseOffset(8) batchLength(4) epoch(4) magic(1) crc(4)
COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD = range(5)
_CONTROL_BIT = 0x20
_TRANSACTIONAL_BIT = 0x10


def _zigzag(n: int, out: bytearray) -> None:
    z = (n << 1) ^ (n >> 63)
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def _read_varint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    z = 0
    shift = 0
    while True:
        if pos >= end:
            raise CorruptRecordError("truncated varint in record")
        b = buf[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes")


def _encode_records(records: tuple[Record, ...]) -> bytearray:
    # Values in 0..63 zigzag to one byte (2n); they are written inline, the rest via _zigzag.
    out = bytearray()
    zigzag = _zigzag
    for i, r in enumerate(records):
        body = bytearray(b"\x00")  # attributes
        t = r.timestamp_delta
        if 0 <= t < 64:
            body.append(t << 1)
        else:
            zigzag(t, body)
        if i < 64:
            body.append(i << 1)
        else:
            zigzag(i, body)
        for blob in (r.key, r.value):
            if blob is None:
                body.append(1)  # zigzag(-1)
            else:
                n = len(blob)
                if n < 64:
                    body.append(n << 1)
                else:
                    zigzag(n, body)
                body += blob
        if not r.headers:
            body.append(0)
        else:
            zigzag(len(r.headers), body)
            for hk, hv in r.headers:
                kb = hk.encode()
                zigzag(len(kb), body)
                body += kb
                if hv is None:
                    body.append(1)
                else:
                    zigzag(len(hv), body)
                    body += hv
        n = len(body)
        if n < 64:
            out.append(n << 1)
        else:
            zigzag(n, out)
        out += body
    return out


def _compress(codec: int, data: bytes) -> bytes:
    if codec == COMPRESSION_NONE:
        return data
    if codec == COMPRESSION_GZIP:
        return _gzip.compress(data)
    if codec == COMPRESSION_SNAPPY:
        import cramjam

        return bytes(cramjam.snappy.compress_raw(data))
    if codec == COMPRESSION_LZ4:
        import lz4.frame

        return lz4.frame.compress(data)
    if codec == COMPRESSION_ZSTD:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown compression codec {codec}")


def _decompress(codec: int, data: bytes, limit: int) -> bytes:
    """Inflate a batch payload; more than ``limit`` bytes of output is corruption (no bombs)."""
    try:
        if codec == COMPRESSION_GZIP:
            out = _inflate_gzip(data, limit)
        elif codec == COMPRESSION_SNAPPY:
            out = _inflate_snappy(data, limit)
        elif codec == COMPRESSION_LZ4:
            import lz4.frame

            out = lz4.frame.LZ4FrameDecompressor().decompress(data, max_length=limit + 1)
        elif codec == COMPRESSION_ZSTD:
            import zstandard

            # max_output_size is ignored when the frame header states a size, so read through a stream
            with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
                out = reader.read(limit + 1)
        else:
            raise CorruptRecordError(f"unknown compression codec {codec}")
    except CorruptRecordError:
        raise
    except Exception as e:  # each library has its own error types
        raise CorruptRecordError(f"cannot decompress codec {codec}: {e}") from e
    if len(out) > limit:
        raise CorruptRecordError(f"codec {codec} payload inflates beyond {limit} bytes")
    return bytes(out)


def _inflate_gzip(data: bytes, limit: int) -> bytes:
    import zlib

    out = bytearray()
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(data, limit + 1 - len(out))
        if len(out) > limit:
            return bytes(out)
        if not d.eof:
            raise CorruptRecordError("truncated gzip payload")
        data = d.unused_data  # another gzip member may follow
    return bytes(out)


def _inflate_snappy(data: bytes, limit: int) -> bytes:
    import cramjam

    if data[:8] != b"\x82SNAPPY\x00":
        if cramjam.snappy.decompress_raw_len(data) > limit:
            raise CorruptRecordError(f"snappy payload declares more than {limit} bytes")
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()  # xerial framing (the Java client's): 16-byte header, then [int32 size, block]*
    pos = 16
    while pos < len(data):
        (n,) = _struct.unpack_from(">i", data, pos)
        if n < 0 or pos + 4 + n > len(data):
            raise CorruptRecordError("snappy block length out of range")
        block = data[pos + 4:pos + 4 + n]
        if len(out) + cramjam.snappy.decompress_raw_len(block) > limit:
            raise CorruptRecordError(f"snappy payload inflates beyond {limit} bytes")
        out += cramjam.snappy.decompress_raw(block)
        pos += 4 + n
    return bytes(out)


def encode_batch(batch: RecordBatch) -> bytes:
    """The exact v2 bytes of ``batch`` (CRC-32C computed)."""
    payload = _encode_records(batch.records)
    if batch.compression:
        payload = _compress(batch.compression, bytes(payload))
    attrs = batch.compression & 0x7
    if batch.control:
        attrs |= _CONTROL_BIT
    if batch.transactional:
        attrs |= _TRANSACTIONAL_BIT
    max_ts = batch.base_timestamp + max((r.timestamp_delta for r in batch.records), default=0)
    out = bytearray(HEADER.pack(batch.base_offset, HEADER_SIZE - 12 + len(payload), batch.leader_epoch, 2, 0,
                                attrs, len(batch.records) - 1, batch.base_timestamp, max_ts, batch.producer_id,
                                batch.producer_epoch, batch.base_sequence, len(batch.records)))
    out += payload
    _struct.pack_into(">I", out, 17, _crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)


def iter_batches(buf: bytes | memoryview, *, verify_crc: bool = True) -> Iterator[tuple[RecordBatch, int, int]]:
    """(batch, position, size) for each whole batch in ``buf``; stops quietly at a partial tail."""
    mv = memoryview(buf)
    n = len(mv)
    pos = 0
    while n - pos >= 12 + 5:
        base_offset, length, epoch, magic = _LEN_EPOCH_MAGIC.unpack_from(mv, pos)
        if length < HEADER_SIZE - 12:
            raise CorruptRecordError(f"batch length {length} at position {pos} is too small")
        size = 12 + length
        if pos + size > n:
            return  # partial trailing batch (Fetch responses may end with one)
        if magic != 2:
            raise CorruptRecordError(f"unsupported record batch magic {magic} at position {pos}")
        yield decode_batch(mv[pos:pos + size], verify_crc=verify_crc), pos, size
        pos += size


def decode_batches(buf: bytes | memoryview, *, verify_crc: bool = True) -> list[RecordBatch]:
    """Every whole batch in ``buf`` (a trailing partial batch is ignored)."""
    with gc_paused():
        return [b for b, _, _ in iter_batches(buf, verify_crc=verify_crc)]


def _record_maker():
    """Build Records without the frozen dataclass __init__ (four object.__setattr__ calls per record):
    set the slots through their descriptors. Same objects, about half the cost on the decode path."""
    new = object.__new__
    set_value, set_key, set_headers, set_ts = (Record.__dict__[name].__set__
                                               for name in ("value", "key", "headers", "timestamp_delta"))

    def make(value: bytes | None, key: bytes | None, headers: tuple, timestamp_delta: int) -> Record:
        r = new(Record)
        set_value(r, value)
        set_key(r, key)
        set_headers(r, headers)
        set_ts(r, timestamp_delta)
        return r

    return make


_make_record = _record_maker()


def _read_headers(body: bytes, pos: int, rend: int) -> tuple[tuple, int]:
    nh, pos = _read_varint(body, pos, rend)
    if nh < 0 or nh > rend - pos:
        raise CorruptRecordError("record header count out of range")
    headers = []
    for _h in range(nh):
        klen, pos = _read_varint(body, pos, rend)
        if klen < 0 or pos + klen > rend:
            raise CorruptRecordError("header key length out of range")
        try:
            hk = body[pos:pos + klen].decode()
        except UnicodeDecodeError as e:
            raise CorruptRecordError("header key is not UTF-8") from e
        pos += klen
        vlen, pos = _read_varint(body, pos, rend)
        if vlen < -1 or pos + max(vlen, 0) > rend:
            raise CorruptRecordError("header value length out of range")
        headers.append((hk, None if vlen < 0 else body[pos:pos + vlen]))
        pos += max(vlen, 0)
    return tuple(headers), pos


def decode_batch(data: bytes | memoryview, *, verify_crc: bool = True) -> RecordBatch:
    """One whole v2 batch; raises CorruptRecordError on any inconsistency."""
    raw = bytes(data)
    if len(raw) < HEADER_SIZE:
        raise CorruptRecordError("record batch shorter than its header")
    (base_offset, length, epoch, magic, crc, attrs, last_delta, base_ts, _max_ts, pid, pepoch, base_seq,
     count) = HEADER.unpack_from(raw, 0)
    if magic != 2:
        raise CorruptRecordError(f"unsupported record batch magic {magic}")
    if length + 12 != len(raw):
        raise CorruptRecordError(f"batch length {length} does not match {len(raw) - 12} bytes")
    if verify_crc and _crc32c(memoryview(raw)[_CRC_START:]) != crc:
        raise CorruptRecordError(f"CRC mismatch in batch at offset {base_offset}")
    codec = attrs & 0x7
    if count < 0 or count > len(raw) or (count and last_delta != count - 1):
        raise CorruptRecordError(f"inconsistent record count {count} (last offset delta {last_delta})")
    if codec:
        body = _decompress(codec, raw[HEADER_SIZE:], max(1 << 20, 64 * len(raw)))
        pos = 0
    else:
        body, pos = raw, HEADER_SIZE  # read in place: bytes index and slice faster than a memoryview
    if count >= _c_min_records:
        c_batch = _c_codec()
        if c_batch is not None:
            recs = _decode_records_c(c_batch, raw, body if codec else None, base_ts)
            return RecordBatch(base_offset, epoch, recs, bool(attrs & _CONTROL_BIT), base_ts, pid, pepoch,
                               base_seq, bool(attrs & _TRANSACTIONAL_BIT), codec, raw)
    return RecordBatch(base_offset, epoch, _decode_records_py(body, pos, count), bool(attrs & _CONTROL_BIT),
                       base_ts, pid, pepoch, base_seq, bool(attrs & _TRANSACTIONAL_BIT), codec, raw)


def _decode_records_py(body: bytes, pos: int, count: int) -> tuple[Record, ...]:
    """The ``count`` records of a batch body starting at ``pos`` (kraftwire's own pure-Python reader)."""
    records = []
    end = len(body)
    read = _read_varint
    make = _make_record
    for _ in range(count):
        # Varints of one or two bytes are the common case and are decoded inline (zigzag for
        # lengths and deltas); anything longer, or running past the record, goes through `read`.
        b = body[pos] if pos < end else 0x80
        if b < 0x80:
            rlen, pos = (b >> 1) ^ -(b & 1), pos + 1
        elif pos + 1 < end and body[pos + 1] < 0x80:
            z = (b & 0x7F) | (body[pos + 1] << 7)
            rlen, pos = (z >> 1) ^ -(z & 1), pos + 2
        else:
            rlen, pos = read(body, pos, end)
        rend = pos + rlen
        if rlen < 6 or rend > end:  # attributes, timestamp and offset deltas, key, value, header count
            raise CorruptRecordError("record length out of range")
        b = body[pos + 1]  # after the attributes byte
        if b < 0x80:
            ts_delta, pos = (b >> 1) ^ -(b & 1), pos + 2
        else:
            ts_delta, pos = read(body, pos + 1, rend)
        if pos < rend and body[pos] < 0x80:  # the offset delta: records are consecutive, so it is skipped
            pos += 1
        elif pos + 1 < rend and body[pos + 1] < 0x80:
            pos += 2
        else:
            _, pos = read(body, pos, rend)
        blobs: list[bytes | None] = []
        for _k in range(2):
            b = body[pos] if pos < rend else 0x80
            if b < 0x80:
                blen, pos = (b >> 1) ^ -(b & 1), pos + 1
            elif pos + 1 < rend and body[pos + 1] < 0x80:
                z = (b & 0x7F) | (body[pos + 1] << 7)
                blen, pos = (z >> 1) ^ -(z & 1), pos + 2
            else:
                blen, pos = read(body, pos, rend)
            if blen < 0:
                if blen != -1:
                    raise CorruptRecordError("record key/value length out of range")
                blobs.append(None)
            elif pos + blen > rend:
                raise CorruptRecordError("record key/value length out of range")
            else:
                blobs.append(body[pos:pos + blen])
                pos += blen
        if pos < rend and body[pos] == 0:
            pos += 1
            headers: tuple = ()
        else:
            headers, pos = _read_headers(body, pos, rend)
        if pos != rend:
            raise CorruptRecordError("record has trailing bytes")
        records.append(make(blobs[1], blobs[0], headers, ts_delta))
    if pos != end:
        raise CorruptRecordError("record batch has trailing bytes after its records")
    return tuple(records)


# ---------------------------------------------------------------------------------------------
# aiokafka's C record reader (its Cython DefaultRecordBatch), used when it is installed.
#
# kraftwire checks the batch header, length, record count and CRC itself and decompresses with
# its own bounded inflaters (decompression bombs are refused before aiokafka sees anything); the C
# reader then walks the records of the uncompressed body. Importing aiokafka costs a few tenths of a
# second, so it is loaded on the first batch of at least ``C_MIN_RECORDS`` records (snapshots, long
# logs, analytics) and a small log never imports it. ``KRAFTWIRE_RECORD_CODEC=python`` turns it off.

C_MIN_RECORDS = 64
_c_min_records = C_MIN_RECORDS
_c_state: list = []  # [DefaultRecordBatch class or None] once looked up


def _c_codec() -> Any:
    if not _c_state:
        cls = None
        if os.environ.get("KRAFTWIRE_RECORD_CODEC", "auto") != "python":
            try:
                from aiokafka.record._crecords import DefaultRecordBatch as cls  # noqa: N813
            except ImportError:
                cls = None
        _c_state.append(cls)
    return _c_state[0]


def record_codec() -> str:
    """Which reader decodes big batches: ``"aiokafka"`` (C) or ``"python"``."""
    return "aiokafka" if _c_codec() is not None else "python"


def use_record_codec(name: str) -> None:
    """Force a reader for every batch (tests run the same suite against both): "aiokafka", "python",
    or "auto" (aiokafka for batches of at least C_MIN_RECORDS records when installed)."""
    global _c_min_records
    _c_state.clear()
    if name == "python":
        _c_state.append(None)
        return
    _c_min_records = 0 if name == "aiokafka" else C_MIN_RECORDS
    if name == "aiokafka" and _c_codec() is None:
        raise ImportError("aiokafka's C record codec is not installed")


def _decode_records_c(c_batch: Any, raw: bytes, body: bytes | None, base_ts: int) -> tuple[Record, ...]:
    """The records of a checked batch, read by aiokafka's C reader. ``body`` is the decompressed
    records of a compressed batch; the reader gets a header with the codec and timestamp-type bits
    cleared, so it neither inflates anything nor substitutes LogAppendTime for the record deltas."""
    header = bytearray(raw[:HEADER_SIZE])
    header[22] &= 0xF0
    data = bytes(header) + (raw[HEADER_SIZE:] if body is None else body)
    make = _make_record
    try:
        return tuple([make(r.value, r.key, tuple(r.headers) if r.headers else (), r.timestamp - base_ts)
                      for r in c_batch(data)])
    except (ValueError, UnicodeDecodeError, OverflowError, MemoryError) as e:
        raise CorruptRecordError(f"corrupt records: {e}") from e
    except Exception as e:  # aiokafka's CorruptRecordException
        if type(e).__name__ == "CorruptRecordException":
            raise CorruptRecordError(str(e)) from e
        raise
