"""Start-up time of the ``kraftwire`` command and the server's imports, side by side with Kafka's tools.

    python benchmarks/startup.py [--runs 7] [--kafka /path/to/kafka]

Each pair runs interleaved (A B A B ...) as whole processes after one warm-up run each (which writes
the .pyc files an installed package has); the table prints the medians and the ratio kraftwire / Kafka. Kafka's tools come from ``../shared/kafka`` (or ``--kafka``, ``KAFKA_HOME``);
without a JDK or a distribution the Kafka column is left empty.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_KAFKA = ROOT.parent / "shared" / "kafka"


def wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, timeout=120, check=False)
    return time.perf_counter() - t0


def kafka_tool(base: Path, release: str, script: str) -> Path | None:
    path = base / release / "bin" / script
    return path if path.exists() and shutil.which("java") else None


def compile_package() -> None:
    """Write the package's .pyc files, as `pip install` does, so that a launched server reads bytecode
    instead of compiling every module (this box sets PYTHONDONTWRITEBYTECODE, which launched nodes
    inherit: without this each launch compiled the sources again, ~1 s on a quiet core)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kraftwire")],
                   stdout=subprocess.DEVNULL, check=False, timeout=600)


DEFAULT_TIMEOUTS = ("controller.quorum.election.timeout.ms=1000", "controller.quorum.fetch.timeout.ms=2000",
                    "controller.quorum.election.backoff.max.ms=1000", "controller.quorum.request.timeout.ms=2000")


def quorum_to_leader(trials: int) -> list[float]:
    """Seconds from launching 3 freshly formatted voters (Kafka's default timeouts) until one of them
    answers DescribeQuorum with a leader; the poll itself is a `kraftwire metadata-quorum` process."""
    import tempfile

    sys.path.insert(0, str(ROOT))
    from tests.processes.harness import Cluster

    compile_package()
    out = []
    for _ in range(trials):
        with tempfile.TemporaryDirectory() as d:
            c = Cluster(Path(d), 3)
            t0 = time.perf_counter()
            try:
                for node in (1, 2, 3):
                    c.start(node, *DEFAULT_TIMEOUTS)
                deadline = t0 + 60
                while time.perf_counter() < deadline:
                    status = c.describe(1 + len(out) % 3, timeout=1.0)
                    if status is not None and status.get("LeaderId", -1) > 0:
                        out.append(time.perf_counter() - t0)
                        break
            finally:
                c.stop_all()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--quorum", type=int, default=0, metavar="TRIALS",
                    help="also time 3 fresh voters from launch to an elected leader")
    ap.add_argument("--kafka", type=Path, default=Path(os.environ.get("KAFKA_HOME_BASE", DEFAULT_KAFKA)))
    args = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), KAFKA_HEAP_OPTS="-Xmx256m -Xms64m")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the warm-up run writes .pyc files, as an installed package has
    kw = [sys.executable, "-m", "kraftwire"]
    q39 = kafka_tool(args.kafka, "3.9.0", "kafka-metadata-quorum.sh")
    s39 = kafka_tool(args.kafka, "3.9.0", "kafka-storage.sh")
    s41 = kafka_tool(args.kafka, "4.1.0", "kafka-storage.sh")  # 3.9's kafka-storage has no `version`
    rows = [
        ("--help", kw + ["--help"], q39 and [str(q39), "--help"], "kafka-metadata-quorum.sh --help (3.9)"),
        ("--version", kw + ["--version"], s41 and [str(s41), "version"], "kafka-storage.sh version (4.1)"),
        ("storage random-uuid", kw + ["storage", "random-uuid"], s39 and [str(s39), "random-uuid"],
         "kafka-storage.sh random-uuid (3.9)"),
        ("server modules (import kraftwire.node.server)", [sys.executable, "-c", "import kraftwire.node.server"],
         None, "-"),
    ]
    print(f"{'kraftwire':<46} {'median s':>9}  {'peer':<40} {'median s':>9} {'ratio':>6}")
    for name, ours, peer, peer_name in rows:
        a: list[float] = []
        b: list[float] = []
        wall(ours, env)  # warm the page cache and .pyc files
        if peer:
            wall(peer, env)
        for _ in range(args.runs):
            a.append(wall(ours, env))
            if peer:
                b.append(wall(peer, env))
        ma = statistics.median(a)
        if b:
            mb = statistics.median(b)
            print(f"{name:<46} {ma:>9.3f}  {peer_name:<40} {mb:>9.3f} {ma / mb:>6.2f}")
        else:
            print(f"{name:<46} {ma:>9.3f}  {peer_name:<40} {'':>9} {'':>6}")
    if args.quorum:
        times = quorum_to_leader(args.quorum)
        print(f"{'3 fresh voters: launch to leader':<46} {statistics.median(times):>9.3f}  "
              f"(median of {len(times)}, max {max(times):.3f}; Kafka's default timeouts)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
