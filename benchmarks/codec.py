"""Codec speed: kraftwire's generated codecs against other Python Kafka codecs, in one process.

Workloads (the brief of issue #2):
- MetadataResponse v12: 3 brokers, 50 topics x 20 partitions, 3 replicas each;
- FetchResponse v16: one partition carrying 1 MiB of record batches.

Peers, each fed the same bytes (every encoder must reproduce them, every decoder must agree):
- kafka-python's JSON-schema ApiMessage classes (same versions);
- kafka-python's legacy hand-written Structs (MetadataResponse v8, FetchResponse v11: the newest
  versions they have, so their bytes differ slightly — marked with *);
- kio (Rust decoder, Python encoder) if it is installed (``pip install kio``);
- construct 2.10, the straightforward mapping of the same layouts (Struct/PrefixedArray/Adapters),
  interpreted and ``.compile()``d — the measurement behind generating direct ``struct`` code.

Prints µs per operation (median of repeats) and each peer's time divided by kraftwire's.

    python benchmarks/codec.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import io
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from kraftwire.protocol.messages import fetch_response as fr
from kraftwire.protocol.messages import metadata_response as mr
from kraftwire.protocol.records import Record, RecordBatch, encode_batch

# -- workloads ------------------------------------------------------------------------------------


def metadata_workload() -> mr.MetadataResponse:
    brokers = [mr.MetadataResponseBroker(node_id=i, host=f"broker-{i}.kafka.example", port=9092, rack=f"rack-{i}")
               for i in range(3)]
    topics = []
    for t in range(50):
        parts = [mr.MetadataResponsePartition(partition_index=p, leader_id=p % 3, leader_epoch=7,
                                              replica_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3],
                                              isr_nodes=[p % 3, (p + 1) % 3, (p + 2) % 3])
                 for p in range(20)]
        topics.append(mr.MetadataResponseTopic(name=f"topic-{t:02d}", topic_id=uuid.UUID(int=(t + 1) << 64 | t),
                                               partitions=parts, topic_authorized_operations=-(1 << 31)))
    return mr.MetadataResponse(throttle_time_ms=0, brokers=brokers, cluster_id="MkU3OEVBNTcwNTJENDM2Qk",
                               controller_id=0, topics=topics)


def fetch_workload() -> fr.FetchResponse:
    chunk = bytes(range(256)) * 4  # 1 KiB values
    records = bytearray()
    offset = 0
    while len(records) < 1 << 20:
        batch = RecordBatch(offset, 5, tuple(Record(chunk) for _ in range(64)), base_timestamp=1_700_000_000_000)
        records += encode_batch(batch)
        offset += 64
    part = fr.PartitionData(partition_index=0, high_watermark=offset, last_stable_offset=offset, log_start_offset=0,
                            aborted_transactions=[], records=bytes(records))
    topic = fr.FetchableTopicResponse(topic_id=uuid.UUID(int=42), partitions=[part])
    return fr.FetchResponse(throttle_time_ms=0, session_id=0, responses=[topic])


# -- construct: the straightforward mapping of the same two layouts --------------------------------

def construct_codecs() -> dict[str, Any]:
    from construct import (
        Bytes,
        ExprAdapter,
        Flag,
        GreedyBytes,
        If,
        Int16sb,
        Int32sb,
        Int64sb,
        PascalString,
        Prefixed,
        PrefixedArray,
        Struct,
        VarInt,
        this,
    )

    length = ExprAdapter(VarInt, lambda obj, ctx: obj - 1, lambda obj, ctx: obj + 1)  # compact: N + 1

    def nullable(inner_build: Callable[[Any], Any], inner_parse: Callable[[Any], Any]) -> Any:
        raw = Struct("n" / VarInt, "data" / If(this.n > 0, Bytes(this.n - 1)))
        return ExprAdapter(raw, lambda obj, ctx: None if obj.n == 0 else inner_parse(obj.data),
                           lambda obj, ctx: {"n": 0, "data": None} if obj is None else
                           {"n": len(inner_build(obj)) + 1, "data": inner_build(obj)})

    string = PascalString(length, "utf8")
    nullable_string = nullable(lambda s: s.encode(), lambda b: b.decode())
    nullable_bytes = nullable(bytes, bytes)
    tags = PrefixedArray(VarInt, Struct("tag" / VarInt, "data" / Prefixed(VarInt, GreedyBytes)))

    def array(sub: Any) -> Any:
        return PrefixedArray(length, sub)

    broker = Struct("node_id" / Int32sb, "host" / string, "port" / Int32sb, "rack" / nullable_string, "tags" / tags)
    partition = Struct("error_code" / Int16sb, "partition_index" / Int32sb, "leader_id" / Int32sb,
                       "leader_epoch" / Int32sb, "replica_nodes" / array(Int32sb), "isr_nodes" / array(Int32sb),
                       "offline_replicas" / array(Int32sb), "tags" / tags)
    topic = Struct("error_code" / Int16sb, "name" / nullable_string, "topic_id" / Bytes(16), "is_internal" / Flag,
                   "partitions" / array(partition), "topic_authorized_operations" / Int32sb, "tags" / tags)
    metadata = Struct("throttle_time_ms" / Int32sb, "brokers" / array(broker), "cluster_id" / nullable_string,
                      "controller_id" / Int32sb, "topics" / array(topic), "tags" / tags)

    aborted = Struct("producer_id" / Int64sb, "first_offset" / Int64sb, "tags" / tags)
    aborted_list = ExprAdapter(Struct("n" / VarInt, "elements" / If(this.n > 0, aborted[this.n - 1])),
                               lambda obj, ctx: None if obj.n == 0 else list(obj.elements),
                               lambda obj, ctx: {"n": 0, "elements": None} if obj is None else
                               {"n": len(obj) + 1, "elements": obj})
    fpart = Struct("partition_index" / Int32sb, "error_code" / Int16sb, "high_watermark" / Int64sb,
                   "last_stable_offset" / Int64sb, "log_start_offset" / Int64sb,
                   "aborted_transactions" / aborted_list, "preferred_read_replica" / Int32sb,
                   "records" / nullable_bytes, "tags" / tags)
    ftopic = Struct("topic_id" / Bytes(16), "partitions" / array(fpart), "tags" / tags)
    fetch = Struct("throttle_time_ms" / Int32sb, "error_code" / Int16sb, "session_id" / Int32sb,
                   "responses" / array(ftopic), "tags" / tags)
    return {"metadata": metadata, "fetch": fetch}


# -- timing -----------------------------------------------------------------------------------------

def measure(fns: list[Callable[[], Any]], budget: float, repeats: int) -> list[float]:
    """Median µs per call of each function.

    Each function gets a loop count sized to about ``budget / repeats`` seconds; the repeats are
    interleaved (every function once per round), so a busy machine slows all codecs alike.
    """
    loops = []
    for fn in fns:
        start = time.perf_counter()
        fn()
        once = max(time.perf_counter() - start, 1e-7)
        loops.append(max(1, int(budget / repeats / once)))
    runs: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            n = loops[i]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            runs[i].append((time.perf_counter() - t0) / n)
    return [statistics.median(r) * 1e6 for r in runs]


class Row:
    def __init__(self, name: str, decode: Callable[[], Any] | None, encode: Callable[[], bytes] | None,
                 note: str = "") -> None:
        self.name, self.decode, self.encode, self.note = name, decode, encode, note


def kafka_python_rows(kind: str, wire: bytes, version: int) -> list[Row]:
    try:
        from kafka.protocol.consumer import FetchResponse
        from kafka.protocol.metadata import MetadataResponse
    except ImportError:
        return []
    cls = MetadataResponse if kind == "metadata" else FetchResponse
    obj = cls.decode(wire, version=version)
    obj._header = None  # decode leaves this slot unset; encode(version=...) reads it
    assert bytes(obj.encode(version=version)) == wire, "kafka-python re-encodes differently"
    rows = [Row("kafka-python ApiMessage", lambda: cls.decode(wire, version=version),
                lambda: obj.encode(version=version))]
    from kafka.protocol.old import fetch as old_fetch
    from kafka.protocol.old import metadata as old_metadata

    legacy = old_metadata.MetadataResponse_v8 if kind == "metadata" else old_fetch.FetchResponse_v11
    legacy_version = 8 if kind == "metadata" else 11
    ours = (metadata_workload() if kind == "metadata" else fetch_workload()).encode(legacy_version)
    legacy_obj = legacy.decode(ours)
    assert legacy_obj.encode() == ours
    rows.append(Row(f"kafka-python legacy Struct v{legacy_version}*", lambda: legacy.decode(ours), legacy_obj.encode))
    return rows


def kio_rows(kind: str, wire: bytes) -> list[Row]:
    try:
        from kio.serial import entity_reader, entity_writer
    except ImportError:
        print("(kio not installed: pip install kio to include it)")
        return []
    if kind == "metadata":
        from kio.schema.metadata.v12.response import MetadataResponse as cls
    else:
        from kio.schema.fetch.v16.response import FetchResponse as cls
    read, write = entity_reader(cls), entity_writer(cls)
    obj, _ = read(wire, 0)

    def encode() -> bytes:
        buf = io.BytesIO()
        write(buf, obj)
        return buf.getvalue()

    assert encode() == wire, "kio re-encodes differently"
    return [Row("kio (Rust decode, Python encode)", lambda: read(wire, 0), encode)]


def construct_rows(kind: str, wire: bytes, naive_too: bool) -> list[Row]:
    codec = construct_codecs()[kind]
    compiled = codec.compile()
    value = compiled.parse(wire)
    assert compiled.build(value) == wire and codec.parse(wire) == value
    rows = [Row("construct, compiled", lambda: compiled.parse(wire), lambda: compiled.build(value))]
    if naive_too:
        rows.append(Row("construct, interpreted", lambda: codec.parse(wire), lambda: codec.build(value)))
    return rows


def bench(kind: str, budget: float, repeats: int, naive_construct: bool) -> None:
    msg = metadata_workload() if kind == "metadata" else fetch_workload()
    cls = type(msg)
    version = 12 if kind == "metadata" else 16
    wire = msg.encode(version)
    assert cls.decode(wire, version) == msg
    rows = [Row("kraftwire (generated)", lambda: cls.decode(wire, version), lambda: msg.encode(version))]
    rows += kafka_python_rows(kind, wire, version)
    rows += kio_rows(kind, wire)
    rows += construct_rows(kind, wire, naive_construct)
    title = (f"{cls.__name__} v{version}: {len(wire):,} bytes" +
             (" (3 brokers, 50 topics x 20 partitions, 3 replicas)" if kind == "metadata" else " (1 MiB records)"))
    print(f"\n{title}")
    print(f"{'codec':36} {'decode µs':>12} {'ratio':>7} {'encode µs':>12} {'ratio':>7}")
    gc.collect()
    gc.freeze()  # the fixtures above live all run long: keep them out of every full collection
    times = measure([fn for row in rows for fn in (row.decode, row.encode)], budget, repeats)
    gc.unfreeze()
    for i, row in enumerate(rows):
        dec, enc = times[2 * i], times[2 * i + 1]
        print(f"{row.name:36} {dec:12,.0f} {dec / times[0]:6.2f}x {enc:12,.0f} {enc / times[1]:6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter runs (noisier)")
    parser.add_argument("--no-naive-construct", action="store_true", help="skip interpreted construct (slow)")
    args = parser.parse_args()
    budget, repeats = (0.3, 3) if args.quick else (1.5, 7)
    print("ratio = that codec's time / kraftwire's time in the same run (higher = kraftwire faster)")
    print("* legacy Structs stop at MetadataResponse v8 / FetchResponse v11: same data, slightly different bytes")
    for kind in ("metadata", "fetch"):
        bench(kind, budget, repeats, not args.no_naive_construct)


if __name__ == "__main__":
    main()
