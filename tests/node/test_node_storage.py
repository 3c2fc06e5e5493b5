"""``kraftwire server`` opens the log directory before it builds the roles, and the Raft core's timers
start from that moment (node/node_storage.py), as Kafka starts its Raft client before its controller."""

from __future__ import annotations

import time

from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.node.node_storage import open_node_storage
from kraftwire.node.server import Server
from kraftwire.raft import ElectionState
from kraftwire.storage.quorum_state import FileQuorumStateStore

CID = "MkU3OEVBNTcwNTJENDM2Qg"
T = 1000   # controller.quorum.election.timeout.ms


def config(tmp_path):
    return load_config({
        "process.roles": "controller", "node.id": "1", "controller.listener.names": "CONTROLLER",
        "listeners": "CONTROLLER://127.0.0.1:19093", "log.dirs": str(tmp_path / "n1"),
        "controller.quorum.voters": "1@127.0.0.1:19093,2@127.0.0.2:19093,3@127.0.0.3:19093",
        "controller.quorum.election.timeout.ms": str(T)})


def close(node) -> None:
    node.log.close()
    if node.voter is not None and node.voter.offsets is not None:
        node.voter.offsets.close()
    for lock in getattr(node, "dir_locks", []):
        lock.release()


def test_a_fresh_voters_election_timer_runs_from_when_its_log_was_opened(tmp_path):
    cfg = config(tmp_path)
    format_storage(cfg, CID, quiet=True)
    before = int(time.time() * 1000)
    storage = open_node_storage(cfg)
    assert storage.log.rejoining and storage.cluster_id == CID and before <= storage.opened_ms
    storage.opened_ms -= 5 * T           # as if importing and building the roles had taken 5 s
    node = Server(cfg, storage=storage)
    try:
        # drawn in [T, 2T) from the opening: already due, so the voter stands once a majority answered
        assert storage.opened_ms + T <= node.core._rejoin.election_deadline < storage.opened_ms + 2 * T
    finally:
        close(node)


def test_a_restarted_voter_counts_from_the_opening_too(tmp_path):
    cfg = config(tmp_path)
    format_storage(cfg, CID, quiet=True)
    part = cfg.metadata_log_dir / "__cluster_metadata-0"
    part.mkdir(parents=True, exist_ok=True)
    FileQuorumStateStore(part / "quorum-state").write(ElectionState(3, None, None, frozenset({1, 2, 3})))
    storage = open_node_storage(cfg)
    assert not storage.log.rejoining
    storage.opened_ms -= 5 * T
    node = Server(cfg, storage=storage)
    try:
        assert node.core.state_name == "unattached" and node.core.epoch == 3
        assert storage.opened_ms + T <= node.core.next_deadline() < storage.opened_ms + 2 * T
    finally:
        close(node)
