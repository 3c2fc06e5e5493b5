"""Taking a replica's metadata snapshot and cleaning its log: the step voters and brokers share.

Every node that holds ``__cluster_metadata`` -- voters and broker observers alike, as in Kafka --
snapshots the image it replayed under the same ``Snapshotter`` policy and then deletes the log below
the snapshot when retention allows. The image is immutable, so it is framed in a worker thread; only
committed state is snapshotted (the Raft core refuses anything past the high watermark).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio

from kraftwire.controller import QuorumController
from kraftwire.metadata.snapshot import Snapshotter, snapshot_batches

log = logging.getLogger(__name__)


async def snapshot_step(snap: Snapshotter, core: Any, ctl: QuorumController, clock: Callable[[], int]) -> bool:
    """Take a due snapshot of ``ctl``'s committed image, then clean the log as retention allows;
    True when a snapshot was stored."""
    now = clock()
    taken = False
    sid = snap.due(now, core.log.latest_snapshot_id())
    if sid is not None and ctl.committed_offset == sid.end_offset - 1 and not ctl.in_transaction:
        image = ctl.committed_image
        batches = await anyio.to_thread.run_sync(
            lambda: snapshot_batches(image, sid, timestamp_ms=now, last_contained_timestamp_ms=snap.last_timestamp_ms))
        try:
            core.create_snapshot(sid, batches)
        except (ValueError, KeyError) as e:  # the log moved on meanwhile (e.g. a newer snapshot installed)
            log.info("snapshot %s not stored: %s", sid, e)
        else:
            snap.stored(sid)
            taken = True
            log.info("metadata snapshot stored at offset %d epoch %d", sid.end_offset, sid.epoch)
    clean = snap.clean_due(clock())
    if clean is not None:
        try:
            core.delete_before(clean)
        except (ValueError, KeyError) as e:
            log.info("log not cleaned below snapshot %s: %s", clean, e)
        snap.cleaned(clock())
    return taken
