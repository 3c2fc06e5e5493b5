"""quorum-state (Kafka JSON, atomic replacement) and meta.properties (refusing foreign directories)."""

from __future__ import annotations

import json
import os

import pytest

from kraftwire.raft import ElectionState
from kraftwire.storage import StorageError, fsutil
from kraftwire.storage.meta_properties import (
    MetaProperties,
    load_checked,
    random_uuid,
    read_meta,
    valid_cluster_id,
    write_meta,
)
from kraftwire.storage.quorum_state import FileQuorumStateStore

STATE = ElectionState(epoch=7, leader_id=2, voted_id=None, voters=frozenset({1, 2, 3}))


def test_quorum_state_round_trip_in_kafkas_json(tmp_path) -> None:
    store = FileQuorumStateStore(tmp_path / "quorum-state")
    assert store.read() is None
    store.write(STATE)
    data = json.loads((tmp_path / "quorum-state").read_text())
    assert data == {"clusterId": "", "leaderId": 2, "leaderEpoch": 7, "votedId": -1, "appliedOffset": 0,
                    "currentVoters": [{"voterId": 1}, {"voterId": 2}, {"voterId": 3}], "data_version": 0}
    assert FileQuorumStateStore(tmp_path / "quorum-state").read() == STATE
    voted = ElectionState(8, None, 3, frozenset({1, 2, 3}))
    store.write(voted)
    assert FileQuorumStateStore(tmp_path / "quorum-state").read() == voted


def test_reads_a_file_written_by_kafka(tmp_path) -> None:
    (tmp_path / "quorum-state").write_text(
        '{"clusterId":"","leaderId":-1,"leaderEpoch":3,"votedId":1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2}],"data_version":0}')
    expected = ElectionState(3, None, 1, frozenset({1, 2}))
    assert FileQuorumStateStore(tmp_path / "quorum-state").read() == expected


@pytest.mark.parametrize("leftover", [b"", b'{"clusterId":"","leaderId":5,"leaderE'])
def test_crash_mid_write_leaves_the_old_state(tmp_path, leftover) -> None:
    """A crash after creating the temp file (empty or half written) but before the rename."""
    path = tmp_path / "quorum-state"
    FileQuorumStateStore(path).write(STATE)
    (tmp_path / "quorum-state.tmp").write_bytes(leftover)
    store = FileQuorumStateStore(path)
    assert store.read() == STATE
    assert not (tmp_path / "quorum-state.tmp").exists()
    store.write(ElectionState(9, None, None, STATE.voters))
    assert FileQuorumStateStore(path).read().epoch == 9


def test_failed_rename_keeps_the_previous_file(tmp_path, monkeypatch) -> None:
    path = tmp_path / "quorum-state"
    store = FileQuorumStateStore(path)
    store.write(STATE)

    def die(*_a):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(fsutil.os, "replace", die)
    with pytest.raises(OSError):
        store.write(ElectionState(99, None, None, frozenset()))
    monkeypatch.undo()
    assert FileQuorumStateStore(path).read() == STATE


def test_atomic_write_fsyncs_file_and_directory(tmp_path, monkeypatch) -> None:
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(fsutil.os, "fsync", spy)
    FileQuorumStateStore(tmp_path / "quorum-state").write(STATE)
    assert synced == [str((tmp_path / "quorum-state.tmp").resolve()), str(tmp_path.resolve())]


@pytest.mark.parametrize("content", ["", "{", '{"leaderId": 1}', "[]"])
def test_corrupt_quorum_state_is_refused_clearly(tmp_path, content) -> None:
    (tmp_path / "quorum-state").write_text(content)
    with pytest.raises(StorageError, match="corrupt quorum-state"):
        FileQuorumStateStore(tmp_path / "quorum-state").read()


# -- meta.properties ----------------------------------------------------------------------------------
def test_meta_properties_round_trip(tmp_path) -> None:
    cid = random_uuid()
    assert valid_cluster_id(cid) and not cid.startswith("-")
    meta = MetaProperties(cid, 3, random_uuid())
    write_meta(tmp_path, meta)
    text = (tmp_path / "meta.properties").read_text()
    assert f"cluster.id={cid}\n" in text and "node.id=3\n" in text and "version=1\n" in text
    assert read_meta(tmp_path) == meta
    assert load_checked(tmp_path, 3, cid) == meta


def test_unformatted_directory_is_refused(tmp_path) -> None:
    with pytest.raises(StorageError, match="not formatted.*storage format"):
        load_checked(tmp_path, 1)


def test_node_id_mismatch_is_refused(tmp_path) -> None:
    write_meta(tmp_path, MetaProperties(random_uuid(), 1, random_uuid()))
    with pytest.raises(StorageError, match="node.id=1 but the configuration says node.id=2"):
        load_checked(tmp_path, 2)


def test_cluster_id_mismatch_is_refused(tmp_path) -> None:
    mine, theirs = random_uuid(), random_uuid()
    write_meta(tmp_path, MetaProperties(theirs, 1, random_uuid()))
    with pytest.raises(StorageError, match=f"cluster.id={theirs} but the quorum says {mine}"):
        load_checked(tmp_path, 1, mine)


@pytest.mark.parametrize("text", ["version=1\nnode.id=1\n", "cluster.id=x\nnode.id=one\n"])
def test_malformed_meta_properties_is_refused(tmp_path, text) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(StorageError, match="malformed meta.properties"):
        load_checked(tmp_path, 1)
