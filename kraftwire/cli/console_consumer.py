"""``kraftwire console-consumer``: tail ``__cluster_metadata`` decoded to JSON as records commit.

It is an ordinary Kafka consumer on the wire (ListOffsets + Fetch with ReplicaId -1), so what it
prints is exactly what any client would read: committed records only, control batches skipped
unless ``--include-control``, NoOpRecords (one every metadata.max.idle.interval.ms) skipped unless
``--include-noop``. Kafka's flags apply: ``--from-beginning``, ``--max-messages``, ``--timeout-ms``
(exit after that long without a record to print), a ``--bootstrap-server`` list.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio

from kraftwire.cli.bootstrap import first_answer, parse_bootstrap
from kraftwire.cli.client_config import add_command_config, command_security
from kraftwire.cli.dump_log import record_json
from kraftwire.cli.errors import OperatorError, kafka_error
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kraftwire.protocol.messages.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kraftwire.protocol.metadata import FRAME_VERSION, METADATA_TOPIC, RECORD_TYPES
from kraftwire.protocol.records import decode_batches
from kraftwire.security.settings import ClientSecurity


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console-consumer", help="print __cluster_metadata records as they commit",
                       description="Consume __cluster_metadata partition 0 over the Kafka protocol and print "
                                   "each committed record decoded to JSON (one line per record).")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT[,...]",
                   help="nodes to read from (the first that answers is used)")
    p.add_argument("--from-beginning", action="store_true", help="start at the log start (default: the end)")
    p.add_argument("--offset", type=int, help="start at this offset")
    p.add_argument("--max-messages", "--max-records", dest="max_records", type=int, default=0,
                   help="exit after printing this many records (default: follow)")
    p.add_argument("--timeout-ms", type=int, default=None,
                   help="exit after this many ms without a record to print (default: wait forever)")
    p.add_argument("--timeout", type=float, default=0, help=argparse.SUPPRESS)   # seconds (older flag)
    p.add_argument("--include-control", action="store_true", help="also print control records")
    p.add_argument("--include-noop", action="store_true", help="also print NoOpRecords")
    add_command_config(p)
    p.set_defaults(func=run)


async def consume(addr: str, *, start: str | int, max_records: int, idle_timeout: float, include_control: bool,
                  out: Any = None, security: ClientSecurity | None = None, include_noop: bool = True) -> int:
    """Print committed records from ``start``; returns how many were printed. ``idle_timeout`` (s) ends
    the run when no record to print arrived for that long."""
    out = sys.stdout if out is None else out
    addresses = parse_bootstrap(addr, "--bootstrap-server")
    printed = 0
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        conn = None
        try:
            async def first_offset(c: Connection) -> int:
                return start if isinstance(start, int) else await _list_offset(c, -2 if start == "earliest" else -1)

            conn, offset = await first_answer(tg, addresses, first_offset, client_id="kraftwire-console-consumer",
                                              timeout_s=10.0, security=security)
            idle_since = anyio.current_time()
            while max_records <= 0 or printed < max_records:
                req = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, isolation_level=1,
                                   topics=[FetchTopic(topic=METADATA_TOPIC, partitions=[
                                       FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
                resp = await conn.request(req, 12, 10.0)
                part = resp.responses[0].partitions[0]
                if part.error_code:
                    raise RequestFailed(f"Fetch failed: {kafka_error(part.error_code)}")
                batches = decode_batches(part.records) if part.records else []
                shown = False
                for batch in batches:
                    for i in range(len(batch.records)):
                        if batch.base_offset + i < offset or (max_records and printed >= max_records):
                            continue
                        if batch.control and not include_control:
                            continue
                        if not include_noop and not batch.control and _is_noop(batch.records[i].value):
                            continue
                        print(json.dumps(record_json(batch, i, True)["record"]), file=out, flush=True)
                        printed += 1
                        shown = True
                    offset = max(offset, batch.next_offset)
                if shown:
                    idle_since = anyio.current_time()
                elif idle_timeout and anyio.current_time() - idle_since > idle_timeout:
                    break
        except (RequestFailed, OSError, TimeoutError, OperatorError) as e:
            failure = e     # re-raised outside the task group, unwrapped
        finally:
            if conn is not None:
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
        raise RequestFailed(f"ListOffsets failed: {kafka_error(part.error_code)}")
    return part.offset


NOOP_TYPE = RECORD_TYPES["NoOpRecord"]


def _is_noop(value: bytes | None) -> bool:
    """A framed NoOpRecord: frame version 1, record type 20 (both one-byte unsigned varints)."""
    return value is not None and len(value) >= 2 and value[0] == FRAME_VERSION and value[1] == NOOP_TYPE


def run(args: argparse.Namespace) -> int:
    start: str | int = args.offset if args.offset is not None else ("earliest" if args.from_beginning else "latest")
    security = command_security(args.command_config)
    idle = args.timeout_ms / 1000 if args.timeout_ms is not None else args.timeout
    anyio.run(lambda: consume(args.bootstrap_server, start=start, max_records=args.max_records,
                              idle_timeout=idle, include_control=args.include_control,
                              include_noop=args.include_noop, security=security))
    return 0
