"""Every advertised version of every group API: requests decode, responses encode (via the harness)."""

from __future__ import annotations

import pytest

from kraftwire.group import GROUP_APIS, GroupState
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.describe_groups_request import DescribeGroupsRequest
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.protocol.messages.list_groups_request import ListGroupsRequest

from .harness import CFG, META, Harness, roundtrip

G = "vg"


def versions(api_key: int) -> list[int]:
    lo, hi = GROUP_APIS[api_key]
    return list(range(lo, hi + 1))


def test_advertised_ranges_cover_what_clients_send() -> None:
    # From docs clients.md: the versions kafka-python, aiokafka, librdkafka, kcat, Java and kafkajs pick.
    used = {10: (1, 6), 11: (5, 9), 14: (3, 5), 12: (1, 4), 9: (3, 9), 8: (3, 9), 13: (1, 5)}
    for key, (lo, hi) in used.items():
        assert GROUP_APIS[key][0] <= lo and hi <= GROUP_APIS[key][1]


@pytest.mark.parametrize("version", versions(11))
def test_join_group_every_version(version: int) -> None:
    h = Harness()
    static = version >= 5
    kw = {"instance": "inst-a"} if static else {}
    _, ra = h.join_new(G, version=version, client_id="a", **kw)
    _, rb = h.join_new(G, version=version, client_id="b")
    h.settle(ra, rb)
    a, b = h.answer(ra), h.answer(rb)
    assert a.error_code == b.error_code == 0 and a.generation_id == 1
    assert a.protocol_name == "range"
    assert a.protocol_type == ("consumer" if version >= 7 else None)
    assert len(a.members) == 2 and b.members == []
    if static:
        assert {m.group_instance_id for m in a.members} == {"inst-a", None}
    # Error answers encode too.
    assert h.answer(h.join(G, version=version, session=1)).error_code == Errors.INVALID_SESSION_TIMEOUT
    assert h.answer(h.join(G, "bogus", version=version)).error_code == Errors.UNKNOWN_MEMBER_ID
    sync_v = min(version, 5)
    rs = h.sync(G, b.member_id, 1, version=sync_v)
    ls = h.sync(G, a.member_id, 1, version=sync_v, instance=kw.get("instance"),
                assignments={a.member_id: b"A", b.member_id: b"B"})
    assert (h.answer(ls).assignment, h.answer(rs).assignment) == (b"A", b"B")


@pytest.mark.parametrize("version", versions(14))
def test_sync_group_every_version(version: int) -> None:
    h = Harness()
    (a,), gen, _ = h.form_group(G, 1, sync_version=version, assignments={0: b"x"})
    ok = h.answer(h.sync(G, a, gen, version=version))
    assert ok.error_code == 0 and ok.assignment == b"x"
    assert (ok.protocol_type, ok.protocol_name) == (("consumer", "range") if version >= 5 else (None, None))
    assert h.answer(h.sync(G, a, gen + 3, version=version)).error_code == Errors.ILLEGAL_GENERATION


@pytest.mark.parametrize("version", versions(12))
def test_heartbeat_every_version(version: int) -> None:
    h = Harness()
    (a,), gen, _ = h.form_group(G, 1)
    assert h.heartbeat(G, a, gen, version=version) == 0
    assert h.heartbeat(G, a, gen + 1, version=version) == Errors.ILLEGAL_GENERATION
    assert h.heartbeat(G, "nobody", gen, version=version) == Errors.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", versions(13))
def test_leave_group_every_version(version: int) -> None:
    h = Harness()
    (a, b), gen, _ = h.form_group(G, 2)
    if version >= 3:
        resp = h.leave(G, a, "ghost", version=version)
        assert [(m.member_id, m.error_code) for m in resp.members] == [(a, 0), ("ghost", Errors.UNKNOWN_MEMBER_ID)]
    else:
        assert h.leave(G, a, version=version).error_code == 0
        assert h.leave(G, "ghost", version=version).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.coord.groups[G].state is GroupState.PREPARING_REBALANCE


@pytest.mark.parametrize("version", versions(8))
def test_offset_commit_every_version(version: int) -> None:
    h = Harness()
    if version >= 10:   # topic ids: an id this node does not know is UNKNOWN_TOPIC_ID (Kafka 4.x)
        from .harness import topic_id
        want = {(META, 0): 0, (f"id:{topic_id('nope')}", 0): Errors.UNKNOWN_TOPIC_ID}
    else:
        want = {(META, 0): 0, ("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert h.commit(G, {(META, 0): 11, ("nope", 0): 1}, version=version) == want
    if version >= 1:
        (a,), gen, _ = h.form_group("members", 1)
        assert h.commit("members", {(META, 0): 12}, generation=gen, member_id=a, version=version) == {(META, 0): 0}
        assert h.commit("members", {(META, 0): 12}, generation=gen + 1, member_id=a, version=version) == {
            (META, 0): Errors.ILLEGAL_GENERATION}
    assert h.coord.committed(G)[(META, 0)].offset == 11


@pytest.mark.parametrize("version", versions(9))
def test_offset_fetch_every_version(version: int) -> None:
    h = Harness()
    h.commit(G, {(META, 0): 5}, leader_epoch=2, metadata="md", version=7)
    epoch = 2 if version >= 5 else -1
    assert h.fetch(G, {META: [0, 3]}, version=version) == {
        (META, 0): (5, epoch, "md", 0), (META, 3): (-1, -1, "", 0)}
    if version >= 2:
        assert h.fetch(G, None, version=version) == {(META, 0): (5, epoch, "md", 0)}
    if version >= 10:
        from .harness import topic_id
        assert h.fetch(G, {"gone": [1]}, version=version) == {
            (f"id:{topic_id('gone')}", 1): (-1, -1, "", Errors.UNKNOWN_TOPIC_ID)}


@pytest.mark.parametrize("version", versions(10))
def test_find_coordinator_every_version(version: int) -> None:
    h = Harness()
    if version >= 4:
        resp = h.done(10, FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]), version)
        assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in resp.coordinators] == [
            ("g1", 7, CFG.host, CFG.port, 0), ("g2", 7, CFG.host, CFG.port, 0)]
        txn = h.done(10, FindCoordinatorRequest(key_type=1, coordinator_keys=["t"]), version)
        assert [(c.error_code, c.node_id) for c in txn.coordinators] == [(Errors.COORDINATOR_NOT_AVAILABLE, -1)]
    else:
        resp = h.done(10, FindCoordinatorRequest(key="g1"), version)
        assert (resp.error_code, resp.node_id, resp.host, resp.port) == (0, 7, CFG.host, CFG.port)
        if version >= 1:
            txn = h.done(10, FindCoordinatorRequest(key="t", key_type=1), version)
            assert (txn.error_code, txn.node_id, txn.port) == (Errors.COORDINATOR_NOT_AVAILABLE, -1, -1)


@pytest.mark.parametrize("version", versions(16))
def test_list_groups_every_version(version: int) -> None:
    h = Harness()
    h.form_group("s", 1)
    h.commit("e", {(META, 0): 1})
    resp = h.done(16, ListGroupsRequest(), version)
    got = [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in resp.groups]
    state = (lambda s: s) if version >= 4 else (lambda s: "")
    gtype = "classic" if version >= 5 else ""
    assert got == [("e", "", state("Empty"), gtype), ("s", "consumer", state("Stable"), gtype)]
    if version >= 4:
        only = h.done(16, ListGroupsRequest(states_filter=["stable"]), version)
        assert [g.group_id for g in only.groups] == ["s"]
    if version >= 5:
        assert h.done(16, ListGroupsRequest(types_filter=["consumer"]), version).groups == []
        assert len(h.done(16, ListGroupsRequest(types_filter=["Classic"]), version).groups) == 2


@pytest.mark.parametrize("version", versions(15))
def test_describe_groups_every_version(version: int) -> None:
    h = Harness()
    (a, b), gen, _ = h.form_group("s", 2, assignments={0: b"A0", 1: b"B1"})
    h.join_new("p", client_id="p")
    req = DescribeGroupsRequest(groups=["s", "p", "missing"], include_authorized_operations=version >= 3)
    resp = h.done(15, req, version)
    s, p, missing = resp.groups
    assert (s.group_state, s.protocol_type, s.protocol_data) == ("Stable", "consumer", "range")
    assert sorted((m.member_id, m.client_id, m.client_host, m.member_metadata, m.member_assignment)
                  for m in s.members) == sorted([(a, "c0", "/127.0.0.1", b"meta", b"A0"),
                                                 (b, "c1", "/127.0.0.1", b"meta", b"B1")])
    assert (p.group_state, p.protocol_data, [m.member_metadata for m in p.members]) == (
        "PreparingRebalance", "", [b""])
    # v6 (KIP-1043): a missing group is GROUP_ID_NOT_FOUND with Kafka 4.x's message; before, just "Dead"
    want = (69, "Group missing not found.") if version >= 6 else (0, None)
    assert (missing.error_code, missing.error_message, missing.group_state, missing.members) == (*want, "Dead", [])
    if version >= 3:
        assert s.authorized_operations > 0


def test_generic_dispatch_rejects_other_keys() -> None:
    h = Harness()
    with pytest.raises(ValueError):
        h.coord.handle(h.now, 3, 0, None)


def test_roundtrip_helper_detects_unencodable() -> None:
    from kraftwire.protocol.messages.join_group_response import JoinGroupResponse

    with pytest.raises(Exception):  # noqa: B017 - any encode error
        roundtrip(JoinGroupResponse(skip_assignment=True), 8)
