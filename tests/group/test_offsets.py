"""OffsetCommit / OffsetFetch validation, durability across restarts, retention."""

from __future__ import annotations

from kraftwire.group import FileOffsetStore, GroupConfig, GroupState, MemoryOffsetStore
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.list_groups_request import ListGroupsRequest
from kraftwire.protocol.messages.offset_fetch_request import OffsetFetchRequest, OffsetFetchRequestGroup

from .harness import CFG, META, Harness

G = "g1"
TP = (META, 0)


def test_simple_commit_without_group_management() -> None:
    h = Harness()
    assert h.commit(G, {TP: 42}, metadata="hello", leader_epoch=3) == {TP: 0}
    assert h.coord.groups[G].state is GroupState.EMPTY
    assert h.fetch(G, {META: [0]}) == {TP: (42, 3, "hello", 0)}
    assert h.store.syncs == 1  # fsynced before the response


def test_commit_unknown_topics_and_partitions() -> None:
    h = Harness()
    errs = h.commit(G, {TP: 1, (META, 1): 2, ("orders", 0): 3})
    assert errs == {TP: 0, (META, 1): Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    ("orders", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert set(h.coord.committed(G)) == {TP}
    # Only unknown partitions: nothing is created at all.
    assert h.commit("other", {("orders", 0): 1}) == {("orders", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert "other" not in h.coord.groups


def test_member_commit_validation() -> None:
    h = Harness()
    (a, b), gen, _ = h.form_group(G, 2)
    assert h.commit(G, {TP: 10}, generation=gen, member_id=a) == {TP: 0}
    assert h.commit(G, {TP: 11}, generation=gen + 1, member_id=a) == {TP: Errors.ILLEGAL_GENERATION}
    assert h.commit(G, {TP: 11}, generation=gen, member_id="who") == {TP: Errors.UNKNOWN_MEMBER_ID}
    # A non-member commit (generation -1) while the group has members is refused.
    assert h.commit(G, {TP: 11}) == {TP: Errors.UNKNOWN_MEMBER_ID}
    # A generation for a group that does not exist.
    assert h.commit("ghost", {TP: 1}, generation=3, member_id="m") == {TP: Errors.ILLEGAL_GENERATION}
    assert h.fetch(G, {META: [0]})[TP][0] == 10


def test_commit_during_completing_rebalance() -> None:
    h = Harness()
    (a, b), gen, leader = h.form_group(G, 2)
    h.join(G, a)
    h.join(G, b)
    assert h.coord.groups[G].state is GroupState.COMPLETING_REBALANCE
    assert h.commit(G, {TP: 5}, generation=gen + 1, member_id=a) == {TP: Errors.REBALANCE_IN_PROGRESS}


def test_commit_refreshes_member_session() -> None:
    h = Harness()
    (a,), gen, _ = h.form_group(G, 1)
    for _ in range(5):
        h.advance(600)
        assert h.commit(G, {TP: 1}, generation=gen, member_id=a) == {TP: 0}
    assert a in h.coord.groups[G].members


def test_metadata_too_large_and_null_metadata() -> None:
    h = Harness(config=GroupConfig(offset_metadata_max_bytes=8))
    assert h.commit(G, {TP: 1}, metadata="x" * 9) == {TP: Errors.OFFSET_METADATA_TOO_LARGE}
    assert h.coord.committed(G) == {}
    assert h.commit(G, {TP: 2}, metadata=None) == {TP: 0}
    assert h.fetch(G, {META: [0]})[TP] == (2, -1, "", 0)


def test_store_failure_is_not_acknowledged() -> None:
    h = Harness()
    h.store.fail_next = OSError("disk full")
    assert h.commit(G, {TP: 9}) == {TP: Errors.COORDINATOR_NOT_AVAILABLE}
    assert h.fetch(G, {META: [0]})[TP][0] == -1


def test_fetch_all_partitions_and_unknowns() -> None:
    h = Harness(config=GroupConfig(partition_exists=lambda t, p: t in ("a", "b")))
    h.commit(G, {("b", 1): 7, ("a", 0): 3, ("a", 2): 4})
    expected = {("a", 0): (3, -1, "", 0), ("a", 2): (4, -1, "", 0), ("b", 1): (7, -1, "", 0)}
    for version in (3, 7, 8, 9):
        assert h.fetch(G, None, version=version) == expected
    assert h.fetch(G, {"a": [0, 1], "zz": [0]}) == {
        ("a", 0): (3, -1, "", 0), ("a", 1): (-1, -1, "", 0), ("zz", 0): (-1, -1, "", 0)}
    assert h.fetch("nobody", None) == {}


def test_fetch_multi_group_v8() -> None:
    h = Harness()
    h.commit("x", {TP: 1})
    h.commit("y", {TP: 2})
    resp = h.done(9, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="x", topics=None),
                                                 OffsetFetchRequestGroup(group_id="y", topics=None)]), 8)
    assert [(g.group_id, g.topics[0].partitions[0].committed_offset) for g in resp.groups] == [("x", 1), ("y", 2)]


def test_offsets_and_generation_survive_restart(tmp_path) -> None:
    h = Harness(store=FileOffsetStore(tmp_path))
    (a,), gen, _ = h.form_group(G, 1)
    assert h.commit(G, {TP: 100}, generation=gen, member_id=a, metadata="m") == {TP: 0}
    h.commit("simple", {TP: 7})
    h.restart(FileOffsetStore(tmp_path))
    g = h.coord.groups[G]
    # Members do not survive; the group comes back empty with its generation and protocol type.
    assert (g.state, g.generation, g.protocol_type, g.members) == (GroupState.EMPTY, gen, "consumer", {})
    assert h.fetch(G, {META: [0]})[TP] == (100, -1, "m", 0)
    assert h.fetch("simple", None)[TP][0] == 7
    # The old member is unknown now: its heartbeat and commits say so, and it rejoins.
    assert h.heartbeat(G, a, gen) == Errors.UNKNOWN_MEMBER_ID
    assert h.commit(G, {TP: 101}, generation=gen, member_id=a) == {TP: Errors.UNKNOWN_MEMBER_ID}
    (_a2,), gen2, _ = h.form_group(G, 1)
    assert gen2 == gen + 1


def test_restart_with_memory_store() -> None:
    store = MemoryOffsetStore()
    h = Harness(store=store)
    h.commit(G, {TP: 5})
    h.restart()
    assert h.coord.committed(G)[TP].offset == 5


def test_retention_expires_offsets_of_empty_groups() -> None:
    cfg = GroupConfig(initial_rebalance_delay_ms=100, min_session_timeout_ms=10, offsets_retention_ms=60_000,
                      offsets_retention_check_interval_ms=10_000)
    h = Harness(config=cfg)
    h.commit("old", {TP: 1})
    (a,), gen, _ = h.form_group("live", 1)
    h.commit("live", {TP: 2}, generation=gen, member_id=a)
    for _ in range(100):  # 50 s: "old" is within retention
        h.advance(500)
        h.heartbeat("live", a, gen)
    assert h.coord.committed("old")[TP].offset == 1
    for _ in range(60):  # 80 s in all: past retention plus a check interval
        h.advance(500)
        h.heartbeat("live", a, gen)
    assert "old" not in h.coord.groups and h.coord.committed("old") == {}
    assert h.coord.committed("live")[TP].offset == 2  # a group with members keeps its offsets
    listed = h.done(16, ListGroupsRequest(), 3)
    assert [g.group_id for g in listed.groups] == ["live"]
    h.restart()  # the expiry was persisted as tombstones
    assert "old" not in h.coord.groups and h.coord.committed("live")[TP].offset == 2


def test_default_config_matches_kafka() -> None:
    d = GroupConfig()
    assert (d.initial_rebalance_delay_ms, d.min_session_timeout_ms, d.max_session_timeout_ms) == (3000, 6000, 1_800_000)
    c = GroupConfig.from_properties({"group.initial.rebalance.delay.ms": "0", "offsets.retention.minutes": 1},
                                    host="h", port=1)
    assert (c.initial_rebalance_delay_ms, c.offsets_retention_ms, c.host) == (0, 60_000, "h")
    assert CFG.partition_exists(META, 0) and not CFG.partition_exists(META, 1)
