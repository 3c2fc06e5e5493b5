"""The leader-activated role's term (core/leadership.py): when a role starts and stops, and the answers
it holds until their offsets commit (Raft's leadership view stood in for; RaftCore's own
``epoch_start_committed`` is exercised by the controller and group role tests)."""

from __future__ import annotations

from dataclasses import dataclass

from kraftwire.core.leadership import LeaderTerm


@dataclass
class Raft:
    is_leader: bool = False
    epoch: int = 1
    epoch_start_committed: bool = False


def test_a_role_starts_only_once_its_epochs_leader_change_committed_and_stops_when_raft_leaves_that_epoch():
    raft, term = Raft(), LeaderTerm[str]()
    assert not term.due(raft) and not term.ended(raft)
    raft.is_leader = True                       # leading, LeaderChange not committed yet
    assert not term.due(raft)
    raft.epoch_start_committed = True
    assert term.due(raft)
    term.begin(raft.epoch)
    assert term.active and not term.due(raft) and not term.ended(raft)
    raft.epoch = 2                              # a newer epoch, even one this node leads, ends the term
    assert term.ended(raft)
    term.end()
    term.begin(2)
    raft.is_leader = False                      # resigned or lost check-quorum
    assert term.ended(raft)


def test_superseded_by_another_leader_or_epoch():
    term = LeaderTerm[str]()
    assert not term.superseded(1, 2, 5)         # not running: nothing to stop
    term.begin(5)
    assert not term.superseded(1, 1, 5)
    assert term.superseded(1, 2, 5) and term.superseded(1, None, 5) and term.superseded(1, 1, 6)


def test_held_answers_leave_once_the_committed_end_passes_their_offset_and_the_rest_on_end():
    term = LeaderTerm[str]()
    term.begin(1)
    term.hold(10, "write at 10")
    term.hold(4, "read after 4")               # held after a later write, still released first
    term.hold(12, "write at 12")
    assert term.release(4) == [] and term.holding == 3
    assert term.release(5) == ["read after 4"]
    assert term.release(11) == ["write at 10"]
    assert term.end() == ["write at 12"] and not term.active and term.holding == 0
    assert term.release(100) == []
