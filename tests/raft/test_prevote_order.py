"""KIP-996 as Kafka 4.x ships it makes the *last* voter to time out win after a leader dies: a follower that has
fetched from its leader rejects pre-votes until its own timer fires, while a prospective, and a follower whose
pre-vote round was lost (a fresh follower state), grant them. kraftwire follows the same rules, which is what the
mixed-quorum interop cell relies on to move leadership from Kafka 4.x to kraftwire (compat/interop.py)."""

from __future__ import annotations

from raft_helpers import CFG, CID, make, requests, responses

from compat.interop import _PREVOTE_LOST
from kraftwire.raft import ElectionState
from kraftwire.raft import messages as m

VOTERS = frozenset({1, 2, 3})
EPOCH = 4


def _following_2(node: int, fetched_at: int = 100):
    """``node`` following leader 2 in EPOCH, its last Fetch answered at ``fetched_at``."""
    core, *_ = make(node, state=ElectionState(EPOCH, 2, None, VOTERS))
    (f,) = requests(core.tick(0), m.FetchRequest)
    core.handle_response(fetched_at, f.request_id, m.FetchResponse(0, m.FetchPartition(
        0, 0, 0, current_leader=m.LeaderIdAndEpoch(2, EPOCH))))
    return core


def _ask(voter, now: int, prospective: int) -> bool:
    (r,) = responses(voter.handle_request(now, 99, prospective, m.VoteRequest(CID, EPOCH, prospective, 0, 0, pre_vote=True)))
    return r.msg.partition.vote_granted


def _lose_round_by_timeout(core, now: int) -> int:
    """Tick ``core`` (prospective, its leader silent) until its pre-vote round ends; returns the time."""
    while core.state_name == "prospective":
        now = core.next_deadline()
        for r in requests(core.tick(now), m.VoteRequest):
            core.handle_request_failed(now, r.request_id)
    return now


def test_first_to_time_out_is_rejected_then_grants_the_second():
    n1, n3 = _following_2(1), _following_2(3, fetched_at=600)   # leader 2 died at ~600
    t1 = 100 + CFG.fetch_timeout_ms
    n1.tick(t1)                                         # node 1's timer fires first
    assert n1.state_name == "prospective"
    assert not _ask(n3, t1 + 5, 1)                      # node 3's has not: it still counts its leader as healthy
    assert n1.epoch == n3.epoch == EPOCH and n3.state_name == "follower"
    t = _lose_round_by_timeout(n1, t1)
    assert n1.state_name == "follower" and n1.epoch == EPOCH   # back to following 2, no epoch bump
    assert _ask(n1, t + 1, 3)                           # a fresh follower grants the later one


def test_a_prospective_grants_a_pre_vote():
    n1 = _following_2(1)
    n1.tick(100 + CFG.fetch_timeout_ms)
    assert n1.state_name == "prospective" and _ask(n1, 100 + CFG.fetch_timeout_ms + 1, 3)


def test_kafka_log_line_of_a_lost_pre_vote_round_is_recognised():
    lost = ("[2026-11-23 21:02:11,412] INFO [RaftManager id=3] Completed transition to FollowerState(fetchTimeoutMs="
            "2000, epoch=4, leader=2, leaderEndpoints=Endpoints(endpoints={}), votedKey=Optional.empty, voters=[1, 2, "
            "3], highWatermark=Optional[LogOffsetMetadata(offset=50)], fetchingSnapshot=Optional.empty) from "
            "ProspectiveState(epoch=4, votedKey=Optional.empty, epochElection=EpochElection(...), "
            "electionTimeoutMs=1403, highWatermark=Optional[LogOffsetMetadata(offset=50)]) (org.apache.kafka.raft."
            "QuorumState)")
    won = lost.replace("FollowerState(", "CandidateState(", 1)
    assert _PREVOTE_LOST.search(lost) and not _PREVOTE_LOST.search(won)
    assert _PREVOTE_LOST.search(lost.replace("FollowerState(", "UnattachedState(", 1))
