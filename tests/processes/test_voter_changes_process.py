"""KIP-853 voter changes between real `kraftwire server` processes, driven by `kraftwire metadata-quorum
remove-controller | add-controller` (AddRaftVoter / RemoveRaftVoter on the wire, Kafka's tool output)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftwire.cli.quorum_changes import kafka_uuid, parse_directory_id
from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.storage.meta_properties import random_uuid, read_meta

from .harness import Cluster, free_port_block

pytestmark = pytest.mark.processes


class DynamicCluster(Cluster):
    """N controllers on controller.quorum.bootstrap.servers, formatted with the same --initial-controllers."""

    def __init__(self, root: Path, n: int = 2, joining: int = 0, extra: tuple[str, ...] = ()) -> None:  # noqa: D107
        self.root, self.n, self.combined, self.brokers = root, n + joining, False, []
        self.base_port = free_port_block(n + joining)
        self.cluster_id = random_uuid()
        self.procs = {}
        self.dirs = {i: random_uuid() for i in range(1, n + 1)}
        boot = ",".join(f"127.0.0.1:{self.base_port + i - 1}" for i in range(1, n + 1))
        initial = ",".join(f"{i}@127.0.0.1:{self.base_port + i - 1}:{self.dirs[i]}" for i in range(1, n + 1))
        self.configs = []
        for i in range(1, n + joining + 1):
            d = root / f"node{i}"
            d.mkdir(parents=True, exist_ok=True)
            cfg = d / "server.properties"
            cfg.write_text("\n".join([
                "process.roles=controller", f"node.id={i}", f"controller.quorum.bootstrap.servers={boot}",
                f"listeners=CONTROLLER://127.0.0.1:{self.base_port + i - 1}", "controller.listener.names=CONTROLLER",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT", f"log.dirs={(d / 'data').resolve()}",
                *extra, ""]))
            self.configs.append(cfg)
            if i <= n:
                format_storage(load_config(cfg), self.cluster_id, quiet=True, initial_controllers=initial)
            else:   # a new controller: it fetches as an observer until it is added
                format_storage(load_config(cfg), self.cluster_id, quiet=True, no_initial_controllers=True)

    def quorum(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum", "--bootstrap-controller",
                               ",".join(self.addr(i) for i in range(1, self.n + 1)), "--timeout", "20", *args],
                              capture_output=True, text=True, timeout=60)


@pytest.fixture
def dyn(tmp_path):
    c = DynamicCluster(tmp_path, 2)
    yield c
    c.stop_all()


def test_remove_then_add_back_a_controller(dyn):
    dyn.start_all()
    dyn.wait_status(lambda s: s.get("LeaderId", -1) >= 0 and sorted(s["CurrentVoters"]) == [1, 2], [1, 2], 40)
    dir2 = kafka_uuid(parse_directory_id(read_meta(dyn.data_dir(2)).directory_id))
    out = dyn.quorum("remove-controller", "--controller-id", "2", "--controller-directory-id", dir2)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"Removed  KRaft controller 2 with directory id {dir2}"
    dyn.wait_status(lambda s: s["CurrentVoters"] == [1] and s["LeaderId"] == 1, [1], 40)
    again = dyn.quorum("remove-controller", "--controller-id", "2", "--controller-directory-id", dir2)
    assert again.returncode == 1 and "VOTER_NOT_FOUND" in again.stderr, again.stderr
    # node 2 goes on fetching as an observer; it is caught up, so it can be added back
    dyn.wait_status(lambda s: 2 in s["CurrentObservers"], [1], 40)
    out = dyn.quorum("--command-config", str(dyn.configs[1]), "add-controller")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"Added controller 2 with directory id {dir2} and endpoints: "
                                  f"CONTROLLER://{dyn.addr(2)}")
    dyn.wait_status(lambda s: sorted(s["CurrentVoters"]) == [1, 2], [1, 2], 40)
    dup = dyn.quorum("--command-config", str(dyn.configs[1]), "add-controller")
    assert dup.returncode == 1 and "DUPLICATE_VOTER" in dup.stderr, dup.stderr


def test_a_controller_formatted_without_voters_joins(tmp_path):
    """--no-initial-controllers: the node starts as an observer (voters from controller.quorum.bootstrap.servers)
    and becomes a voter through add-controller."""
    c = DynamicCluster(tmp_path, 1, joining=1)
    try:
        c.start_all()
        c.wait_status(lambda s: s.get("LeaderId") == 1 and 2 in s["CurrentObservers"], [1], 40)
        out = c.quorum("--command-config", str(c.configs[1]), "add-controller")
        assert out.returncode == 0, out.stderr
        c.wait_status(lambda s: sorted(s["CurrentVoters"]) == [1, 2], [1, 2], 40)
    finally:
        c.stop_all()


def test_auto_join(tmp_path):
    """controller.quorum.auto.join.enable=true (Kafka 4.x): the observer asks the leader to add it."""
    c = DynamicCluster(tmp_path, 1, joining=1, extra=("controller.quorum.auto.join.enable=true",))
    try:
        c.start_all()
        c.wait_status(lambda s: sorted(s["CurrentVoters"]) == [1, 2], [1, 2], 60)
    finally:
        c.stop_all()


def _voters_in_log(data: Path):
    from kraftwire.protocol.control import ControlType, control_type
    from kraftwire.protocol.records import decode_batches
    from kraftwire.raft.voter_set import VoterSet

    latest = None
    for seg in sorted((data / "__cluster_metadata-0").glob("*.log")):
        for b in decode_batches(seg.read_bytes()):
            for r in b.records if b.control else ():
                if control_type(r) == ControlType.KRAFT_VOTERS:
                    latest = VoterSet.from_record(r)
    return latest


def test_a_voter_whose_listener_moved_updates_its_entry(tmp_path):
    """UpdateRaftVoter (Kafka 4.x voters send it): a follower restarts on another port; its entry follows.

    Three voters, so that a leader stays while the follower is down: with two, a restart slower than
    the leader's check-quorum leaves a resigned voter that only knows the old endpoint and a restarted
    voter whose log is behind, neither able to win (as in Kafka; docs/raft.md)."""
    dyn = DynamicCluster(tmp_path, 3)
    try:
        _listener_moved(dyn)
    finally:
        dyn.stop_all()


def _listener_moved(dyn: DynamicCluster) -> None:
    dyn.start_all()
    st = dyn.wait_status(lambda s: s.get("LeaderId", -1) >= 0 and sorted(s["CurrentVoters"]) == [1, 2, 3],
                         [1, 2, 3], 40)
    mover = 2 if st["LeaderId"] != 2 else 3   # a follower (a leader rewrites its own entry without the request)
    witness = next(i for i in (1, 2, 3) if i not in (mover, st["LeaderId"]))
    dyn.kill(mover, signal.SIGTERM)
    new_port = free_port_block(1)
    cfg = dyn.configs[mover - 1]
    cfg.write_text(re.sub(r"listeners=CONTROLLER://127\.0\.0\.1:\d+", f"listeners=CONTROLLER://127.0.0.1:{new_port}",
                          cfg.read_text()))
    dyn.start(mover)

    def moved() -> bool:
        vs = _voters_in_log(dyn.data_dir(witness))
        return vs is not None and vs.get(mover) is not None and vs.get(mover).endpoints == (
            ("CONTROLLER", "127.0.0.1", new_port),)
    deadline = time.monotonic() + 60
    while not moved():
        assert time.monotonic() < deadline, f"node {mover}'s entry never named its new endpoint"
        time.sleep(0.5)
    dyn.wait_status(lambda s: s.get("LeaderId", -1) >= 0 and sorted(s["CurrentVoters"]) == [1, 2, 3], [witness], 40)


def test_a_leader_whose_listener_moved_updates_its_own_entry(tmp_path):
    """A one-voter quorum restarted on another port leads at once with an entry naming the old endpoint; it
    sends UpdateRaftVoter to its own listener (through its door, as any voter's request) and its entry
    follows."""
    dyn = DynamicCluster(tmp_path, 1)
    try:
        dyn.start_all()
        dyn.wait_status(lambda s: s.get("LeaderId", -1) == 1, [1], 40)
        dyn.kill(1, signal.SIGTERM)
        new_port = free_port_block(1)
        cfg = dyn.configs[0]
        cfg.write_text(re.sub(r"listeners=CONTROLLER://127\.0\.0\.1:\d+", f"listeners=CONTROLLER://127.0.0.1:{new_port}",
                              cfg.read_text()))
        dyn.start(1)
        deadline = time.monotonic() + 60
        while True:
            vs = _voters_in_log(dyn.data_dir(1))
            if vs is not None and vs.get(1) is not None and vs.get(1).endpoints == (("CONTROLLER", "127.0.0.1", new_port),):
                break
            assert time.monotonic() < deadline, "the leader's entry never named its new endpoint"
            time.sleep(0.5)
    finally:
        dyn.stop_all()
