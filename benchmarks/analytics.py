"""Analytics benchmark: rows/s the ``kraftwire`` Spark data source reads from a 1M-record log.

    python benchmarks/analytics.py                       # 1M records, local[2]
    python benchmarks/analytics.py --records 200000 --jobs --sweep 2000 --dir /tmp/churn-log

The log is written once (a scripted controller doing ISR churn on 1,000 partitions, 100 partitions
per AlterPartition, 8 MiB segments) into ``--dir`` (reused when it already holds one) or a temporary
directory. The peer is the same decoding in this one Python process (``rows.file_rows``), so the
ratio shows what Spark's parallel Python workers add over a single core. Spark reads every column
(``write.format("noop")``); the first read includes worker start-up, so the best of ``--repeat``
reads is reported too. ``--jobs`` also times every analytics job over the log, ``--sweep N`` a
simulation sweep of N seeds in this process and as Spark tasks.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kraftwire.analytics.rows import SEGMENT, file_rows, list_log_files  # noqa: E402
from kraftwire.analytics.scenario import churn_log  # noqa: E402
from kraftwire.protocol.records import iter_batches  # noqa: E402


def ensure_log(root: Path, records: int) -> int:
    files = list_log_files(root) if (root / "__cluster_metadata-0").is_dir() else []
    if files:
        n = sum(len(b.records) for f in files if f.kind == SEGMENT
                for b, _, _ in iter_batches(Path(f.path).read_bytes(), verify_crc=False))
        if n >= records:
            print(f"log: reusing {root} ({n:,} records, {len(files)} files)")
            return n
        raise SystemExit(f"{root} holds only {n:,} records; use another --dir")
    t = time.perf_counter()
    n = churn_log(root, records)
    files = list_log_files(root)
    size = sum(Path(f.path).stat().st_size for f in files)
    print(f"log: wrote {n:,} records in {len(files)} segments ({size / 1e6:.0f} MB) "
          f"in {time.perf_counter() - t:.1f} s through the controller")
    return n


def bench_python(root: Path, n: int) -> float:
    t = time.perf_counter()
    count = sum(1 for f in list_log_files(root) for _ in file_rows(f))
    dt = time.perf_counter() - t
    assert count == n, (count, n)
    rate = n / dt
    print(f"peer, one Python process (rows.file_rows): {n:,} rows in {dt:.1f} s = {rate:,.0f} rows/s")
    return rate


def bench_spark(root: Path, n: int, master: str, repeat: int) -> tuple[float, float]:
    from kraftwire.analytics.session import spark_session

    t = time.perf_counter()
    spark = spark_session(master, app_name="kraftwire-bench")
    print(f"SparkSession {master}: started in {time.perf_counter() - t:.1f} s")
    df = spark.read.format("kraftwire").load(str(root))
    parts = df.rdd.getNumPartitions()
    got = df.count()
    assert got == n, (got, n)
    rates = []
    for i in range(repeat):
        t = time.perf_counter()
        df.write.format("noop").mode("overwrite").save()
        dt = time.perf_counter() - t
        rates.append(n / dt)
        print(f"spark read {i + 1}: {n:,} rows, {parts} partitions, {dt:.1f} s = {rates[-1]:,.0f} rows/s")
    return rates[0], max(rates)


def bench_jobs(root: Path, out: Path) -> None:
    from kraftwire.analytics import JOBS
    from kraftwire.analytics.report import load, run_jobs
    from kraftwire.analytics.session import spark_session

    spark = spark_session()
    t = time.perf_counter()
    report = run_jobs(load(spark, log_dir=str(root)), list(JOBS), out)
    print(f"all jobs ({', '.join(JOBS)}): {time.perf_counter() - t:.1f} s")
    for line in report.summary:
        print(f"  {line}")


def bench_sweep(seeds: int, master: str) -> None:
    """Simulator seeds/s: one local process vs Spark tasks (same seeds, same results)."""
    from kraftwire.analytics.session import spark_session
    from kraftwire.analytics.sweep import spark_sweep
    from kraftwire.sim.config import SimConfig
    from kraftwire.sim.runner import run_seeds

    cfg = SimConfig(voters=3, observers=1)
    t = time.perf_counter()
    local = list(run_seeds(range(seeds), cfg))
    dt_local = time.perf_counter() - t
    spark = spark_session(master)
    t = time.perf_counter()
    remote = spark_sweep(spark, range(seeds), cfg)
    dt_spark = time.perf_counter() - t
    assert [(r.seed, r.violations, r.events) for r in remote] == [(r.seed, r.violations, r.events) for r in local]
    print(f"sweep of {seeds} seeds (3 voters, all faults): one process {seeds / dt_local:.0f} seeds/s, "
          f"spark {master} {seeds / dt_spark:.0f} seeds/s, ratio {dt_local / dt_spark:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--dir", type=Path, default=None, help="log directory to write once and reuse")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--repeat", type=int, default=3, help="Spark reads to time")
    ap.add_argument("--jobs", action="store_true", help="also time every analytics job")
    ap.add_argument("--sweep", type=int, default=0, metavar="SEEDS", help="also time a simulation sweep")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kraftwire-bench-") as tmp:
        root = args.dir or Path(tmp) / "log"
        n = ensure_log(root, args.records)
        peer = bench_python(root, n)
        first, best = bench_spark(root, n, args.master, args.repeat)
        print(f"ratio spark {args.master} / one process: first read {first / peer:.2f}x, best {best / peer:.2f}x")
        if args.jobs:
            bench_jobs(root, Path(tmp) / "out")
        if args.sweep:
            bench_sweep(args.sweep, args.master)


if __name__ == "__main__":
    main()
