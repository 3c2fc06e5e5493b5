"""The Spark data source's live reads: a running quorum's committed ``__cluster_metadata`` over the Kafka protocol.

``bootstrap`` is ``HOST:PORT[,HOST:PORT...]`` of kraftwire nodes or Kafka controllers; each call reads from
the first node that answers (``net/metadata_log.QuorumLog``: consumer reads of a kraftwire node, Raft observer
reads of a Kafka quorum's active controller), so a read survives a leader failover. Each Spark task opens
its own connections.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio

from kraftwire.net.metadata_log import QuorumLog, parse_addresses
from kraftwire.protocol.records import RecordBatch
from kraftwire.raft import SnapshotId

CLIENT_ID = "kraftwire-analytics"


def _log(bootstrap: str, timeout_s: float) -> QuorumLog:
    return QuorumLog(parse_addresses(bootstrap), client_id=CLIENT_ID, timeout_s=timeout_s)


def log_bounds(bootstrap: str, timeout_s: float = 10.0) -> tuple[int, int]:
    """(log start offset, high watermark) of the quorum's ``__cluster_metadata`` (log start 0 when the
    node does not tell it: a Kafka controller)."""
    return anyio.run(_log(bootstrap, timeout_s).bounds)


def fetch_range(bootstrap: str, start: int, end: int, on_batch: Callable[[RecordBatch], None],
                on_snapshot: Callable[[SnapshotId, list[RecordBatch]], None] | None = None, *,
                timeout_s: float = 30.0) -> None:
    """Call ``on_batch`` for every batch holding committed offsets in ``[start, end)``, in order (whole batches:
    the caller trims); below the log start ``on_snapshot`` gets the snapshot that replaced the records
    (without it, that raises RequestFailed)."""
    anyio.run(_log(bootstrap, timeout_s).read, start, end, on_batch, on_snapshot)
