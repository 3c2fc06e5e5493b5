"""A follower whose leader refuses the connection stands without waiting for its fetch timeout
(``RaftConfig.refused_standoff_ms``); a timeout or a lost connection changes nothing."""

from __future__ import annotations

from dataclasses import replace

from raft_helpers import CFG, CID, make, requests, responses

from kraftwire.node.raft_driver import connection_refused
from kraftwire.raft import ElectionState
from kraftwire.raft import messages as m

VOTERS = frozenset({1, 2, 3})


def fetching_from_2(config=CFG, epoch: int = 4):
    """Node 1 following node 2, one successful Fetch answered at t=100 and the next one in flight."""
    core, *_ = make(state=ElectionState(epoch, 2, None, VOTERS), config=config)
    (f,) = requests(core.tick(0), m.FetchRequest)
    out = core.handle_response(100, f.request_id, m.FetchResponse(0, m.FetchPartition(
        0, 0, 0, current_leader=m.LeaderIdAndEpoch(2, epoch))))
    (nxt,) = requests(out, m.FetchRequest)
    return core, nxt


def granted(core, now: int, rid: int) -> bool:
    (r,) = responses(core.handle_request(now, rid, 3, m.VoteRequest(CID, 4, 3, 0, 0, pre_vote=True)))
    return r.msg.partition.vote_granted


def test_refused_fetch_stands_within_the_standoff_and_grants_pre_votes():
    core, f = fetching_from_2()
    assert not granted(core, 150, 1)                        # a healthy leader: pre-votes refused
    core.handle_request_failed(200, f.request_id, refused=True)
    assert core.state_name == "follower" and core.epoch == 4
    assert 200 <= core.state.fetch_deadline <= 200 + CFG.refused_standoff_ms < 100 + CFG.fetch_timeout_ms
    assert granted(core, 210, 2)                            # the leader is gone: another may stand
    out = core.tick(core.state.fetch_deadline)
    assert core.state_name == "prospective" and core.epoch == 4   # a pre-vote first: no epoch changes
    assert sorted(r.dest_id for r in requests(out, m.VoteRequest)) == [2, 3]


def test_timeouts_and_closed_connections_wait_for_the_fetch_timeout():
    core, f = fetching_from_2()
    core.handle_request_failed(200, f.request_id)           # timed out, or the connection closed
    assert core.state.fetch_deadline == 100 + CFG.fetch_timeout_ms
    assert not granted(core, 210, 1)


def test_only_the_first_refusal_after_a_good_fetch_moves_the_timer():
    core, f = fetching_from_2(replace(CFG, fetch_timeout_ms=20_000, refused_standoff_ms=10_000))
    core.handle_request_failed(200, f.request_id, refused=True)
    first = core.state.fetch_deadline
    assert first > 300
    (again,) = requests(core.tick(300), m.FetchRequest)     # retried after the retry backoff
    core.handle_request_failed(301, again.request_id, refused=True)
    assert core.state.fetch_deadline == first


def test_refusal_from_a_node_that_is_not_our_leader_changes_nothing():
    core, f = fetching_from_2()
    core.handle_request_failed(200, f.request_id + 1000, refused=True)   # not ours: unknown request
    assert core.state.fetch_deadline == 100 + CFG.fetch_timeout_ms


def test_kafka_behaviour_when_disabled():
    core, f = fetching_from_2(replace(CFG, refused_standoff_ms=None))
    core.handle_request_failed(200, f.request_id, refused=True)
    assert core.state.fetch_deadline == 100 + CFG.fetch_timeout_ms
    assert not granted(core, 210, 1)


def test_a_refused_connection_is_found_in_the_exception_chain():
    def chain(inner: BaseException) -> BaseException:
        try:
            try:
                raise OSError("All connection attempts failed") from inner
            except OSError as e:
                raise RuntimeError("connect to 127.0.0.1:9093 failed") from e
        except RuntimeError as e:
            return e
    assert connection_refused(chain(ConnectionRefusedError(111, "refused")))
    assert not connection_refused(chain(TimeoutError()))
    assert not connection_refused(chain(ConnectionResetError(104, "reset")))
    assert not connection_refused(None)


def test_a_candidate_whose_other_voters_reject_or_are_gone_backs_off_at_once():
    core, *_ = make(state=ElectionState(4, None, None, VOTERS))
    out = core.tick(5000)                                   # election timeout: prospective
    sent = []
    for r in requests(out, m.VoteRequest):
        sent += core.handle_response(5001, r.request_id, m.VoteResponse(0, m.VotePartition(0, -1, 4, True)))
    assert core.state_name == "candidate" and core.epoch == 5
    votes = {r.dest_id: r for r in requests(sent + core.tick(5002), m.VoteRequest) if not r.msg.pre_vote}
    core.handle_response(5003, votes[2].request_id, m.VoteResponse(0, m.VotePartition(0, -1, 5, False)))
    assert core.state.backoff_until is None                 # node 3 may still grant
    core.handle_request_failed(5004, votes[3].request_id, refused=True)
    assert core.state.backoff_until is not None and core.state.backoff_until <= 5004 + CFG.election_backoff_max_ms


def test_a_prospective_whose_other_voters_reject_or_are_gone_goes_back_at_once():
    core, f = fetching_from_2()
    core.handle_request_failed(200, f.request_id, refused=True)
    votes = {r.dest_id: r for r in requests(core.tick(core.state.fetch_deadline), m.VoteRequest)}
    assert core.state_name == "prospective"
    core.handle_request_failed(core.state.election_deadline - 10, votes[2].request_id, refused=True)
    assert core.state_name == "prospective"                 # node 3 may still grant
    core.handle_response(core.state.election_deadline - 5, votes[3].request_id,
                         m.VoteResponse(0, m.VotePartition(0, 2, 4, False)))
    assert core.state_name == "follower" and core.epoch == 4
