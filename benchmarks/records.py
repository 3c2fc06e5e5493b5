"""Record batches (v2): kraftwire's reader/writer against aiokafka's and kafka-python's, in one process.

kraftwire decodes with its own pure-Python reader or (its default for big batches) with aiokafka's C
reader walking the records after its own checks; both rows are printed. One uncompressed batch of 1,000 small records (8-byte key, 64-byte value, like metadata records).
Decode = verify the CRC and materialise every record's key and value; encode = build the batch from
(key, value) pairs. Prints µs per batch and each peer's time / kraftwire's.

    python benchmarks/records.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from kraftwire.protocol.records import Record, RecordBatch, decode_batch, encode_batch, use_record_codec

COUNT = 1000
TS = 1_700_000_000_000
PAIRS = [(i.to_bytes(8, "big"), bytes([i % 251]) * 64) for i in range(COUNT)]


def ours() -> tuple[Callable[[], Any], Callable[[], Any], bytes]:
    batch = RecordBatch(0, 3, tuple(Record(v, k) for k, v in PAIRS), base_timestamp=TS)
    wire = encode_batch(batch)

    def decode() -> list:
        use_record_codec("python")
        return [(r.key, r.value) for r in decode_batch(wire).records]

    def encode() -> bytes:
        return encode_batch(RecordBatch(0, 3, tuple(Record(v, k) for k, v in PAIRS), base_timestamp=TS))

    return decode, encode, wire


def ours_on_c(wire: bytes, encode: Callable[[], Any]) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    """kraftwire's decode_batch with aiokafka's C reader walking the records (its default for big batches)."""
    try:
        use_record_codec("aiokafka")
    except ImportError:
        return []
    use_record_codec("python")

    def decode() -> list:
        use_record_codec("aiokafka")
        return [(r.key, r.value) for r in decode_batch(wire).records]

    return [("kraftwire on aiokafka's C reader", decode, encode)]


def peer(batch_cls: type, builder_cls: type, wire: bytes) -> tuple[Callable[[], Any], Callable[[], Any]]:
    def decode() -> list:
        b = batch_cls(wire)
        assert b.validate_crc()
        return [(r.key, r.value) for r in b]

    def encode() -> bytes:
        builder = builder_cls(2, 0, 0, -1, -1, -1, 1 << 30)  # magic 2, no compression, not transactional
        for i, (k, v) in enumerate(PAIRS):
            builder.append(i, TS, k, v, [])
        return bytes(builder.build())

    return decode, encode


def peers(wire: bytes) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
    out = []
    try:
        from aiokafka.record import default_records as ak

        if ak.DefaultRecordBatch is not ak._DefaultRecordBatchPy:
            out.append(("aiokafka, Cython _crecords", *peer(ak.DefaultRecordBatch, ak.DefaultRecordBatchBuilder, wire)))
        out.append(("aiokafka, pure Python", *peer(ak._DefaultRecordBatchPy, ak._DefaultRecordBatchBuilderPy, wire)))
    except ImportError:
        print("(aiokafka not installed)")
    try:
        from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

        out.append(("kafka-python", *peer(DefaultRecordBatch, DefaultRecordBatchBuilder, wire)))
    except ImportError:
        print("(kafka-python not installed)")
    return out


def measure(fns: list[Callable[[], Any]], budget: float, repeats: int) -> list[float]:
    loops = []
    for fn in fns:
        t0 = time.perf_counter()
        fn()
        loops.append(max(1, int(budget / repeats / max(time.perf_counter() - t0, 1e-7))))
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):  # interleaved, so machine load hits every codec alike
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            for _ in range(loops[i]):
                fn()
            runs[i].append((time.perf_counter() - t0) / loops[i])
    return [statistics.median(r) * 1e6 for r in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    budget, repeats = (0.3, 3) if args.quick else (1.5, 7)
    dec, enc, wire = ours()
    rows = [("kraftwire, pure Python", dec, enc), *ours_on_c(wire, enc), *peers(wire)]
    expected = dec()
    for name, d, e in rows:
        assert d() == expected, f"{name} decodes differently"
        assert decode_batch(e()).records == decode_batch(wire).records, f"{name} encodes different records"
    gc.collect()
    times = measure([fn for _, d, e in rows for fn in (d, e)], budget, repeats)
    print(f"v2 batch, {COUNT} records, {len(wire):,} bytes; ratio = that codec's time / kraftwire's pure Python")
    print(f"{'codec':30} {'decode µs':>10} {'ratio':>7} {'encode µs':>10} {'ratio':>7}")
    for i, (name, _, _) in enumerate(rows):
        d, e = times[2 * i], times[2 * i + 1]
        print(f"{name:30} {d:10,.0f} {d / times[0]:6.2f}x {e:10,.0f} {e / times[1]:6.2f}x")


if __name__ == "__main__":
    main()
