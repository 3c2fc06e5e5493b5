"""The anyio step that snapshots a broker replica's committed image and cleans its log; the snapshot policy
of every replica from its configuration (voters snapshot through the node core's ``TakeSnapshot``).

The decisions are sans-I/O (``kraftwire.core.snapshots``); this step only frames the immutable image
in a worker thread so that the event loop never waits for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from kraftwire.config import NodeConfig
from kraftwire.core.snapshots import clean_log, snapshot_due, store_snapshot
from kraftwire.metadata.snapshot import RetentionPolicy, SnapshotPolicy, Snapshotter


def snapshotter_for(cfg: NodeConfig) -> Snapshotter:
    """Snapshot and retention policy from Kafka's metadata.log.* / metadata.max.retention.* keys."""
    return Snapshotter(
        SnapshotPolicy(max_bytes=cfg["metadata.log.max.record.bytes.between.snapshots"],
                       max_interval_ms=cfg["metadata.log.max.snapshot.interval.ms"]),
        RetentionPolicy(max_bytes=cfg["metadata.max.retention.bytes"], max_ms=cfg["metadata.max.retention.ms"]))


async def snapshot_step(snap: Snapshotter, core: Any, ctl: Any, clock: Callable[[], int]) -> bool:
    """Take a due snapshot of ``ctl``'s committed image, then clean the log as retention allows;
    True when a snapshot was stored."""
    job = snapshot_due(snap, core, ctl, clock())
    taken = False
    if job is not None:
        batches = await anyio.to_thread.run_sync(job.frame)
        taken = store_snapshot(snap, core, job.sid, batches)
    clean_log(snap, core, clock())
    return taken
