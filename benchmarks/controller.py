"""Controller benchmarks: registration storm, heartbeats, CreateTopics, image replay and snapshots.

    python benchmarks/controller.py            # 1k-broker storm, 2k heartbeating brokers, 100k partitions
    python benchmarks/controller.py --million  # also replay / snapshot an image of 1M partitions
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kraftwire.controller import ControllerConfig, QuorumController  # noqa: E402
from kraftwire.metadata import EMPTY_IMAGE, bootstrap_records
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.metadata.snapshot import image_from_snapshot, image_to_records, snapshot_batches
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.register_broker_record import RegisterBrokerRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.metadata import encode_record
from kraftwire.protocol.records import Record, RecordBatch, decode_batches, encode_batch, use_record_codec
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import encode as encode_snapshot
from kraftwire.raft.snapshot import parse as parse_snapshot


class Driver:
    """Active controller plus a counter standing in for the log; commits everything at once."""

    def __init__(self) -> None:
        self.ctl = QuorumController(ControllerConfig(cluster_id="bench", max_idle_interval_ms=0,
                                                     auto_leader_rebalance=False), seed=7)
        self.end = 0
        self.apply(self.ctl.activate(1, 0, 0, bootstrap=bootstrap_records()))

    def apply(self, records: list) -> None:
        self.end += len(records)
        self.ctl.handle_commit(self.end - 1)

    def handle(self, now: int, req) -> object:
        res = self.ctl.handle(now, req)
        self.apply(res.records)
        return res.response


def registration(bid: int) -> brq.BrokerRegistrationRequest:
    return brq.BrokerRegistrationRequest(
        broker_id=bid, cluster_id="bench", incarnation_id=uuid.UUID(int=bid + 1000),
        listeners=[brq.Listener("PLAINTEXT", f"b{bid}", 9092, 0)],
        features=[brq.Feature(n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())],
        rack=f"r{bid % 3}",
        log_dirs=[uuid.UUID(int=(bid + 1) << 64)])


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def bench_registration(n: int) -> Driver:
    d = Driver()
    lat = []
    t0 = time.perf_counter()
    for bid in range(n):
        s = time.perf_counter()
        r = d.handle(0, registration(bid))
        lat.append((time.perf_counter() - s) * 1e6)
        assert r.error_code == 0
    total = time.perf_counter() - t0
    print(f"registration storm: {n} brokers in {total * 1e3:.0f} ms "
          f"(p50 {pct(lat, .5):.0f} us, p99 {pct(lat, .99):.0f} us)")
    return d


def bench_heartbeats(n: int, rounds: int) -> Driver:
    d = Driver()
    for bid in range(n):
        d.handle(0, registration(bid))
    first, steady = [], []
    for rnd in range(rounds):
        for bid in range(n):
            b = d.ctl.image.brokers[bid]
            req = BrokerHeartbeatRequest(broker_id=bid, broker_epoch=b.epoch, current_metadata_offset=d.end - 1)
            s = time.perf_counter()
            d.handle(1000 * (rnd + 1), req)
            (first if rnd == 0 else steady).append((time.perf_counter() - s) * 1e6)
    print(f"heartbeats, {n} brokers: unfencing round p50 {pct(first, .5):.0f} us p99 {pct(first, .99):.0f} us; "
          f"steady {len(steady)} heartbeats p50 {pct(steady, .5):.1f} us p99 {pct(steady, .99):.1f} us "
          f"mean {statistics.fmean(steady):.1f} us")
    return d


def bench_create_topics(partitions: int, brokers: int = 30, per_topic: int = 1000) -> None:
    d = Driver()
    for bid in range(brokers):
        d.handle(0, registration(bid))
        b = d.ctl.image.brokers[bid]
        d.handle(0, BrokerHeartbeatRequest(broker_id=bid, broker_epoch=b.epoch, current_metadata_offset=d.end))
    topics = [ctq.CreatableTopic(f"topic-{i}", per_topic, 3) for i in range(partitions // per_topic)]
    t0 = time.perf_counter()
    r = d.handle(0, ctq.CreateTopicsRequest(topics=topics))
    total = time.perf_counter() - t0
    assert all(t.error_code == 0 for t in r.topics)
    print(f"CreateTopics: {len(topics)} topics x {per_topic} partitions x RF3 = {partitions} partitions "
          f"in {total:.2f} s ({partitions / total:,.0f} partitions/s)")


def synthetic_records(partitions: int, brokers: int = 100, per_topic: int = 1000) -> list:
    recs: list = [r.message for r in bootstrap_records()]
    for bid in range(brokers):
        recs.append(RegisterBrokerRecord(broker_id=bid, incarnation_id=uuid.UUID(int=bid + 1), broker_epoch=bid,
                                         fenced=False, log_dirs=[uuid.UUID(int=(bid + 1) << 64)]))
    for t in range(partitions // per_topic):
        tid = uuid.UUID(int=(t + 1) << 80)
        recs.append(TopicRecord(f"topic-{t}", tid))
        for p in range(per_topic):
            reps = [(t + p + k) % brokers for k in range(3)]
            recs.append(PartitionRecord(p, tid, reps, list(reps), leader=reps[0], leader_epoch=0,
                                        partition_epoch=0))
    return recs


def bench_image(partitions: int) -> None:
    recs = synthetic_records(partitions)
    t0 = time.perf_counter()
    img = EMPTY_IMAGE.replay_all(recs)
    t1 = time.perf_counter()
    snap = image_to_records(img)
    t2 = time.perf_counter()
    back = EMPTY_IMAGE.replay_all(snap)
    t3 = time.perf_counter()
    assert back == img
    t4 = time.perf_counter()
    standby = QuorumController()
    for off, r in enumerate(recs):
        standby.replay(off, r)
    assert standby.image == img
    t5 = time.perf_counter()
    print(f"image, {partitions:,} partitions ({len(recs):,} records): replay {t1 - t0:.2f} s, "
          f"image->records {t2 - t1:.2f} s, records->image {t3 - t2:.2f} s, "
          f"standby record-by-record replay {t5 - t4:.2f} s")
    bench_from_bytes(img, recs)


def bench_from_bytes(img, recs: list) -> None:
    """What a node does at start: a snapshot file's bytes -> image (raft.snapshot.parse,
    image_from_snapshot), and log bytes -> a standby controller's image (decode_batches,
    QuorumController.replay_batches; batches of 1,000 framed records), with each record-batch reader."""
    snapshot = encode_snapshot(snapshot_batches(img, SnapshotId(len(recs), 1)))
    values = [Record(value=encode_record(r)) for r in recs]
    log = b"".join(encode_batch(RecordBatch(i, 1, tuple(values[i:i + 1000]))) for i in range(0, len(values), 1000))
    for codec in ("python", "aiokafka"):
        try:
            use_record_codec(codec)
        except ImportError:
            print(f"  {codec}: not installed")
            continue
        t0 = time.perf_counter()
        batches = parse_snapshot(snapshot)
        t1 = time.perf_counter()
        loaded = image_from_snapshot(batches)
        t2 = time.perf_counter()
        log_batches = decode_batches(log)
        t3 = time.perf_counter()
        standby = QuorumController()
        standby.replay_batches(log_batches)
        t4 = time.perf_counter()
        assert loaded == img and standby.image == img
        print(f"  record batches read by {codec:8}: snapshot load {t2 - t0:.2f} s (batches {t1 - t0:.2f} s), "
              f"log replay {t4 - t2:.2f} s (batches {t3 - t2:.2f} s)")
    use_record_codec("auto")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--million", action="store_true", help="also run the 1M-partition image benchmark")
    ap.add_argument("--brokers", type=int, default=1000)
    ap.add_argument("--heartbeat-brokers", type=int, default=2000)
    ap.add_argument("--partitions", type=int, default=100_000)
    a = ap.parse_args()
    print("running: registration storm, heartbeats, CreateTopics, image replay/snapshot "
          f"({a.partitions:,} partitions){' + 1M partitions' if a.million else ''}")
    bench_registration(a.brokers)
    bench_heartbeats(a.heartbeat_brokers, 3)
    bench_create_topics(a.partitions)
    bench_image(a.partitions)
    if a.million:
        bench_image(1_000_000)


if __name__ == "__main__":
    main()
