"""Reading a 1M-record ``__cluster_metadata`` with real consumers vs reading its segment files directly.

The log is generated offline: a single-voter data directory is formatted, then ``FileLog`` is given the
batches a long-lived cluster's controller would have written in leader epoch 1 (LeaderChange, the
bootstrap metadata.version, topics with their partitions and configs in one batch each, then a steady
mix of single-NoOpRecord batches and small PartitionChangeRecord batches - leader moves and ISR
shrink/expand). A ``kraftwire server`` is then started on that directory: it recovers the log,
replays every record into its controller, is elected (epoch 2) and commits everything, after which
consumers read it over loopback like any client.

Readers, each from offset 0 to the last generated offset:

* ``segments``: the ``.log`` files read and fully decoded in this process (``iter_batches`` with CRC
  checks, every record parsed) - the direct-read peer;
* ``segments (raw)``: just reading the file bytes, the ceiling of any reader;
* ``kafka-python`` and ``confluent-kafka``: a consumer with manual assignment from earliest, client
  defaults otherwise, counting records and value bytes as the application receives them.

MB/s is the segment bytes covered (the same number for every reader), so the ratios compare like with
like. Run: ``python benchmarks/consume.py`` (``--records 100000`` for a quick look; ``--data DIR`` keeps
the generated log for the next run).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from compat.cluster import Quorum  # noqa: E402
from kraftwire.metadata import bootstrap_records  # noqa: E402
from kraftwire.protocol.control import leader_change_record  # noqa: E402
from kraftwire.protocol.messages.config_record import ConfigRecord  # noqa: E402
from kraftwire.protocol.messages.no_op_record import NoOpRecord  # noqa: E402
from kraftwire.protocol.messages.partition_change_record import PartitionChangeRecord  # noqa: E402
from kraftwire.protocol.messages.partition_record import PartitionRecord  # noqa: E402
from kraftwire.protocol.messages.topic_record import TopicRecord  # noqa: E402
from kraftwire.protocol.metadata import encode_record  # noqa: E402
from kraftwire.protocol.records import Record, iter_batches  # noqa: E402
from kraftwire.raft import ElectionState
from kraftwire.storage.log import FileLog  # noqa: E402
from kraftwire.storage.quorum_state import FileQuorumStateStore  # noqa: E402

TOPIC_CONFIG = 2  # ConfigResource type TOPIC
BROKERS = [1, 2, 3]


def generate(log_dir: Path, total: int, topics: int, partitions: int) -> int:
    """Write ``total`` records (controls included) in epoch 1; returns the last offset."""
    log = FileLog(log_dir)
    if log.end_offset:
        raise SystemExit(f"{log_dir} already holds a log")
    ts = int(time.time() * 1000) - 86_400_000
    log.append_as_leader([leader_change_record(1, [1], [1])], 1, control=True, timestamp_ms=ts)
    log.append_as_leader([Record(encode_record(r.message, r.version)) for r in bootstrap_records()], 1,
                         timestamp_ms=ts)
    ids = []
    for t in range(min(topics, total // (partitions + 2))):
        tid = uuid.UUID(int=(t + 1) << 64 | 0x4000_8000_0000_0000)
        ids.append(tid)
        recs = [TopicRecord(name=f"bench-{t:05d}", topic_id=tid)]
        recs += [PartitionRecord(partition_id=p, topic_id=tid, replicas=BROKERS, isr=BROKERS,
                                 leader=BROKERS[(t + p) % 3], leader_epoch=0, partition_epoch=0)
                 for p in range(partitions)]
        recs.append(ConfigRecord(resource_type=TOPIC_CONFIG, resource_name=f"bench-{t:05d}",
                                 name="retention.ms", value="604800000"))
        log.append_as_leader([Record(encode_record(r)) for r in recs], 1, timestamp_ms=ts)
    noop = Record(encode_record(NoOpRecord()))
    step = 0
    while log.end_offset < total:
        ts += 500
        log.append_as_leader([noop], 1, timestamp_ms=ts)
        n = min(4, total - log.end_offset)
        if n <= 0:
            break
        changes = []
        for i in range(n):
            tid = ids[(step * 4 + i) % len(ids)]
            p = (step + i) % partitions
            if step % 2:
                changes.append(PartitionChangeRecord(partition_id=p, topic_id=tid, isr=BROKERS))
            else:
                changes.append(PartitionChangeRecord(partition_id=p, topic_id=tid, leader=BROKERS[(step + i) % 3],
                                                     isr=[BROKERS[(step + i) % 3], BROKERS[(step + i + 1) % 3]]))
        log.append_as_leader([Record(encode_record(c)) for c in changes], 1, timestamp_ms=ts)
        step += 1
    log.flush()
    last = log.end_offset - 1
    log.close()
    FileQuorumStateStore(log_dir / "quorum-state").write(ElectionState(1, 1, 1, frozenset([1])))
    return last


def segment_bytes(log_dir: Path, last: int) -> int:
    """Bytes of the batches holding offsets 0..``last`` (the common numerator of MB/s)."""
    total = 0
    for seg in sorted(log_dir.glob("*.log"), key=lambda p: int(p.stem)):
        for batch, _, size in iter_batches(seg.read_bytes(), verify_crc=False):
            if batch.base_offset > last:
                return total
            total += size
    return total


def read_segments(log_dir: Path, last: int, decode: bool) -> tuple[int, int]:
    """(records, value bytes) read straight from the files; raw mode only reads the bytes."""
    records = values = 0
    for seg in sorted(log_dir.glob("*.log"), key=lambda p: int(p.stem)):
        data = seg.read_bytes()
        if not decode:  # bytes only: no record count
            values += len(data)
            continue
        for batch, _, _ in iter_batches(data, verify_crc=True):
            if batch.base_offset > last:
                return records, values
            if batch.control:
                continue
            for rec in batch.records:
                records += 1
                values += len(rec.value or b"")
    return records, values


def read_kafka_python(bootstrap: str, last: int) -> tuple[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition("__cluster_metadata", 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    records = values = 0
    try:
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000, max_records=100_000).values():
                for msg in batch:
                    records += 1
                    values += len(msg.value or b"")
                    if msg.offset >= last:
                        return records, values
        raise TimeoutError("kafka-python did not reach the last offset")
    finally:
        consumer.close()


def read_confluent(bootstrap: str, last: int) -> tuple[int, int]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-consume-unused",
                         "enable.auto.commit": False, "enable.partition.eof": False})
    records = values = 0
    try:
        consumer.assign([TopicPartition("__cluster_metadata", 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=1.0):
                if msg.error():
                    raise RuntimeError(str(msg.error()))
                records += 1
                values += len(msg.value() or b"")
                if msg.offset() >= last:
                    return records, values
        raise TimeoutError("confluent-kafka did not reach the last offset")
    finally:
        consumer.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=1_000_000, help="records in the log (default 1,000,000)")
    p.add_argument("--topics", type=int, default=2000)
    p.add_argument("--partitions", type=int, default=8, help="partitions per topic")
    p.add_argument("--data", type=Path, help="keep (or reuse) the generated quorum here")
    p.add_argument("--repeat", type=int, default=1, help="runs per reader; the best is reported")
    args = p.parse_args()

    root = args.data or Path(tempfile.mkdtemp(prefix="kraftwire-consume-"))
    marker = root / "generated-last-offset"
    quorum = Quorum(root, n=1)  # on a kept directory: new ports, same data and cluster id
    log_dir = quorum.log_dir(1)
    if not marker.exists():
        t0 = time.monotonic()
        last = generate(log_dir, args.records, args.topics, args.partitions)
        marker.write_text(str(last))
        print(f"generated offsets 0..{last} in {time.monotonic() - t0:.1f}s under {log_dir}")
    last = int(marker.read_text())
    size = segment_bytes(log_dir, last)
    print(f"log: {last + 1:,} offsets, {size / 1e6:.1f} MB of batches")

    results: dict[str, tuple[float, int, int]] = {}

    def measure(name: str, fn) -> None:
        best = None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            recs, vals = fn()
            dt = time.perf_counter() - t0
            best = (dt, recs, vals) if best is None or dt < best[0] else best
        results[name] = best
        dt, recs, vals = best
        rate = f"{recs / dt:>11,.0f}" if recs else f"{'-':>11}"
        print(f"  {name:<16} {dt:7.2f} s  {rate} records/s  {size / dt / 1e6:7.1f} MB/s", flush=True)

    try:
        t0 = time.monotonic()
        quorum.start()
        quorum.wait_ready(min_hw=last + 1, timeout_s=900)
        print(f"node up and log committed in {time.monotonic() - t0:.1f}s (recovery + controller replay)")
        measure("segments (raw)", lambda: read_segments(log_dir, last, decode=False))
        measure("segments", lambda: read_segments(log_dir, last, decode=True))
        measure("kafka-python", lambda: read_kafka_python(quorum.bootstrap, last))
        measure("confluent-kafka", lambda: read_confluent(quorum.bootstrap, last))
    finally:
        quorum.stop()
        if args.data is None:
            shutil.rmtree(root, ignore_errors=True)

    peer = results["segments"]
    print("\n| reader | seconds | records/s | MB/s | vs segments |\n|---|---:|---:|---:|---:|")
    for name, (dt, recs, _vals) in results.items():
        rate = f"{recs / dt:,.0f}" if recs else "-"
        print(f"| {name} | {dt:.2f} | {rate} | {size / dt / 1e6:.1f} | {peer[0] / dt:.2f}x |")
    counts = {name: r[1] for name, r in results.items() if name != "segments (raw)"}
    if len(set(counts.values())) != 1:
        raise SystemExit(f"readers disagree on the record count: {counts}")


if __name__ == "__main__":
    main()
