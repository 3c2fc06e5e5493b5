"""What the Raft core tells the operator at INFO, in Kafka's terms (``kraftwire.raft`` logger).

The core calls these from its transitions; each returns at once when INFO is off for the logger, so
simulations and tests pay one ``isEnabledFor`` check. Messages name states as Kafka's
``QuorumState`` logs them (``FollowerState(epoch=5, leader=1)``). Warnings about a peer (another
cluster id, an unknown voter) are logged once per peer and reason.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

log = logging.getLogger("kraftwire.raft")

_STATE_NAMES = {"unattached": "UnattachedState", "voted": "VotedState", "prospective": "ProspectiveState",
                "candidate": "CandidateState",
                "follower": "FollowerState", "observer": "ObserverState", "leader": "LeaderState",
                "resigned": "ResignedState"}
_reported: weakref.WeakKeyDictionary[Any, set[tuple[str, int]]] = weakref.WeakKeyDictionary()


def _tag(core: Any) -> str:
    """Kafka's log prefix name; a second quorum of the node (the offsets quorum) sets ``log_tag``."""
    return getattr(core, "log_tag", "RaftManager")


def state_text(st: Any, node_id: int | None = None) -> str:
    name = _STATE_NAMES.get(getattr(st, "name", ""), type(st).__name__)
    parts = [f"epoch={st.epoch}"]
    if getattr(st, "leader_id", None) is not None:
        parts.append(f"leader={st.leader_id}")
    elif name in ("LeaderState", "ResignedState"):
        parts.append(f"leader={node_id}")
    if getattr(st, "voted_id", None) is not None:
        parts.append(f"votedId={st.voted_id}")
    if name == "CandidateState":
        parts.append(f"retries={st.retries}")
    if name == "ResignedState":
        parts.append(f"preferredSuccessors={list(st.preferred_successors)}")
    return f"{name}({', '.join(parts)})"


def transition(core: Any, old: Any, new: Any) -> None:
    """Every change of role, epoch or leader (Kafka: "Completed transition to ... from ...")."""
    if not log.isEnabledFor(logging.INFO) or old is None:
        return
    if type(old) is type(new) and old.epoch == new.epoch and getattr(old, "leader_id", None) == getattr(
            new, "leader_id", None) and getattr(old, "voted_id", None) == getattr(new, "voted_id", None):
        return
    log.info("[%s id=%s] Completed transition to %s from %s", _tag(core), core.node_id,
             state_text(new, core.node_id), state_text(old, core.node_id))


def vote(core: Any, req: Any, granted: bool) -> None:
    """A Vote request answered: granted, or refused with the reason."""
    if not log.isEnabledFor(logging.INFO):
        return
    node = core.node_id
    if granted:
        log.info("[%s id=%s] Granted vote to candidate %s in epoch %s (its log ends at epoch %s offset "
                 "%s)", _tag(core), node, req.candidate_id, req.candidate_epoch, req.last_offset_epoch, req.last_offset)
        return
    log.info("[%s id=%s] Rejected vote of candidate %s in epoch %s: %s", _tag(core), node, req.candidate_id,
             req.candidate_epoch, _refusal(core, req))


def prevote(core: Any, req: Any, granted: bool) -> None:
    """A pre-vote (KIP-996) answered; nothing changed on this node either way."""
    if not log.isEnabledFor(logging.INFO):
        return
    log.info("[%s id=%s] %s pre-vote of prospective %s in epoch %s", _tag(core), core.node_id,
             "Granted" if granted else "Rejected", req.candidate_id, req.candidate_epoch)


def _refusal(core: Any, req: Any) -> str:
    st = core.state
    if req.candidate_epoch < st.epoch:
        return f"its epoch is older than ours ({st.epoch})"
    if req.candidate_id not in core.voters:
        return f"{req.candidate_id} is not a voter {sorted(core.voters)}"
    if not core.can_elect:
        return "this node cannot vote (observer or rejoining)"
    ours = (core.log.last_epoch(), core.log.end_offset)
    if (req.last_offset_epoch, req.last_offset) < ours:
        return (f"its log (epoch {req.last_offset_epoch}, offset {req.last_offset}) is behind ours "
                f"(epoch {ours[0]}, offset {ours[1]})")
    voted = getattr(st, "voted_id", None)
    if voted is not None:
        return f"already voted for {voted} in epoch {st.epoch}"
    leader = getattr(st, "leader_id", None)
    if leader is not None:
        return f"epoch {st.epoch} already has leader {leader}"
    return f"this node is {state_text(st)}"


def vote_result(core: Any, voter: int, epoch: int, granted: bool) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] Voter %s %s our vote in epoch %s", _tag(core), core.node_id, voter,
                 "granted" if granted else "refused", epoch)


def rejected_peer(core: Any, peer: int, api: str, reason: str, cluster_id: str | None = None) -> None:
    """A peer refused for another cluster id or as an unknown voter (WARN, once per peer and reason)."""
    seen = _reported.setdefault(core, set())
    if (reason, peer) in seen:
        return
    seen.add((reason, peer))
    detail = f"its cluster id {cluster_id} is not ours ({core.cluster_id})" if reason == "cluster" else reason
    log.warning("[%s id=%s] Rejected %s from node %s: %s (logged once for this peer)", _tag(core), core.node_id,
                api, peer, detail)


def refused_by_peer(core: Any, peer: int, api: str, error: str) -> None:
    """A peer refused our request with an error naming us as foreign (WARN, once per peer)."""
    seen = _reported.setdefault(core, set())
    if (error, peer) in seen:
        return
    seen.add((error, peer))
    log.warning("[%s id=%s] Node %s refused our %s with %s: its cluster id differs from ours (%s); "
                "one of the two data directories belongs to another cluster (logged once for this peer)",
                _tag(core), core.node_id, peer, api, error, core.cluster_id)


def truncation(core: Any, leader: int, epoch: int, offset: int, end: int) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] Truncating the log from end offset %s to %s: leader %s of epoch %s reported "
                 "a diverging epoch", _tag(core), core.node_id, end, offset, leader, epoch)


def snapshot_installed(core: Any, sid: Any, size: int) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] Installed snapshot %s (end offset %s, epoch %s, %s bytes) fetched from the "
                 "leader", _tag(core), core.node_id, _sid(sid), sid.end_offset, sid.epoch, size)


def snapshot_loaded(core: Any, sid: Any, batches: int) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] Loading snapshot %s (%s batches) into the state machine", _tag(core), core.node_id,
                 _sid(sid), batches)


def snapshot_written(core: Any, sid: Any) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] Wrote snapshot %s", _tag(core), core.node_id, _sid(sid))


def _sid(sid: Any) -> str:
    return f"{sid.end_offset:020d}-{sid.epoch:010d}"


def voters_changed(core: Any, old: list[int], new: list[int]) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] The voter set in force changed from %s to %s (epoch %s)", _tag(core), core.node_id,
                 old, new, core.state.epoch)


def fresh_quorum(core: Any, answered: int, voters: int) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] A fresh quorum: %s of %s voters (a majority, this one included) answered and none has "
                 "a history (epoch 0); taking part in elections", _tag(core), core.node_id, answered, voters)


def leader_refused(core: Any, leader: int, epoch: int, standoff_ms: int) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("[%s id=%s] Leader %s of epoch %s refused the connection (nothing listens at its address); "
                 "granting pre-votes, and standing in %s ms unless it answers first", _tag(core), core.node_id,
                 leader, epoch, standoff_ms)
