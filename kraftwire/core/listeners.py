"""One Raft core, several listeners: a combined node's controller role and broker metadata both follow
the same replica, each replaying the committed log on its own, as Kafka's combined mode does."""

from __future__ import annotations

from typing import Any

from kraftwire.protocol.records import RecordBatch


class FanOutListener:
    """A RaftListener that hands every event to each of ``listeners`` in order."""

    def __init__(self, listeners: list[Any]) -> None:
        self.listeners = listeners

    def add(self, listener: Any) -> None:
        """Add a listener before the core delivers its first commit."""
        self.listeners.append(listener)

    def handle_commit(self, batches: list[RecordBatch]) -> None:
        for lst in self.listeners:
            lst.handle_commit(batches)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        for lst in self.listeners:
            lst.handle_leader_change(leader_id, epoch)

    def handle_snapshot(self, end_offset: int, batches: list[RecordBatch]) -> None:
        for lst in self.listeners:
            handler = getattr(lst, "handle_snapshot", None)
            if handler is not None:
                handler(end_offset, batches)
