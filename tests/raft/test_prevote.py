"""Pre-vote (KIP-996, Kafka 4.x): Prospective state, Vote with PreVote=true, fallback to Vote v1 peers."""

from __future__ import annotations

from dataclasses import replace

from raft_helpers import CFG, CID, elect, make, requests, responses, vote_ok

from kraftwire.protocol.errors import Errors
from kraftwire.raft import ElectionState
from kraftwire.raft import messages as m

VOTERS = frozenset({1, 2, 3})


def prevote(epoch: int, candidate: int = 2, last_epoch: int = 0, last_offset: int = 0) -> m.VoteRequest:
    return m.VoteRequest(CID, epoch, candidate, last_epoch, last_offset, pre_vote=True)


def answer(outputs: list[m.Output]) -> m.VotePartition:
    (r,) = responses(outputs)
    assert r.msg.partition is not None
    return r.msg.partition


def follower_of_2(epoch: int = 4):
    """Node 1 following node 2 in ``epoch``, having just fetched from it at t=100."""
    core, log, store, rec = make(state=ElectionState(epoch, 2, None, VOTERS))
    out = core.tick(0)
    (f,) = requests(out, m.FetchRequest)
    core.handle_response(100, f.request_id, m.FetchResponse(0, m.FetchPartition(
        0, 0, 0, current_leader=m.LeaderIdAndEpoch(2, epoch))))
    return core, log, store, rec


def test_timer_fires_prospective_asks_pre_votes_without_bumping_or_persisting():
    core, _, store, rec = follower_of_2()
    out = core.tick(100 + CFG.fetch_timeout_ms)
    assert core.state_name == "prospective" and core.epoch == 4
    assert store.read() == ElectionState(4, 2, None, VOTERS)          # nothing new persisted
    reqs = requests(out, m.VoteRequest)
    assert sorted(r.dest_id for r in reqs) == [2, 3]
    assert all(r.msg.pre_vote and r.msg.candidate_epoch == 4 for r in reqs)
    assert rec.leaders[-1] == (2, 4)                                   # the listener saw no leader change


def test_pre_vote_majority_makes_a_candidate_in_the_next_epoch():
    core, _, store, _ = follower_of_2()
    out = core.tick(100 + CFG.fetch_timeout_ms)
    core.handle_response(2200, requests(out, m.VoteRequest)[0].request_id, vote_ok(4))
    assert core.state_name == "candidate" and core.epoch == 5
    assert store.read() == ElectionState(5, None, 1, VOTERS)


def test_pre_vote_rejected_by_a_majority_goes_back_to_following_the_same_leader():
    core, *_ = follower_of_2()
    out = core.tick(100 + CFG.fetch_timeout_ms)
    for r in requests(out, m.VoteRequest):
        core.handle_response(2200, r.request_id, vote_ok(4, granted=False))
    assert core.state_name == "follower" and core.leader_id == 2 and core.epoch == 4
    assert core.state.fetch_deadline > 2200


def test_pre_vote_timeout_goes_back_without_an_epoch_bump_forever():
    core, *_ = follower_of_2()
    now = 100
    for _ in range(20):                          # cut off: every pre-vote times out
        now = core.next_deadline()
        for r in requests(core.tick(now), m.VoteRequest):
            core.handle_request_failed(now + 1, r.request_id)
    assert core.epoch == 4 and core.state_name in ("follower", "prospective")


def test_follower_with_a_healthy_leader_rejects_pre_votes_and_changes_nothing():
    core, _, store, _ = follower_of_2()
    before = store.read()
    assert not answer(core.handle_request(150, 1, 3, prevote(4))).vote_granted
    assert core.state_name == "follower" and store.read() == before
    # Silent for the shortest fetch timeout: the leader looks gone, the pre-vote is granted.
    p = answer(core.handle_request(100 + CFG.fetch_timeout_ms - 1, 2, 3, prevote(4)))
    assert core.state_name == "follower"  # with no jitter the timer has not fired yet
    quiet = replace(CFG, fetch_timeout_jitter=0.5)
    core2, *_ = make(state=ElectionState(4, 2, None, VOTERS), config=quiet)
    core2.tick(0)
    assert answer(core2.handle_request(10, 1, 3, prevote(4))).vote_granted   # never fetched yet
    assert not p.vote_granted


def test_unattached_and_voted_grant_pre_votes_without_recording_a_vote():
    core, _, store, _ = make(state=ElectionState(4, None, 3, VOTERS))
    assert answer(core.handle_request(0, 1, 2, prevote(4))).vote_granted      # voted for 3, still "would vote"
    assert store.read() == ElectionState(4, None, 3, VOTERS)
    assert not answer(core.handle_request(0, 2, 2, m.VoteRequest(CID, 4, 2, 0, 0))).vote_granted  # the real one


def test_pre_vote_with_a_stale_log_is_rejected_and_a_stale_epoch_fenced():
    core, *_ = make(batches=[(3, 2)], state=ElectionState(4, None, None, VOTERS))
    assert not answer(core.handle_request(0, 1, 2, prevote(4, last_epoch=2, last_offset=9))).vote_granted
    p = answer(core.handle_request(0, 2, 2, prevote(3, last_epoch=3, last_offset=2)))
    assert p.error_code == Errors.FENCED_LEADER_EPOCH and p.leader_epoch == 4


def test_leader_rejects_pre_votes():
    core, *_ = make()
    now = elect(core)
    assert not answer(core.handle_request(now, 9, 2, prevote(core.epoch, last_epoch=core.epoch, last_offset=99))).vote_granted
    assert core.is_leader


def test_voter_without_vote_v2_makes_the_prospective_stand_at_once():
    core, *_ = follower_of_2()
    out = core.tick(100 + CFG.fetch_timeout_ms)
    r = requests(out, m.VoteRequest)[0]
    out = core.handle_response(2200, r.request_id, m.VoteResponse(int(Errors.UNSUPPORTED_VERSION)))
    assert core.state_name == "candidate" and core.epoch == 5
    assert all(not v.msg.pre_vote for v in requests(out, m.VoteRequest))


def test_pre_vote_disabled_stands_at_once_like_kafka_3_9():
    core, *_ = make(config=replace(CFG, pre_vote=False))
    out = core.tick(5000)
    assert core.state_name == "candidate" and core.epoch == 1
    assert all(not r.msg.pre_vote for r in requests(out, m.VoteRequest))


def test_end_quorum_epoch_lets_followers_grant_the_successor_pre_vote():
    core, *_ = follower_of_2()
    assert not answer(core.handle_request(150, 1, 3, prevote(4))).vote_granted
    core.handle_request(160, 2, 2, m.EndQuorumEpochRequest(CID, 2, 4, (3, 1)))
    assert answer(core.handle_request(170, 3, 3, prevote(4))).vote_granted


def test_former_leader_that_loses_its_pre_vote_is_resigned_again_and_restarts_resigned():
    core, log, store, _ = make()
    now = elect(core)
    core.resign(now)
    core.state.shutting_down = False
    now = core.next_deadline()
    out = core.tick(now)
    assert core.state_name == "prospective" and store.read().leader_id == 1
    for r in requests(out, m.VoteRequest):
        core.handle_response(now + 1, r.request_id, vote_ok(1, granted=False))
    assert core.state_name == "resigned" and core.epoch == 1


def test_pre_vote_on_the_wire_needs_vote_v2():
    import pytest

    from kraftwire.core import raft_wire as wire
    from kraftwire.protocol.messages import vote_request as vq

    req = prevote(4, last_epoch=3, last_offset=10)
    body = wire.request_to_wire(req, 2)
    decoded = vq.VoteRequest.decode(body.encode(2), 2)
    source, back = wire.request_from_wire(52, decoded, 2)
    assert source == 2 and back.pre_vote and back.candidate_epoch == 4 and back.last_offset == 10
    with pytest.raises(wire.WireError) as e:     # a Kafka 3.9 peer (Vote v0-v1) cannot carry it
        wire.request_to_wire(req, 1)
    assert e.value.error == Errors.UNSUPPORTED_VERSION
    real = wire.request_to_wire(replace(req, pre_vote=False), 1)
    assert not wire.request_from_wire(52, vq.VoteRequest.decode(real.encode(1), 1), 1)[1].pre_vote


def test_vote_v2_and_kraft_version_1_are_advertised():
    from kraftwire.core.api_registry import RAFT_APIS
    from kraftwire.metadata.features import KRAFT_VERSION, SUPPORTED_FEATURES

    assert RAFT_APIS[52] == (0, 2)                      # Kafka 4.x peers may send pre-votes
    assert SUPPORTED_FEATURES[KRAFT_VERSION] == (0, 1)  # dynamic quorums with voter changes (KIP-853)


def test_a_controller_on_bootstrap_servers_alone_takes_its_voters_from_its_log():
    import pytest

    from kraftwire.config import ConfigError, load_config

    props = {"process.roles": "controller", "node.id": "1", "listeners": "CONTROLLER://127.0.0.1:19091",
             "controller.listener.names": "CONTROLLER", "controller.quorum.bootstrap.servers": "127.0.0.1:19091"}
    assert load_config(props).voters == []      # filled from the log's VotersRecord at start (KIP-853)
    del props["controller.quorum.bootstrap.servers"]
    with pytest.raises(ConfigError, match="controller.quorum.voters: required"):
        load_config(props)


def test_vote_floor_after_a_damaged_tail_votes_only_that_far_and_never_stands():
    core, log, store, _ = make(batches=[(1, 4)], state=ElectionState(3, None, None, VOTERS), now=0)
    core._vote_floor = (3, 9)   # the shell dropped a batch of epoch <= 3 that ended the log at 9
    core.tick(10_000)
    assert core.state_name == "unattached" and core.next_deadline() is None     # never stands
    assert not answer(core.handle_request(10_001, 1, 2, m.VoteRequest(CID, 4, 2, 1, 4))).vote_granted
    assert not answer(core.handle_request(10_002, 2, 2, prevote(3, last_epoch=3, last_offset=8))).vote_granted
    assert answer(core.handle_request(10_003, 3, 3, m.VoteRequest(CID, 4, 3, 3, 9))).vote_granted
    # A leader of epoch 4 brings the log past the floor: an ordinary voter again.
    out = core.handle_request(10_004, 4, 3, m.BeginQuorumEpochRequest(CID, 3, 4)) + core.tick(10_005)
    (f,) = requests(out, m.FetchRequest)
    from kraftwire.protocol.records import Record, RecordBatch
    batch = RecordBatch(4, 4, [Record(value=b"y")] * 5)
    core.handle_response(10_006, f.request_id, m.FetchResponse(0, m.FetchPartition(
        0, 9, 0, current_leader=m.LeaderIdAndEpoch(3, 4), batches=[batch])))
    assert log.end_offset == 9 and core.vote_floor is None and core.can_stand
