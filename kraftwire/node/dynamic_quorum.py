"""A controller without ``controller.quorum.voters`` (KIP-853): its voters come from its own metadata log.

``storage format --standalone | --initial-controllers`` (kraftwire's or Kafka's) leaves the voter set in the
bootstrap snapshot; the latest VotersRecord — in the newest snapshot, or after it in the log — is in force, as
Kafka reads it. Voters change at run time through AddRaftVoter/RemoveRaftVoter (``raft/reconfig.py``); a
controller the set does not name starts as an observer through ``controller.quorum.bootstrap.servers``.
"""

from __future__ import annotations

import uuid
from typing import Any

from kraftwire.config import NodeConfig, Voter
from kraftwire.protocol.records import Record
from kraftwire.raft.voter_set import (
    ControlState,
    VoterSet,
    kraft_version_record,
    read_control_state,
    replay_control,
)
from kraftwire.storage import StorageError

_SCAN_BYTES = 8 << 20

class DynamicQuorumError(StorageError):
    """One line naming why this controller cannot run on its dynamic quorum, and what to do."""


def resolve_voters(cfg: NodeConfig, log: Any, directory_id: uuid.UUID | None) -> tuple[VoterSet, tuple[Record, ...]]:
    """Fill ``controller.quorum.voters`` of ``cfg`` from the log's voter set; the control records every
    snapshot of this node must carry. Raises DynamicQuorumError when the log names no voter set, or not this
    node (with this log directory)."""
    state = read_control_state(log)
    if state.voters is None or state.kraft_version < 1:
        if cfg["controller.quorum.bootstrap.servers"]:
            # --no-initial-controllers: an observer (voters learnt from the bootstrap servers at start) until added
            return VoterSet(()), ()
        raise DynamicQuorumError(
            "controller.quorum.voters is not set and the metadata log holds no voter set: this controller was "
            "formatted with --no-initial-controllers (or not at all) and has no controller.quorum.bootstrap.servers "
            "to join through: set it, or format with --standalone or --initial-controllers")
    me = state.voters.get(cfg.node_id)
    if me is not None and directory_id is not None and me.directory_id != directory_id:
        raise DynamicQuorumError(
            f"node {cfg.node_id} (directory {directory_id}) is in the voter set of its metadata log with another "
            f"directory ({me.directory_id}): this directory was re-formatted; remove the old voter "
            "(metadata-quorum remove-controller) and add this one (add-controller)")
    listener = cfg.controller_listener
    voters = []
    for v in state.voters.voters:
        ep = v.endpoint(listener)
        if ep is None:
            raise DynamicQuorumError(f"voter {v.node_id} has no {listener} endpoint in the voter set "
                                     f"({v.endpoints}); controller.listener.names must name the listener it used")
        voters.append(Voter(v.node_id, ep[0], ep[1]))
    cfg.values["controller.quorum.voters"] = voters
    return state.voters, (kraft_version_record(state.kraft_version), state.voters.to_record())


class EpochStartRecords:
    """What a new leader appends after its LeaderChange (Kafka's ``LeaderState`` does the same): while the voter
    set in force is the bootstrap snapshot's (offset 0-0, never yet written to the log), KRaftVersionRecord and
    VotersRecord, so the set is replicated in the log; nothing once the log or a later snapshot holds one.

    The log is scanned incrementally (control batches only), from where the last call stopped."""

    def __init__(self, log: Any) -> None:
        self.log = log
        self._scanned = 0
        self._found_at: int | None = None

    def __call__(self) -> tuple[Record, ...]:
        sid = self.log.latest_snapshot_id()
        if sid is not None and sid.end_offset > 0:
            return ()
        end = self.log.end_offset
        if self._found_at is not None and self._found_at < end:
            return ()
        if end < self._scanned or self._found_at is not None:   # truncated below what we had read
            self._scanned, self._found_at = 0, None
        state = ControlState()
        if sid is not None:
            state = replay_control(state, self.log.read_snapshot(sid), in_snapshot=True)
        if state.voters is None or state.kraft_version < 1:
            return ()
        offset = max(self._scanned, self.log.start_offset)
        while offset < end:
            batches = self.log.read(offset, _SCAN_BYTES)
            if not batches:
                break
            for b in batches:
                if b.control and replay_control(ControlState(), [b]).voters is not None:
                    self._found_at = b.base_offset
                    return ()
            offset = batches[-1].next_offset
        self._scanned = offset
        return (kraft_version_record(state.kraft_version), state.voters.to_record())
