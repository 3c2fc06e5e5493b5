"""Sustained metadata writes through the active controller of a 3-process quorum (fsync on).

Each write is a CreateAcls request with B ACL creations, which the controller turns into one batch
of B AccessControlEntryRecords; the response is released only when the batch is committed (on a
majority, fsynced). Several writers keep the pipeline busy. Prints records/s and the commit
latency p50/p99 (request → committed response) for B = 1, 10, 100.

    python benchmarks/commit.py --seconds 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio
from _cluster import Cluster  # noqa: I001

from kraftwire.net.client import Connection
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest

TOPIC, LITERAL, READ, ALLOW = 2, 3, 3, 3


async def run(addr: str, batch: int, seconds: float, writers: int) -> tuple[int, list[float]]:
    host, port = addr.split(":")
    latencies: list[float] = []
    written = 0
    deadline = time.monotonic() + seconds
    counter = 0

    async def writer(conn: Connection) -> None:
        nonlocal written, counter
        while time.monotonic() < deadline:
            counter += 1
            req = CreateAclsRequest(creations=[AclCreation(TOPIC, f"t{counter}-{i}", LITERAL, "User:bench", "*",
                                                           READ, ALLOW) for i in range(batch)])
            t0 = time.monotonic()
            resp = await conn.request(req, 3, 30.0)
            latencies.append(time.monotonic() - t0)
            if any(r.error_code for r in resp.results):
                raise RuntimeError(f"CreateAcls failed: {resp.results[0]}")
            written += batch

    async with anyio.create_task_group() as tg:
        conns = [Connection(tg, host, int(port)) for _ in range(writers)]
        async with anyio.create_task_group() as inner:
            for c in conns:
                inner.start_soon(writer, c)
        for c in conns:
            await c.close()
        tg.cancel_scope.cancel()
    return written, latencies


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--writers", type=int, default=4)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        c = Cluster(Path(d), 3)
        try:
            for n in (1, 2, 3):
                c.start(n)
            status = c.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 1, [1, 2, 3], timeout=60)
            addr = c.addr(status["LeaderId"])
            print(f"{'batch':>5} {'records/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'requests':>9}")
            for batch in (1, 10, 100):
                written, lat = anyio.run(run, addr, batch, args.seconds, args.writers)
                lat.sort()
                p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
                print(f"{batch:>5} {written / args.seconds:>10.0f} {statistics.median(lat) * 1000:>8.1f} "
                      f"{p99 * 1000:>8.1f} {len(lat):>9}", flush=True)
        finally:
            c.stop_all()


if __name__ == "__main__":
    main()
