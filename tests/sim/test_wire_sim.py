"""Simulations whose messages cross the Kafka wire format (``SimConfig(wire=True)``, ``--wire``)."""

from __future__ import annotations

from dataclasses import replace

from kraftwire.core import raft_wire as wire
from kraftwire.protocol.records import Record
from kraftwire.raft import messages as m
from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import ControllerSimulation
from kraftwire.sim.runner import run_seed

SEEDS = 8


def test_raft_simulation_over_the_wire_holds_every_invariant() -> None:
    for seed in range(SEEDS):
        sim = Simulation(seed, SimConfig(voters=3, observers=1, wire=True))
        result = sim.run()
        assert result.ok, f"seed {seed}: {result.violations}"
        assert result.committed > 100 and sim.codec is not None and sim.codec.round_trips > 1000


def test_controller_simulation_over_the_wire_holds_every_invariant() -> None:
    for seed in range(SEEDS):
        sim = ControllerSimulation(seed, SimConfig(controller=True, wire=True))
        result = sim.run()
        assert result.ok, f"seed {seed}: {result.violations}"
        assert sim.checker.acked_topics and sim.codec is not None and sim.codec.round_trips > 500


def test_the_repro_command_keeps_the_wire_flag() -> None:
    assert run_seed(0, SimConfig(wire=True, duration_ms=1500)).repro.endswith(" --wire")


def test_a_fetch_mapping_that_corrupts_records_is_caught(monkeypatch) -> None:
    """Mutation: Fetch answers decoded with one record value changed; the invariants must notice."""
    real = wire.response_from_wire

    def corrupting(api_key, body):
        msg = real(api_key, body)
        if isinstance(msg, m.FetchResponse) and msg.partition is not None and msg.partition.batches:
            b = msg.partition.batches[-1]
            if not b.control and b.records:
                bad = replace(b, records=(Record(value=b"corrupt"),) + tuple(b.records[1:]))
                msg.partition.batches[-1] = bad
        return msg

    monkeypatch.setattr(wire, "response_from_wire", corrupting)
    caught = [s for s in range(SEEDS) if not Simulation(s, SimConfig(voters=3, observers=1, wire=True)).run().ok]
    assert caught, "a codec that corrupts replicated records survived every seed"
