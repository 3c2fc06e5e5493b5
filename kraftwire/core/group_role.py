"""The group role: a consumer-group coordinator answering only what is durable, without I/O of its own.

Two placements (docs/groups.md):

* replicated (``attach`` to the offsets quorum's Raft core, through ``NodeCore``): the coordinator
  exists only while this node leads the quorum and its epoch's LeaderChange is committed (everything
  earlier is applied to the ``OffsetsMachine``); it is built over that state and writes through
  Raft. No answer leaves before every record the coordinator wrote so far is committed (reads
  included: no client sees an offset that could still be lost); when leadership goes, every waiting
  and parked request is answered NOT_COORDINATOR and clients look the coordinator up again. When to
  start and stop and the answers held for a commit are ``core/leadership.py``'s, as the controller's.
* local (no Raft core): one coordinator over a durable local store; answers leave at once.

``submit`` takes a group request and an ``answer`` callback; a JoinGroup or SyncGroup may park until
other members' requests or the coordinator's timers (``tick``) complete it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from kraftwire.core.leadership import LeaderTerm
from kraftwire.group import Done, GroupConfig, GroupCoordinator
from kraftwire.group.replicated import (
    IMPORT_CLIENT_ID,
    OffsetsMachine,
    OffsetsSnapshotJob,
    OffsetsSnapshotter,
    ReplicatedOffsetStore,
    import_request_records,
    missing,
)
from kraftwire.group.responses import error_response
from kraftwire.group.store import StoreRecord
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.list_groups_response import ListGroupsResponse
from kraftwire.protocol.records import Record

log = logging.getLogger(__name__)

NOT_COORDINATOR = int(Errors.NOT_COORDINATOR)
Answer = Callable[[Any], None]


class _Request:
    __slots__ = ("api_key", "version", "body", "answer")

    def __init__(self, api_key: int, version: int, body: Any, answer: Answer) -> None:
        self.api_key, self.version, self.body, self.answer = api_key, version, body, answer

    def refuse(self) -> None:
        self.answer(error_response(self.api_key, self.version, self.body, NOT_COORDINATOR))


class GroupRole:
    """Coordinator hand-over, parked requests and durable answers of one node's group coordinator."""

    #: a group role never stops its node (the node core asks every snapshotting role)
    fatal: BaseException | None = None

    def __init__(self, node_id: int, config: GroupConfig, *, machine: OffsetsMachine | None = None,
                 coordinator: GroupCoordinator | None = None, legacy: Sequence[StoreRecord] = (),
                 snapshotter: OffsetsSnapshotter | None = None) -> None:
        self.node_id = node_id
        self.config = config
        self.machine = machine               # replicated placement: the committed offsets state
        self.snapshotter = snapshotter       # replicated placement: when to snapshot that state
        self.coordinator = coordinator       # local placement: fixed; replicated: while active
        self.legacy = list(legacy)           # a legacy local offsets file's records to import when leading
        self.import_offset: int | None = None   # the offsets log offset the import waits for
        self.imported = False                # the legacy records are committed (the shell renames the file)
        #: replicated: the epoch this node coordinates in, and the answers due once what they wait for commits
        self.term: LeaderTerm[list[tuple[_Request, Any]]] = LeaderTerm()
        self.raft: Any = None
        self.clock: Callable[[], int] = lambda: 0
        self._append: Callable[[list[Record]], list[int]] | None = None
        self._parked: dict[int, _Request] = {}

    def attach(self, raft: Any, *, clock: Callable[[], int], append: Callable[[list[Record]], list[int]]) -> None:
        """Replicated placement: bind to the offsets quorum's Raft core (``NodeCore`` does this)."""
        self.raft, self.clock, self._append = raft, clock, append

    @property
    def replicated(self) -> bool:
        return self.machine is not None

    # -- hand-over --------------------------------------------------------------------------------
    def settle(self) -> None:
        """After every event: hand over on a leadership change, release answers now committed."""
        raft = self.raft
        if raft is None or self.machine is None:
            return
        if self.term.ended(raft):
            log.info("offsets quorum: node %d no longer coordinates groups (epoch %d)", self.node_id, raft.epoch)
            self._deactivate()
        if self.term.due(raft):
            self._activate()
        self._release()

    def _activate(self) -> None:
        raft, machine = self.raft, self.machine
        assert machine is not None and self._append is not None
        self.term.begin(raft.epoch)
        store = ReplicatedOffsetStore(machine.state.copy(), self._append)
        coordinator = GroupCoordinator(self.node_id, store, self.config)
        todo = missing(machine.state, self.legacy)
        if todo:
            coordinator.import_records(todo, self.clock())
            self.import_offset = store.last_offset
            log.info("offsets quorum: importing %d records of the local offsets file", len(todo))
        elif self.legacy:
            self.imported = True
        log.info("offsets quorum: node %d coordinates the groups from epoch %d (offset %d, %d offsets)",
                 self.node_id, raft.epoch, machine.applied, len(machine.state.offsets))
        self.coordinator = coordinator

    def _deactivate(self) -> None:
        coordinator, self.coordinator = self.coordinator, None
        if coordinator is not None:
            coordinator.close()
        for answers in self.term.end():
            for req, _ in answers:
                req.refuse()
        parked, self._parked = self._parked, {}
        for req in parked.values():
            req.refuse()

    def stop(self) -> None:
        """The node stops: everything waiting is answered NOT_COORDINATOR."""
        self._deactivate()

    # -- requests ---------------------------------------------------------------------------------
    def submit(self, api_key: int, version: int, body: Any, client_id: str, client_host: str,
               answer: Answer) -> None:
        """A group request; ``answer(response)`` once it may leave."""
        req = _Request(api_key, version, body, answer)
        coordinator = self.coordinator
        if coordinator is None:
            answer(ListGroupsResponse() if api_key == ApiKey.LIST_GROUPS else   # coordinating nothing, listing nothing
                   error_response(api_key, version, body, NOT_COORDINATOR))
            return
        if api_key == ApiKey.OFFSET_COMMIT and client_id == IMPORT_CLIENT_ID and self.replicated:
            # a voter's legacy offsets relayed during an upgrade: adopted where no commit exists yet
            try:
                coordinator.import_records(import_request_records(body, self.clock()), self.clock())
            except OSError:
                req.refuse()
                return
            self._after_write([(req, error_response(api_key, version, body, 0))])
            return
        result = coordinator.handle(self.clock(), api_key, version, body, client_id, client_host)
        if isinstance(result, Done):
            self._after_write([(req, result.response)] + self._completed(result.completions))
            return
        self._parked[result.key] = req
        self._after_write(self._completed(result.completions))

    def tick(self) -> None:
        """The coordinator's timers (session expiry, rebalance and join deadlines, offset retention). If Raft
        stopped leading in this tick, the hand-over comes first: a timer must not complete a rebalance whose
        generation record can no longer be written (its answers would leave unrecorded, and the next
        coordinator would hand the same generation out again)."""
        raft = self.raft
        if raft is not None and self.machine is not None and self.term.ended(raft):
            self.settle()
        coordinator = self.coordinator
        if coordinator is not None:
            self._after_write(self._completed(coordinator.tick(self.clock())))

    def next_deadline(self) -> int | None:
        return None if self.coordinator is None else self.coordinator.next_deadline()

    def snapshot_due(self) -> OffsetsSnapshotJob | None:
        """The snapshot of the committed offsets state to take now, if any (the node core's ``TakeSnapshot``)."""
        if self.snapshotter is None or self.raft is None:
            return None
        return self.snapshotter.job(self.clock(), self.raft.log.latest_snapshot_id())

    # -- internals --------------------------------------------------------------------------------
    def _completed(self, completions: Any) -> list[tuple[_Request, Any]]:
        out = []
        for c in completions:
            req = self._parked.pop(c.key, None)
            if req is not None:   # the client may have gone away meanwhile
                out.append((req, c.response))
        return out

    def _after_write(self, answers: list[tuple[_Request, Any]]) -> None:
        """Answer once everything written so far is committed (at once in the local placement)."""
        last = getattr(self.coordinator.store, "last_offset", -1) if self.coordinator is not None else -1
        raft = self.raft
        if not answers:
            return
        if raft is None or last < 0 or (raft.hw is not None and raft.hw > last):
            for req, resp in answers:
                req.answer(resp)
        else:
            self.term.hold(last, answers)

    def _release(self) -> None:
        hw = self.raft.hw
        if hw is None:
            return
        if self.import_offset is not None and hw > self.import_offset:
            self.import_offset = None
            self.imported = True
        for answers in self.term.release(hw):
            for req, resp in answers:
                req.answer(resp)
