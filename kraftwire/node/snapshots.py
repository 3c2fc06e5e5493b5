"""The snapshot and retention policy of a metadata replica, from its configuration.

Every replica (voter, broker, combined) snapshots through its node core's ``TakeSnapshot``
(``kraftwire.core.snapshots``); the Raft driver frames the image in a worker thread.
"""

from __future__ import annotations

from kraftwire.config import NodeConfig
from kraftwire.metadata.snapshot import RetentionPolicy, SnapshotPolicy, Snapshotter


def snapshotter_for(cfg: NodeConfig) -> Snapshotter:
    """Snapshot and retention policy from Kafka's metadata.log.* / metadata.max.retention.* keys."""
    return Snapshotter(
        SnapshotPolicy(max_bytes=cfg["metadata.log.max.record.bytes.between.snapshots"],
                       max_interval_ms=cfg["metadata.log.max.snapshot.interval.ms"]),
        RetentionPolicy(max_bytes=cfg["metadata.max.retention.bytes"], max_ms=cfg["metadata.max.retention.ms"]))
