"""Builders for driving a single ``RaftCore`` by hand."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import (
    NO_FAULTS,
    ElectionState,
    MemoryLog,
    MemoryStateStore,
    RaftConfig,
    RaftCore,
    RaftFaults,
)
from kraftwire.raft import messages as m

CID = "test-cluster"
CFG = RaftConfig(fetch_timeout_jitter=0.0)


@dataclass
class Recorder:
    commits: list[RecordBatch] = field(default_factory=list)
    leaders: list[tuple[int | None, int]] = field(default_factory=list)

    def handle_commit(self, batches: list[RecordBatch]) -> None:
        self.commits.extend(batches)

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leaders.append((leader_id, epoch))


def make(node_id: int | None = 1, voters: tuple[int, ...] = (1, 2, 3), *, state: ElectionState | None = None,
         batches: list[tuple[int, int]] = (), config: RaftConfig = CFG, now: int = 0,
         rejoining: bool = False, faults: RaftFaults = NO_FAULTS
         ) -> tuple[RaftCore, MemoryLog, MemoryStateStore, Recorder]:
    """A core over a fresh memory log; ``batches`` = [(epoch, n_records)] pre-appended and flushed."""
    log = MemoryLog()
    for epoch, n in batches:
        log.append_as_leader([Record(value=b"x")] * n, epoch)
    log.flush()
    store = MemoryStateStore()
    if state is not None:
        store.write(state)
    rec = Recorder()
    core = RaftCore(node_id, voters, config, log, store, random.Random(7), CID, now, rec, rejoining=rejoining,
                    faults=faults)
    return core, log, store, rec


def requests(outputs: list[m.Output], kind: type | None = None) -> list[m.SendRequest]:
    return [o for o in outputs if isinstance(o, m.SendRequest) and (kind is None or isinstance(o.msg, kind))]


def responses(outputs: list[m.Output], log: Any = None) -> list[m.SendResponse]:
    """The answers among ``outputs``; with ``log``, a FetchSnapshot's too, its chunk read from ``log`` as the shell
    does for a ``ReadSnapshotChunk`` (None when the snapshot is gone)."""
    out: list[m.SendResponse] = []
    for o in outputs:
        if isinstance(o, m.SendResponse):
            out.append(o)
        elif log is not None and isinstance(o, m.ReadSnapshotChunk):
            try:
                chunk: bytes | None = log.read_snapshot_chunk(o.snapshot_id, o.position, o.max_bytes)
            except KeyError:
                chunk = None
            out.append(o.answer(chunk))
    return out


def vote_ok(epoch: int, granted: bool = True, leader: int = -1) -> m.VoteResponse:
    return m.VoteResponse(0, m.VotePartition(0, leader, epoch, granted))


def stand(core: RaftCore, now: int = 5000) -> list[m.Output]:
    """Let ``core``'s election timer fire at ``now`` and grant one pre-vote: it becomes a candidate.

    Returns the candidate's outputs (its Vote requests).
    """
    out = core.tick(now)
    pre = [r for r in requests(out, m.VoteRequest) if r.msg.pre_vote]
    if pre:
        assert core.state_name == "prospective", core.state_name
        out = core.handle_response(now, pre[0].request_id, vote_ok(core.epoch))
    return out


def elect(core: RaftCore, now: int = 5000) -> int:
    """Make ``core`` (a voter of a 3-voter quorum) leader; returns the time used.

    The outputs of the winning event are kept in ``ELECTION_OUTPUTS`` (test-only).
    """
    out = stand(core, now)
    votes = requests(out, m.VoteRequest)
    assert votes, out
    elected_out = core.handle_response(now + 1, votes[0].request_id, vote_ok(core.epoch))
    assert core.is_leader
    ELECTION_OUTPUTS[id(core)] = elected_out
    return now + 1


ELECTION_OUTPUTS: dict[int, list[m.Output]] = {}


def fetch(core: RaftCore, now: int, rid: int, replica: int, offset: int, last_epoch: int,
          epoch: int | None = None, max_wait: int = 0) -> list[m.Output]:
    req = m.FetchRequest(CID, replica, max_wait, offset, last_epoch, core.epoch if epoch is None else epoch)
    return core.handle_request(now, rid, replica, req)


def fetch_partition(outputs: list[m.Output]) -> m.FetchPartition:
    (resp,) = responses(outputs)
    assert isinstance(resp.msg, m.FetchResponse) and resp.msg.partition is not None
    return resp.msg.partition
