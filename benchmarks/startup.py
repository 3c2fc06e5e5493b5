"""Start-up time of the ``kraftwire`` command and the server's imports, side by side with Kafka's tools.

    python benchmarks/startup.py [--runs 7] [--kafka /path/to/kafka]

Each pair runs interleaved (A B A B ...) as whole processes; the table prints the medians and the
ratio kraftwire / Kafka. Kafka's tools come from ``../shared/kafka`` (or ``--kafka``, ``KAFKA_HOME``);
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--kafka", type=Path, default=Path(os.environ.get("KAFKA_HOME_BASE", DEFAULT_KAFKA)))
    args = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT), KAFKA_HEAP_OPTS="-Xmx256m -Xms64m")
    kw = [sys.executable, "-m", "kraftwire"]
    q39 = kafka_tool(args.kafka, "3.9.0", "kafka-metadata-quorum.sh")
    s39 = kafka_tool(args.kafka, "3.9.0", "kafka-storage.sh")
    s41 = kafka_tool(args.kafka, "4.1.0", "kafka-storage.sh")  # 3.9's kafka-storage has no `version`
    rows = [
        ("--help", kw + ["--help"], q39 and [str(q39), "--help"], "kafka-metadata-quorum.sh --help (3.9)"),
        ("--version", kw + ["--version"], s41 and [str(s41), "version"], "kafka-storage.sh version (4.1)"),
        ("storage random-uuid", kw + ["storage", "random-uuid"], s39 and [str(s39), "random-uuid"],
         "kafka-storage.sh random-uuid (3.9)"),
        ("server modules (import kraftwire.node.node)", [sys.executable, "-c", "import kraftwire.node.node"],
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
