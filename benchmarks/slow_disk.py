"""Broker heartbeats on a kraftwire quorum whose disk is slow: every fsync and rename of the three
controller processes takes ``--delay-ms`` longer (``compat/slow_disk.py``), against the same run
without the delay (issue #23, item 3: disk writes off the event loop).

The load is ``benchmarks/heartbeats.py``'s (N simulated brokers registering and heartbeating every
2 s); reported per run: heartbeat p50/p99/max, timeouts, spurious fences, leader changes, and the
fsync/rename calls the controllers' event-loop threads made during the measured window (0 expected:
every durable write runs in the disk worker), with the machine's load average.

    nice -n 10 .venv/bin/python benchmarks/slow_disk.py --brokers 2000 --duration 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heartbeats import run_system  # noqa: E402

from compat.slow_disk import ENV_DELAY, ENV_REPORT, child_env  # noqa: E402


def one_run(n: int, duration_s: float, delay_ms: float, procs: int, keep: Path | None = None) -> dict:
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", ENV_DELAY, ENV_REPORT)}
    with tempfile.TemporaryDirectory(prefix="hb-slowdisk-") as tmp:
        report = Path(tmp) / "disk"
        if delay_ms > 0:
            os.environ.update(child_env(delay_ms, report))
        try:
            row = run_system("kraftwire", n, duration_s, Path(tmp) / "cluster", procs,
                             keep / f"delay-{delay_ms:.0f}" if keep is not None else None)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        start, stop = row["window"]   # the loop-thread calls of the measured window
        calls = on_loop = 0
        examples: list[str] = []
        for f in Path(tmp).glob("disk.*"):
            data = json.loads(f.read_text())
            calls += data["calls"]
            late = [c for t, c in data["on_loop"] if start <= t <= stop]
            on_loop += len(late)
            examples += late[:3]
    return {**row, "delay_ms": delay_ms, "disk_calls": calls, "loop_disk_calls": on_loop,
            "loop_examples": examples[:5], "loadavg": "/".join(f"{x:.2f}" for x in os.getloadavg())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brokers", type=int, default=2000)
    p.add_argument("--duration", type=float, default=30.0, help="measured seconds per run (after warm-up)")
    p.add_argument("--delay-ms", type=float, default=200.0)
    p.add_argument("--procs", type=int, default=2, help="load generator processes")
    p.add_argument("--delays", type=float, nargs="+", default=None, help="delays to run (default: 0 and --delay-ms)")
    p.add_argument("--keep-logs", type=Path, default=None, help="copy the controllers' logs here")
    args = p.parse_args()
    cols = ["delay_ms", "brokers", "registered", "heartbeats", "p50_ms", "p99_ms", "max_ms", "timeouts",
            "spurious_fences", "leader_changes", "cpu_max_pct", "disk_calls", "loop_disk_calls", "loadavg"]
    print(" | ".join(cols), flush=True)
    p99: dict[float, float] = {}
    for delay in args.delays or (0.0, args.delay_ms):
        row = one_run(args.brokers, args.duration, delay, args.procs, args.keep_logs)
        p99[delay] = row["p99_ms"]
        print(" | ".join(f"{row[c]:.1f}" if isinstance(row[c], float) else str(row[c]) for c in cols), flush=True)
        if row["loop_examples"]:
            print(f"  on the event loop: {row['loop_examples']}", flush=True)
    base = p99.get(0.0)
    for delay, value in p99.items():
        if delay > 0 and base:
            ratio = value / base
            print(f"p99 at +{delay:.0f} ms per fsync/rename: {ratio:.1f}x the undelayed "
                  f"({'within' if ratio <= 2 else 'above'} the 2x goal)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
