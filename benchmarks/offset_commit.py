"""OffsetCommit latency on a 3-process quorum (fsync on): the offsets quorum vs each voter's local file.

For each placement (``kraftwire.group.offsets.replication`` = ``local``, ``raft``) a fresh quorum is
started; W writers send simple OffsetCommits (generation -1, one partition, each writer its own group)
to the group's coordinator for the given seconds, each waiting for its answer. With ``raft`` the answer
leaves once the offsets quorum committed the record (a majority fsynced it); with ``local`` once the
owner fsynced its file. Prints commits/s and the latency p50/p99 per placement and writer count.

    python benchmarks/offset_commit.py --seconds 5
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
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest


def commit(group: str, offset: int) -> ocq.OffsetCommitRequest:
    return ocq.OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, topics=[
        ocq.OffsetCommitRequestTopic(name="__cluster_metadata", partitions=[
            ocq.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])


async def coordinator_port(c: Cluster, group: str) -> int:
    deadline = time.monotonic() + 60
    while True:
        try:
            async with anyio.create_task_group() as tg:
                conn = Connection(tg, "127.0.0.1", int(c.addr(1).split(":")[1]))
                try:
                    resp = await conn.request(FindCoordinatorRequest(key=group, key_type=0), 3, 5.0)
                finally:
                    await conn.close()
            if resp.error_code == 0:
                return resp.port
        except Exception:  # noqa: BLE001 - still starting
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("no group coordinator within 60 s")
        await anyio.sleep(0.2)


async def run(c: Cluster, writers: int, seconds: float) -> tuple[int, list[float]]:
    latencies: list[float] = []
    done = 0

    async def writer(i: int) -> None:
        nonlocal done
        group = f"bench-{writers}-{i}"
        port = await coordinator_port(c, group)
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", port)
            await conn.request(commit(group, 0), 8, 30.0)   # warm: group created, connection up
            deadline = time.monotonic() + seconds
            n = 0
            while time.monotonic() < deadline:
                n += 1
                t0 = time.monotonic()
                resp = await conn.request(commit(group, n), 8, 30.0)
                latencies.append(time.monotonic() - t0)
                code = resp.topics[0].partitions[0].error_code
                if code:
                    raise RuntimeError(f"OffsetCommit failed with error {code}")
                done += 1
            await conn.close()

    async with anyio.create_task_group() as tg:
        for i in range(writers):
            tg.start_soon(writer, i)
    return done, latencies


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=5.0)
    args = p.parse_args()
    print(f"{'placement':>9} {'writers':>7} {'commits/s':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for placement in ("local", "raft"):
        with tempfile.TemporaryDirectory() as d:
            c = Cluster(Path(d), 3)
            try:
                for n in (1, 2, 3):
                    c.start(n, f"kraftwire.group.offsets.replication={placement}")
                c.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 1, [1, 2, 3], timeout=60)
                for writers in (1, 4):
                    done, lat = anyio.run(run, c, writers, args.seconds)
                    lat.sort()
                    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
                    print(f"{placement:>9} {writers:>7} {done / args.seconds:>10.0f} "
                          f"{statistics.median(lat) * 1000:>8.1f} {p99 * 1000:>8.1f}", flush=True)
            finally:
                c.stop_all()


if __name__ == "__main__":
    main()
