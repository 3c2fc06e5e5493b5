"""Change committed -> row in a Spark micro-batch: the kraftwire streaming source over a live quorum.

    PYTHONPATH=. .venv/bin/python benchmarks/stream_latency.py --changes 200 [--systems kraftwire kafka]

For each system (a 3-voter kraftwire quorum; Apache Kafka ``KRAFTWIRE_BENCH_KAFKA``'s controllers, default
4.1.0, read as a Raft observer), one local[2] SparkSession runs
``spark.readStream.format("kraftwire").option("bootstrap", <every voter>)`` from the latest offset, with
micro-batches back to back, into ``foreachBatch``, which notes when each row reaches the driver. Meanwhile
a writer sets the cluster-wide ``log.retention.ms`` to a new value every ``--interval`` seconds at the
active controller (IncrementalAlterConfigs) and notes when it was acknowledged (committed). The latency
of a change is its row's arrival minus its acknowledgement. Prints p50 / p99 / max per system. Nothing is
asserted.
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

from _quorum import build, kafka_missing, wait_leader  # noqa: E402

from kraftwire.net.client import Connection  # noqa: E402
from kraftwire.protocol.messages import describe_cluster_request as dcl  # noqa: E402
from kraftwire.protocol.messages import incremental_alter_configs_request as iac  # noqa: E402

BASE = 500_000_000   # values written: BASE + i


async def _set(addrs: list[str], value: int) -> bool:
    """Write log.retention.ms=value at the active controller (found with DescribeCluster); True when acked."""
    for addr in addrs:
        host, _, port = addr.rpartition(":")
        try:
            async with anyio.create_task_group() as tg:
                conn = Connection(tg, host, int(port), client_id="stream-latency")
                try:
                    cl = await conn.request(dcl.DescribeClusterRequest(endpoint_type=2), None, 5.0)
                    active = next((b for b in cl.brokers if b.broker_id == cl.controller_id), None)
                    if active is not None and f"{active.host}:{active.port}" != addr:
                        await conn.close()
                        conn = Connection(tg, active.host, active.port, client_id="stream-latency")
                    req = iac.IncrementalAlterConfigsRequest(resources=[iac.AlterConfigsResource(
                        resource_type=4, resource_name="", configs=[iac.AlterableConfig(
                            name="log.retention.ms", config_operation=0, value=str(value))])])
                    resp = await conn.request(req, None, 10.0)
                    return resp.responses[0].error_code == 0
                finally:
                    await conn.close()
                    tg.cancel_scope.cancel()
        except Exception:  # noqa: BLE001 - try the next voter
            continue
    return False


def run_system(system: str, root: Path, changes: int, interval_s: float, spark) -> list[float]:  # noqa: ANN001
    q = build(system, root, controllers=3)
    q.launch()
    try:
        q.wait_started(180)
        wait_leader(q)
        addrs = [n.controller_address for n in q.controllers]
        arrived: dict[int, float] = {}

        def on_batch(df, _batch_id) -> None:  # noqa: ANN001
            now = time.time()
            for row in df.filter("record_type = 'ConfigRecord'").select("json").collect():
                try:
                    value = json.loads(row["json"]).get("value")
                except (TypeError, ValueError):
                    continue
                if value is not None and str(value).isdigit() and int(value) >= BASE:
                    arrived.setdefault(int(value), now)

        query = (spark.readStream.format("kraftwire").option("bootstrap", ",".join(addrs))
                 .option("startingOffsets", "latest").load()
                 .writeStream.foreachBatch(on_batch).trigger(processingTime="0 seconds")
                 .option("checkpointLocation", str(root / "checkpoint")).start())
        acked: dict[int, float] = {}
        try:
            time.sleep(10)   # the first micro-batches (Python workers starting) before the clock runs
            for i in range(changes):
                if anyio.run(_set, addrs, BASE + i):
                    acked[BASE + i] = time.time()
                time.sleep(interval_s)
            deadline = time.time() + 60
            while time.time() < deadline and not set(acked) <= set(arrived):
                time.sleep(0.2)
        finally:
            query.stop()
        missing = sorted(set(acked) - set(arrived))
        if missing:
            print(f"  {system}: {len(missing)} acknowledged changes never reached a micro-batch "
                  f"(first {missing[:5]})", flush=True)
        return [(arrived[v] - t) * 1000 for v, t in acked.items() if v in arrived]
    finally:
        q.stop()


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=200)
    ap.add_argument("--interval", type=float, default=0.25, help="seconds between changes")
    ap.add_argument("--systems", nargs="+", default=["kraftwire", "kafka"], choices=["kraftwire", "kafka"])
    args = ap.parse_args()
    if "kafka" in args.systems and (missing := kafka_missing()):
        raise SystemExit(f"cannot run Kafka here: {missing}")
    from kraftwire.analytics.session import spark_session

    spark = spark_session("local[2]", app_name="stream-latency")
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}: load average {os.getloadavg()[0]:.2f}; "
          f"{args.changes} changes every {args.interval} s", flush=True)
    res = {}
    with tempfile.TemporaryDirectory(prefix="kw-stream-") as tmp:
        for system in args.systems:
            lat = run_system(system, Path(tmp) / system, args.changes, args.interval, spark)
            res[system] = lat
            if not lat:
                print(f"{system:<9} no change reached a micro-batch", flush=True)
                continue
            print(f"{system:<9} committed -> row in a micro-batch: p50 {statistics.median(lat):7.1f} ms  "
                  f"p99 {pct(lat, 0.99):7.1f} ms  max {max(lat):7.1f} ms  (n={len(lat)}, load "
                  f"{os.getloadavg()[0]:.2f})", flush=True)
    if len(res) == 2 and all(res.values()):
        kw, kf = res["kraftwire"], res["kafka"]
        print(f"kraftwire / Kafka quorum: p50 {statistics.median(kw) / statistics.median(kf):.2f}  "
              f"p99 {pct(kw, 0.99) / pct(kf, 0.99):.2f}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
