"""A running quorum's committed ``__cluster_metadata`` log, read over the Kafka protocol in offset ranges.

``QuorumLog(addresses)`` reads from whichever listed node answers, moving to the next one when a node
fails or stops leading (a leader failover costs a retry, not the read):

- a node that serves ListOffsets (a kraftwire controller or broker) is read as a consumer: ListOffsets
  for the log start and the committed end, Fetch v12 (ReplicaId -1, read committed);
- a Kafka controller (no ListOffsets on its listener; every Fetch goes to Raft) is read as a Raft
  observer of the active controller (found with DescribeCluster): DescribeQuorum gives the leader's
  epoch and high watermark, a Fetch with that epoch (the newest version both know: Kafka's Raft wants
  the topic id, v13+) brings the log, and nothing at or above the high watermark is kept.

When the wanted offset is below the log start (a snapshot replaced the records), both kinds of node name
the snapshot to read instead in the Fetch answer (``SnapshotId``); it is downloaded with FetchSnapshot
and handed over whole (``on_snapshot``), and reading goes on from its end offset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors, KafkaProtocolError
from kraftwire.protocol.messages import describe_cluster_request as dcl
from kraftwire.protocol.messages import describe_quorum_request as dq
from kraftwire.protocol.messages import fetch_request as fq
from kraftwire.protocol.messages import fetch_snapshot_request as fsq
from kraftwire.protocol.messages import list_offsets_request as lq
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID
from kraftwire.protocol.records import RecordBatch, decode_batches
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import parse as parse_snapshot

FETCH_VERSION = 12          # the newest Fetch naming topics by name; SnapshotId and epochs are there
LIST_OFFSETS, FETCH_SNAPSHOT = 2, 59
CHUNK = 8 << 20
Address = tuple[str, int]
OnBatch = Callable[[RecordBatch], None]
OnSnapshot = Callable[[SnapshotId, list[RecordBatch]], None]
_FAILURES = (RequestFailed, KafkaProtocolError, OSError, TimeoutError)


def parse_addresses(text: str) -> list[Address]:
    """``host:port[,host:port...]`` → addresses; ValueError names the bad entry."""
    out = []
    for entry in text.split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"bootstrap address must be HOST:PORT[,HOST:PORT...], got {entry.strip()!r}")
        out.append((host.strip("[]"), int(port)))
    return out


class _Node:
    """One open connection and what kind of node answers on it."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.consumer = LIST_OFFSETS in conn.versions      # kraftwire: consumer reads of committed data
        self.epoch = -1                                     # observer reads: the leader's epoch


class SnapshotGone(RequestFailed):
    """The snapshot a Fetch answer named was replaced by a newer one before it was downloaded."""


class QuorumLog:
    """Committed metadata log of the quorum that ``addresses`` belong to; every call is one try per node."""

    def __init__(self, addresses: list[Address], *, client_id: str = "kraftwire-reader", timeout_s: float = 10.0,
                 security: Any = None) -> None:
        if not addresses:
            raise ValueError("no bootstrap address")
        self.addresses = list(addresses)
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.security = security
        self._first = 0   # the node that answered last is asked first

    async def bounds(self) -> tuple[int, int]:
        """(log start offset, high watermark). A Kafka controller does not tell its log start: 0 then (a
        read below the real start gets the snapshot instead)."""
        return await self._each(self._bounds)

    async def read(self, start: int, end: int, on_batch: OnBatch, on_snapshot: OnSnapshot | None = None) -> None:
        """Hand ``on_batch`` every batch holding committed offsets in ``[start, end)`` (whole batches: the
        caller trims), in order; below the log start, ``on_snapshot`` gets the snapshot instead (without
        it, that is an error). A node that fails mid-way is replaced and the read goes on where it was."""
        state = {"offset": start}

        async def go(node: _Node) -> None:
            await self._read(node, state, end, on_batch, on_snapshot)

        for attempt in range(3):   # a snapshot replaced mid-read: the next Fetch names the newer one
            try:
                await self._each(go)
                return
            except RequestFailed as e:
                if attempt == 2 or not isinstance(e.__cause__, SnapshotGone):
                    raise

    # -- connections ----------------------------------------------------------------------------------
    async def _each(self, fn: Callable[[_Node], Any]) -> Any:
        errors = []
        last: BaseException | None = None
        n = len(self.addresses)
        for k in range(n):
            i = (self._first + k) % n
            host, port = self.addresses[i]
            failure: Exception | None = None
            try:
                with anyio.fail_after(self.timeout_s):
                    async with anyio.create_task_group() as tg:
                        node = None
                        try:   # failures are kept here: out of the task group they come wrapped in a group
                            node = await self._open(tg, host, port)
                            result = await fn(node)
                        except _FAILURES as e:
                            failure = e
                        finally:
                            if node is not None:
                                await node.conn.close()
                            tg.cancel_scope.cancel()
            except TimeoutError as e:
                failure = e
            if failure is None:
                self._first = i
                return result
            errors.append(f"{host}:{port}: {failure or type(failure).__name__}")
            last = failure.__cause__ if isinstance(failure, RequestFailed) and failure.__cause__ else failure
        # Caused by the last node's failure: an unreachable quorum reads as unreachable (cli/errors.classify).
        raise RequestFailed("no node could serve the metadata log: " + "; ".join(errors)) from last

    async def _open(self, tg: Any, host: str, port: int) -> _Node:
        conn = Connection(tg, host, port, client_id=self.client_id, connect_timeout_s=self.timeout_s,
                          security=self.security)
        await conn.connect()
        if LIST_OFFSETS in conn.versions:
            return _Node(conn)
        # A Kafka controller: Raft reads go to the active controller.
        resp = await conn.request(dcl.DescribeClusterRequest(endpoint_type=2), None, self.timeout_s)
        if resp.error_code:
            raise RequestFailed(f"DescribeCluster: {Errors.of(resp.error_code)!r}")
        active = next((b for b in resp.brokers if b.broker_id == resp.controller_id), None)
        if active is None:
            raise RequestFailed("no active controller is known (an election is going on)")
        if (active.host, active.port) != (host, port):
            await conn.close()
            conn = Connection(tg, active.host, active.port, client_id=self.client_id,
                              connect_timeout_s=self.timeout_s, security=self.security)
            await conn.connect()
        return _Node(conn)

    # -- bounds ---------------------------------------------------------------------------------------
    async def _bounds(self, node: _Node) -> tuple[int, int]:
        if node.consumer:
            return await self._list_offset(node, -2), await self._list_offset(node, -1)
        return 0, await self._leader_hw(node)

    async def _list_offset(self, node: _Node, timestamp: int) -> int:
        req = lq.ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[
            lq.ListOffsetsTopic(METADATA_TOPIC, [lq.ListOffsetsPartition(0, timestamp=timestamp)])])
        part = (await node.conn.request(req, None, self.timeout_s)).topics[0].partitions[0]
        if part.error_code:
            raise RequestFailed(f"ListOffsets: {Errors.of(part.error_code)!r}")
        return part.offset

    async def _leader_hw(self, node: _Node) -> int:
        req = dq.DescribeQuorumRequest(topics=[dq.TopicData(METADATA_TOPIC, [dq.PartitionData(0)])])
        resp = await node.conn.request(req, None, self.timeout_s)
        part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
        code = resp.error_code or (part.error_code if part is not None else int(Errors.UNKNOWN_SERVER_ERROR))
        if code:
            raise RequestFailed(f"DescribeQuorum: {Errors.of(code)!r}")
        assert part is not None
        node.epoch = part.leader_epoch
        if part.high_watermark < 0:
            raise RequestFailed(f"leader {part.leader_id} has no high watermark yet")
        return part.high_watermark

    # -- reads ----------------------------------------------------------------------------------------
    async def _read(self, node: _Node, state: dict[str, int], end: int, on_batch: OnBatch,
                    on_snapshot: OnSnapshot | None) -> None:
        last_epoch: int | None = None
        realigned = False
        if not node.consumer and state["offset"] < end:
            # The leader's epoch, once per node: each Fetch answer then carries the high watermark to cut at
            # (a leader change ends this node's read with FENCED_LEADER_EPOCH; the next node asks again).
            hw = await self._leader_hw(node)
            if hw <= state["offset"]:
                raise RequestFailed(f"the leader's high watermark {hw} is below offset {state['offset']}")
        while state["offset"] < end:
            offset = state["offset"]
            if last_epoch is None:
                # A read starting mid-log does not know the epoch of the record before it. Raft checks only
                # that the offset is not past the end of the claimed epoch, which the leader's current epoch
                # never is for a committed offset.
                last_epoch = 0 if offset == 0 else max(node.epoch, 0)
            part = await self._fetch(node, offset, last_epoch)
            div = part.diverging_epoch
            if div is not None and div.end_offset >= 0 and not node.consumer:
                if realigned:
                    raise RequestFailed(f"the leader reports the log diverging at offset {div.end_offset} "
                                        f"(epoch {div.epoch}) below its high watermark")
                last_epoch, realigned = max(node.epoch, 0), True
                continue
            sid = part.snapshot_id
            if sid is not None and sid.end_offset >= 0 and offset < sid.end_offset and (
                    part.error_code in (0, int(Errors.OFFSET_OUT_OF_RANGE))):
                if on_snapshot is None:
                    raise RequestFailed(f"offset {offset} is below the log start: the records are in snapshot "
                                        f"{sid.end_offset}-{sid.epoch}")
                on_snapshot(SnapshotId(sid.end_offset, sid.epoch), await self._snapshot(node, sid))
                state["offset"], last_epoch = sid.end_offset, sid.epoch
                continue
            if part.error_code:
                raise RequestFailed(f"Fetch at offset {offset}: {Errors.of(part.error_code)!r}")
            committed = part.high_watermark
            progressed = False
            for batch in decode_batches(part.records) if part.records else []:
                if batch.base_offset >= min(end, committed):
                    break
                if batch.next_offset <= offset:
                    continue
                on_batch(batch)
                state["offset"], last_epoch = batch.next_offset, batch.leader_epoch
                progressed = True
            if not progressed:
                raise RequestFailed(f"no committed records at offset {offset} (high watermark {committed})")

    async def _fetch(self, node: _Node, offset: int, last_epoch: int) -> Any:
        wanted = fq.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=CHUNK,
                                   current_leader_epoch=-1 if node.consumer else node.epoch,
                                   last_fetched_epoch=-1 if node.consumer else last_epoch)
        # Kafka's Raft answers a Fetch naming the topic by id only (INVALID_REQUEST for a v12 one, by name):
        # a Raft read uses the newest version both sides know, with the topic id and, from v15, ReplicaState.
        version = FETCH_VERSION if node.consumer else node.conn.version_for(1)
        topic = (fq.FetchTopic(topic=METADATA_TOPIC, partitions=[wanted]) if version < 13 else
                 fq.FetchTopic(topic="", topic_id=METADATA_TOPIC_ID, partitions=[wanted]))
        req = fq.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=CHUNK, isolation_level=1,
                              topics=[topic])
        if version >= 15:
            req.replica_state = fq.ReplicaState(replica_id=-1, replica_epoch=-1)
        resp = await node.conn.request(req, version, self.timeout_s)
        if resp.error_code:
            raise RequestFailed(f"Fetch: {Errors.of(resp.error_code)!r}")
        return resp.responses[0].partitions[0]

    async def _snapshot(self, node: _Node, sid: Any) -> list[RecordBatch]:
        if FETCH_SNAPSHOT not in node.conn.versions:
            raise RequestFailed(f"{node.conn.host}:{node.conn.port} serves no FetchSnapshot: read from a "
                                "controller to start below the log start")
        data = bytearray()
        epoch = node.epoch
        while True:
            part = fsq.PartitionSnapshot(partition=0, current_leader_epoch=epoch,
                                         snapshot_id=fsq.SnapshotId(sid.end_offset, sid.epoch), position=len(data))
            req = fsq.FetchSnapshotRequest(replica_id=-1, max_bytes=CHUNK,
                                           topics=[fsq.TopicSnapshot(METADATA_TOPIC, [part])])
            resp = await node.conn.request(req, None, self.timeout_s)
            got = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
            code = resp.error_code or (got.error_code if got is not None else int(Errors.UNKNOWN_SERVER_ERROR))
            if code == Errors.FENCED_LEADER_EPOCH and got is not None and got.current_leader.leader_epoch > epoch:
                epoch = got.current_leader.leader_epoch
                continue
            if code:
                error = SnapshotGone if code == Errors.SNAPSHOT_NOT_FOUND else RequestFailed
                raise error(f"FetchSnapshot {sid.end_offset}-{sid.epoch}: {Errors.of(code)!r}")
            assert got is not None
            chunk = bytes(got.unaligned_records or b"")
            if got.position != len(data) or (not chunk and len(data) < got.size):
                raise RequestFailed(f"FetchSnapshot answered position {got.position} ({len(chunk)} bytes) "
                                    f"for position {len(data)} of {got.size}")
            data += chunk
            if len(data) >= got.size:
                return parse_snapshot(bytes(data))

