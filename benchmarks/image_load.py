"""Bytes -> metadata image for an N-partition cluster, this tree against an older commit, as processes.

    python benchmarks/image_load.py --partitions 1000000 --base cbe36e0 [--pairs 3] [--json]

Writes once (with this tree) a snapshot file of the image and a log of 1,000-record batches holding the
same records (benchmarks/controller.py's synthetic cluster: 100 brokers, 1,000-partition topics, RF 3);
then loads each, alternating "before" (``git archive BASE`` unpacked to a temporary directory) and
"after" (this tree) in fresh processes: the snapshot with ``raft.snapshot.parse`` + ``image_from_snapshot``,
the log with ``decode_batches`` + ``QuorumController.replay_batches`` (the calls a node makes at start;
both exist unchanged in both trees). Every load is checked against the same image digest. Prints the
medians and ratios; ``--json`` adds a last line with them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

LOADER = r"""
import sys, time
from pathlib import Path
from kraftwire.raft.snapshot import parse
from kraftwire.metadata.snapshot import image_from_snapshot
from kraftwire.protocol.records import decode_batches
from kraftwire.controller import QuorumController
kind, path = sys.argv[1], Path(sys.argv[2])
data = path.read_bytes()
t0 = time.perf_counter()
c0 = time.process_time()
if kind == "snapshot":
    img = image_from_snapshot(parse(data))
else:
    ctl = QuorumController()
    ctl.replay_batches(decode_batches(data))
    img = ctl.image
wall = time.perf_counter() - t0
cpu = time.process_time() - c0
parts = leaders = 0
for t in img.topics:
    pid = 0
    while (p := img.partition(t, pid)) is not None:
        parts += 1
        leaders += p.leader + len(p.isr) + len(p.directories)
        pid += 1
import kraftwire
assert kraftwire.__file__.startswith(sys.argv[3]), (kraftwire.__file__, sys.argv[3])
print(f"{wall:.4f} {cpu:.4f} {parts} {leaders}")
"""


def write_inputs(directory: Path, partitions: int) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(HERE))
    from controller import synthetic_records

    from kraftwire.metadata import EMPTY_IMAGE
    from kraftwire.metadata.snapshot import snapshot_batches
    from kraftwire.protocol.metadata import encode_record
    from kraftwire.protocol.records import Record, RecordBatch, encode_batch
    from kraftwire.raft.log import SnapshotId
    from kraftwire.raft.snapshot import encode as encode_snapshot

    recs = synthetic_records(partitions)
    img = EMPTY_IMAGE.replay_all(recs)
    snap = directory / "image.checkpoint"
    snap.write_bytes(encode_snapshot(snapshot_batches(img, SnapshotId(len(recs), 1))))
    values = [Record(value=encode_record(r)) for r in recs]
    log = directory / "image.log"
    with log.open("wb") as f:
        for i in range(0, len(values), 1000):
            f.write(encode_batch(RecordBatch(i, 1, tuple(values[i:i + 1000]))))
    return snap, log


def load(tree: Path, kind: str, path: Path) -> tuple[float, float, str]:
    out = subprocess.run([sys.executable, "-c", LOADER, kind, str(path), str(tree)], capture_output=True, text=True, cwd=path.parent,
                         env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}, timeout=1800)
    if out.returncode:
        raise SystemExit(f"loading {path.name} with {tree} failed:\n{out.stderr[-2000:]}")
    wall, cpu, *digest = out.stdout.split()
    return float(wall), float(cpu), " ".join(digest)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1_000_000)
    ap.add_argument("--base", default="cbe36e0", help="the commit to compare with")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kw-image-") as tmp:
        d = Path(tmp)
        base = d / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.base, "kraftwire"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        snap, log = write_inputs(d, args.partitions)
        print(f"{args.partitions:,} partitions: snapshot {snap.stat().st_size / 1e6:.1f} MB, "
              f"log {log.stat().st_size / 1e6:.1f} MB", flush=True)
        res: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
        digests = set()
        for _ in range(args.pairs):
            for kind, path in (("snapshot", snap), ("log", log)):
                for label, tree in (("before", base), ("after", ROOT)):
                    wall, cpu, digest = load(tree, kind, path)
                    digests.add(digest)
                    res[label].setdefault(kind, []).append(wall)
                    res[label].setdefault(kind + "_cpu", []).append(cpu)
                    print(f"  {label:<6} {kind:<8} {wall:6.2f} s (cpu {cpu:.2f} s)", flush=True)
        if len(digests) != 1:
            raise SystemExit(f"the trees built different images: {digests}")
        med = {label: {k: statistics.median(v) for k, v in r.items()} for label, r in res.items()}
        for kind in ("snapshot", "log"):
            b, a = med["before"][kind], med["after"][kind]
            print(f"{kind:<8} before {b:.2f} s  after {a:.2f} s  ratio {a / b:.2f}")
        if args.json:
            print(json.dumps(med))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
