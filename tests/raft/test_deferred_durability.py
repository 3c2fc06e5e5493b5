"""With ``defer_flush`` (the server and the simulator) the core makes no fsync at elections or truncation:
each is a ``PersistLog`` the shell runs off its event loop, and what depends on it waits — a candidate's Vote
requests (they claim its log end), a follower's Fetch after a truncation (appends reuse the cut offsets) —
while a new leader's LeaderChange is like any leader append: sent at once, counted once durable."""

from __future__ import annotations

from dataclasses import replace

from raft_helpers import CFG, ELECTION_OUTPUTS, elect, fetch, make, requests, stand

from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import ElectionState
from kraftwire.raft import messages as m

DEFER = replace(CFG, defer_flush=True)


def persists(outputs: list[m.Output]) -> list[m.PersistLog]:
    return [o for o in outputs if isinstance(o, m.PersistLog)]


def follower(batches=(), epoch=2):
    core, log, _, _ = make(node_id=2, batches=list(batches), config=DEFER,
                           state=ElectionState(epoch, 1, None, frozenset({1, 2, 3})))
    return core, log


def answer(core, req, now, *, batches=(), hw=-1, diverging=None, epoch=2):
    part = m.FetchPartition(0, hw, 0, diverging, m.LeaderIdAndEpoch(1, epoch), None, list(batches))
    return core.handle_response(now, req.request_id, m.FetchResponse(0, part))


def test_a_candidate_asks_for_votes_only_once_the_log_end_they_claim_is_durable():
    core, log = follower()
    (req,) = requests(core.tick(0), m.FetchRequest)
    out = answer(core, req, 5, batches=[RecordBatch(0, 2, (Record(value=b"a"), Record(value=b"b")))])
    (persist,) = persists(out)
    flushes = log.flush_count
    now = 5 + core.config.fetch_timeout_ms   # its fsync is still running when its fetch timeout fires
    out = stand(core, now)
    assert core.state_name == "candidate"
    assert not [r for r in requests(out, m.VoteRequest) if not r.msg.pre_vote], "a vote asked before the fsync"
    assert not requests(core.tick(now + 1), m.VoteRequest)
    assert log.flush_count == flushes and log.flushed_offset == 0, "the core fsynced on its caller's thread"
    votes = requests(core.handle_persisted(now + 2, persist.end_offset), m.VoteRequest)
    assert votes and all(not v.msg.pre_vote and v.msg.last_offset == 2 for v in votes)


def test_a_follower_that_truncated_fetches_again_only_once_the_cut_is_durable():
    core, log = follower(batches=[(1, 3), (2, 3)], epoch=3)
    (req,) = requests(core.tick(0), m.FetchRequest)
    flushes = log.flush_count
    out = answer(core, req, 5, diverging=m.EpochEndOffset(1, 4), hw=3, epoch=3)
    assert log.end_offset == 3
    assert not requests(out, m.FetchRequest), "fetched (and would append) before the cut was durable"
    (persist,) = persists(out)
    assert persist.end_offset == 3 and log.flush_count == flushes
    assert not requests(core.tick(10), m.FetchRequest)
    (nxt,) = requests(core.handle_persisted(12, persist.end_offset), m.FetchRequest)
    assert nxt.msg.fetch_offset == 3 and nxt.msg.last_fetched_epoch == 1


def test_a_new_leader_writes_its_leader_change_without_an_fsync_and_counts_it_once_durable():
    core, log, _, _ = make(config=DEFER, batches=[(1, 2)], state=ElectionState(1, 2, None, frozenset({1, 2, 3})))
    flushes = log.flush_count
    now = elect(core)
    out = ELECTION_OUTPUTS[id(core)]
    assert log.flush_count == flushes and log.flushed_offset == 2 < log.end_offset == 3
    (persist,) = persists(out)
    assert requests(out, m.BeginQuorumEpochRequest), "BeginQuorumEpoch waits for no fsync of the leader's"
    fetch(core, now, 1, 2, 3, core.epoch)   # a follower holds the LeaderChange: not committed without ours
    assert core.hw is None
    core.handle_persisted(now + 1, persist.end_offset)
    assert core.hw == 3
