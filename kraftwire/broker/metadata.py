"""A broker's metadata image: committed records replayed with the image code every role shares.

``BrokerMetadataListener`` is the broker's Raft listener. Every committed batch is decoded and
replayed into a ``MetadataLoader`` (``kraftwire.metadata``), the same image code the controller's
replay runs. A committed record that cannot be applied
stops the broker loudly (``fatal``): serving clients from an image that disagrees with the log
would be worse than stopping. A feature level the broker does not support (say a newer
metadata.version) is different: the broker stops replaying there, logs one line naming the level
and the release needing it, and stays up (``parked``); the controller refuses its registration.

Snapshots (KIP-630): ``handle_snapshot`` replaces the image with the content of a snapshot whose
end offset is ``end_offset``. The Raft core calls it whenever the log starts past what has been
applied: at start over a log that begins with a snapshot, and after installing one downloaded
from the leader (FetchSnapshot) because the broker was behind the leader's log start. The broker
also takes its own snapshots of the image it replayed (``on_commit``/``on_snapshot`` feed the shell's
``Snapshotter``), so its log is cleaned like a voter's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kraftwire.metadata import ImageLoader, MetadataImage
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.metadata.loader import MetadataLoader
from kraftwire.metadata.support import park_reason
from kraftwire.protocol.records import RecordBatch

log = logging.getLogger(__name__)


class BrokerMetadataListener:
    """RaftListener that keeps a broker's image up to date."""

    def __init__(self, loader: MetadataLoader | None = None) -> None:
        self.loader = loader or MetadataLoader()
        self.leader: tuple[int | None, int] = (None, 0)
        self.fatal: BaseException | None = None
        self.parked: str | None = None  # why replay stopped at a feature level this broker lacks
        self.on_change: list[Callable[[], None]] = []
        self.on_fatal: list[Callable[[BaseException], None]] = []
        # Snapshot bookkeeping (the shell's Snapshotter): every committed run of batches once
        # replayed, and (end offset, epoch) of every snapshot that replaced the image.
        self.on_commit: list[Callable[[list[RecordBatch]], None]] = []
        self.on_snapshot: list[Callable[[int, int], None]] = []
        self.snapshots_loaded = 0

    @property
    def image(self) -> MetadataImage:
        return self.loader.committed_image

    @property
    def applied_offset(self) -> int:
        """Offset of the last record replayed into the image (-1 before any)."""
        return self.loader.committed_offset

    # -- RaftListener ---------------------------------------------------------------------------
    def handle_commit(self, batches: list[RecordBatch]) -> None:
        if self.fatal is not None or self.parked is not None:
            return
        ctl = self.loader
        try:
            ctl.replay_batches(batches)
        except Exception as e:  # noqa: BLE001 - any failure to apply a committed record is fatal
            if not self._park(park_reason(ctl.committed_features, batches, BROKER_SUPPORTED_FEATURES)):
                self._fail(e)
            return
        self._park(park_reason(ctl.committed_features, (), BROKER_SUPPORTED_FEATURES))
        for fn in self.on_commit:
            fn(batches)
        self._changed()

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader = (leader_id, epoch)
        self._changed()

    def handle_snapshot(self, end_offset: int, batches: Iterable[RecordBatch]) -> None:
        """A snapshot (``end_offset`` exclusive) replaces everything replayed so far."""
        from kraftwire.storage.snapshot import snapshot_records

        batches = list(batches)
        if self.fatal is not None or self.parked is not None:
            return
        try:
            self.load_snapshot(end_offset, [r.message for r in snapshot_records(batches)])
        except Exception as e:  # noqa: BLE001
            if not self._park(park_reason({}, batches, BROKER_SUPPORTED_FEATURES)):
                self._fail(e)
            return
        self._park(park_reason(self.loader.committed_features, (), BROKER_SUPPORTED_FEATURES))
        epoch = batches[0].leader_epoch if batches else 0
        for fn in self.on_snapshot:
            fn(end_offset, epoch)

    # -- snapshots ------------------------------------------------------------------------------
    def load_snapshot(self, end_offset: int, records: Iterable[Any]) -> None:
        loader = ImageLoader()
        for msg in records:
            loader.replay(msg)
        self.loader.load_snapshot(loader.image, end_offset)
        self.snapshots_loaded += 1
        log.info("metadata image loaded from the snapshot ending at offset %d", end_offset)
        self._changed()

    # -- internals ------------------------------------------------------------------------------
    def _fail(self, e: BaseException) -> None:
        log.critical("cannot apply committed metadata: %s; the broker stops", e)
        self.fatal = e
        for fn in self.on_fatal:
            fn(e)

    def _park(self, reason: str | None) -> bool:
        """Stop replaying (once) because of ``reason``; the broker keeps running. True if parked."""
        if reason is None:
            return False
        if self.parked is None:
            self.parked = reason
            log.error("metadata replay stopped, this broker stays fenced: %s", reason)
        return True

    def _changed(self) -> None:
        for fn in self.on_change:
            fn()
