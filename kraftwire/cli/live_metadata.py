"""Read the committed ``__cluster_metadata`` log of a running quorum over the Kafka protocol (the live source of
``kraftwire metadata-shell --bootstrap-controller``).

Two ways in, chosen from the node's ApiVersions:

- a node that serves ListOffsets on the listener (a kraftwire controller or broker) is read as a consumer
  would: ListOffsets for the log's bounds, then consumer Fetches (ReplicaId -1, read committed);
- a Kafka controller serves neither ListOffsets nor a consumer Fetch (its controller listener hands every
  Fetch to Raft and closes the connection on an API it does not serve), so it is read as a Raft observer
  reads it, as Kafka's own brokers do: DescribeCluster names the active controller, DescribeQuorum there
  gives the leader's epoch and high watermark, Raft Fetches (ReplicaId -1, that epoch) bring the log, a
  snapshot the leader points at is downloaded with FetchSnapshot, and nothing at or above the high
  watermark is kept.
"""

from __future__ import annotations

from typing import Any

import anyio

from kraftwire.cli.bootstrap import active_controller
from kraftwire.cli.errors import kafka_error
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors, KafkaProtocolError
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import RecordBatch
from kraftwire.storage.reader import MetadataSource, batch_span

CLIENT_ID = "kraftwire-metadata-shell"
METADATA_TOPIC = "__cluster_metadata"
LIST_OFFSETS = 2
CHUNK = 8 << 20


async def fetch_live(addr: str, timeout: float, security: Any = None) -> MetadataSource:
    """The committed log at ``addr`` (``host:port`` of a controller or a kraftwire node), all within
    ``timeout`` seconds; ``security`` is a ClientSecurity (``--command-config``) or None for plaintext."""
    host, _, port = addr.rpartition(":")
    out = MetadataSource(addr)
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host.strip("[]"), int(port), client_id=CLIENT_ID, connect_timeout_s=timeout,
                          security=security)
        try:
            with anyio.fail_after(timeout):
                await conn.connect()
                if LIST_OFFSETS in conn.versions:
                    await _as_consumer(conn, out, timeout)
                else:
                    await conn.close()
                    conn = await active_controller(tg, [(conn.host, conn.port)], client_id=CLIENT_ID,
                                                   timeout_s=timeout, security=security)
                    await _as_observer(conn, out, timeout)
        except (RequestFailed, KafkaProtocolError, OSError, TimeoutError) as e:
            failure = e     # re-raised outside the task group, unwrapped
        finally:
            await conn.close()
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return out


def _take(out: MetadataSource, batches: list[RecordBatch], offset: int, end: int) -> int:
    """Keep the data records of ``batches`` in [offset, end); the next offset to read."""
    for b in batches:
        if b.base_offset >= end:
            break
        if not b.control:
            out.records += [(b.base_offset + i, decode_record(r.value)) for i, r in enumerate(b.records)
                            if r.value is not None and offset <= b.base_offset + i < end]
        out.last_offset, out.last_epoch = min(b.last_offset, end - 1), b.leader_epoch
        out.batches.append(batch_span(b))
        offset = max(offset, b.next_offset)
    return offset


# -- a kraftwire node: ListOffsets + consumer Fetch ---------------------------------------------------------
async def _as_consumer(conn: Connection, out: MetadataSource, timeout: float) -> None:
    from kraftwire.protocol.messages import fetch_request as fq
    from kraftwire.protocol.messages import list_offsets_request as lq
    from kraftwire.protocol.records import decode_batches

    bounds = []
    for ts in (-2, -1):  # earliest, then the committed end
        req = lq.ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[
            lq.ListOffsetsTopic(METADATA_TOPIC, [lq.ListOffsetsPartition(0, timestamp=ts)])])
        part = (await conn.request(req, None, timeout)).topics[0].partitions[0]
        if part.error_code:
            raise RequestFailed(f"ListOffsets failed: {kafka_error(part.error_code)}")
        bounds.append(part.offset)
    start, end = bounds
    if start > 0:
        raise RequestFailed(f"the log at {out.source} starts at offset {start}: older records were cleaned into a "
                            "snapshot that clients cannot fetch; copy the latest .checkpoint file and use --snapshot")
    offset = start
    while offset < end:
        wanted = fq.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=CHUNK)
        req = fq.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=CHUNK, isolation_level=1,
                              topics=[fq.FetchTopic(topic=METADATA_TOPIC, partitions=[wanted])])
        part = (await conn.request(req, 12, timeout)).responses[0].partitions[0]
        if part.error_code:
            raise RequestFailed(f"Fetch failed: {kafka_error(part.error_code)}")
        batches = decode_batches(part.records) if part.records else []
        if not batches:
            raise RequestFailed(f"Fetch at offset {offset} returned nothing below the end {end}")
        offset = _take(out, batches, offset, end)


# -- a Kafka controller: Raft observer Fetch + FetchSnapshot -----------------------------------------------
async def _as_observer(conn: Connection, out: MetadataSource, timeout: float) -> None:
    from kraftwire.node import wire
    from kraftwire.raft import messages as m

    leader_id, epoch, end = await _leader_state(conn, timeout)
    out.source = f"{out.source} (Raft observer of leader {leader_id}, epoch {epoch})"
    offset, last_epoch = 0, 0
    while offset < end:
        req = m.FetchRequest(None, -1, 0, offset, last_epoch, epoch, 0, CHUNK)
        version = conn.version_for(1)
        body = await conn.request(wire.request_to_wire(req, version), version, timeout)
        resp = wire.response_from_wire(1, body)
        part = resp.partition
        code = resp.error_code or (part.error_code if part is not None else int(Errors.UNKNOWN_SERVER_ERROR))
        if code:
            raise RequestFailed(f"Raft Fetch from the leader failed: {kafka_error(code)} (the leadership moved? "
                                "run the command again)")
        assert part is not None
        if part.snapshot_id is not None:
            sid = part.snapshot_id
            await _load_snapshot(conn, out, epoch, sid.end_offset, sid.epoch, timeout)
            offset, last_epoch = sid.end_offset, sid.epoch
            continue
        if part.diverging_epoch is not None:   # the log we read from offset 0 never diverges; be safe anyway
            cut = part.diverging_epoch.end_offset
            out.records = [(o, r) for o, r in out.records if o < cut]
            offset, last_epoch = cut, part.diverging_epoch.epoch
            continue
        if not part.batches:
            raise RequestFailed(f"Raft Fetch at offset {offset} returned nothing below the high watermark {end}")
        offset = _take(out, part.batches, offset, end)
        last_epoch = part.batches[-1].leader_epoch


async def _leader_state(conn: Connection, timeout: float) -> tuple[int, int, int]:
    """(leader id, leader epoch, high watermark) as the leader answers DescribeQuorum."""
    from kraftwire.protocol.messages.describe_quorum_request import (
        DescribeQuorumRequest,
        PartitionData,
        TopicData,
    )

    resp = await conn.request(DescribeQuorumRequest(topics=[TopicData(METADATA_TOPIC, [PartitionData(0)])]),
                              None, timeout)
    part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
    code = resp.error_code or (part.error_code if part is not None else int(Errors.UNKNOWN_SERVER_ERROR))
    if code:
        raise RequestFailed(f"DescribeQuorum at {conn.host}:{conn.port} failed: {kafka_error(code)} (the "
                            "leadership is moving? run the command again)")
    assert part is not None
    if part.high_watermark < 0:
        raise RequestFailed(f"the leader {part.leader_id} has no high watermark yet; run the command again")
    return part.leader_id, part.leader_epoch, part.high_watermark


async def _load_snapshot(conn: Connection, out: MetadataSource, epoch: int, end_offset: int, snapshot_epoch: int,
                         timeout: float) -> None:
    """Download the leader's snapshot (end offset, epoch) and make it the source's base."""
    from kraftwire.node import wire
    from kraftwire.raft import SnapshotId
    from kraftwire.raft import messages as m
    from kraftwire.storage.snapshot import parse_snapshot, snapshot_records

    data = bytearray()
    while True:
        req = m.FetchSnapshotRequest(None, -1, epoch, m.SnapshotIdField(end_offset, snapshot_epoch), len(data), CHUNK)
        version = conn.version_for(59)
        body = await conn.request(wire.request_to_wire(req, version), version, timeout)
        resp = wire.response_from_wire(59, body)
        part = resp.partition
        code = resp.error_code or (part.error_code if part is not None else int(Errors.UNKNOWN_SERVER_ERROR))
        if code:
            raise RequestFailed(f"FetchSnapshot {end_offset}-{snapshot_epoch} failed: {kafka_error(code)}")
        assert part is not None
        if part.position != len(data) or (not part.unaligned_records and len(data) < part.size):
            raise RequestFailed(f"FetchSnapshot answered position {part.position} with {len(part.unaligned_records)} "
                                f"bytes for position {len(data)} of {part.size}")
        data += part.unaligned_records
        if len(data) >= part.size:
            break
    out.snapshot_id = SnapshotId(end_offset, snapshot_epoch)
    out.snapshot = snapshot_records(parse_snapshot(bytes(data)))
    out.records = [(o, r) for o, r in out.records if o >= end_offset]
    out.last_offset, out.last_epoch = end_offset - 1, snapshot_epoch
