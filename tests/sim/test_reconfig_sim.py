"""KIP-853 voter changes under faults (kraftwire.sim.reconfig_sim) and the leader's change rules."""

from __future__ import annotations

import random
import uuid

import pytest

from kraftwire.protocol.errors import Errors
from kraftwire.raft import MemoryLog, MemoryStateStore, RaftCore, SnapshotId
from kraftwire.raft import messages as m
from kraftwire.raft.reconfig import VoterHistory
from kraftwire.raft.voter_set import VoterSet, bootstrap_snapshot
from kraftwire.sim.config import SimConfig
from kraftwire.sim.reconfig_sim import directory_id, voter_node
from kraftwire.sim.runner import run_seed

CFG = SimConfig(reconfig=True)


def test_voter_changes_keep_every_invariant_under_faults() -> None:
    changes = 0
    for seed in range(25):
        r = run_seed(seed, CFG)
        assert r.ok, (r.violations, r.repro)
        changes += r.voter_changes
    assert changes >= 40, changes   # the admin's changes do go through, not only refusals


def test_five_voters_with_spares() -> None:
    for seed in range(100, 110):
        r = run_seed(seed, SimConfig(reconfig=True, voters=5, observers=2))
        assert r.ok, (r.violations, r.repro)


def test_a_leader_dying_in_the_event_that_committed_is_checked_against_what_it_committed() -> None:
    """Seed 4038: a removed leader commits offset 82, tells its state machine, then a torn write kills it in
    the same event. The checker must observe the high watermark the node reached before it died, else the
    report looks like an uncommitted record (CI's sample found this)."""
    r = run_seed(4038, SimConfig(reconfig=True, voters=5, observers=2))
    assert r.ok, (r.violations, r.repro)
    assert r.voter_changes >= 1


def test_one_voter_grows_from_spares_formatted_without_voters() -> None:
    """The spares learn the set from the log (the first leader copies the bootstrap set into it); without
    that a spare added to a sole voter could never grant the vote the pair needs (found by these seeds)."""
    for seed in range(5000, 5045):
        r = run_seed(seed, SimConfig(reconfig=True, voters=1, observers=2))
        assert r.ok, (r.violations, r.repro)


@pytest.mark.parametrize("bug", ["two_changes_in_flight", "hw_old_majority"])
def test_invariants_catch_a_broken_reconfiguration(bug: str) -> None:
    bad = [s for s in range(40) if not run_seed(s, SimConfig(reconfig=True, bugs=frozenset({bug}))).ok]
    assert bad, f"{bug} was never caught"


# ---------------------------------------------------------------------------------- the leader's rules by hand
def _leader() -> RaftCore:
    log = MemoryLog()
    log.create_snapshot(SnapshotId(0, 0), bootstrap_snapshot(VoterSet((voter_node(1),))))
    core = RaftCore(1, [1], SimConfig().raft, log, MemoryStateStore(), random.Random(1), "c", 0,
                    directory_id=directory_id(1), voter_history=VoterHistory.from_log(log), listener_name="CONTROLLER")
    out = core.tick(0)
    for o in out:
        if isinstance(o, m.PersistLog):
            core.handle_persisted(0, o.end_offset)
    assert core.is_leader and core.hw is not None
    return core


def _answers(out: list[m.Output]) -> dict[int, m.VoterChangeResponse]:
    return {o.request_id: o.msg for o in out if isinstance(o, m.SendResponse) and isinstance(o.msg, m.VoterChangeResponse)}


def _add(nid: int) -> m.AddRaftVoterRequest:
    v = voter_node(nid)
    return m.AddRaftVoterRequest("c", 30000, nid, v.directory_id, v.endpoints)


def test_add_voter_needs_a_caught_up_fetcher_and_commits_on_the_new_majority() -> None:
    core = _leader()
    # not fetching: the ApiVersions answer comes, but the replica is not caught up
    out = core.handle_request(10, 7, -1, _add(2))
    probe = next(o for o in out if isinstance(o, m.SendRequest) and isinstance(o.msg, m.KraftVersionsRequest))
    out = core.handle_response(11, probe.request_id, m.KraftVersionsResponse(0, (0, 1)))
    assert _answers(out)[7].error_code == Errors.REQUEST_TIMED_OUT
    # fetching and caught up: the VotersRecord is appended and in force at once, answered on commit
    end = core.log.end_offset
    core.handle_request(20, 8, 2, m.FetchRequest("c", 2, 0, end, core.log.last_epoch(), core.epoch, 0, 1 << 20,
                                                 replica_directory_id=directory_id(2)))
    out = core.handle_request(21, 9, -1, _add(2))
    probe = next(o for o in out if isinstance(o, m.SendRequest) and isinstance(o.msg, m.KraftVersionsRequest))
    out = core.handle_response(22, probe.request_id, m.KraftVersionsResponse(0, (0, 1)))
    assert core.voters == (1, 2) and 9 not in _answers(out)
    # a second change while this one is uncommitted is refused
    out = core.handle_request(23, 10, -1, m.RemoveRaftVoterRequest("c", 1, directory_id(1)))
    assert _answers(out)[10].error_code == Errors.REQUEST_TIMED_OUT
    core.handle_persisted(24, core.log.end_offset)
    assert 9 not in _answers(core.tick(24))   # the leader alone is no majority of {1, 2}
    out = core.handle_request(25, 11, 2, m.FetchRequest("c", 2, 0, core.log.end_offset, core.log.last_epoch(),
                                                        core.epoch, 0, 1 << 20, replica_directory_id=directory_id(2)))
    assert _answers(out)[9].error_code == Errors.NONE


def test_remove_and_duplicate_and_unknown_voters() -> None:
    core = _leader()
    out = core.handle_request(10, 1, -1, m.RemoveRaftVoterRequest("c", 1, directory_id(1)))
    assert _answers(out)[1].error_code == Errors.VOTER_NOT_FOUND            # the last voter stays
    out = core.handle_request(10, 2, -1, m.RemoveRaftVoterRequest("c", 1, uuid.uuid4()))
    assert _answers(out)[2].error_code == Errors.VOTER_NOT_FOUND            # another directory
    out = core.handle_request(10, 3, -1, _add(1))
    assert _answers(out)[3].error_code == Errors.DUPLICATE_VOTER
    out = core.handle_request(10, 4, -1, m.AddRaftVoterRequest("other", 1, 2, directory_id(2), ()))
    assert _answers(out)[4].error_code == Errors.INCONSISTENT_CLUSTER_ID
    out = core.handle_request(10, 5, -1, m.AddRaftVoterRequest("c", 1, 2, directory_id(2), (("BROKER", "h", 1),)))
    assert _answers(out)[5].error_code == Errors.INVALID_REQUEST             # no controller listener


def test_static_quorum_refuses_voter_changes() -> None:
    core = RaftCore(1, [1], SimConfig().raft, MemoryLog(), MemoryStateStore(), random.Random(1), "c", 0)
    for o in core.tick(0):
        if isinstance(o, m.PersistLog):
            core.handle_persisted(0, o.end_offset)
    out = core.handle_request(5, 1, -1, _add(2))
    assert _answers(out)[1].error_code == Errors.UNSUPPORTED_VERSION
