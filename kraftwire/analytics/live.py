"""Reading ``__cluster_metadata`` from a running node over the Kafka protocol (ListOffsets + Fetch).

Like ``kraftwire console-consumer`` this is an ordinary consumer (ReplicaId -1, read_committed):
it sees committed records only, from the node's log start offset (records a snapshot replaced are
not served by Fetch). Used by the Spark data source's ``bootstrap`` option, one Fetch loop per
offset range, so each Spark task opens its own connection.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from kraftwire.net.client import Connection, RequestFailed
from kraftwire.node.reads import METADATA_TOPIC
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kraftwire.protocol.messages.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kraftwire.protocol.records import RecordBatch, decode_batches

EARLIEST, LATEST = -2, -1
FETCH_VERSION, LIST_OFFSETS_VERSION = 12, 5


def split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"bootstrap address must be HOST:PORT, got {addr!r}")
    return host.strip("[]"), int(port)


async def _list_offset(conn: Connection, timestamp: int) -> int:
    req = ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[ListOffsetsTopic(
        METADATA_TOPIC, [ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
    resp = await conn.request(req, LIST_OFFSETS_VERSION, 10.0)
    part = resp.topics[0].partitions[0]
    if part.error_code:
        raise RequestFailed(f"ListOffsets failed: {Errors.of(part.error_code)!r}")
    return part.offset


async def _with_connection(addr: str, fn: Callable) -> object:
    host, port = split_addr(addr)
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, port, client_id="kraftwire-analytics")
        try:
            return await fn(conn)
        finally:
            await conn.close()
            tg.cancel_scope.cancel()


def log_bounds(addr: str) -> tuple[int, int]:
    """(log start offset, high watermark) of the node's ``__cluster_metadata``."""
    async def go(conn: Connection) -> tuple[int, int]:
        return await _list_offset(conn, EARLIEST), await _list_offset(conn, LATEST)

    return anyio.run(_with_connection, addr, go)  # type: ignore[return-value]


def fetch_range(addr: str, start: int, end: int, on_batch: Callable[[RecordBatch], None], *,
                max_bytes: int = 1 << 20, idle_timeout_s: float = 30.0) -> None:
    """Call ``on_batch`` for every batch holding offsets in ``[start, end)``, in order.

    Batches are whole (the first may begin before ``start``, the last end after ``end``); the
    caller trims. Raises RequestFailed on a Fetch error or when no progress is made for
    ``idle_timeout_s`` (the node lost those offsets or stopped committing).
    """
    async def go(conn: Connection) -> None:
        offset = start
        idle_since = anyio.current_time()
        while offset < end:
            req = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=max_bytes, isolation_level=1,
                               topics=[FetchTopic(topic=METADATA_TOPIC, partitions=[
                                   FetchPartition(partition=0, fetch_offset=offset,
                                                  partition_max_bytes=max_bytes)])])
            resp = await conn.request(req, FETCH_VERSION, 15.0)
            if resp.error_code:
                raise RequestFailed(f"Fetch failed: {Errors.of(resp.error_code)!r}")
            part = resp.responses[0].partitions[0]
            if part.error_code:
                raise RequestFailed(f"Fetch at offset {offset} failed: {Errors.of(part.error_code)!r}")
            progressed = False
            for batch in decode_batches(part.records) if part.records else []:
                if batch.next_offset <= offset:
                    continue
                on_batch(batch)
                offset = batch.next_offset
                progressed = True
                if offset >= end:
                    break
            if progressed:
                idle_since = anyio.current_time()
            elif anyio.current_time() - idle_since > idle_timeout_s:
                raise RequestFailed(f"no records at offset {offset} for {idle_timeout_s:.0f}s "
                                    f"(high watermark {part.high_watermark})")

    anyio.run(_with_connection, addr, go)
