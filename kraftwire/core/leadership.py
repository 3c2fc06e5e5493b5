"""A role that runs only while this node leads its quorum: when it starts, when it ends, and the
answers it holds until the records they wait for are committed.

Both leader-activated roles use it: the controller (``core/controller_role.py``) on the metadata
quorum and the group coordinator (``core/group_role.py``) on the voters' offsets quorum.

* A role starts (``due``) once this node leads and its epoch's LeaderChange is committed: every
  record of earlier epochs is then committed and replayed, so the role starts from the whole state.
* It ends (``ended``) as soon as the Raft core no longer leads the epoch it started in (it resigned,
  lost check-quorum, or a newer epoch began), or (``superseded``) when Raft reports another leader
  or epoch.
* An answer that must not leave before some records are durable is ``hold``-ed with the offset that
  must commit; ``release`` hands out those the committed end has passed. ``end`` hands out every
  answer still held, for the role to refuse (NOT_CONTROLLER, NOT_COORDINATOR).
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

T = TypeVar("T")


class LeaderView(Protocol):
    """What of the Raft core a leader-activated role reads (``RaftCore`` is one)."""

    @property
    def is_leader(self) -> bool: ...
    @property
    def epoch(self) -> int: ...
    @property
    def epoch_start_committed(self) -> bool: ...


class LeaderTerm(Generic[T]):
    """The epoch a leader-activated role runs in, and the answers it holds until their offsets commit."""

    def __init__(self) -> None:
        self.epoch: int | None = None         # the epoch the role runs in; None while it does not run
        self._held: list[tuple[int, T]] = []  # (offset that must commit, what waits for it), in arrival order

    @property
    def active(self) -> bool:
        return self.epoch is not None

    @property
    def holding(self) -> int:
        """How many answers wait for a commit."""
        return len(self._held)

    def due(self, raft: LeaderView) -> bool:
        """Not running, and this node leads an epoch whose LeaderChange is committed: start now."""
        return self.epoch is None and raft.epoch_start_committed

    def ended(self, raft: LeaderView) -> bool:
        """Running, but the Raft core no longer leads the epoch the role started in: stop now."""
        return self.epoch is not None and (not raft.is_leader or raft.epoch != self.epoch)

    def superseded(self, node_id: int, leader_id: int | None, epoch: int) -> bool:
        """Running, and Raft reports another leader or another epoch than the role's: stop now."""
        return self.epoch is not None and (leader_id != node_id or epoch != self.epoch)

    def begin(self, epoch: int) -> None:
        self.epoch = epoch

    def end(self) -> list[T]:
        """Stop running; every answer still held, in arrival order (the role refuses them)."""
        self.epoch = None
        held, self._held = self._held, []
        return [item for _, item in held]

    def hold(self, offset: int, item: T) -> None:
        """Keep ``item`` until the record at ``offset`` is committed."""
        self._held.append((offset, item))

    def release(self, committed_end: int) -> list[T]:
        """The held answers whose offset is below ``committed_end`` (the high watermark), in arrival order."""
        if not self._held:
            return []
        ready = [item for offset, item in self._held if offset < committed_end]
        if ready:
            self._held = [(offset, item) for offset, item in self._held if offset >= committed_end]
        return ready
