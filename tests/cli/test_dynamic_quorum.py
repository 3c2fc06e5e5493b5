"""KIP-853 formats: ``storage format --standalone | --initial-controllers | --no-initial-controllers`` write the
bootstrap snapshot Kafka's format writes, and a controller without controller.quorum.voters takes its voters from
it (kraftwire/cli/dynamic_quorum.py, kraftwire/node/dynamic_quorum.py)."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest

from kraftwire.cli.dynamic_quorum import NO_QUORUM_FLAG, uuid_text
from kraftwire.cli.storage import format_storage
from kraftwire.config import Voter, load_config
from kraftwire.node.dynamic_quorum import DynamicQuorumError, resolve_voters
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import frame, parse
from kraftwire.raft.voter_set import (
    ControlState,
    VoterNode,
    VoterSet,
    bootstrap_snapshot,
    read_control_state,
    replay_control,
)
from kraftwire.storage import StorageError
from kraftwire.storage.log import FileLog
from kraftwire.storage.meta_properties import read_meta

CID = "MkU3OEVBNTcwNTJENDM2Qg"
KAFKA_41 = Path(__file__).parent / "data" / "kafka-4.1.0-standalone-0-0.checkpoint"
DIRS = ["JEXY6aqzQY-32P5TStzaFg", "MvDxzVmcRsaTz33bUuRU6A", "07R5amHmR32VDA6jHkGbTA"]


def _cfg(tmp: Path, node: int = 1, **extra: str):
    props = {"process.roles": "controller", "node.id": str(node), "controller.listener.names": "CONTROLLER",
             "listeners": f"CONTROLLER://127.0.0.{node}:19093", "log.dirs": str(tmp / f"n{node}"),
             "controller.quorum.bootstrap.servers": "127.0.0.1:19093", **extra}
    return load_config(props)


def _dir(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def _partition(cfg) -> Path:
    return cfg.metadata_log_dir / "__cluster_metadata-0"


def test_standalone_writes_kafkas_bootstrap_snapshot(tmp_path):
    cfg = _cfg(tmp_path)
    format_storage(cfg, CID, standalone=True, quiet=True)
    own = read_meta(cfg.metadata_log_dir).directory_id
    batches = parse((_partition(cfg) / "00000000000000000000-0000000000.checkpoint").read_bytes())
    state = replay_control(ControlState(), batches, in_snapshot=True)
    assert state.kraft_version == 1
    assert state.voters == VoterSet((VoterNode(1, _dir(own),
                                               (("CONTROLLER", "127.0.0.1", 19093),)),))
    # the same layout as Kafka 4.1's `kafka-storage.sh format --standalone`: one control batch of header,
    # KRaftVersion and Voters, then the footer; the records' bytes match for the same voter set
    kafka = parse(KAFKA_41.read_bytes())
    kv = replay_control(ControlState(), kafka, in_snapshot=True)
    mine = bootstrap_snapshot(kv.voters, timestamp_ms=kafka[0].base_timestamp)
    assert [len(b.records) for b in mine] == [len(b.records) for b in kafka] == [3, 1]
    assert [(r.key, r.value) for r in mine[0].records[1:]] == [(r.key, r.value) for r in kafka[0].records[1:]]


def test_initial_controllers_use_the_listed_directory_ids(tmp_path):
    spec = ",".join(f"{i}@127.0.0.{i}:19093:{d}" for i, d in zip((1, 2, 3), DIRS, strict=True))
    for node in (1, 2, 3):
        cfg = _cfg(tmp_path, node)
        format_storage(cfg, CID, initial_controllers=spec, quiet=True)
        assert read_meta(cfg.metadata_log_dir).directory_id == DIRS[node - 1]
        log = FileLog(_partition(cfg))
        voters, control = resolve_voters(cfg, log, _dir(DIRS[node - 1]))
        assert cfg.voters == [Voter(i, f"127.0.0.{i}", 19093) for i in (1, 2, 3)]
        assert [uuid_text(v.directory_id) for v in voters.voters] == DIRS
        assert len(control) == 2   # every snapshot this node takes carries KRaftVersion and Voters
        log.close()


def test_format_refusals_name_the_flag(tmp_path):
    with pytest.raises(StorageError, match="^" + NO_QUORUM_FLAG.replace(".", r"\.") + "$"):
        format_storage(_cfg(tmp_path), CID, quiet=True)
    static = _cfg(tmp_path, **{"controller.quorum.voters": "1@127.0.0.1:19093"})
    with pytest.raises(StorageError, match="You cannot specify controller.quorum.voters"):
        format_storage(static, CID, standalone=True, quiet=True)
    with pytest.raises(StorageError, match="metadata.version 21"):
        format_storage(_cfg(tmp_path, 2), CID, standalone=True, metadata_version=19, quiet=True)
    with pytest.raises(StorageError, match="id@host:port:directory"):
        format_storage(_cfg(tmp_path, 3), CID, initial_controllers="1@127.0.0.1:19093", quiet=True)
    assert not (tmp_path / "n1" / "meta.properties").exists()


def test_no_initial_controllers_starts_an_observer(tmp_path):
    cfg = _cfg(tmp_path)
    format_storage(cfg, CID, no_initial_controllers=True, quiet=True)
    assert not (_partition(cfg) / "00000000000000000000-0000000000.checkpoint").exists()
    _partition(cfg).mkdir(parents=True, exist_ok=True)
    voters, control = resolve_voters(cfg, FileLog(_partition(cfg)), None)
    assert voters.ids == frozenset() and control == () and cfg.voters == []   # voters learnt at start


def test_a_voter_named_with_another_directory_is_refused(tmp_path):
    spec = ",".join(f"{i}@127.0.0.{i}:19093:{d}" for i, d in zip((1, 2, 3), DIRS, strict=True))
    cfg = _cfg(tmp_path)
    format_storage(cfg, CID, initial_controllers=spec, quiet=True)
    with pytest.raises(DynamicQuorumError, match="with another directory.*remove-controller"):
        resolve_voters(cfg, FileLog(_partition(cfg)), uuid.uuid4())   # re-formatted: another directory


def test_a_controller_the_set_leaves_out_runs_as_an_observer(tmp_path):
    spec = ",".join(f"{i}@127.0.0.{i}:19093:{d}" for i, d in zip((1, 2), DIRS[:2], strict=True))
    format_storage(_cfg(tmp_path), CID, initial_controllers=spec, quiet=True)
    cfg = _cfg(tmp_path, 3, **{"log.dirs": str(tmp_path / "n1")})   # a log naming {1, 2}, read by node 3
    voters, _ = resolve_voters(cfg, FileLog(_partition(cfg)), None)   # e.g. removed, then restarted
    assert voters.ids == {1, 2} and [v.node_id for v in cfg.voters] == [1, 2]


def test_latest_voters_record_wins_and_snapshots_carry_it(tmp_path):
    one = VoterSet((VoterNode(1, uuid.UUID(int=1), (("CONTROLLER", "h1", 1),)),))
    two = VoterSet((*one.voters, VoterNode(2, uuid.UUID(int=2), (("CONTROLLER", "h2", 2),))))
    log = FileLog(tmp_path / "p")
    log.create_snapshot(SnapshotId(0, 0), bootstrap_snapshot(one))
    assert read_control_state(log).voters == one
    log.append_as_leader([two.to_record()], 1, control=True)
    st = read_control_state(log)
    assert st.voters == two and st.voters_offset == 0 and st.kraft_version == 1
    snap = frame(SnapshotId(5, 1), [], control=(two.to_record(),))
    assert replay_control(ControlState(), snap, in_snapshot=True).voters == two
    assert [b.base_offset for b in snap] == [0, 2]


def test_a_node_on_a_standalone_directory_runs_its_voter_set(tmp_path):
    from kraftwire.node.server import Server

    cfg = _cfg(tmp_path)
    format_storage(cfg, CID, standalone=True, quiet=True)
    node = Server(cfg)
    try:
        assert list(node.voters) == [1] and cfg.voters == [Voter(1, "127.0.0.1", 19093)]
        assert node.voter_set is not None and node.voter_set.ids == {1}
        assert node.voter.features()[1]["kraft.version"] == 1              # ApiVersions' finalized levels
        assert node.voter.controller.snapshotter.control[1] == node.voter_set.to_record()
    finally:
        node.log.close()
        for lock in getattr(node, "dir_locks", []):
            lock.release()


def test_the_first_leader_copies_the_bootstrap_voter_set_into_the_log(tmp_path):
    from kraftwire.node.server import Server
    from kraftwire.protocol.control import ControlType, control_type

    cfg = _cfg(tmp_path)
    format_storage(cfg, CID, standalone=True, quiet=True)
    node = Server(cfg)
    node.core.tick(10_000)                  # a single voter stands and wins at once
    first = node.log.read(0, 1 << 20)[0]
    assert first.control and [control_type(r) for r in first.records] == [
        ControlType.LEADER_CHANGE, ControlType.KRAFT_VERSION, ControlType.KRAFT_VOTERS]
    assert first.records[2] == node.voter_set.to_record()
    st = read_control_state(node.log)
    assert st.voters == node.voter_set and st.voters_offset == 2
    assert node.core._epoch_start_records() == ()        # held by the log now: later leaders write only LeaderChange
    node.log.truncate_to(0)
    assert len(node.core._epoch_start_records()) == 2     # truncated away: copied again by the next leader
    node.log.close()
