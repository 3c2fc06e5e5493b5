"""`kraftwire storage recover-as-single-voter` (issue #23, item 5): the rewrite of a surviving voter's
directory, for both kraft.versions, its refusals, and a Raft core over the result leading alone with the log."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from kraftwire.cli.errors import OperatorError
from kraftwire.cli.recover_quorum import recover_as_single_voter
from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.protocol.records import Record
from kraftwire.raft import ElectionState, RaftConfig, RaftCore
from kraftwire.raft.reconfig import VoterHistory
from kraftwire.raft.voter_set import read_control_state
from kraftwire.storage import StorageError
from kraftwire.storage.log import FileLog
from kraftwire.storage.meta_properties import random_uuid
from kraftwire.storage.quorum_state import FileQuorumStateStore

CID = "MkU3OEVBNTcwNTJENDM2Qg"


def _node(tmp, node_id=1, dynamic=True, roles="controller"):
    d = tmp / f"n{node_id}"
    props = {"process.roles": roles, "node.id": str(node_id), "controller.listener.names": "CONTROLLER",
             "listeners": f"CONTROLLER://127.0.0.1:{19090 + node_id}", "log.dirs": str(d / "data"),
             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT"}
    voters = ",".join(f"{i}@127.0.0.1:{19090 + i}" for i in (1, 2, 3))
    if dynamic:
        props["controller.quorum.bootstrap.servers"] = "127.0.0.1:19091"
    else:
        props["controller.quorum.voters"] = voters
    d.mkdir(parents=True, exist_ok=True)
    path = d / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    cfg = load_config(path)
    if dynamic:
        dirs = {i: random_uuid() for i in (1, 2, 3)}
        initial = ",".join(f"{i}@127.0.0.1:{19090 + i}:{dirs[i]}" for i in (1, 2, 3))
        format_storage(cfg, CID, quiet=True, initial_controllers=initial)
    else:
        format_storage(cfg, CID, quiet=True)
    part = cfg.metadata_log_dir / "__cluster_metadata-0"
    log = FileLog(part)   # what the old quorum left: 3 committed-looking batches in epochs 1-2, a vote in epoch 3
    for epoch in (1, 1, 2):
        log.append_as_leader([Record(value=b"x" * 8), Record(value=b"y" * 8)], epoch)
    log.close()
    FileQuorumStateStore(part / "quorum-state").write(ElectionState(3, None, 2, frozenset({1, 2, 3})))
    return load_config(path), path, part


def _lines():
    out: list[str] = []
    return out, out.append


@pytest.mark.parametrize("dynamic", [True, False])
def test_without_the_flag_it_reports_and_changes_nothing(tmp_path, dynamic):
    cfg, _, part = _node(tmp_path, dynamic=dynamic)
    before = {p.name: p.read_bytes() for p in part.iterdir() if p.is_file()}
    out, say = _lines()
    with pytest.raises(OperatorError, match="--i-understand-data-loss"):
        recover_as_single_voter(cfg, confirmed=False, say=say)
    assert {p.name: p.read_bytes() for p in part.iterdir() if p.is_file()} == before
    text = "\n".join(out)
    assert "voters [1, 2, 3]" in text and "Committed for certain: nothing this node can prove" in text
    assert "offsets 0 to 5 (6 records in 3 batches, epochs 1-2)" in text


def test_dynamic_directory_gets_a_voter_set_of_itself_in_a_new_epoch(tmp_path):
    cfg, _, part = _node(tmp_path, dynamic=True)
    out, say = _lines()
    recover_as_single_voter(cfg, confirmed=True, say=say)
    log = FileLog(part)
    state = read_control_state(log)
    assert state.kraft_version == 1 and state.voters is not None and state.voters.ids == {1}
    assert state.voters_offset == 6 and log.last_epoch() == 4 and log.end_offset == 7   # old records all kept
    assert FileQuorumStateStore(part / "quorum-state").read() == ElectionState(4, None, None, frozenset({1}))
    assert any("add-controller" in line for line in out)
    # A Raft core over the result (as a dynamic controller builds it) stands and commits the whole log alone.
    core = RaftCore(1, frozenset({1, 2, 3}), RaftConfig(election_timeout_ms=10), log,
                    FileQuorumStateStore(part / "quorum-state"), random.Random(1), CID, 0,
                    voter_history=VoterHistory.from_log(log))
    now = 0
    while core.leader_id != 1 and now < 1000:
        now += 5
        core.tick(now)
    assert core.leader_id == 1 and core.epoch == 5 and core.voters == (1,)
    for _ in range(3):
        now += 30
        core.tick(now)
    assert core.hw is not None and core.hw >= 7
    assert [b.leader_epoch for b in log.read(0, 1 << 20)][:3] == [1, 1, 2]
    log.close()


def test_static_directory_gets_quorum_state_of_itself(tmp_path):
    cfg, _, part = _node(tmp_path, dynamic=False)
    end = FileLog(part).end_offset
    out, say = _lines()
    recover_as_single_voter(cfg, confirmed=True, say=say)
    assert FileQuorumStateStore(part / "quorum-state").read() == ElectionState(4, None, None, frozenset({1}))
    log = FileLog(part)
    assert log.end_offset == end and read_control_state(log).voters is None   # nothing written to the log
    assert any("controller.quorum.voters=1@127.0.0.1:19091 (this node only)" in line for line in out)
    # Started with one voter, it leads alone.
    core = RaftCore(1, frozenset({1}), RaftConfig(election_timeout_ms=10), log,
                    FileQuorumStateStore(part / "quorum-state"), random.Random(1), CID, 0)
    now = 0
    while core.leader_id != 1 and now < 1000:
        now += 5
        core.tick(now)
    assert core.leader_id == 1 and core.epoch == 5
    log.close()


def test_refusals(tmp_path):
    cfg, _, part = _node(tmp_path, dynamic=True)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from kraftwire.storage.lock import "
                               f"DirectoryLock; DirectoryLock({str(cfg.metadata_log_dir)!r}).acquire(); "
                               "print('locked', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:   # a running node holds the directory's lock
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(StorageError, match="another kraftwire or Kafka process"):
            recover_as_single_voter(cfg, confirmed=True, say=lambda _: None)
    finally:
        holder.kill()
        holder.wait()
    (part / "rejoining").write_text("voter started on an empty directory\n")
    with pytest.raises(StorageError, match="re-joining"):
        recover_as_single_voter(cfg, confirmed=True, say=lambda _: None)
    (part / "rejoining").unlink()
    recover_as_single_voter(cfg, confirmed=True, say=lambda _: None)
    with pytest.raises(StorageError, match="already the only voter"):
        recover_as_single_voter(cfg, confirmed=True, say=lambda _: None)
    broker = load_config({"process.roles": "broker", "node.id": "9", "controller.listener.names": "CONTROLLER",
                          "listeners": "PLAINTEXT://127.0.0.1:19099", "log.dirs": str(tmp_path / "b"),
                          "controller.quorum.voters": "1@127.0.0.1:19091"})
    with pytest.raises(StorageError, match="not a controller"):
        recover_as_single_voter(broker, confirmed=True, say=lambda _: None)
    fresh, _, _ = _node(tmp_path / "other", node_id=2, dynamic=False)
    (fresh.metadata_log_dir / "meta.properties").unlink()
    with pytest.raises(StorageError, match="not formatted"):
        recover_as_single_voter(fresh, confirmed=True, say=lambda _: None)


def test_the_command_line_gives_one_line_errors(tmp_path):
    _, path, _ = _node(tmp_path, dynamic=True)
    run = [sys.executable, "-m", "kraftwire", "storage", "recover-as-single-voter", "-c", str(path)]
    p = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Not proven committed" in p.stdout
    errors = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error:") and "--i-understand-data-loss" in errors[0]
    p = subprocess.run([*run, "--i-understand-data-loss"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "is now the only voter" in p.stdout, p.stderr
    p = subprocess.run([*run, "--i-understand-data-loss"], capture_output=True, text=True, timeout=60)
    errors = [line for line in p.stderr.splitlines() if line.strip()]
    assert p.returncode != 0 and len(errors) == 1 and "already the only voter" in errors[0]
