"""Broker heartbeats on a kraftwire quorum whose disk is slow: every fsync and rename of the three
controller processes takes ``--delay-ms`` longer (``compat/slow_disk.py``), against the same run
without the delay (issue #23, item 3: disk writes off the event loop).

The load is ``benchmarks/heartbeats.py``'s (N simulated brokers registering and heartbeating every
2 s); reported per run: heartbeat p50/p99/max, timeouts, spurious fences, the leader changes of both
quorums (``leader_changes``: the metadata quorum's, seen by DescribeQuorum; ``offsets_leader_changes``:
the voters' offsets quorum's, read from the controllers' ``quorum-state`` files, which also give each
quorum's epochs begun in the window, failed candidacies included: ``metadata_epochs``,
``offsets_epochs``), and the fsync/rename calls the controllers' event-loop threads made during the
measured window (0 expected: every durable write runs in the disk worker), each printed with its file
and the frames that made it, with the machine's load average.

    nice -n 10 .venv/bin/python benchmarks/slow_disk.py --brokers 2000 --duration 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heartbeats import run_system  # noqa: E402

from compat.slow_disk import ENV_DELAY, ENV_REPORT, child_env  # noqa: E402

QUORUMS = {"__cluster_metadata-0": "metadata", "__kraftwire_offsets-0": "offsets"}


class QuorumWatch:
    """Reads every controller's ``quorum-state`` of both quorums every ``period_s`` in a thread and keeps,
    per quorum, each change of the newest (epoch, leader) any voter holds, with its time."""

    def __init__(self, root: Path, period_s: float = 0.2) -> None:
        self.root = root
        self.period_s = period_s
        self.seen: dict[str, list[tuple[float, int, int]]] = {q: [] for q in QUORUMS.values()}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quorum-watch", daemon=True)

    def __enter__(self) -> QuorumWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            newest: dict[str, tuple[int, int]] = {}
            for path in self.root.glob("*/data/*/quorum-state"):
                quorum = QUORUMS.get(path.parent.name)
                try:
                    data = json.loads(path.read_text())
                    key = (int(data["leaderEpoch"]), int(data.get("leaderId", -1)))
                except (OSError, ValueError, KeyError, TypeError):
                    continue   # not written yet: read it next time
                if quorum is not None and key > newest.get(quorum, (-1, -1)):
                    newest[quorum] = key
            now = time.time()
            for quorum, key in newest.items():
                seen = self.seen[quorum]
                if not seen or seen[-1][1:] != key:
                    seen.append((now, *key))

    def in_window(self, quorum: str, start: float, stop: float) -> tuple[int, int, list[str]]:
        """(leader changes, epochs begun, one line per change seen) of ``quorum`` from ``start`` to ``stop``."""
        seen = self.seen[quorum]
        before = [s for s in seen if s[0] < start]
        during = [s for s in seen if start <= s[0] <= stop]
        if not before and not during:
            return 0, 0, []
        first_epoch = before[-1][1] if before else during[0][1]
        led = [(e, ld) for _, e, ld in before if ld >= 0]
        last = led[-1] if led else None
        changes, lines = 0, []
        for t, epoch, leader in during:
            lines.append(f"{quorum} quorum at +{t - start:.1f} s: epoch {epoch}, leader {leader if leader >= 0 else '-'}")
            if leader >= 0 and (epoch, leader) != last:
                changes += 1
                last = (epoch, leader)
        return changes, max([first_epoch] + [e for _, e, _ in during]) - first_epoch, lines


def one_run(n: int, duration_s: float, delay_ms: float, procs: int, keep: Path | None = None) -> dict:
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", ENV_DELAY, ENV_REPORT)}
    with tempfile.TemporaryDirectory(prefix="hb-slowdisk-") as tmp:
        report = Path(tmp) / "disk"
        if delay_ms > 0:
            os.environ.update(child_env(delay_ms, report))
        try:
            with QuorumWatch(Path(tmp) / "cluster") as watch:
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
        for f in sorted(Path(tmp).glob("disk.*")):
            data = json.loads(f.read_text())
            calls += data["calls"]
            late = [(c, where) for t, c, where in data["on_loop"] if start <= t <= stop]
            on_loop += len(late)
            examples += [f"{c} at {where}" for c, where in late[:3]]
    quorum_lines: list[str] = []
    for quorum in QUORUMS.values():
        changes, epochs, lines = watch.in_window(quorum, start, stop)
        row[f"{quorum}_epochs"] = epochs
        if quorum == "offsets":
            row["offsets_leader_changes"] = changes
        quorum_lines += lines
    return {**row, "delay_ms": delay_ms, "disk_calls": calls, "loop_disk_calls": on_loop,
            "loop_examples": examples[:6], "quorum_lines": quorum_lines,
            "loadavg": "/".join(f"{x:.2f}" for x in os.getloadavg())}


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
            "spurious_fences", "leader_changes", "offsets_leader_changes", "metadata_epochs", "offsets_epochs",
            "cpu_max_pct", "disk_calls", "loop_disk_calls", "loadavg"]
    print(" | ".join(cols), flush=True)
    p99: dict[float, float] = {}
    for delay in args.delays or (0.0, args.delay_ms):
        row = one_run(args.brokers, args.duration, delay, args.procs, args.keep_logs)
        p99[delay] = row["p99_ms"]
        print(" | ".join(f"{row[c]:.1f}" if isinstance(row[c], float) else str(row[c]) for c in cols), flush=True)
        for line in row["quorum_lines"]:
            print(f"  {line}", flush=True)
        for example in row["loop_examples"]:
            print(f"  on the event loop: {example}", flush=True)
    base = p99.get(0.0)
    for delay, value in p99.items():
        if delay > 0 and base:
            ratio = value / base
            print(f"p99 at +{delay:.0f} ms per fsync/rename: {ratio:.1f}x the undelayed "
                  f"({'within' if ratio <= 2 else 'above'} the 2x goal)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
