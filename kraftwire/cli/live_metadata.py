"""Read the committed ``__cluster_metadata`` log of a running quorum over the Kafka protocol (the live source of
``kraftwire metadata-shell --bootstrap-controller`` and the tools built on it).

The reading itself is ``net/metadata_log.QuorumLog``: consumer Fetches from a kraftwire node, Raft observer
Fetches from a Kafka quorum's active controller (a Kafka controller serves neither ListOffsets nor consumer
reads), and below the log start the snapshot the Fetch answer names, downloaded with FetchSnapshot. This
module turns what it reads into a ``MetadataSource``: the snapshot (if the log start has moved), then every
committed record after it, nothing at or above the high watermark.
"""

from __future__ import annotations

from typing import Any

from kraftwire.net.metadata_log import QuorumLog, parse_addresses
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import RecordBatch
from kraftwire.raft import SnapshotId
from kraftwire.storage.reader import MetadataSource, batch_span
from kraftwire.storage.snapshot import snapshot_records

CLIENT_ID = "kraftwire-metadata-shell"


async def fetch_live(addr: str, timeout: float, security: Any = None) -> MetadataSource:
    """The committed log of the quorum ``addr`` (``host:port[,host:port...]`` of controllers or kraftwire nodes)
    belongs to, read within ``timeout`` seconds per node; ``security`` is a ClientSecurity
    (``--command-config``) or None for plaintext."""
    log = QuorumLog(parse_addresses(addr), client_id=CLIENT_ID, timeout_s=timeout, security=security)
    _, end = await log.bounds()
    out = MetadataSource(addr)

    def on_snapshot(sid: SnapshotId, batches: list[RecordBatch]) -> None:
        out.snapshot_id = sid
        out.snapshot = snapshot_records(batches)
        out.records = [(o, r) for o, r in out.records if o >= sid.end_offset]
        out.last_offset, out.last_epoch = sid.end_offset - 1, sid.epoch

    def on_batch(b: RecordBatch) -> None:
        low = 0 if out.snapshot_id is None else out.snapshot_id.end_offset
        if not b.control:
            out.records += [(b.base_offset + i, decode_record(r.value)) for i, r in enumerate(b.records)
                            if r.value is not None and low <= b.base_offset + i < end]
        out.last_offset, out.last_epoch = min(b.last_offset, end - 1), b.leader_epoch
        out.batches.append(batch_span(b))

    await log.read(0, end, on_batch, on_snapshot)
    return out
