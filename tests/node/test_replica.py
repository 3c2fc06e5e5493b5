"""One replica assembly for both quorums (node/node_storage.py open_quorum_log/recover_voter_log,
node/replica.py assemble_replica): a voter's directory checks, and what the assembly wires."""

from __future__ import annotations

from kraftwire.core import GroupRole
from kraftwire.group import GroupConfig
from kraftwire.group.replicated import OffsetsMachine
from kraftwire.net.peers import PeerClient
from kraftwire.node.disk_worker import DiskWorker
from kraftwire.node.node_storage import open_quorum_log, recover_voter_log
from kraftwire.node.replica import assemble_replica, quorum_raft_config
from kraftwire.raft import ElectionState
from tests.node.harness import node_config

PORTS = [19001, 19002, 19003]


def test_a_voter_of_several_starting_on_an_empty_directory_rejoins_and_one_with_quorum_state_does_not(tmp_path):
    cfg = node_config(1, PORTS, **{"metadata.log.dir": str(tmp_path)})
    log, store = open_quorum_log(tmp_path / "q-0", cfg)
    recover_voter_log(log, store, cfg, fresh="fresh or wiped")
    assert log.rejoining
    single = node_config(1, PORTS[:1], **{"metadata.log.dir": str(tmp_path)})
    log, store = open_quorum_log(tmp_path / "single-0", single)
    recover_voter_log(log, store, single, fresh="fresh or wiped")
    assert not log.rejoining                               # a lone voter has nobody to ask
    log, store = open_quorum_log(tmp_path / "voted-0", cfg)
    store.write(ElectionState(epoch=3, leader_id=2, voted_id=None, voters=frozenset({1, 2, 3})))
    recover_voter_log(log, store, cfg, fresh="fresh or wiped")
    assert not log.rejoining                               # it knew epoch 3: not a fresh directory


def test_the_offsets_quorums_replica_is_assembled_on_its_topic_lane_and_roles(tmp_path):
    cfg = node_config(1, PORTS, **{"metadata.log.dir": str(tmp_path)})
    log, store = open_quorum_log(tmp_path / "q-0", cfg)
    recover_voter_log(log, store, cfg, fresh="fresh or wiped")
    machine = OffsetsMachine()
    groups = GroupRole(1, GroupConfig(), machine=machine)
    disk = DiskWorker()
    replica = assemble_replica(cfg, log, store, voters=[1, 2, 3], raft_config=quorum_raft_config(cfg),
                               cluster_id="c", listener=machine, peers=PeerClient({}, security=None, client_id="t"), disk=disk, voter=True,
                               directory_id=None, now_ms=1000, groups=groups, topic="t", lane="t-raft", log_tag="T")
    core, node, driver = replica.core, replica.node, replica.driver
    assert core.rejoining and core.log_tag == "T" and core.listener is machine and set(core.voters) == {1, 2, 3}
    assert node.raft is core and node.groups is groups and groups.raft is core and node.controller is None
    assert driver.node is node and driver.disk is disk and (driver.topic, driver.lane) == ("t", "t-raft")
    assert [n[0] for n in driver.nodes] == [1, 2, 3] and driver.leader_endpoints == [("CONTROLLER", "127.0.0.1", 19001)]
    assert len(driver.on_change) == 1                      # clears the re-join marker once Raft says it is back
    driver.on_change[0]()
    assert log.rejoining                                   # ... not before
