"""Voter changes (KIP-853) under faults: a kraft.version 1 quorum whose voters an admin keeps changing.

Nodes 1..V are formatted with ``--initial-controllers`` (a bootstrap snapshot naming them), nodes 101.. with
``--no-initial-controllers`` (an empty log: they fetch as observers until added). Every few hundred ms
an admin sends the leader AddRaftVoter for a node outside the set or RemoveRaftVoter for one inside it
(never below one voter), as ``kafka-metadata-quorum add-controller | remove-controller`` would; a voter
being added answers the leader's ApiVersions when it is up. The usual faults run meanwhile (``wipe`` is
left out: a wiped KIP-853 voter is a new replica key that must be added back, not the same voter).

Invariants on top of the usual ones (``ReconfigChecker``): election safety under the voter set in force
(a new leader's LeaderChange names voters that are a majority of the set its log had in force), at
most one voter change uncommitted in any log, consecutive voter sets differ by one voter, and every
committed offset is durably held by enough voters that every majority of the committed voter set and
of any set appended after it includes a holder (a quorum that could elect a leader always has it).
"""

from __future__ import annotations

import uuid
from typing import Any

from kraftwire.core import Respond
from kraftwire.protocol.control import ControlType, control_type
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.add_raft_voter_request import AddRaftVoterRequest, Listener
from kraftwire.protocol.messages.leader_change_message import LeaderChangeMessage
from kraftwire.protocol.messages.remove_raft_voter_request import RemoveRaftVoterRequest
from kraftwire.protocol.records import Record
from kraftwire.raft import RaftCore, SimulatedCrash, SnapshotId
from kraftwire.raft import messages as m
from kraftwire.raft.reconfig import VoterHistory
from kraftwire.raft.snapshot import frame
from kraftwire.raft.voter_set import VoterNode, VoterSet, bootstrap_snapshot
from kraftwire.sim.cluster import DELIVER_RESP, DIGEST_KEY, REQ_TIMEOUT, RESTART, Simulation
from kraftwire.sim.config import SimConfig
from kraftwire.sim.invariants import InvariantChecker, Violation, entry_at, held

ADMIN = 0
CHANGE = 100
LISTENER = "CONTROLLER"


def directory_id(nid: int) -> uuid.UUID:
    return uuid.UUID(int=(nid << 64) | 0xD1)


def voter_node(nid: int) -> VoterNode:
    return VoterNode(nid, directory_id(nid), ((LISTENER, f"node{nid}", 9093),))


class ReconfigSimulation(Simulation):
    def __init__(self, seed: int, cfg: SimConfig) -> None:
        super().__init__(seed, cfg)
        self.checker = ReconfigChecker(self)
        self.faults = [f for f in self.faults if f != "wipe"]
        initial = VoterSet(tuple(voter_node(i) for i in self.voter_ids))
        for nid in self.voter_ids:
            self.nodes[nid].log.create_snapshot(SnapshotId(0, 0), bootstrap_snapshot(initial))
        self.changes_ok = 0
        self.changes_refused: dict[str, int] = {}
        self._admin: dict[int, str] = {}

    def start(self) -> None:
        super().start()
        self.schedule(self.rng.randint(100, 400), CHANGE)

    def _start(self, nid: int, rejoining: bool) -> None:
        node = self.nodes[nid]
        node.incarnation += 1
        node.pending.clear()
        node.rejoining = False
        try:
            node.core = RaftCore(nid, self.voter_ids, self.raft, node.log, node.store,
                                 _rng(self.rng), self.cfg.cluster_id, self.now, self._listener_for(nid),
                                 faults=self.bugs, directory_id=directory_id(nid),
                                 voter_history=VoterHistory.from_log(node.log), listener_name=LISTENER,
                                 epoch_start_records=lambda: self._epoch_start(nid))
            node.node = self._node_core(nid, node.core)
        except SimulatedCrash:
            node.log.crash()
            self.schedule(self.now + self.rng.randint(20, 500), RESTART, (nid, node.incarnation))
            return
        self.checker.on_start(node)
        node.tick_at = None
        self._run_core(node, lambda c: c.tick(self.now))

    def _epoch_start(self, nid: int) -> tuple[Record, ...]:
        """As the server's ``EpochStartRecords``: a new leader whose set in force is still the bootstrap
        snapshot's copies it into the log, so observers (formatted without voters) learn it by fetching."""
        node = self.nodes[nid]
        core, sid = node.core, node.log.latest_snapshot_id()
        latest = None if core is None or core.history is None else core.history.latest
        if latest is None or latest[0] != -1 or sid is None or sid.end_offset != 0:
            return ()
        return core.history.control_records_at(0)

    def take_snapshot(self, nid: int, sid: SnapshotId, digest: bytes) -> None:
        core = self.nodes[nid].core
        assert core is not None
        core.create_snapshot(sid, frame(sid, [Record(value=digest, key=DIGEST_KEY)], timestamp_ms=self.now,
                                        control=core.snapshot_control(sid.end_offset)))
        self.checker.on_state(nid, "snapshot", sid.end_offset, digest, sid.epoch)
        if self.rng.random() < self.cfg.snapshot_clean_p:
            self.checker.check_hw(self.nodes[nid])
            core.delete_before(sid)

    # ------------------------------------------------------------------------------ admin and ApiVersions
    def _route(self, node: Any, outputs: list[m.Output]) -> None:
        if not self._write_state(node, outputs):
            return
        rest: list[m.Output] = []
        for out in outputs:
            if isinstance(out, m.PersistState):
                continue
            if isinstance(out, Respond) and self.inbound.get(out.request_id, (None,))[0] == ADMIN:
                self.inbound.pop(out.request_id)   # the door's answer to the admin's AddRaftVoter/RemoveRaftVoter
                key = self.door_raft.pop(out.request_id)
                error = self.raft_wire.reply(key, out.body).error_code
                kind = self._admin.pop(out.request_id, "?")
                if error == 0:
                    self.changes_ok += 1
                else:
                    name = f"{kind}:{Errors(error).name}"
                    self.changes_refused[name] = self.changes_refused.get(name, 0) + 1
            elif isinstance(out, m.SendRequest) and isinstance(out.msg, m.KraftVersionsRequest):
                src = node.node_id
                node.pending.add(out.request_id)
                self.schedule(self.now + self.raft.request_timeout_ms, REQ_TIMEOUT, (src, node.incarnation,
                                                                                    out.request_id))
                peer = self.nodes.get(out.dest_id)
                if (peer is not None and peer.core is not None and not self._lost(src, out.dest_id)
                        and not self._lost(out.dest_id, src)):
                    self.schedule(self.now + 2 * self._latency(src, out.dest_id), DELIVER_RESP,
                                  (src, node.incarnation, out.request_id, m.KraftVersionsResponse(0, (0, 1))))
            else:
                rest.append(out)
        super()._route(node, rest)

    def _dispatch(self, kind: int, payload: Any) -> Any:
        if kind != CHANGE:
            return super()._dispatch(kind, payload)
        if not self.healed or self.rng.random() < 0.5:
            self.schedule(self.now + self.rng.randint(150, 600), CHANGE)
        leaders = [n for n in self.nodes.values() if n.core is not None and n.core.is_leader]
        if not leaders:
            return None
        node = max(leaders, key=lambda n: n.core.epoch if n.core else -1)
        core = node.core
        assert core is not None
        pick = self._admin_pick(set(core.voters))
        if pick is None:
            return None
        add, nid = pick
        body: Any
        if add:
            v = voter_node(nid)
            body = AddRaftVoterRequest(self.cfg.cluster_id, 30000, nid, v.directory_id,
                                       [Listener(name, host, port) for name, host, port in v.endpoints])
        else:
            body = RemoveRaftVoterRequest(self.cfg.cluster_id, nid, directory_id(nid))
        conn = self.connection()
        self._admin[conn] = "add" if add else "remove"
        # as ``kafka-metadata-quorum add-controller | remove-controller``: a client's request to the controller
        # listener, answered by the leader's Raft core through its door
        self.deliver(node, "admin", (ADMIN, 0, 0), self.raft_wire.kafka(body, "kafka-metadata-quorum"),
                     conn)
        return node

    def _admin_pick(self, voters: set[int]) -> tuple[bool, int] | None:
        """The admin's next change: (True, node) adds it, (False, node) removes it, None skips this turn."""
        outside = [i for i in self.nodes if i not in voters]
        if outside and (len(voters) <= 1 or self.rng.random() < 0.5):
            return True, self.rng.choice(outside)
        return False, self.rng.choice(sorted(voters))


def _rng(parent: Any) -> Any:
    import random
    return random.Random(parent.getrandbits(64))


class ReconfigChecker(InvariantChecker):
    """The usual invariants, with the voter set in force instead of a fixed one."""

    def after_event(self, node: Any) -> None:
        if node is not None and node.core is not None:
            self._check_voter_history(node)
            if node.core.is_leader and not getattr(node.core, "_sim_checked_lc", False):
                node.core._sim_checked_lc = True
                self._check_election(node)
        super().after_event(node)

    def _history(self, node: Any) -> tuple[tuple[int, VoterSet], ...]:
        """The (offset, voter set) entries of ``node``'s log the rules apply to."""
        return node.core.history.entries

    def _check_voter_history(self, node: Any) -> None:
        entries = self._history(node)
        uncommitted = [off for off, _ in entries if off >= len(self.committed)]
        if len(uncommitted) > 1:
            raise Violation(f"node {node.node_id}: {len(uncommitted)} voter changes uncommitted at offsets "
                            f"{uncommitted} (committed {len(self.committed)}): at most one may be in flight")
        for (_, a), (off, b) in zip(entries, entries[1:], strict=False):
            if len(a.ids ^ b.ids) > 1:
                raise Violation(f"node {node.node_id}: VotersRecord at {off} changes more than one voter: "
                                f"{sorted(a.ids)} -> {sorted(b.ids)}")

    def _check_election(self, node: Any) -> None:
        """The granting voters of a new leader's LeaderChange are a majority of the set in force before it."""
        core = node.core
        start = core.state.epoch_start_offset
        before = [vs for off, vs in core.history.entries if off < start]
        batch = next((b for b in node.log.read(start, 1 << 20) if b.base_offset == start), None)
        if not before or batch is None or not batch.records or control_type(batch.records[0]) != ControlType.LEADER_CHANGE:
            return
        msg = LeaderChangeMessage.decode(batch.records[0].value, 0)
        granted = {v.voter_id for v in msg.granting_voters}
        voters = before[-1].ids
        if len(granted & voters) < len(voters) // 2 + 1:
            raise Violation(f"node {node.node_id} leads epoch {core.epoch} with votes {sorted(granted)}, not a "
                            f"majority of the voter set in force {sorted(voters)}")

    def _sets_before_any(self) -> list[frozenset[int]]:
        """The voter set in force where a log's entries name none yet (none: the rule is skipped)."""
        return []

    def _check_majority(self) -> None:
        c = len(self.committed)
        if c == 0:
            return
        want = self.committed[c - 1]
        live = [n for n in self.sim.nodes.values() if n.core is not None]
        if not live:
            return
        sets: list[frozenset[int]] = []
        ref = max(live, key=lambda n: n.core.hw or 0)
        below = [vs.ids for off, vs in self._history(ref) if off < c] or self._sets_before_any()
        if below:
            sets.append(below[-1])
        for n in live:
            sets.extend(vs.ids for off, vs in self._history(n) if off >= c)
        holders = {nid for nid, n in self.sim.nodes.items()
                   if held(n.log, c - 1) and (c - 1 < n.log.start_offset or entry_at(n.log, c - 1) == want)}
        for ids in sets:
            need = len(ids) - (len(ids) // 2 + 1) + 1
            if len(ids & holders) < need:
                raise Violation(f"committed offset {c - 1} is durably held by {sorted(holders & ids)} only: a "
                                f"majority of the voter set {sorted(ids)} could elect a leader without it")
