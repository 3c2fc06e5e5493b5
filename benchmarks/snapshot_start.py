"""One snapshot, two controllers: start-up of a Kafka controller and a kraftwire controller from it.

    PYTHONPATH=. .venv/bin/python benchmarks/snapshot_start.py --partitions 1000000 [--trials 2] [--json]

kraftwire writes one snapshot file of a synthetic cluster (benchmarks/controller.py's: 100 registered
brokers, 1,000-partition topics, replication factor 3) and the time and bytes that takes are printed. Then,
alternating the systems, each trial formats a single-voter controller of one system (kraftwire, or Apache
Kafka ``KRAFTWIRE_BENCH_KAFKA``, default 4.1.0, from ../shared/kafka), drops the same ``.checkpoint`` file
into its ``__cluster_metadata-0`` directory and launches it. Measured per trial:

- launch -> serving: until the controller answers a CreateTopics with success (it has loaded the image,
  been elected and activated; the create places a new topic on the image's brokers);
- peak RSS of the server process (``VmHWM``; Kafka's heap is ``KRAFTWIRE_KAFKA_HEAP_OPTS``, default
  ``-Xmx4g -Xms1g`` here since Kafka's test heap of 512 MiB cannot hold a million partitions);
- CPU seconds the server process used up to serving.

Prints each trial, then the medians and the ratios kraftwire / Kafka. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

os.environ.setdefault("KRAFTWIRE_BENCH_KAFKA", "4.1.0")
os.environ.setdefault("KRAFTWIRE_KAFKA_HEAP_OPTS", "-Xmx4g -Xms1g")

from _quorum import build, cpu_seconds, jvm_or_python_pid, kafka_missing  # noqa: E402

from kraftwire.net.client import Connection  # noqa: E402
from kraftwire.protocol.messages.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402


def write_snapshot(directory: Path, partitions: int) -> tuple[Path, float, int]:
    """The snapshot file of the synthetic cluster: (path, seconds to build and write it, records)."""
    from controller import synthetic_records

    from kraftwire.metadata import EMPTY_IMAGE
    from kraftwire.metadata.snapshot import snapshot_batches
    from kraftwire.raft.log import SnapshotId
    from kraftwire.raft.snapshot import encode as encode_snapshot
    from kraftwire.storage.snapshot import snapshot_name

    recs = synthetic_records(partitions)
    img = EMPTY_IMAGE.replay_all(recs)
    sid = SnapshotId(len(recs), 1)
    t0 = time.perf_counter()
    data = encode_snapshot(snapshot_batches(img, sid))
    path = directory / snapshot_name(sid)
    with path.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return path, time.perf_counter() - t0, len(recs)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _create_once(addr: str, name: str) -> int | None:
    """CreateTopics at the controller: the topic's error code, or None when nothing answered."""
    host, _, port = addr.rpartition(":")
    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                conn = Connection(tg, host, int(port), client_id="snapshot-start-bench")
                try:
                    req = CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1,
                                                                     replication_factor=1)], timeout_ms=5000)
                    resp = await conn.request(req, 5, 5.0)
                    return resp.topics[0].error_code
                finally:
                    await conn.close()
                    tg.cancel_scope.cancel()
    except Exception:  # noqa: BLE001 - not listening yet, loading, or mid-election
        return None


def trial(system: str, snapshot: Path, root: Path, timeout_s: float) -> dict:
    q = build(system, root, controllers=1)
    node = q.controllers[0]
    node.metadata_dir.mkdir(parents=True, exist_ok=True)
    os.link(snapshot, node.metadata_dir / snapshot.name)
    t0 = time.monotonic()
    q.launch()
    try:
        pid = jvm_or_python_pid(node)
        deadline = t0 + timeout_s
        k = 0
        while True:
            if not node.running():
                raise RuntimeError(f"{system} controller exited while loading:\n{node.log_tail(30)}")
            code = anyio.run(_create_once, node.controller_address, f"bench-{k}")
            k += 1
            if code == 0:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{system}: not serving within {timeout_s:.0f} s (last CreateTopics "
                                   f"answer {code})")
            time.sleep(0.05)
        serving = time.monotonic() - t0
        loaded = anyio.run(_create_once, node.controller_address, "topic-0")
        if loaded != 36:   # TOPIC_ALREADY_EXISTS: the snapshot's first topic is in the image it serves
            raise RuntimeError(f"{system} serves without the snapshot's topics (CreateTopics topic-0: {loaded})")
        return {"serving_s": serving, "rss_mb": peak_rss_mb(pid), "cpu_s": cpu_seconds(pid)}
    finally:
        q.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a controller may take to serve")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    missing = kafka_missing()
    if missing:
        raise SystemExit(f"cannot run Kafka here: {missing}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}", flush=True)
    with tempfile.TemporaryDirectory(prefix="kw-snapstart-") as tmp:
        d = Path(tmp)
        snap, write_s, records = write_snapshot(d, args.partitions)
        size_mb = snap.stat().st_size / 1e6
        print(f"{args.partitions:,} partitions, {records:,} records: snapshot {size_mb:.1f} MB written "
              f"by kraftwire in {write_s:.2f} s", flush=True)
        res: dict[str, list[dict]] = {"kraftwire": [], "kafka": []}
        for i in range(args.trials):
            for system in ("kafka", "kraftwire") if i % 2 else ("kraftwire", "kafka"):
                r = trial(system, snap, d / f"{system}-{i}", args.timeout)
                res[system].append(r)
                print(f"  {system:<9} serving {r['serving_s']:7.2f} s  peak RSS {r['rss_mb']:7.0f} MB  "
                      f"cpu {r['cpu_s']:6.2f} s", flush=True)
    med = {s: {k: statistics.median(t[k] for t in rows) for k in rows[0]} for s, rows in res.items()}
    for k, label in (("serving_s", "launch -> serving (s)"), ("rss_mb", "peak RSS (MB)"), ("cpu_s", "CPU to serving (s)")):
        kw, kf = med["kraftwire"][k], med["kafka"][k]
        print(f"{label:<24} kraftwire {kw:9.2f}  Kafka {os.environ['KRAFTWIRE_BENCH_KAFKA']} {kf:9.2f}  "
              f"ratio {kw / kf:.2f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        print(json.dumps({"partitions": args.partitions, "snapshot_mb": size_mb, "write_s": write_s, **med}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
