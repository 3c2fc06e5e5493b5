"""Controller + raft + scripted brokers under faults (kraftwire.sim.controller_sim)."""

from __future__ import annotations

import pytest

from kraftwire.broker.metadata import BrokerMetadataListener
from kraftwire.controller import cluster
from kraftwire.core.broker_lifecycle_role import BrokerLifecycleRole
from kraftwire.core.controller_role import ControllerRole
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import ControllerSimulation, run_controller_seed


def test_invariants_hold_over_120_seeds_and_failovers_hit_in_flight_requests() -> None:
    interrupted: dict[str, int] = {}
    shutdowns = registrations = topics = activations = 0
    for seed in range(120):
        result, sim = run_controller_seed(seed, SimConfig())
        assert result.ok, f"seed {seed}: {result.violations}"
        shutdowns += sim.shutdowns
        registrations += len(sim.checker.reg_epochs)
        topics += len(sim.checker.acked_topics)
        activations += sim.activations
        for k, v in sim.interrupted.items():
            interrupted[k] = interrupted.get(k, 0) + v
    # The runs really exercised what the invariants are about.
    assert registrations > 300 and topics > 1000 and shutdowns > 30
    assert activations >= 240, "controller failovers are expected in most seeds"
    for kind in ("BrokerRegistrationRequest", "BrokerHeartbeatRequest", "ControlledShutdown",
                 "CreateTopicsRequest"):
        assert interrupted.get(kind, 0) > 0, f"no failover landed during a {kind}: {interrupted}"


def test_same_seed_same_run() -> None:
    a, sa = run_controller_seed(7, SimConfig())
    b, sb = run_controller_seed(7, SimConfig())
    assert (a.events, a.committed, sa.checker.reg_epochs) == (b.events, b.committed, sb.checker.reg_epochs)


def _first_violation(seeds: range) -> str | None:
    for seed in seeds:
        result, _ = run_controller_seed(seed, SimConfig())
        if not result.ok:
            return result.violations[0]
    return None


def test_checker_catches_replies_sent_before_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    def eager(self, request, version, done, origin=None):  # the production role answering once appended
        self.maybe_activate()
        if self.controller.active:
            self.controller.set_next_offset(self.next_offset())
        result = self.controller.handle(self.clock(), request, version)
        if result.records:
            self._append(result.records)
        done(result.response)

    monkeypatch.setattr(ControllerRole, "submit", eager)
    found = _first_violation(range(40))
    # whichever answer is caught first: a registration's epoch, a topic or a quota its answering node has not committed
    assert found is not None and any(s in found for s in ("not committed", "not in its committed image",
                                                          "but its committed image holds")), found


def test_checker_catches_a_new_incarnation_left_leading(monkeypatch: pytest.MonkeyPatch) -> None:
    original = cluster.register_broker

    def keep_leaderships(ctl, now, req, version):
        records, response = original(ctl, now, req, version)
        return records[:1], response   # only the RegisterBrokerRecord (Kafka before 3.7)

    monkeypatch.setattr(cluster, "register_broker", keep_leaderships)
    monkeypatch.setitem(_commands(), "BrokerRegistrationRequest", keep_leaderships)
    found = _first_violation(range(60))
    assert found is not None and "leads" in found, found


def test_brokers_run_the_production_broker_node_core() -> None:
    """The brokers are Raft observers whose node cores run the broker role: they replay the log, take
    and load snapshots, and end registered and unfenced with every controller's image."""
    loads = snapshots = 0
    for seed in range(6):
        result, sim = run_controller_seed(seed, SimConfig())
        assert result.ok, f"seed {seed}: {result.violations}"
        for bid, agent in sim.agents.items():
            node = sim.nodes[bid]
            assert not node.is_voter and node.node is not None and node.node.broker is agent.role
            # Caught up past the heal (what committed in the last fetch round may still be on its way;
            # the checker compares every image at equal offsets).
            assert agent.role.serving and agent.role.metadata.applied_offset >= sim.checker.committed_at_heal - 1
            snapshots += node.node.snapshots_taken
            loads += agent.role.metadata.snapshots_loaded
    assert snapshots > 0 and loads > 0


def test_checker_catches_a_broker_unfenced_before_catching_up(monkeypatch: pytest.MonkeyPatch) -> None:
    def boasting(self, now):   # the broker role reporting an offset it has not replayed yet
        if self.inflight is None:
            send = self.machine.poll(now, self.metadata.applied_offset + 1000)
            if send is not None:
                self.inflight_kind, self.inflight = send.kind, self._send(send.kind, send.request)

    monkeypatch.setattr(BrokerLifecycleRole, "poll", boasting)
    found = _first_violation(range(20))
    assert found is not None and "before replaying its own registration" in found, found


def test_checker_catches_a_broker_that_skips_a_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BrokerMetadataListener, "handle_snapshot", lambda self, end_offset, batches: None)
    found = _first_violation(range(40))
    # Caught as a wrong image, or as a later record the image without the snapshot's state cannot take.
    assert found is not None and any(w in found for w in ("broker image", "broker snapshot image", "different images",
                                                          "missing from its image",
                                                          "cannot apply committed metadata")), found


def _commands() -> dict:
    from kraftwire.controller import controller

    return controller._COMMANDS


def test_cli_runs_the_controller_simulation(capsys: pytest.CaptureFixture[str]) -> None:
    from kraftwire.cli.main import main

    assert main(["simulate", "--controller", "--seeds", "5", "--start-seed", "3"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "seeds=5 violations=0"


def test_repro_command_names_the_controller_mode() -> None:
    from kraftwire.sim.runner import repro_command, run_seed

    result = run_seed(2, SimConfig(controller=True))
    assert result.ok and "--controller" in result.repro
    assert "--controller" in repro_command(2, SimConfig(controller=True))


def test_controller_replay_at_every_metadata_version() -> None:
    """One seed per level 3.3-IV0 ... 4.1-IV1: every voter's image ends at that level, invariants hold."""
    from kraftwire.metadata.features import LATEST_LEVEL, MINIMUM_BOOTSTRAP_LEVEL, RecordVersions

    for level in range(MINIMUM_BOOTSTRAP_LEVEL, LATEST_LEVEL + 1):
        result, sim = run_controller_seed(level, SimConfig(metadata_version=level))
        assert result.ok, f"metadata.version {level}: {result.violations}"
        assert sim.checker.acked_topics, f"metadata.version {level}: no topic was created"
        images = [s.ctl.committed_image for s in sim.shells.values()]
        assert {img.metadata_version for img in images} == {level}
        versions = {r.version for r in _records(sim) if r.type_name == "PartitionRecord"}
        assert versions == {RecordVersions(level).partition}, (level, versions)


def _records(sim: ControllerSimulation) -> list:
    from kraftwire.protocol.metadata import decode_record

    return [decode_record(v) for _, v in sim.checker.committed if v[:1] == b"\x01"]


def test_cli_cycles_seeds_through_every_level(capsys: pytest.CaptureFixture[str]) -> None:
    from kraftwire.cli.main import main
    from kraftwire.cli.simulate import level_for_seed

    assert [level_for_seed(-1, s) for s in (0, 23, 24)] == [4, 27, 4]
    assert main(["simulate", "--controller", "--seeds", "3", "--metadata-version", "all"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "seeds=3 violations=0"
    assert "--metadata-version 23" in repro_command_for(23)


def repro_command_for(level: int) -> str:
    from kraftwire.sim.runner import repro_command

    return repro_command(1, SimConfig(controller=True, metadata_version=level))
