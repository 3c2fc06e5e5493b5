"""Membership and rebalance flows of the classic group protocol."""

from __future__ import annotations

import pytest

from kraftwire.group import Done, GroupConfig, GroupState, Pending
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.leave_group_request import MemberIdentity

from .harness import CFG, REBALANCE, SESSION, Harness

G = "g1"


def state(h: Harness, group: str = G) -> GroupState:
    return h.coord.groups[group].state


def test_single_member_join_sync_heartbeat() -> None:
    h = Harness()
    first = h.answer(h.join(G, client_id="app"))
    assert first.error_code == Errors.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("app-") and first.generation_id == -1
    mid = first.member_id
    parked = h.join(G, mid, client_id="app")
    assert isinstance(parked, Pending)
    assert state(h) is GroupState.PREPARING_REBALANCE
    # Nothing completes before the initial rebalance delay.
    assert h.coord.next_deadline() == h.now + CFG.initial_rebalance_delay_ms
    h.advance(CFG.initial_rebalance_delay_ms - 1)
    assert h.is_parked(parked)
    h.advance(1)
    resp = h.answer(parked)
    assert (resp.error_code, resp.generation_id, resp.member_id, resp.leader) == (0, 1, mid, mid)
    assert resp.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in resp.members] == [(mid, b"meta")]
    assert state(h) is GroupState.COMPLETING_REBALANCE
    sync = h.sync(G, mid, 1, assignments={mid: b"assign-0"})
    assert isinstance(sync, Done) and h.answer(sync).assignment == b"assign-0"
    assert state(h) is GroupState.STABLE
    assert h.heartbeat(G, mid, 1) == Errors.NONE


@pytest.mark.parametrize("n", [1, 2, 3])
def test_n_members_form_one_generation(n: int) -> None:
    h = Harness()
    pending = []
    ids = []
    for i in range(n):
        mid, res = h.join_new(G, client_id=f"c{i}")
        ids.append(mid)
        pending.append(res)
        h.advance(10)
    h.run_until_idle(limit_ms=CFG.initial_rebalance_delay_ms * 2)
    answers = [h.answer(r) for r in pending]
    leader = ids[0]
    assert all(a.generation_id == 1 and a.leader == leader for a in answers)
    assert [m.member_id for m in answers[0].members] == ids
    assert all(a.members == [] for a in answers[1:])
    # Followers' syncs park until the leader's assignment arrives; a member left out gets b"".
    follower_syncs = [h.sync(G, m, 1) for m in ids[1:]]
    assert all(h.is_parked(s) for s in follower_syncs)
    assignment = {m: f"a{i}".encode() for i, m in enumerate(ids) if i != n - 1 or n == 1}
    lead = h.sync(G, leader, 1, assignments=assignment)
    assert h.answer(lead).assignment == assignment.get(leader, b"")
    for m, s in zip(ids[1:], follower_syncs, strict=True):
        assert h.answer(s).assignment == assignment.get(m, b"")
    assert state(h) is GroupState.STABLE


def test_initial_delay_extends_while_members_arrive() -> None:
    h = Harness()
    _a, ra = h.join_new(G, client_id="a")
    t0 = h.now
    h.advance(80)
    _b, rb = h.join_new(G, client_id="b")
    h.advance(20)  # first delay ends at t0+100, but b arrived: wait another delay
    assert h.is_parked(ra) and h.is_parked(rb)
    assert h.coord.next_deadline() == t0 + 200
    h.advance_to_deadline()
    assert h.answer(ra).generation_id == h.answer(rb).generation_id == 1


def test_initial_delay_bounded_by_rebalance_timeout() -> None:
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=10))
    _a, ra = h.join_new(G, client_id="a", rebalance=150)
    t0 = h.now
    for i in range(5):  # a steady trickle of new members
        h.advance(60)
        h.join_new(G, client_id=f"x{i}", rebalance=150)
    assert not h.is_parked(ra)
    assert h.now - t0 <= 300


def test_join_v3_needs_no_member_id_round_trip() -> None:
    h = Harness()
    res = h.join(G, version=3, client_id="old")
    assert isinstance(res, Pending)
    h.advance_to_deadline()
    resp = h.answer(res)
    assert resp.error_code == 0 and resp.member_id.startswith("old-") and resp.leader == resp.member_id


def test_new_member_during_stable_triggers_rebalance() -> None:
    h = Harness()
    (a,), gen, _ = h.form_group(G, 1)
    b, rb = h.join_new(G, client_id="b")
    assert state(h) is GroupState.PREPARING_REBALANCE and h.is_parked(rb)
    assert h.heartbeat(G, a, gen) == Errors.REBALANCE_IN_PROGRESS
    # Committing is still allowed while preparing (the member learns via the heartbeat).
    assert h.commit(G, {("__cluster_metadata", 0): 5}, generation=gen, member_id=a) == {
        ("__cluster_metadata", 0): 0}
    ra = h.join(G, a)  # the last member to rejoin completes the rebalance at once
    assert isinstance(ra, Done)
    resp_a, resp_b = h.answer(ra), h.answer(rb)
    assert resp_a.generation_id == resp_b.generation_id == gen + 1
    assert resp_a.leader == a and {m.member_id for m in resp_a.members} == {a, b}
    assert resp_b.members == []
    # The old generation is now fenced.
    assert h.heartbeat(G, a, gen) == Errors.ILLEGAL_GENERATION


def test_follower_rejoin_in_stable_with_same_metadata_gets_current_generation() -> None:
    h = Harness()
    (a, b), gen, leader = h.form_group(G, 2)
    follower = b if leader == a else a
    resp = h.answer(h.join(G, follower))
    assert (resp.error_code, resp.generation_id, resp.leader, resp.members) == (0, gen, leader, [])
    assert state(h) is GroupState.STABLE


def test_leader_rejoin_in_stable_forces_rebalance() -> None:
    h = Harness()
    (a, b), gen, leader = h.form_group(G, 2)
    res = h.join(G, leader)
    assert h.is_parked(res) and state(h) is GroupState.PREPARING_REBALANCE


def test_session_expiry_removes_member_and_rebalances() -> None:
    h = Harness()
    (a, b), gen, _ = h.form_group(G, 2)
    for _ in range(2):
        h.advance(SESSION * 4 // 10)
        assert h.heartbeat(G, a, gen) == Errors.NONE
    h.advance(SESSION * 4 // 10)  # b's session ran out in between
    # b never heartbeated: it is gone and the group is rebalancing.
    assert set(h.coord.groups[G].members) == {a}
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(G, b, gen) == Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat(G, a, gen) == Errors.REBALANCE_IN_PROGRESS
    resp = h.answer(h.join(G, a))
    assert resp.generation_id == gen + 1 and [m.member_id for m in resp.members] == [a]


def test_member_not_rejoining_is_dropped_at_rebalance_timeout() -> None:
    h = Harness()
    (a, b), gen, _ = h.form_group(G, 2)
    ra = h.join(G, a, protocols=(("range", b"changed"),))  # new metadata: rebalance
    assert h.is_parked(ra)
    for _ in range(REBALANCE // 500):  # b keeps heartbeating but never rejoins
        h.advance(500)
        if G in h.coord.groups and b in h.coord.groups[G].members:
            h.heartbeat(G, b, gen)
    resp = h.answer(ra)
    assert resp.generation_id == gen + 1 and [m.member_id for m in resp.members] == [a]
    assert h.heartbeat(G, b, gen + 1) == Errors.UNKNOWN_MEMBER_ID


def test_new_member_parked_join_times_out() -> None:
    cfg = GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=10, new_member_join_timeout_ms=5_000)
    h = Harness(config=cfg)
    (a,), gen, _ = h.form_group(G, 1)
    # a stays alive by heartbeating but never rejoins, so the rebalance would wait its full 10 s
    # timeout; b's first join is bounded by the new-member join timeout instead.
    b, rb = h.join_new(G, client_id="b", rebalance=10_000)
    t0 = h.now
    for _ in range(5):
        h.advance(900)
        assert h.heartbeat(G, a, gen) == Errors.REBALANCE_IN_PROGRESS
    assert h.is_parked(rb)
    h.advance(t0 + 5_000 - h.now)
    resp = h.answer(rb)
    assert (resp.error_code, resp.member_id) == (Errors.UNKNOWN_MEMBER_ID, "")
    assert b not in h.coord.groups[G].members


def test_pending_member_expires_after_session_timeout() -> None:
    h = Harness()
    first = h.answer(h.join(G))
    assert first.member_id in h.coord.groups[G].pending_members
    h.advance(SESSION)
    assert first.member_id not in h.coord.groups[G].pending_members
    # Coming back with the expired id is refused; the client starts over.
    assert h.answer(h.join(G, first.member_id)).error_code == Errors.UNKNOWN_MEMBER_ID


def test_leave_v1_single_member_triggers_rebalance() -> None:
    h = Harness()
    (a, b), gen, _ = h.form_group(G, 2)
    assert h.leave(G, b, version=1).error_code == Errors.NONE
    assert state(h) is GroupState.PREPARING_REBALANCE
    assert h.leave(G, b, version=1).error_code == Errors.UNKNOWN_MEMBER_ID
    resp = h.answer(h.join(G, a))
    assert resp.generation_id == gen + 1 and [m.member_id for m in resp.members] == [a]


def test_leave_batch_v3_and_last_member_empties_group() -> None:
    h = Harness()
    (a, b), gen, _ = h.form_group(G, 2)
    resp = h.leave(G, a, b, "nobody", version=3)
    assert resp.error_code == 0
    assert [(m.member_id, m.error_code) for m in resp.members] == [
        (a, 0), (b, 0), ("nobody", Errors.UNKNOWN_MEMBER_ID)]
    h.run_until_idle(limit_ms=REBALANCE)
    g = h.coord.groups[G]
    assert g.state is GroupState.EMPTY and g.generation == gen + 1 and not g.members


def test_leave_unknown_group_and_pending_member() -> None:
    h = Harness()
    resp = h.leave("nope", "m", version=5)
    assert [(m.member_id, m.error_code) for m in resp.members] == [("m", Errors.UNKNOWN_MEMBER_ID)]
    pending_id = h.answer(h.join(G)).member_id
    assert h.leave(G, pending_id, version=4).members[0].error_code == 0
    assert not h.coord.groups[G].pending_members


def test_leaving_member_completes_a_rebalance_waiting_for_it() -> None:
    h = Harness()
    (a, b), gen, leader = h.form_group(G, 2)
    follower = b if leader == a else a
    rl = h.join(G, leader)  # leader rejoin starts a rebalance; follower has not rejoined
    assert h.is_parked(rl)
    resp = h.leave(G, follower, version=3)
    assert resp.members[0].error_code == 0
    joined = h.answer(rl)
    assert joined.generation_id == gen + 1 and [m.member_id for m in joined.members] == [leader]


def test_heartbeat_errors() -> None:
    h = Harness()
    assert h.heartbeat("unknown", "m", 1) == Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat("", "m", 1) == Errors.INVALID_GROUP_ID
    (a, b), gen, leader = h.form_group(G, 2)
    assert h.heartbeat(G, "stranger", gen) == Errors.UNKNOWN_MEMBER_ID
    assert h.heartbeat(G, a, gen + 5) == Errors.ILLEGAL_GENERATION
    assert h.heartbeat(G, a, gen - 1) == Errors.ILLEGAL_GENERATION
    # During CompletingRebalance heartbeats are fine.
    h.join(G, leader)
    h.join(G, b if leader == a else a)
    assert state(h) is GroupState.COMPLETING_REBALANCE
    assert h.heartbeat(G, a, gen + 1) == Errors.NONE


def test_sync_errors() -> None:
    h = Harness()
    assert h.answer(h.sync("unknown", "m", 1)).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync("", "m", 1)).error_code == Errors.INVALID_GROUP_ID
    (a, b), gen, leader = h.form_group(G, 2)
    assert h.answer(h.sync(G, a, gen + 1)).error_code == Errors.ILLEGAL_GENERATION
    assert h.answer(h.sync(G, "x", gen)).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.answer(h.sync(G, a, gen, version=5, protocol_name=None)).error_code == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.answer(h.sync(G, a, gen, version=5, protocol_name="other")).error_code == \
        Errors.INCONSISTENT_GROUP_PROTOCOL
    stable = h.answer(h.sync(G, a, gen, version=5))
    assert stable.error_code == 0 and (stable.protocol_type, stable.protocol_name) == ("consumer", "range")
    h.join(G, leader)
    assert h.answer(h.sync(G, a, gen)).error_code == Errors.REBALANCE_IN_PROGRESS


def test_rebalance_during_completing_answers_parked_syncs() -> None:
    h = Harness()
    (a, b), gen, leader = h.form_group(G, 2)
    h.join(G, leader)
    rf = h.join(G, b if leader == a else a)
    follower = h.answer(rf).member_id
    assert state(h) is GroupState.COMPLETING_REBALANCE
    parked = h.sync(G, follower, gen + 1)
    assert h.is_parked(parked)
    _c, _rc = h.join_new(G, client_id="late")  # a newcomer forces a new rebalance
    assert h.answer(parked).error_code == Errors.REBALANCE_IN_PROGRESS
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_member_that_never_syncs_is_removed() -> None:
    h = Harness()
    ids, res = [], []
    for i in range(2):
        mid, r = h.join_new(G, client_id=f"c{i}", session=5 * REBALANCE)
        ids.append(mid)
        res.append(r)
    h.settle(*res)
    gen = h.answer(res[0]).generation_id
    leader = h.answer(res[0]).leader
    h.sync(G, leader, gen, assignments={m: b"x" for m in ids})
    assert state(h) is GroupState.STABLE
    # The follower never sends SyncGroup; after the rebalance timeout it is evicted.
    h.advance(REBALANCE)
    assert set(h.coord.groups[G].members) == {leader}
    assert state(h) is GroupState.PREPARING_REBALANCE


def test_protocol_selection_by_vote() -> None:
    h = Harness()
    prefs = [(("range", b"r"), ("roundrobin", b"rr")), (("roundrobin", b"rr"), ("range", b"r")),
             (("roundrobin", b"rr"), ("sticky", b"s"), ("range", b"r"))]
    res = [h.join_new(G, client_id=f"c{i}", protocols=p)[1] for i, p in enumerate(prefs)]
    h.settle(*res)
    answers = [h.answer(r) for r in res]
    assert {a.protocol_name for a in answers} == {"roundrobin"}
    assert {m.metadata for m in answers[0].members} == {b"rr"}
    # A member sharing no protocol with the group, or with another protocol type, is refused.
    assert h.answer(h.join(G, protocols=(("sticky", b"s"),))).error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.answer(h.join(G, protocol_type="connect",
                           protocols=(("range", b"r"),))).error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_join_validation_errors() -> None:
    h = Harness(config=GroupConfig(min_session_timeout_ms=6000, max_session_timeout_ms=60_000))
    assert h.answer(h.join(G, session=100)).error_code == Errors.INVALID_SESSION_TIMEOUT
    assert h.answer(h.join(G, session=600_000)).error_code == Errors.INVALID_SESSION_TIMEOUT
    assert h.answer(h.join("", session=10_000)).error_code == Errors.INVALID_GROUP_ID
    assert h.answer(h.join("nope", "made-up", session=10_000)).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.answer(h.join(G, session=10_000, protocols=())).error_code == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size() -> None:
    h = Harness(config=GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=10, max_group_size=1))
    (a,), gen, _ = h.form_group(G, 1)
    resp = h.answer(h.join(G, version=3, client_id="extra"))
    assert resp.error_code == Errors.GROUP_MAX_SIZE_REACHED and resp.member_id == ""


def test_static_member_rejoin_keeps_generation_and_fences_old_id() -> None:
    h = Harness()
    _, r = h.join_new(G, version=7, instance="host-1", client_id="s")
    h.advance_to_deadline()
    first = h.answer(r)
    old_id, gen = first.member_id, first.generation_id
    assert old_id.startswith("host-1-")
    h.sync(G, old_id, gen, assignments={old_id: b"p0"}, instance="host-1")
    # The process restarts: same group.instance.id, no member id. No rebalance happens.
    again = h.answer(h.join(G, version=7, instance="host-1", client_id="s"))
    assert again.error_code == 0 and again.generation_id == gen and again.member_id != old_id
    assert again.leader == old_id  # pre-v9: the old leader id, so the member does not reassign
    assert state(h) is GroupState.STABLE
    assert h.answer(h.sync(G, again.member_id, gen, instance="host-1")).assignment == b"p0"
    assert h.heartbeat(G, old_id, gen, instance="host-1") == Errors.FENCED_INSTANCE_ID
    assert h.heartbeat(G, again.member_id, gen, instance="host-1") == Errors.NONE
    # v9 leader gets the member list and SkipAssignment.
    v9 = h.answer(h.join(G, version=9, instance="host-1", client_id="s"))
    assert v9.skip_assignment and v9.leader == v9.member_id and len(v9.members) == 1
    # Leaving by instance id alone removes it.
    resp = h.leave(G, identities=[MemberIdentity(member_id="", group_instance_id="host-1")], version=4)
    assert resp.members[0].error_code == 0 and not h.coord.groups[G].members


def test_static_member_not_rejoining_is_kept_through_rebalance() -> None:
    h = Harness()
    _, rs = h.join_new(G, version=5, instance="st", client_id="s", session=5 * REBALANCE)
    dyn, rd = h.join_new(G, version=5, client_id="d")
    h.settle(rs, rd)
    st_id = h.answer(rs).member_id
    gen = h.answer(rs).generation_id
    h.sync(G, h.answer(rs).leader, gen)
    h.sync(G, dyn, gen)
    rejoin = h.join(G, dyn, protocols=(("range", b"new"),))
    h.advance(REBALANCE)  # static member did not rejoin before the timeout
    resp = h.answer(rejoin)
    assert resp.generation_id == gen + 1
    assert st_id in h.coord.groups[G].members


def test_duplicate_join_answers_the_superseded_request() -> None:
    h = Harness()
    mid, r1 = h.join_new(G)
    r2 = h.join(G, mid)
    assert h.answer(r1).error_code == Errors.REBALANCE_IN_PROGRESS
    h.advance_to_deadline()
    assert h.answer(r2).error_code == 0


def test_completions_are_delivered_exactly_once_and_deadline_is_exact() -> None:
    h = Harness()
    assert h.coord.next_deadline() is None or h.coord.next_deadline() > h.now
    mid, r = h.join_new(G)
    deadline = h.coord.next_deadline()
    assert h.coord.tick(deadline - 1) == []
    done = h.coord.tick(deadline)
    assert [c.key for c in done] == [r.key]
    assert h.coord.tick(deadline) == []
