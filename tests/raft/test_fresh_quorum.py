"""A voter that starts without any history (fresh, or wiped and re-formatted: it cannot tell) takes part in
elections once a majority of the voters, itself included, answered its probes at epoch 0; an answer
showing a history sends it down the full re-join. Its election timer runs from its own start."""

from __future__ import annotations

from raft_helpers import CFG, make, requests

from kraftwire.protocol.errors import Errors
from kraftwire.raft import ElectionState, RaftFaults
from kraftwire.raft import messages as m


def probes(outputs: list[m.Output]) -> dict[int, int]:
    """dest -> request id of the probe Fetches in ``outputs``."""
    return {r.dest_id: r.request_id for r in requests(outputs, m.FetchRequest)}


def answer(epoch: int = 0, leader: int = -1) -> m.FetchResponse:
    """A non-leader's answer to a probe: NOT_LEADER_OR_FOLLOWER naming what it knows."""
    return m.FetchResponse(0, m.FetchPartition(int(Errors.NOT_LEADER_OR_FOLLOWER), -1, 0,
                                               current_leader=m.LeaderIdAndEpoch(leader, epoch)))


def vote_granted(core, now: int, candidate: int, epoch: int, pre_vote: bool = False) -> bool:
    req = m.VoteRequest("test-cluster", epoch, candidate, 0, 0, pre_vote=pre_vote)
    out = core.handle_request(now, 900 + now, candidate, req)
    (resp,) = [o for o in out if isinstance(o, m.SendResponse)]
    return resp.msg.partition.vote_granted


def test_one_blank_answer_of_three_is_a_fresh_majority():
    core, *_ = make(rejoining=True)
    sent = probes(core.tick(0))
    assert set(sent) == {2, 3} and core.rejoining
    core.handle_response(5, sent[2], answer())            # node 3 never answers (never started)
    assert not core.rejoining and core.state_name == "unattached" and core.epoch == 0
    assert vote_granted(core, 6, 2, 1)


def test_a_blank_pre_vote_counts_as_that_voters_answer():
    """A voter that started first has its probes in reconnect backoff when the others come up; the first pre-vote
    it receives (epoch 0, empty log) tells it as much as the probe's answer would, so it grants it instead of
    staying out of the quorum's first election (a process test lost its leader then and never elected again)."""
    core, *_ = make(rejoining=True)
    probes(core.tick(0))
    assert vote_granted(core, 1, 2, 0, pre_vote=True)
    assert not core.rejoining and core.epoch == 0
    assert vote_granted(core, 2, 2, 1)


def test_a_vote_in_a_later_epoch_is_not_a_blank_answer():
    core, *_ = make(rejoining=True)
    probes(core.tick(0))
    assert not vote_granted(core, 1, 2, 1)            # a candidate of epoch 1 has a history
    assert not vote_granted(core, 2, 3, 1, pre_vote=True)
    assert core.rejoining


def test_a_blank_pre_vote_of_five_voters_is_one_answer():
    core, *_ = make(voters=(1, 2, 3, 4, 5), rejoining=True)
    probes(core.tick(0))
    assert not vote_granted(core, 1, 2, 0, pre_vote=True)   # ourselves and node 2: two of five
    assert core.rejoining
    assert vote_granted(core, 2, 4, 0, pre_vote=True)       # and node 4: three of five
    assert not core.rejoining


def test_election_timer_runs_from_the_voters_own_start():
    core, *_ = make(rejoining=True, now=0)
    sent = probes(core.tick(0))
    core.handle_response(10, sent[2], answer())
    deadline = core.state.election_deadline
    assert CFG.election_timeout_ms <= deadline < 2 * CFG.election_timeout_ms   # drawn at t=0, not at t=10


def test_a_voter_whose_timer_ran_out_while_waiting_stands_as_soon_as_a_majority_answered():
    core, *_ = make(rejoining=True, now=0)
    sent = probes(core.tick(0))
    out = core.handle_response(60_000, sent[3], answer())   # the second voter started a minute later
    assert core.state_name == "prospective"
    assert {r.dest_id for r in requests(out, m.VoteRequest) if r.msg.pre_vote} == {2, 3}


def test_five_voters_need_two_blank_answers():
    core, *_ = make(voters=(1, 2, 3, 4, 5), rejoining=True)
    sent = probes(core.tick(0))
    core.handle_response(5, sent[4], answer())
    assert core.rejoining
    core.handle_response(6, sent[2], answer())
    assert not core.rejoining and core.state_name == "unattached"


def test_an_answer_with_history_means_the_full_rejoin():
    core, *_ = make(rejoining=True)
    sent = probes(core.tick(0))
    core.handle_response(5, sent[2], answer(epoch=4, leader=3))   # the quorum has a history
    assert core.rejoining and core.epoch == 4
    assert not vote_granted(core, 6, 2, 5)
    core.tick(30)
    assert core.rejoining   # every voter must answer and the log must catch up, as before


def test_a_voter_that_kept_its_quorum_state_is_not_blank():
    # Damaged log discarded, quorum-state kept (epoch 2): it had a history, so a majority is not enough.
    core, *_ = make(rejoining=True, state=ElectionState(epoch=2, leader_id=None, voted_id=3, voters=frozenset({1, 2, 3})))
    sent = probes(core.tick(0))
    core.handle_response(5, sent[2], answer(epoch=2))
    assert core.rejoining


def test_mutation_waits_for_all_needs_every_voter():
    core, *_ = make(rejoining=True, faults=RaftFaults(rejoin_waits_for_all=True))
    sent = probes(core.tick(0))
    core.handle_response(5, sent[2], answer())
    assert core.rejoining
    core.handle_response(6, sent[3], answer())
    assert not core.rejoining


def test_mutation_ignores_history_ends_the_rejoin_on_any_majority():
    core, *_ = make(rejoining=True, faults=RaftFaults(rejoin_ignores_history=True))
    sent = probes(core.tick(0))
    core.handle_response(5, sent[2], answer(epoch=4))
    assert not core.rejoining and core.epoch == 4
