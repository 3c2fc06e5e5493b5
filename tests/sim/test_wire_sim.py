"""Simulations whose messages cross the Kafka wire format (``SimConfig(wire=True)``, ``--wire``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kraftwire.core import raft_apis
from kraftwire.core import raft_wire as wire
from kraftwire.protocol.records import Record
from kraftwire.raft import messages as m
from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import ControllerSimulation
from kraftwire.sim.runner import run_seed
from kraftwire.sim.wire import SenderCheck, WireError

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


def test_a_raft_request_decoded_as_from_another_node_is_caught(monkeypatch) -> None:
    """Mutation: the door's translation names the wrong replica in a Fetch (as if another follower fetched);
    the sender check fails the seed at the first such request, with or without the bytes."""
    real = raft_apis.request_from_wire

    def misattributing(api_key, body, version):
        source, msg = real(api_key, body, version)
        if isinstance(msg, m.FetchRequest):
            return source % 3 + 1, replace(msg, replica_id=source % 3 + 1)
        return source, msg

    monkeypatch.setattr(raft_apis, "request_from_wire", misattributing)
    for wire_format in (False, True):
        result = Simulation(0, SimConfig(voters=3, wire=wire_format, duration_ms=1500)).run()
        assert any("FetchRequest from node" in v and "reached its Raft core as from node" in v
                   for v in result.violations), result.violations


def test_the_sender_check_lets_requests_that_name_no_sender_through() -> None:
    """DescribeQuorum and the voter changes name no sending node (source -1): nothing to check."""
    sim = Simulation(0, SimConfig(voters=3, duration_ms=100))
    sim.start()
    core = sim.nodes[1].node
    apis = core.raft_apis
    assert isinstance(apis, SenderCheck)

    def ask(sender, request):
        apis.sender = sender
        return apis.ask(sim.connection(), request, lambda reply: reply)

    assert ask(7, sim.raft_wire.request(2, m.DescribeQuorumRequest())) is not None
    assert ask(3, sim.raft_wire.request(3, m.VoteRequest(sim.cfg.cluster_id, 5, 3, 0, 0))) is not None
    with pytest.raises(WireError, match="VoteRequest from node 2 reached its Raft core as from node 3"):
        ask(2, sim.raft_wire.request(3, m.VoteRequest(sim.cfg.cluster_id, 6, 3, 0, 0)))
