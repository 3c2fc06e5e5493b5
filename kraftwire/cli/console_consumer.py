"""``kraftwire console-consumer``: tail ``__cluster_metadata`` decoded to JSON as records commit.

It is an ordinary Kafka consumer on the wire (ListOffsets + Fetch with ReplicaId -1), so what it
prints is exactly what any client would read: committed records only, control batches skipped
unless ``--include-control``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio

from kraftwire.cli.client_config import add_command_config, command_security
from kraftwire.cli.dump_log import record_json
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.node.reads import METADATA_TOPIC
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kraftwire.protocol.messages.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kraftwire.protocol.records import decode_batches
from kraftwire.security.settings import ClientSecurity


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console-consumer", help="print __cluster_metadata records as they commit",
                       description="Consume __cluster_metadata partition 0 over the Kafka protocol and print "
                                   "each committed record decoded to JSON (one line per record).")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--from-beginning", action="store_true", help="start at the log start (default: the end)")
    p.add_argument("--offset", type=int, help="start at this offset")
    p.add_argument("--max-records", type=int, default=0, help="exit after this many records (0 = follow)")
    p.add_argument("--timeout", type=float, default=0,
                   help="exit after this many seconds without new records (0 = wait forever)")
    p.add_argument("--include-control", action="store_true", help="also print control records")
    add_command_config(p)
    p.set_defaults(func=run)


async def consume(addr: str, *, start: str | int, max_records: int, idle_timeout: float, include_control: bool,
                  out: Any = None, security: ClientSecurity | None = None) -> int:
    out = sys.stdout if out is None else out
    host, _, port = addr.rpartition(":")
    printed = 0
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host.strip("[]"), int(port), client_id="kraftwire-console-consumer", security=security)
        try:
            offset = start if isinstance(start, int) else await _list_offset(conn, -2 if start == "earliest" else -1)
            idle_since = anyio.current_time()
            while max_records <= 0 or printed < max_records:
                req = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                                   topics=[FetchTopic(topic=METADATA_TOPIC, partitions=[
                                       FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
                resp = await conn.request(req, 12, 10.0)
                part = resp.responses[0].partitions[0]
                if part.error_code:
                    raise RequestFailed(f"Fetch failed: {Errors.of(part.error_code)!r}")
                batches = decode_batches(part.records) if part.records else []
                for batch in batches:
                    for i in range(len(batch.records)):
                        if batch.base_offset + i < offset or (max_records and printed >= max_records):
                            continue
                        if not batch.control or include_control:
                            print(json.dumps(record_json(batch, i, True)["record"]), file=out, flush=True)
                            printed += 1
                    offset = max(offset, batch.next_offset)
                if batches:
                    idle_since = anyio.current_time()
                elif idle_timeout and anyio.current_time() - idle_since > idle_timeout:
                    break
        except (RequestFailed, OSError, TimeoutError) as e:
            failure = e     # re-raised outside the task group, unwrapped
        finally:
            await conn.close()
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return printed


async def _list_offset(conn: Connection, timestamp: int) -> int:
    req = ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[ListOffsetsTopic(
        METADATA_TOPIC, [ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
    resp = await conn.request(req, 5, 10.0)
    part = resp.topics[0].partitions[0]
    if part.error_code:
        raise RequestFailed(f"ListOffsets failed: {Errors.of(part.error_code)!r}")
    return part.offset


def run(args: argparse.Namespace) -> int:
    start: str | int = args.offset if args.offset is not None else ("earliest" if args.from_beginning else "latest")
    security = command_security(args.command_config)
    anyio.run(lambda: consume(args.bootstrap_server, start=start, max_records=args.max_records,
                              idle_timeout=args.timeout, include_control=args.include_control,
                              security=security))
    return 0
