"""Raft role changes are guarded: an illegal one raises instead of silently breaking the protocol."""

from __future__ import annotations

import pytest
from raft_helpers import elect, make

from kraftwire.raft.state import (
    Candidate,
    Follower,
    IllegalTransition,
    Leader,
    Observer,
    Prospective,
    Resigned,
    Unattached,
    Voted,
    check_transition,
)


def roles(epoch: int) -> dict[str, object]:
    return {"unattached": Unattached(epoch, 0), "voted": Voted(epoch, 2, 0), "candidate": Candidate(epoch, 0, 0),
            "prospective": Prospective(epoch, None, None, 0), "follower": Follower(epoch, 2, 0),
            "observer": Observer(epoch), "resigned": Resigned(epoch, 0, (), set()),
            "leader": Leader(epoch, 0, {}, {}, set(), 0)}


LEGAL_SAME_EPOCH = {
    ("unattached", "voted"), ("unattached", "follower"), ("unattached", "prospective"), ("unattached", "observer"),
    ("voted", "follower"), ("voted", "prospective"), ("voted", "observer"),   # KIP-853: left out of the voter set
    ("prospective", "unattached"), ("prospective", "voted"), ("prospective", "follower"),
    ("prospective", "resigned"),
    ("candidate", "leader"), ("candidate", "follower"), ("candidate", "prospective"),
    ("leader", "resigned"), ("resigned", "prospective"),
    ("follower", "prospective"), ("follower", "observer"),
    ("observer", "follower"), ("observer", "unattached"), ("observer", "voted"),
}


@pytest.mark.parametrize("old", sorted(roles(1)))
@pytest.mark.parametrize("new", sorted(roles(1)))
def test_same_epoch_moves_are_only_the_ones_raft_allows(old: str, new: str) -> None:
    a, b = roles(3)[old], roles(3)[new]
    if (old, new) in LEGAL_SAME_EPOCH:
        check_transition(a, b)
    else:
        with pytest.raises(IllegalTransition, match=f"{old} in epoch 3 -> {new} in epoch 3"):
            check_transition(a, b)


@pytest.mark.parametrize("old", sorted(roles(1)))
@pytest.mark.parametrize("new", sorted(roles(1)))
def test_a_higher_epoch_is_entered_only_as_a_role_that_can_start_there(old: str, new: str) -> None:
    a, b = roles(3)[old], roles(4)[new]
    ok = new in {"unattached", "voted", "follower", "observer"} or (new == "candidate" and old != "leader")
    if ok:
        check_transition(a, b)
    else:
        with pytest.raises(IllegalTransition):
            check_transition(a, b)
    with pytest.raises(IllegalTransition):      # an epoch never goes down
        check_transition(roles(4)[old], roles(3)[new])


def test_the_core_refuses_an_illegal_move_instead_of_making_it() -> None:
    core, *_ = make()
    elect(core)
    assert core.state_name == "leader"
    with pytest.raises(IllegalTransition):
        core._set_state(Follower(core.epoch, 2, 0))   # a leader can only resign in its own epoch
    assert core.state_name == "leader"
