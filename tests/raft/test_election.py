"""Vote, candidacy, BeginQuorumEpoch, EndQuorumEpoch and restart rules of the core."""

from __future__ import annotations

import pytest
from raft_helpers import CID, ELECTION_OUTPUTS, elect, make, requests, responses, stand, vote_ok

from kraftwire.protocol.control import ControlType, control_type
from kraftwire.protocol.errors import Errors
from kraftwire.raft import ElectionState, RaftFaults, SimulatedCrash
from kraftwire.raft import messages as m


def vote(core, now, rid, cand, epoch, last_epoch=0, last_offset=0, cluster=CID):
    return core.handle_request(now, rid, cand, m.VoteRequest(cluster, epoch, cand, last_epoch, last_offset))


def vote_answer(outputs) -> m.VoteResponse:
    (r,) = responses(outputs)
    return r.msg


def test_vote_granted_and_persisted_before_response():
    core, _, store, _ = make()
    resp = vote_answer(vote(core, 10, 1, 2, 1))
    assert resp.partition.vote_granted and resp.partition.leader_epoch == 1
    assert store.read() == ElectionState(1, None, 2, frozenset({1, 2, 3}))


def test_vote_not_answered_if_the_vote_cannot_be_persisted():
    core, _, store, _ = make()
    store.fail_next = True
    with pytest.raises(SimulatedCrash):
        vote(core, 10, 1, 2, 1)
    assert store.read().epoch == 0


def test_one_vote_per_epoch_even_after_restart():
    core, log, store, _ = make()
    assert vote_answer(vote(core, 10, 1, 2, 1)).partition.vote_granted
    assert not vote_answer(vote(core, 11, 2, 3, 1)).partition.vote_granted
    assert vote_answer(vote(core, 12, 3, 2, 1)).partition.vote_granted  # same candidate again: yes
    restarted, *_ = make(state=store.read())
    assert restarted.state_name == "voted"
    assert not vote_answer(vote(restarted, 20, 1, 3, 1)).partition.vote_granted


def test_double_vote_bug_flag_grants_second_candidate():
    core, *_ = make(faults=RaftFaults(double_vote=True))
    vote(core, 10, 1, 2, 1)
    assert vote_answer(vote(core, 11, 2, 3, 1)).partition.vote_granted


def test_vote_rejected_for_stale_epoch_with_fenced_error():
    core, *_ = make(state=ElectionState(5, None, None, frozenset({1, 2, 3})))
    p = vote_answer(vote(core, 10, 1, 2, 4)).partition
    assert p.error_code == Errors.FENCED_LEADER_EPOCH and not p.vote_granted and p.leader_epoch == 5


def test_vote_rejected_when_candidate_log_is_behind():
    core, *_ = make(batches=[(1, 3), (2, 2)])  # last epoch 2, end offset 5
    assert not vote_answer(vote(core, 10, 1, 2, 3, last_epoch=2, last_offset=4)).partition.vote_granted
    assert not vote_answer(vote(core, 11, 2, 3, 4, last_epoch=1, last_offset=100)).partition.vote_granted
    assert vote_answer(vote(core, 12, 3, 2, 5, last_epoch=2, last_offset=5)).partition.vote_granted


def test_vote_with_other_cluster_id_is_rejected_at_top_level():
    core, *_ = make()
    resp = vote_answer(vote(core, 10, 1, 2, 1, cluster="other"))
    assert resp.error_code == Errors.INCONSISTENT_CLUSTER_ID and resp.partition is None
    assert core.epoch == 0


def test_vote_from_non_voter_rejected():
    core, *_ = make()
    assert not vote_answer(vote(core, 10, 1, 9, 1)).partition.vote_granted


def test_candidate_votes_for_itself_persistently_and_asks_all_voters():
    core, log, store, _ = make()
    out = stand(core, 5000)
    assert core.state_name == "candidate" and core.epoch == 1
    assert store.read() == ElectionState(1, None, 1, frozenset({1, 2, 3}))
    reqs = requests(out, m.VoteRequest)
    assert sorted(r.dest_id for r in reqs) == [2, 3]
    assert reqs[0].msg.candidate_epoch == 1 and reqs[0].msg.candidate_id == 1


def test_majority_makes_leader_which_writes_leader_change_first():
    core, log, store, rec = make()
    elect(core)
    assert store.read().leader_id == 1
    (batch,) = log.batches
    assert batch.control and batch.leader_epoch == 1
    assert control_type(batch.records[0]) == ControlType.LEADER_CHANGE
    assert rec.leaders[-1] == (1, 1)


def test_single_voter_elects_itself_at_once():
    core, log, *_ = make(voters=(1,))
    core.tick(0)
    assert core.is_leader and core.epoch == 1


def test_candidate_backs_off_when_the_vote_is_lost():
    core, *_ = make()
    out = stand(core, 5000)
    for r in requests(out, m.VoteRequest):
        out2 = core.handle_response(5001, r.request_id, vote_ok(1, granted=False))
    assert core.state_name == "candidate"
    assert not requests(out2, m.VoteRequest)
    st = core.state
    assert st.backoff_until is not None and st.backoff_until - 5001 <= core.config.election_backoff_max_ms
    out3 = core.tick(st.backoff_until)  # after the backoff: a new pre-vote in the same epoch first
    assert core.epoch == 1 and core.state_name == "prospective"
    assert all(r.msg.pre_vote and r.msg.candidate_epoch == 1 for r in requests(out3, m.VoteRequest))
    core.handle_response(st.backoff_until + 1, requests(out3, m.VoteRequest)[0].request_id, vote_ok(1))
    assert core.epoch == 2 and core.state_name == "candidate"


def test_candidate_learns_leader_from_vote_response():
    core, *_ = make()
    out = stand(core, 5000)
    r = requests(out, m.VoteRequest)[0]
    core.handle_response(5001, r.request_id, vote_ok(3, granted=False, leader=3))
    assert core.state_name == "follower" and core.leader_id == 3 and core.epoch == 3


def test_leader_sends_begin_quorum_epoch_until_endorsed():
    core, *_ = make()
    now = elect(core)
    bqe = requests(ELECTION_OUTPUTS[id(core)], m.BeginQuorumEpochRequest)
    assert sorted(r.dest_id for r in bqe) == [2, 3]
    ok = m.BeginQuorumEpochResponse(0, m.QuorumEpochPartition(0, 1, 1))
    core.handle_response(now + 1, bqe[0].request_id, ok)
    core.handle_request_failed(now + 1, bqe[1].request_id)
    out = core.tick(now + core.config.fetch_timeout_ms)
    assert [r.dest_id for r in requests(out, m.BeginQuorumEpochRequest)] == [bqe[1].dest_id]


def test_fetch_in_new_epoch_counts_as_endorsement():
    from raft_helpers import fetch
    core, *_ = make()
    now = elect(core)
    core.tick(now)
    fetch(core, now + 1, 50, 2, 0, 0)
    fetch(core, now + 1, 51, 3, 0, 0)
    assert core.state.unendorsed == set()


def test_begin_quorum_epoch_makes_follower_and_stale_one_is_fenced():
    core, *_ = make()
    (r,) = responses(core.handle_request(1, 1, 2, m.BeginQuorumEpochRequest(CID, 2, 4)))
    assert r.msg.partition.error_code == 0
    assert core.state_name == "follower" and core.leader_id == 2 and core.epoch == 4
    (r,) = responses(core.handle_request(2, 2, 3, m.BeginQuorumEpochRequest(CID, 3, 3)))
    assert r.msg.partition.error_code == Errors.FENCED_LEADER_EPOCH and r.msg.partition.leader_id == 2


def test_begin_quorum_epoch_from_other_cluster_is_refused():
    core, *_ = make()
    (r,) = responses(core.handle_request(1, 1, 2, m.BeginQuorumEpochRequest("nope", 2, 4)))
    assert r.msg.error_code == Errors.INCONSISTENT_CLUSTER_ID and core.epoch == 0


def test_resign_sends_end_quorum_epoch_with_successors_by_replicated_offset():
    from raft_helpers import fetch
    core, log, *_ = make()
    now = elect(core)
    core.append(now, [m_record(b"a"), m_record(b"b")])
    core.tick(now + 100)
    fetch(core, now + 101, 60, 3, log.end_offset, 1)
    fetch(core, now + 101, 61, 2, 1, 1)
    out = core.resign(now + 102)
    assert core.state_name == "resigned"
    eqe = requests(out, m.EndQuorumEpochRequest)
    assert sorted(r.dest_id for r in eqe) == [2, 3]
    assert eqe[0].msg.preferred_successors == (3, 2)
    core.tick(now + 100_000)
    assert core.state_name == "resigned"  # shutting down: never stands again


def m_record(v: bytes):
    from kraftwire.protocol.records import Record
    return Record(value=v)


@pytest.mark.parametrize("successors,expected", [((1, 2, 3), 0), ((2, 1, 3), 250), ((2, 3, 1), 500), ((2, 3), 1000)])
def test_end_quorum_epoch_backoff_from_position(successors, expected):
    core, *_ = make(voters=(1, 2, 3, 4))
    core.handle_request(0, 1, 4, m.BeginQuorumEpochRequest(CID, 4, 2))
    out = core.handle_request(10, 2, 4, m.EndQuorumEpochRequest(CID, 4, 2, successors))
    assert responses(out)[0].msg.partition.error_code == 0
    if expected == 0:
        assert core.state_name == "prospective"
    else:
        assert core.state.fetch_deadline == 10 + expected


def test_first_preferred_successor_stands_immediately():
    core, *_ = make()
    core.handle_request(0, 1, 3, m.BeginQuorumEpochRequest(CID, 3, 2))
    out = core.handle_request(10, 2, 3, m.EndQuorumEpochRequest(CID, 3, 2, (1, 2)))
    assert core.state_name == "prospective" and core.epoch == 2
    (pre, _) = requests(out, m.VoteRequest)
    assert pre.msg.pre_vote
    out = core.handle_response(11, pre.request_id, vote_ok(2))
    assert core.state_name == "candidate" and core.epoch == 3
    assert requests(out, m.VoteRequest)


def test_stale_end_quorum_epoch_is_fenced():
    core, *_ = make(state=ElectionState(5, 2, None, frozenset({1, 2, 3})))
    (r,) = responses(core.handle_request(0, 1, 3, m.EndQuorumEpochRequest(CID, 3, 4, (1,))))
    assert r.msg.partition.error_code == Errors.FENCED_LEADER_EPOCH and core.leader_id == 2


def test_restarted_leader_comes_back_resigned_never_leader():
    core, log, store, _ = make()
    elect(core)
    again, _, again_store, _ = make(state=store.read(), batches=[(1, 1)])
    assert again.state_name == "resigned" and not again.is_leader and again.epoch == 1
    (r,) = responses(again.handle_request(10, 1, 2, m.VoteRequest(CID, 1, 2, 1, 5)))
    assert not r.msg.partition.vote_granted
    stand(again, 100_000)
    assert again.state_name == "candidate" and again.epoch == 2


def test_restarted_candidate_keeps_its_epoch_and_self_vote():
    core, log, store, _ = make()
    stand(core, 5000)
    again, *_ = make(state=store.read())
    assert again.state_name == "candidate" and again.epoch == 1
    (r,) = responses(again.handle_request(10, 1, 2, m.VoteRequest(CID, 1, 2, 0, 0)))
    assert not r.msg.partition.vote_granted


def test_restarted_follower_resumes_following():
    _, _, store, _ = make(state=ElectionState(3, 2, None, frozenset({1, 2, 3})))
    again, *_ = make(state=store.read())
    assert again.state_name == "follower" and again.leader_id == 2


def test_epoch_below_log_epoch_starts_unattached_at_log_epoch():
    core, *_ = make(state=ElectionState(1, 2, None, frozenset({1, 2, 3})), batches=[(4, 1)])
    assert core.state_name == "unattached" and core.epoch == 4


def test_unattached_election_timeout_is_randomized_within_kafka_bounds():
    deadlines = set()
    for seed in range(20):
        import random

        from raft_helpers import CFG

        from kraftwire.raft.core import RaftCore
        from kraftwire.raft.memory import MemoryLog, MemoryStateStore
        c = RaftCore(1, (1, 2, 3), CFG, MemoryLog(), MemoryStateStore(), random.Random(seed), CID, 0)
        deadlines.add(c.state.election_deadline)
    assert len(deadlines) > 10
    assert all(1000 <= d < 2000 for d in deadlines)


def test_rejected_vote_does_not_postpone_own_election():
    core, *_ = make(batches=[(1, 5)])
    deadline = core.state.election_deadline
    vote(core, 10, 1, 2, 2, last_epoch=0, last_offset=0)  # rejected: candidate log behind
    assert core.epoch == 2 and core.state.election_deadline == deadline


def test_wiped_voter_refuses_votes_until_rejoined():
    core, log, store, _ = make(rejoining=True)
    assert core.rejoining and core.state_name == "observer"
    assert not vote_answer(vote(core, 10, 1, 2, 1)).partition.vote_granted
    core.tick(100_000)
    assert core.state_name == "observer"  # never stands while re-joining
