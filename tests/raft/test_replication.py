"""Fetch (leader and follower side), high watermark, commits, check-quorum, DescribeQuorum, memory log."""

from __future__ import annotations

from dataclasses import replace

import pytest
from raft_helpers import CFG, CID, elect, fetch, fetch_partition, make, requests, responses, stand

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.records import Record, RecordBatch
from kraftwire.raft import (
    ElectionState,
    LogTruncationError,
    MemoryLog,
    NotLeaderError,
    OffsetAndEpoch,
    RaftFaults,
)
from kraftwire.raft import messages as m


def rec(v: bytes) -> Record:
    return Record(value=v)


def leader_with_data(n: int = 3):
    core, log, store, listener = make()
    now = elect(core)
    offsets = core.append(now, [rec(b"v%d" % i) for i in range(n)])
    core.tick(now + core.config.append_linger_ms)
    return core, log, listener, now + core.config.append_linger_ms, offsets


# ---------------------------------------------------------------------------- leader side
def test_append_batches_records_after_linger_and_returns_offsets():
    core, log, _, now, offsets = leader_with_data(3)
    assert offsets == [1, 2, 3]
    assert [b.base_offset for b in log.batches] == [0, 1] and len(log.batches[1].records) == 3
    assert log.flushed_offset == 4


def test_idle_leader_writes_an_append_at_once_and_gathers_only_while_a_batch_replicates():
    core, log, _, now, _ = leader_with_data(3)       # batch [1, 4) written, not yet committed
    fetch(core, now, 1, 2, 1, 1)                      # follower 2 holds the LeaderChange only
    assert core.hw == 1
    core.append(now, [rec(b"a")])
    core.tick(now)
    assert log.end_offset == 4                        # a batch is replicating: gather
    out = fetch(core, now + 2, 2, 2, 4, 1)            # it commits: the gathered append goes out now
    assert core.hw == 4 and log.end_offset == 5 and log.flushed_offset == 5
    assert len(log.batches[-1].records) == 1 and fetch_partition(out).high_watermark == 4
    fetch(core, now + 3, 3, 2, 5, 1)
    assert core.hw == 5                               # idle again
    core.append(now + 4, [rec(b"b"), rec(b"c")])
    core.tick(now + 4)                                # idle: no linger at all
    assert log.end_offset == 7 and log.flushed_offset == 7


def test_linger_is_the_cap_when_the_previous_batch_never_commits():
    core, log, _, now, _ = leader_with_data(3)
    core.append(now, [rec(b"a")])
    core.tick(now + core.config.append_linger_ms - 1)
    assert log.end_offset == 4
    core.tick(now + core.config.append_linger_ms)
    assert log.end_offset == 5


def test_append_on_non_leader_raises():
    core, *_ = make()
    with pytest.raises(NotLeaderError):
        core.append(0, [rec(b"x")])


def test_fetch_epoch_checks():
    core, log, _, now, _ = leader_with_data()
    assert fetch_partition(fetch(core, now, 1, 2, 0, 0, epoch=0)).error_code == Errors.FENCED_LEADER_EPOCH
    assert fetch_partition(fetch(core, now, 2, 2, 0, 0, epoch=7)).error_code == Errors.UNKNOWN_LEADER_EPOCH
    follower, *_ = make(node_id=2, state=ElectionState(1, 1, None, frozenset({1, 2, 3})))
    p = fetch_partition(fetch(follower, 0, 3, 3, 0, 0, epoch=1))
    assert p.error_code == Errors.NOT_LEADER_OR_FOLLOWER and p.current_leader == m.LeaderIdAndEpoch(1, 1)


def test_fetch_invalid_and_other_cluster():
    core, log, _, now, _ = leader_with_data()
    assert fetch_partition(fetch(core, now, 1, 2, -1, 0)).error_code == Errors.INVALID_REQUEST
    assert fetch_partition(fetch(core, now, 2, 2, 0, 5, epoch=1)).error_code == Errors.INVALID_REQUEST
    out = core.handle_request(now, 3, 2, m.FetchRequest("other", 2, 0, 0, 0, 1))
    assert responses(out)[0].msg.error_code == Errors.INCONSISTENT_CLUSTER_ID


def test_fetch_returns_data_and_hw_needs_own_epoch_entry_on_majority():
    core, log, listener, now, _ = leader_with_data(3)
    assert core.hw is None
    p = fetch_partition(fetch(core, now, 1, 2, 0, 0))
    assert [b.base_offset for b in p.batches] == [0, 1] and p.high_watermark == -1
    fetch(core, now + 1, 2, 2, 4, 1)  # follower 2 now has everything
    assert core.hw == 4
    assert [b.records[0].value for b in listener.commits] == [b"v0"]


def test_hw_does_not_count_leader_change_of_old_epoch_only():
    # Leader of epoch 3 with entries of epoch 1 on a majority: HW stays unknown until its own
    # LeaderChange (offset 2) is on a majority.
    core, log, *_ = make(batches=[(1, 2)], state=ElectionState(2, None, None, frozenset({1, 2, 3})))
    elect(core)
    assert core.epoch == 3 and core.state.epoch_start_offset == 2
    fetch(core, 6000, 1, 2, 2, 1)
    assert core.hw is None
    fetch(core, 6001, 2, 2, 3, 3)
    assert core.hw == 3


def test_observers_never_count_for_hw():
    core, log, _, now, _ = leader_with_data()
    fetch(core, now, 1, 101, 4, 1)
    fetch(core, now, 2, 102, 4, 1)
    assert core.hw is None
    bugged, *_ = make(faults=RaftFaults(observer_counts_for_hw=True))
    t = elect(bugged)
    fetch(bugged, t, 1, 101, 1, 1)
    fetch(bugged, t, 2, 102, 1, 1)
    assert bugged.hw == 1


def test_hw_never_decreases_on_leader():
    core, log, _, now, _ = leader_with_data()
    fetch(core, now, 1, 2, 4, 1)
    assert core.hw == 4
    fetch(core, now + 1, 2, 2, 1, 1)  # follower restarted with less (e.g. wiped)
    fetch(core, now + 2, 3, 3, 1, 1)
    assert core.hw == 4


def test_diverging_epoch_answer():
    core, log, *_ = make(batches=[(1, 3), (3, 2)], state=ElectionState(3, None, None, frozenset({1, 2, 3})))
    now = elect(core)  # epoch 4, LeaderChange at 5
    # A follower whose log ends with epoch 2 at offset 6: the largest epoch <= 2 here is 1, ending at 3.
    p = fetch_partition(fetch(core, now, 1, 2, 6, 2))
    assert p.diverging_epoch == m.EpochEndOffset(1, 3) and p.batches == []
    # Same epoch but beyond where it ends here.
    p = fetch_partition(fetch(core, now, 2, 2, 4, 1))
    assert p.diverging_epoch == m.EpochEndOffset(1, 3)
    # Consistent prefix: data.
    p = fetch_partition(fetch(core, now, 3, 2, 3, 1))
    assert p.diverging_epoch is None and p.batches[0].base_offset == 3
    assert core.state.voters[2].end_offset == 3


def test_long_poll_parks_and_answers_on_new_data_or_timeout():
    core, log, _, now, _ = leader_with_data()
    assert fetch(core, now, 7, 2, 4, 1, max_wait=500) == []
    core.append(now, [rec(b"new")])
    out = core.tick(now + core.config.append_linger_ms)
    (r,) = [o for o in responses(out) if o.request_id == 7]
    assert r.msg.partition.batches[0].records[0].value == b"new"
    assert fetch(core, now + 100, 8, 101, 5, 1, max_wait=500) == []
    out = core.tick(now + 100 + 500)
    assert any(o.request_id == 8 for o in responses(out))


def test_long_poll_answers_early_when_hw_moves():
    core, log, _, now, _ = leader_with_data()
    assert fetch(core, now, 7, 101, 4, 1, max_wait=500) == []  # an observer: does not move the HW
    out = fetch(core, now + 1, 8, 2, 4, 1, max_wait=500)  # moves HW to 4
    answered = {o.request_id: o.msg.partition.high_watermark for o in responses(out)}
    assert answered == {7: 4}


def test_fetch_v18_with_a_stale_high_watermark_is_answered_at_once():
    """Kafka 4.1 (Fetch v18): a caught-up fetcher whose high watermark is behind the leader's is not parked."""
    core, log, _, now, _ = leader_with_data()
    fetch(core, now, 1, 2, 4, 1)                       # voter 2 catches up: HW 4
    assert core.hw == 4

    def ask(rid: int, hw: int) -> list:
        req = m.FetchRequest(CID, 3, 500, 4, 1, core.epoch, high_watermark=hw)
        return core.handle_request(now + rid, rid, 3, req)

    assert fetch_partition(ask(10, 2)).high_watermark == 4     # behind: answered with the new HW
    assert fetch_partition(ask(11, -1)).high_watermark == 4    # a follower that knows no HW yet
    assert ask(12, 4) == []                                     # up to date: parked (long poll)
    assert ask(13, m.UNKNOWN_HIGH_WATERMARK) == []              # older versions tell nothing: parked


def test_a_fetch_before_v18_is_answered_at_once_when_the_high_watermark_moved_after_its_last_answer():
    """Before Fetch v18 the fetcher does not say its high watermark: the leader remembers the one its last answer
    told it. An observer woken by a record before that record committed must learn the commit at once, not
    half a second later (a Kafka 3.x broker otherwise applies its own unfencing late)."""
    core, log, _, now, _ = leader_with_data()
    fetch(core, now, 1, 2, 4, 1)                                  # voter 2 caught up: HW 4
    assert fetch(core, now, 7, 101, 4, 1, max_wait=500) == []     # an observer waits at the end
    core.append(now, [rec(b"new")])
    out = core.tick(now + core.config.append_linger_ms)
    (woken,) = [o for o in responses(out) if o.request_id == 7]
    assert woken.msg.partition.batches and woken.msg.partition.high_watermark == 4   # the record, not yet committed
    later = now + core.config.append_linger_ms + 1
    fetch(core, later, 8, 2, 5, 1)                                # voter 2 has it: HW 5
    assert core.hw == 5
    p = fetch_partition(fetch(core, later, 9, 101, 5, 1, max_wait=500))
    assert p.high_watermark == 5 and p.batches == [], "answered at once with the new high watermark"
    assert fetch(core, later, 10, 101, 5, 1, max_wait=500) == [], "told the current one: parked again"


def test_parked_fetches_fail_when_leadership_is_lost():
    core, log, _, now, _ = leader_with_data()
    fetch(core, now, 7, 3, 4, 1, max_wait=500)
    out = core.handle_request(now + 1, 9, 2, m.VoteRequest(CID, 5, 2, 1, 4))
    codes = {o.request_id: getattr(o.msg.partition, "error_code", None) for o in responses(out)}
    assert codes[7] == Errors.NOT_LEADER_OR_FOLLOWER
    assert not core.is_leader


def test_check_quorum_resigns_then_stands_again():
    core, log, _, now, _ = leader_with_data()
    limit = int(core.config.fetch_timeout_ms * core.config.check_quorum_factor)
    fetch(core, now + 10, 1, 2, 4, 1)
    core.tick(now + limit)
    assert core.is_leader  # a majority (itself + 2) fetched recently
    core.tick(now + 10 + limit)
    assert core.state_name == "resigned"
    stand(core, now + 10 + limit + 2 * core.config.election_timeout_ms)
    assert core.state_name == "candidate" and core.epoch == 2


def test_single_voter_is_exempt_from_check_quorum():
    core, *_ = make(voters=(1,))
    core.tick(0)
    core.tick(10**9)
    assert core.is_leader


def test_describe_quorum_on_leader_and_follower():
    core, log, _, now, _ = leader_with_data()
    fetch(core, now, 1, 2, 4, 1)
    fetch(core, now + 5, 2, 101, 2, 1)
    (r,) = responses(core.handle_request(now + 9, 3, 0, m.DescribeQuorumRequest()))
    p = r.msg.partition
    assert p.error_code == 0 and p.leader_id == 1 and p.high_watermark == 4
    voters = {v.replica_id: v for v in p.current_voters}
    assert voters[1].log_end_offset == 4 and voters[2].log_end_offset == 4 and voters[3].log_end_offset == -1
    assert voters[2].last_fetch_timestamp == now and voters[2].last_caught_up_timestamp == now
    (obs,) = p.observers
    assert obs.replica_id == 101 and obs.log_end_offset == 2 and obs.last_fetch_timestamp == now + 5
    follower, *_ = make(node_id=2, state=ElectionState(1, 1, None, frozenset({1, 2, 3})))
    (r,) = responses(follower.handle_request(0, 1, 0, m.DescribeQuorumRequest()))
    assert r.msg.partition.error_code == Errors.NOT_LEADER_OR_FOLLOWER and r.msg.partition.leader_id == 1


# ---------------------------------------------------------------------------- follower side
def follower(batches=(), epoch=2, **kw):
    core, log, store, listener = make(node_id=2, batches=list(batches),
                                      state=ElectionState(epoch, 1, None, frozenset({1, 2, 3})), **kw)
    return core, log, listener


def first_fetch(core, now=0):
    (req,) = requests(core.tick(now), m.FetchRequest)
    return req


def answer(core, req, now, *, batches=(), hw=-1, diverging=None, leader=1, epoch=2, error=0):
    part = m.FetchPartition(error, hw, 0, diverging, m.LeaderIdAndEpoch(leader, epoch), None, list(batches))
    return core.handle_response(now, req.request_id, m.FetchResponse(0, part))


def test_follower_fetches_flushed_end_and_applies_hw_after_append():
    core, log, listener = follower()
    req = first_fetch(core)
    assert req.dest_id == 1 and req.msg.fetch_offset == 0 and req.msg.current_leader_epoch == 2
    b = RecordBatch(0, 2, (rec(b"a"), rec(b"b")))
    out = answer(core, req, 5, batches=[b], hw=10)
    assert log.flushed_offset == 2 and core.hw == 2  # min(local end, leader HW)
    (nxt,) = requests(out, m.FetchRequest)
    assert nxt.msg.fetch_offset == 2 and nxt.msg.last_fetched_epoch == 2
    assert [r.value for c in listener.commits for r in c.records] == [b"a", b"b"]


def test_follower_truncates_on_diverging_epoch_before_hw():
    core, log, _ = follower(batches=[(1, 3), (2, 3)], epoch=3)
    req = first_fetch(core)
    assert req.msg.fetch_offset == 6 and req.msg.last_fetched_epoch == 2
    answer(core, req, 5, diverging=m.EpochEndOffset(1, 4), hw=3, epoch=3)
    # Our epoch 1 ends at 3, the leader's at 4: keep the shorter.
    assert log.end_offset == 3 and log.last_epoch() == 1
    assert core.hw is None  # no HW taken from a diverging answer


def test_truncation_below_hw_is_fatal():
    core, log, _ = follower(batches=[(1, 3), (2, 3)], epoch=3)
    req = first_fetch(core)
    (req,) = requests(answer(core, req, 5, hw=5, epoch=3), m.FetchRequest)
    assert core.hw == 5
    with pytest.raises(LogTruncationError):
        answer(core, req, 7, diverging=m.EpochEndOffset(1, 3), epoch=3)


def test_follower_discovers_new_leader_from_fetch_response():
    core, log, _ = follower()
    req = first_fetch(core)
    out = answer(core, req, 5, error=int(Errors.FENCED_LEADER_EPOCH), leader=3, epoch=4)
    assert core.leader_id == 3 and core.epoch == 4
    (nxt,) = requests(out, m.FetchRequest)
    assert nxt.dest_id == 3


def test_follower_fetch_timeout_makes_candidate():
    core, *_ = follower()
    first_fetch(core)
    core.tick(core.config.fetch_timeout_ms - 1)
    assert core.state_name == "follower"
    stand(core, core.config.fetch_timeout_ms)
    assert core.state_name == "candidate" and core.epoch == 3


def test_follower_fetch_timeout_is_jittered_within_kafka_maximum():
    cfg = replace(CFG, fetch_timeout_jitter=0.5)
    deadlines = set()
    for _ in range(1):
        core, *_ = make(node_id=2, state=ElectionState(2, 1, None, frozenset({1, 2, 3})), config=cfg)
        req = first_fetch(core)
        for t in range(0, 40):
            (req,) = requests(answer(core, req, t * 10 + 1), m.FetchRequest)
            deadlines.add(core.state.fetch_deadline - (t * 10 + 1))
    assert len(deadlines) > 10 and all(1000 <= d <= 2000 for d in deadlines)


def test_observer_rotates_bootstrap_voters_until_leader_found():
    core, log, store, _ = make(node_id=101)
    assert core.state_name == "observer"
    (r1,) = requests(core.tick(0), m.FetchRequest)
    out = core.handle_request_failed(10, r1.request_id)
    out += core.tick(10 + core.config.retry_backoff_ms)
    (r2,) = requests(out, m.FetchRequest)
    assert r2.dest_id != r1.dest_id
    part = m.FetchPartition(int(Errors.FENCED_LEADER_EPOCH), -1, 0, None, m.LeaderIdAndEpoch(3, 5))
    out = core.handle_response(11, r2.request_id, m.FetchResponse(0, part))
    assert core.state_name == "follower" and core.leader_id == 3
    assert requests(out, m.FetchRequest)[0].dest_id == 3
    assert not core.is_voter and store.read().epoch == 5


def test_observer_never_stands_for_election():
    core, *_ = make(node_id=101)
    core.tick(10**9)
    assert core.state_name == "observer"


# ---------------------------------------------------------------------------- memory log
def test_memory_log_epoch_cache_and_truncate():
    log = MemoryLog()
    log.append_as_leader([rec(b"a")] * 3, 1)
    log.append_as_leader([rec(b"b")] * 2, 3)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(3, 1)
    assert log.end_offset_for_epoch(5) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)
    log.truncate_to(4)
    assert log.end_offset == 4 and log.last_epoch() == 3
    log.truncate_to(3)
    assert log.last_epoch() == 1 and log.end_offset_for_epoch(3) == OffsetAndEpoch(3, 1)


def test_memory_log_crash_and_torn_write():
    log = MemoryLog()
    log.append_as_leader([rec(b"a")], 1)
    log.flush()
    log.append_as_leader([rec(b"b")], 1)
    log.append_as_leader([rec(b"c")], 1)
    log.tear_last_write()
    assert log.end_offset == 2 and log.flushed_offset == 2
    log.append_as_leader([rec(b"d")], 1)
    log.crash()
    assert log.end_offset == 2


def test_followers_send_their_high_watermark():
    """Fetch v18: the follower tells the leader its high watermark (-1 while it knows none)."""
    core, log, _ = follower()
    req = first_fetch(core)
    assert req.msg.high_watermark == -1
    out = answer(core, req, 5, batches=[RecordBatch(0, 2, (rec(b"a"), rec(b"b")))], hw=10)
    (nxt,) = requests(out, m.FetchRequest)
    assert core.hw == 2 and nxt.msg.high_watermark == 2


def test_a_late_answer_to_a_fetch_sent_before_a_truncation_is_stale_even_at_the_same_end_offset():
    """Seed 2040 (5 voters): a follower's Fetch A (end 6, last epoch 2) stays unanswered while the follower
    goes prospective and back; its next Fetch learns a diverging epoch, the log is cut to 3 and re-grows to
    6 with the leader's epoch-3 entries. A's answer, arriving last, names the old divergence: the end offset
    matches again, the last epoch does not, so it is stale (before: a truncation below the HW, fatal)."""
    core, log, _ = follower(batches=[(1, 3), (2, 3)], epoch=3)
    late = first_fetch(core)
    assert (late.msg.fetch_offset, late.msg.last_fetched_epoch) == (6, 2)
    out = core.tick(core.config.fetch_timeout_ms * 2)            # no answer: it goes prospective...
    pre = [r for r in requests(out, m.VoteRequest) if r.msg.pre_vote]
    assert core.state_name == "prospective" and pre
    for r in pre:                                                # ...is turned away, and follows leader 1 again
        out = core.handle_response(core.config.fetch_timeout_ms * 2 + 1, r.request_id,
                                   m.VoteResponse(0, m.VotePartition(0, 1, 3, False)))
    assert core.state_name == "follower"
    now = core.config.fetch_timeout_ms * 2 + 10
    (req,) = requests(out + core.tick(now), m.FetchRequest)
    assert req.request_id != late.request_id and req.msg.fetch_offset == 6
    (req,) = requests(answer(core, req, now, diverging=m.EpochEndOffset(1, 3), hw=9, epoch=3), m.FetchRequest)
    assert log.end_offset == 3 and req.msg.fetch_offset == 3
    answer(core, req, now + 1, batches=[RecordBatch(3, 3, (rec(b"c"), rec(b"d"), rec(b"e")))], hw=9, epoch=3)
    assert (log.end_offset, log.last_epoch(), core.hw) == (6, 3, 6)
    answer(core, late, now + 2, diverging=m.EpochEndOffset(1, 3), hw=9, epoch=3)   # stale: ignored
    assert (log.end_offset, log.last_epoch(), core.hw) == (6, 3, 6)
