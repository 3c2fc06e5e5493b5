"""The controller simulation's requests through the one door, with an authorizer (kraftwire.sim.door_sim)."""

from __future__ import annotations

from kraftwire.core.outputs import Respond
from kraftwire.metadata.image import AclEntry, MetadataImage
from kraftwire.protocol.requests import Reply
from kraftwire.security.authorizer import ALLOW, CREATE, DENY, LITERAL, PREFIXED, TOPIC
from kraftwire.sim.config import SimConfig
from kraftwire.sim.controller_sim import run_controller_seed
from kraftwire.sim.door_sim import ALICE_PRINCIPAL, may_create


def _image(*acls: tuple[str, int, str, int]) -> MetadataImage:
    entries = {i: AclEntry(TOPIC, name, pattern, who, "*", CREATE, perm) for i, (name, pattern, who, perm) in
               enumerate(acls)}
    return MetadataImage(acls=entries)


def test_reference_model_deny_wins_and_no_acl_denies() -> None:
    assert not may_create(_image(), ALICE_PRINCIPAL, "a-1")
    image = _image(("a-", PREFIXED, ALICE_PRINCIPAL, ALLOW), ("a-d", PREFIXED, ALICE_PRINCIPAL, DENY),
                   ("a-1", LITERAL, "User:*", DENY))
    assert may_create(image, ALICE_PRINCIPAL, "a-2")
    assert not may_create(image, ALICE_PRINCIPAL, "a-d2")
    assert not may_create(image, ALICE_PRINCIPAL, "a-1")
    assert not may_create(image, "User:bob", "a-2")


def test_requests_go_through_the_door_and_alice_is_both_refused_and_allowed() -> None:
    created = refused = acls = 0
    for seed in range(8):
        for wire in (False, True):
            result, sim = run_controller_seed(seed, SimConfig(controller=True, wire=wire))
            assert result.ok, f"seed {seed} wire={wire}: {result.violations}"
            created += sim.acl_clients.created
            refused += sim.acl_clients.refused
            acls += sim.acl_clients.acls_acked
            assert all(n.node is None or n.node.door is not None for nid, n in sim.nodes.items() if nid in sim.shells)
    assert created > 0 and refused > 0 and acls == 16 * 6


def test_answers_come_out_of_the_door_as_replies(monkeypatch) -> None:
    from kraftwire.sim import controller_sim

    seen: list[object] = []
    original = controller_sim.ControllerSimulation._on_respond

    def spy(self, node, out: Respond) -> None:
        seen.append(out.body)
        original(self, node, out)
    monkeypatch.setattr(controller_sim.ControllerSimulation, "_on_respond", spy)
    result, _ = run_controller_seed(1, SimConfig(controller=True))
    assert result.ok and seen and all(isinstance(b, Reply) for b in seen)


def test_mutation_gate_ignoring_deny_acls_is_caught() -> None:
    # (at least half the seeds: a seed catches it when alice writes under a deny while the mutation is in)
    caught = [seed for seed in range(12)
              if not run_controller_seed(seed, SimConfig(controller=True, bugs=frozenset({"gate_ignores_deny"})))[0].ok]
    assert len(caught) >= 6, caught
    result, _ = run_controller_seed(caught[0], SimConfig(controller=True, bugs=frozenset({"gate_ignores_deny"})))
    assert "by User:alice wrote records" in result.violations[0] and "deny it" in result.violations[0]


def test_forwarded_writes_are_applied_once_under_the_clients_principal_across_failovers() -> None:
    sent = applied = retried = resent = extra = 0
    for seed in range(10):
        result, sim = run_controller_seed(seed, SimConfig(controller=True, wire=seed % 2 == 1))
        assert result.ok, f"seed {seed}: {result.violations}"
        fwd = sim.forwarder
        sent, applied, retried = sent + fwd.sent, applied + fwd.applied, retried + fwd.retried
        resent, extra = resent + fwd.resent_after_write, extra + sim.acl_clients.extra_acked
        committed = sim.checker.committed
        assert all(sum(f < len(committed) and committed[f][0] == e for e, f in w) <= 1 for w in fwd.writes.values())
    # Envelopes were sent, some wrote, and some were sent again after NOT_CONTROLLER or no answer.
    assert sent > 50 and applied > 10 and retried > 10
    assert resent > 0 and extra > 0


def test_mutation_create_acls_rewriting_an_existing_acl_is_caught_by_at_most_once() -> None:
    bugs = frozenset({"create_acls_rewrites_existing"})
    results = [run_controller_seed(seed, SimConfig(controller=True, bugs=bugs))[0] for seed in range(8)]
    caught = [r for r in results if not r.ok]
    assert len(caught) >= 6, [r.seed for r in results if r.ok]
    assert "applied 2 times" in caught[0].violations[0]


def test_mutation_envelope_losing_the_principal_is_caught() -> None:
    bugs = frozenset({"envelope_loses_principal"})
    results = [run_controller_seed(seed, SimConfig(controller=True, bugs=bugs))[0] for seed in range(6)]
    caught = [r for r in results if not r.ok]
    assert len(caught) >= 4
    assert "written as User:broker" in caught[0].violations[0]
