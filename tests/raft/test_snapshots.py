"""KIP-630 in the Raft core: Fetch answered with a SnapshotId, FetchSnapshot serving and its errors,
the follower's download / install / resume, listener hand-over, and snapshot creation rules."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from raft_helpers import CFG, CID, Recorder, elect, fetch, fetch_partition, make, requests, responses

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.records import Record
from kraftwire.raft import ElectionState, MemoryStateStore, RaftCore, SnapshotId
from kraftwire.raft import messages as m
from kraftwire.raft.snapshot import data_batches, encode, frame

VOTERS = frozenset({1, 2, 3})
FOLLOWER_CFG = replace(CFG, fetch_max_wait_ms=0, fetch_snapshot_max_bytes=50)


def state_image(values: list[bytes]) -> list[Record]:
    return [Record(value=v) for v in values]


def snapshotting_leader():
    """Leader 1 of epoch 2 whose log was cleaned below a snapshot; two records follow it."""
    core, log, _, listener = make(batches=[(1, 4)])
    now = elect(core)                                   # epoch 2, LeaderChange at offset 4
    core.append(now, [Record(value=b"a%d" % i) for i in range(3)])
    now += core.config.append_linger_ms
    core.tick(now)                                      # offsets 5..7
    fetch(core, now, 1, 2, log.end_offset, 2)
    assert core.hw == 8
    sid = SnapshotId(8, 2)
    content = frame(sid, state_image([b"image-at-8"]))
    core.create_snapshot(sid, content)
    core.delete_before(sid)
    assert log.start_offset == log.end_offset == 8
    core.append(now, [Record(value=b"b0"), Record(value=b"b1")])
    now += core.config.append_linger_ms
    core.tick(now)                                      # offsets 8..9
    fetch(core, now, 2, 2, 10, 2)
    assert core.hw == 10
    return core, log, listener, now, sid, content


def fetch_snapshot(core: RaftCore, now: int, rid: int, *, epoch: int | None = None, sid=(8, 2), position: int = 0,
                   max_bytes: int = 1 << 20, cluster_id: str | None = CID, replica: int = 2
                   ) -> m.FetchSnapshotResponse:
    req = m.FetchSnapshotRequest(cluster_id, replica, core.epoch if epoch is None else epoch,
                                 m.SnapshotIdField(*sid), position, max_bytes)
    (resp,) = responses(core.handle_request(now, rid, replica, req), core.log)
    assert isinstance(resp.msg, m.FetchSnapshotResponse)
    return resp.msg


# ---------------------------------------------------------------------------- leader: Fetch
def test_fetch_below_log_start_gets_the_latest_snapshot_id():
    core, log, _, now, sid, _ = snapshotting_leader()
    p = fetch_partition(fetch(core, now, 10, 3, 0, 0))
    assert p.error_code == 0 and p.snapshot_id == m.SnapshotIdField(8, 2)
    assert p.batches == [] and p.diverging_epoch is None
    assert p.high_watermark == 10 and p.log_start_offset == 8
    assert core.state.voters[3].end_offset is None  # a snapshot answer is no replication progress


def test_fetch_at_log_start_is_served_when_it_ends_the_snapshot_of_its_epoch():
    core, log, _, now, sid, _ = snapshotting_leader()
    p = fetch_partition(fetch(core, now, 10, 3, 8, 2))
    assert p.snapshot_id is None and p.diverging_epoch is None
    assert [r.value for b in p.batches for r in b.records] == [b"b0", b"b1"]


def test_fetch_at_log_start_with_another_epoch_gets_the_snapshot():
    core, log, _, now, sid, _ = snapshotting_leader()
    assert fetch_partition(fetch(core, now, 10, 3, 8, 1)).snapshot_id == m.SnapshotIdField(8, 2)


def test_fetch_with_an_epoch_older_than_the_log_holds_gets_the_snapshot():
    core, log, _, now, sid, _ = snapshotting_leader()
    # Offset 9 with last epoch 1: where epoch 1 ended is no longer known here.
    assert fetch_partition(fetch(core, now, 10, 3, 9, 1)).snapshot_id == m.SnapshotIdField(8, 2)


def test_fetch_past_the_log_with_a_held_epoch_still_diverges():
    core, log, _, now, sid, _ = snapshotting_leader()
    p = fetch_partition(fetch(core, now, 10, 3, 15, 2))
    assert p.snapshot_id is None and p.diverging_epoch == m.EpochEndOffset(2, 10)


def test_snapshot_not_yet_cleaned_leaves_fetches_from_the_log():
    core, log, _, listener = make(batches=[(1, 4)])
    now = elect(core)
    fetch(core, now, 1, 2, 5, 2)
    sid = SnapshotId(5, 2)
    core.create_snapshot(sid, frame(sid, []))
    p = fetch_partition(fetch(core, now, 2, 3, 0, 0))
    assert p.snapshot_id is None and p.batches[0].base_offset == 0


# ---------------------------------------------------------------------------- leader: FetchSnapshot
def test_fetch_snapshot_serves_chunks_of_the_snapshot_bytes():
    core, log, _, now, sid, content = snapshotting_leader()
    data = encode(content)
    got, pos = b"", 0
    while pos < len(data):
        resp = fetch_snapshot(core, now, 20 + pos, position=pos, max_bytes=40)
        p = resp.partition
        assert resp.error_code == 0 and p.error_code == 0
        assert (p.snapshot_id, p.size, p.position) == (m.SnapshotIdField(8, 2), len(data), pos)
        assert p.current_leader == m.LeaderIdAndEpoch(1, 2) and 0 < len(p.unaligned_records) <= 40
        got += p.unaligned_records
        pos += len(p.unaligned_records)
    assert got == data


def test_the_leader_decides_a_fetch_snapshot_answer_and_leaves_reading_its_bytes_to_the_shell(monkeypatch):
    core, log, _, now, sid, content = snapshotting_leader()
    monkeypatch.setattr(log, "read_snapshot_chunk", lambda *a: pytest.fail("the Raft core read snapshot bytes"))
    req = m.FetchSnapshotRequest(CID, 2, core.epoch, m.SnapshotIdField(8, 2), 40, 1 << 20)
    out = core.handle_request(now, 7, 2, req)
    assert responses(out) == []
    (read,) = [o for o in out if isinstance(o, m.ReadSnapshotChunk)]
    size = len(encode(content))
    assert (read.request_id, read.snapshot_id, read.position, read.max_bytes) == (7, sid, 40, size)
    assert read.answer(b"xyz").msg.partition.unaligned_records == b"xyz"
    gone = read.answer(None).msg.partition
    assert gone.error_code == Errors.SNAPSHOT_NOT_FOUND and gone.current_leader == m.LeaderIdAndEpoch(1, 2)


@pytest.mark.parametrize("kwargs,error", [
    ({"epoch": 1}, Errors.FENCED_LEADER_EPOCH),
    ({"epoch": 3}, Errors.UNKNOWN_LEADER_EPOCH),
    ({"sid": (7, 2)}, Errors.SNAPSHOT_NOT_FOUND),
    ({"sid": (8, 1)}, Errors.SNAPSHOT_NOT_FOUND),
    ({"position": -1}, Errors.POSITION_OUT_OF_RANGE),
    ({"position": 10_000}, Errors.POSITION_OUT_OF_RANGE),
])
def test_fetch_snapshot_errors(kwargs, error):
    core, *_, now, sid, content = snapshotting_leader()
    resp = fetch_snapshot(core, now, 30, **kwargs)
    assert resp.error_code == 0 and resp.partition.error_code == error
    assert resp.partition.current_leader == m.LeaderIdAndEpoch(1, 2)
    assert resp.partition.unaligned_records == b""


def test_fetch_snapshot_position_equal_to_size_is_out_of_range():
    core, *_, now, sid, content = snapshotting_leader()
    resp = fetch_snapshot(core, now, 30, position=len(encode(content)))
    assert resp.partition.error_code == Errors.POSITION_OUT_OF_RANGE


def test_fetch_snapshot_from_another_cluster_is_refused_at_top_level():
    core, *_, now, sid, content = snapshotting_leader()
    resp = fetch_snapshot(core, now, 30, cluster_id="other")
    assert resp.error_code == Errors.INCONSISTENT_CLUSTER_ID and resp.partition is None


def test_fetch_snapshot_on_a_follower_names_the_leader():
    follower, *_ = make(node_id=2, state=ElectionState(2, 1, None, VOTERS))
    resp = fetch_snapshot(follower, 0, 1, replica=3)
    assert resp.partition.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert resp.partition.current_leader == m.LeaderIdAndEpoch(1, 2)


def test_fetch_snapshot_keeps_check_quorum_alive():
    core, *_, now, sid, content = snapshotting_leader()
    deadline = core.state.check_quorum_deadline
    later = deadline - 10
    fetch_snapshot(core, later, 40, replica=3)
    assert core.state.check_quorum_deadline > deadline
    core.tick(deadline + 1)
    assert core.is_leader


# ---------------------------------------------------------------------------- follower side
def exchange(follower: RaftCore, leader: RaftCore, outputs: list[m.Output], now: int,
             seen: list[m.Request] | None = None) -> list[m.Output]:
    """Carry the follower's requests to the leader and the answers back; the follower's next outputs."""
    nxt: list[m.Output] = []
    for i, req in enumerate(requests(outputs)):
        if seen is not None:
            seen.append(req.msg)
        (ans,) = responses(leader.handle_request(now, 500 + i, follower.node_id, req.msg), leader.log)
        nxt += follower.handle_response(now, req.request_id, ans.msg)
    return nxt


def new_follower(now: int, node_id: int = 3, *, voter: bool = True):
    voters = VOTERS if voter else frozenset({1, 2})
    core, log, store, listener = make(node_id=node_id, voters=tuple(sorted(voters)), config=FOLLOWER_CFG,
                                      state=ElectionState(2, 1, None, voters), now=now)
    return core, log, listener


class SnapshotRecorder(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.snapshots: list[tuple[int, list]] = []

    def handle_snapshot(self, end_offset, batches) -> None:
        self.snapshots.append((end_offset, batches))


@pytest.mark.parametrize("voter", [True, False])
def test_lagging_replica_downloads_installs_and_resumes(voter):
    leader, _, _, now, sid, content = snapshotting_leader()
    follower, flog, _ = new_follower(now, voter=voter)
    listener = SnapshotRecorder()
    follower.listener = listener
    seen: list[m.Request] = []
    out = follower.tick(now)
    for _ in range(40):
        if not requests(out):
            break
        out = exchange(follower, leader, out, now, seen)
        if follower.hw == 10:
            break
    kinds = [type(r).__name__ for r in seen]
    assert kinds[0] == "FetchRequest" and kinds.count("FetchSnapshotRequest") == -(-len(encode(content)) // 50)
    chunks = [r for r in seen if isinstance(r, m.FetchSnapshotRequest)]
    assert [c.position for c in chunks] == list(range(0, len(encode(content)), 50))
    assert all(c.max_bytes == 50 and c.current_leader_epoch == 2 for c in chunks)
    after = seen[len(chunks) + 1]
    assert isinstance(after, m.FetchRequest) and (after.fetch_offset, after.last_fetched_epoch) == (8, 2)
    assert flog.start_offset == 8 and flog.latest_snapshot_id() == sid
    assert flog.read_snapshot(sid) == content
    assert [(end, data_batches(b)) for end, b in listener.snapshots] == [(8, data_batches(content))]
    assert [r.value for b in listener.commits for r in b.records] == [b"b0", b"b1"]
    assert follower.hw == 10


def test_snapshot_answer_does_not_move_the_follower_high_watermark():
    leader, *_, now, sid, content = snapshotting_leader()
    follower, flog, _ = new_follower(now)
    (req,) = requests(follower.tick(now), m.FetchRequest)
    (ans,) = responses(leader.handle_request(now, 1, 3, req.msg))
    assert ans.msg.partition.high_watermark == 10
    out = follower.handle_response(now, req.request_id, ans.msg)
    assert follower.hw is None
    (nxt,) = requests(out)
    assert isinstance(nxt.msg, m.FetchSnapshotRequest) and nxt.msg.position == 0


@pytest.mark.parametrize("error", [Errors.SNAPSHOT_NOT_FOUND, Errors.POSITION_OUT_OF_RANGE])
def test_follower_goes_back_to_fetch_when_the_snapshot_is_gone(error):
    leader, *_, now, sid, content = snapshotting_leader()
    follower, flog, _ = new_follower(now)
    out = exchange(follower, leader, follower.tick(now), now)
    (snap_req,) = requests(out, m.FetchSnapshotRequest)
    bad = m.FetchSnapshotResponse(0, m.FetchSnapshotPartition(int(error), current_leader=m.LeaderIdAndEpoch(1, 2)))
    out = follower.handle_response(now, snap_req.request_id, bad)
    assert follower.state.snapshot is None
    out += follower.tick(now + FOLLOWER_CFG.retry_backoff_ms)
    (again,) = requests(out)
    assert isinstance(again.msg, m.FetchRequest) and again.msg.fetch_offset == 0


def test_a_chunk_that_does_not_fit_restarts_the_download():
    leader, *_, now, sid, content = snapshotting_leader()
    follower, flog, _ = new_follower(now)
    out = exchange(follower, leader, follower.tick(now), now)
    (snap_req,) = requests(out, m.FetchSnapshotRequest)
    wrong = m.FetchSnapshotResponse(0, m.FetchSnapshotPartition(
        0, m.SnapshotIdField(8, 2), m.LeaderIdAndEpoch(1, 2), size=100, position=7, unaligned_records=b"x" * 5))
    follower.handle_response(now, snap_req.request_id, wrong)
    assert follower.state.snapshot is None and flog.start_offset == 0


def test_a_corrupt_snapshot_is_not_installed():
    leader, *_, now, sid, content = snapshotting_leader()
    follower, flog, _ = new_follower(now)
    out = exchange(follower, leader, follower.tick(now), now)
    (snap_req,) = requests(out, m.FetchSnapshotRequest)
    data = bytearray(encode(content))
    data[30] ^= 0xFF
    whole = m.FetchSnapshotResponse(0, m.FetchSnapshotPartition(
        0, m.SnapshotIdField(8, 2), m.LeaderIdAndEpoch(1, 2), size=len(data), position=0,
        unaligned_records=bytes(data)))
    follower.handle_response(now, snap_req.request_id, whole)
    assert follower.state.snapshot is None
    assert flog.latest_snapshot_id() is None and flog.start_offset == 0 and follower.hw is None


def test_download_is_dropped_on_a_new_leader():
    leader, *_, now, sid, content = snapshotting_leader()
    follower, flog, _ = new_follower(now)
    exchange(follower, leader, follower.tick(now), now)
    assert follower.state.snapshot is not None
    follower.handle_request(now, 77, 2, m.BeginQuorumEpochRequest(CID, 2, 3))
    assert follower.state.leader_id == 2 and follower.state.snapshot is None


# ---------------------------------------------------------------------------- listener and creation
def restarted_follower(log, now: int, listener) -> RaftCore:
    """Node 1 restarted over ``log`` as a follower of node 2 in epoch 3."""
    store = MemoryStateStore()
    store.write(ElectionState(3, 2, None, VOTERS))
    return RaftCore(1, VOTERS, FOLLOWER_CFG, log, store, random.Random(1), CID, now, listener)


def test_restart_on_a_cleaned_log_hands_the_snapshot_to_the_listener_first():
    leader, log, _, now, sid, content = snapshotting_leader()
    listener = SnapshotRecorder()
    again = restarted_follower(log, now, listener)
    again.tick(now)
    assert [end for end, _ in listener.snapshots] == [8] and listener.commits == []
    assert data_batches(listener.snapshots[0][1]) == data_batches(content)


def test_listener_without_snapshot_hook_still_works():
    leader, log, _, now, sid, content = snapshotting_leader()
    listener = Recorder()
    again = restarted_follower(log, now, listener)
    (req,) = requests(again.tick(now), m.FetchRequest)
    again.handle_response(now, req.request_id, m.FetchResponse(0, m.FetchPartition(
        0, 10, 8, current_leader=m.LeaderIdAndEpoch(2, 3))))
    assert [r.value for b in listener.commits for r in b.records] == [b"b0", b"b1"]


def test_create_snapshot_only_of_committed_offsets():
    core, log, _, listener = make(batches=[(1, 4)])
    now = elect(core)
    with pytest.raises(ValueError):
        core.create_snapshot(SnapshotId(4, 1), frame(SnapshotId(4, 1), []))  # HW unknown
    fetch(core, now, 1, 2, 5, 2)
    with pytest.raises(ValueError):
        core.create_snapshot(SnapshotId(6, 2), frame(SnapshotId(6, 2), []))  # past the HW
    with pytest.raises(ValueError):
        core.create_snapshot(SnapshotId(4, 2), frame(SnapshotId(4, 2), []))  # offset 3 is epoch 1
    core.create_snapshot(SnapshotId(4, 1), frame(SnapshotId(4, 1), []))
    assert log.latest_snapshot_id() == SnapshotId(4, 1)


def test_commits_continue_after_a_snapshot_that_ends_inside_a_batch():
    core, log, _, _ = make(batches=[(1, 4)])
    now = elect(core)                              # LeaderChange at 4
    core.append(now, [Record(value=b"c%d" % i) for i in range(5)])
    now += core.config.append_linger_ms
    core.tick(now)                                 # one batch 5..9
    fetch(core, now, 1, 2, 10, 2)
    sid = SnapshotId(7, 2)
    core.create_snapshot(sid, frame(sid, state_image([b"upto-7"])))
    core.delete_before(sid)
    assert log.start_offset == 5                   # whole batches only
    # Restart as a follower of node 2 in epoch 3: the snapshot first, then the rest of that batch.
    listener = SnapshotRecorder()
    again = restarted_follower(log, now, listener)
    (req,) = requests(again.tick(now), m.FetchRequest)
    assert [end for end, _ in listener.snapshots] == [7]
    assert (req.msg.fetch_offset, req.msg.last_fetched_epoch) == (10, 2)
    again.handle_response(now, req.request_id, m.FetchResponse(0, m.FetchPartition(
        0, 10, 5, current_leader=m.LeaderIdAndEpoch(2, 3))))
    assert [(b.base_offset, [r.value for r in b.records]) for b in listener.commits] == [(7, [b"c2", b"c3", b"c4"])]


# ---------------------------------------------------------------------------- memory log
def test_memory_log_snapshots_survive_a_crash_and_vanish_with_a_wipe():
    from kraftwire.raft.log import OffsetAndEpoch
    from kraftwire.raft.memory import MemoryLog

    log = MemoryLog()
    log.append_as_leader([Record(value=b"a")] * 3, 1)
    log.append_as_leader([Record(value=b"b")] * 2, 2)
    log.flush()
    sid = SnapshotId(3, 1)
    log.create_snapshot(sid, frame(sid, []))
    log.delete_before(sid)
    log.append_as_leader([Record(value=b"c")], 2)       # not flushed
    log.crash()
    assert (log.start_offset, log.end_offset, log.latest_snapshot_id()) == (3, 5, sid)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 1)  # the snapshot stands in for epoch 1
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(5, 2)
    log.truncate_to(0)                                  # never below the start
    assert (log.start_offset, log.end_offset, log.last_epoch()) == (3, 3, 1)
    log.wipe()
    assert (log.start_offset, log.end_offset, log.latest_snapshot_id()) == (0, 0, None)
