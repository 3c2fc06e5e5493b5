"""``kraftwire storage recover-as-single-voter``: a surviving voter's directory becomes a new one-voter quorum.

For a quorum that lost a majority of its voters for good (etcd's ``--force-new-cluster``; Kafka has nothing):
the survivor keeps its whole metadata log and becomes the only voter, so the cluster can run again and voters
can be added back. It is data loss by construction, so it refuses without ``--i-understand-data-loss`` and
first prints what may be lost:

* offsets below the latest snapshot are committed for certain (a snapshot is only taken of committed records);
* the records above it are not proven committed: they are kept, and the new quorum commits them;
* whatever the old quorum committed that this node never received is gone; nothing on this node can say how
  much, so recover the survivor with the longest log (compare ``kraftwire storage info`` / log end offsets).

The new voter set is written as the directory's kraft.version needs it:

* kraft.version 1 (KIP-853, formatted with ``--standalone`` / ``--initial-controllers``): a control batch
  holding a VotersRecord with this node alone (its directory id and endpoints) is appended to the log in a
  new epoch, which is where a dynamic quorum reads its voters; the node starts as the only voter, and
  controllers are added back with ``metadata-quorum add-controller``;
* kraft.version 0 (static ``controller.quorum.voters``): the log holds no voter set; quorum-state is
  rewritten with this node as the only voter and no leader or vote, and the node (and every broker) must be
  started with a ``controller.quorum.voters`` naming this node only.

Both forms clear the leader and the vote of ``quorum-state`` in an epoch above every epoch the directory
knew, so the node stands at once. The node must be stopped (the directory's ``.lock`` is taken).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.config import NodeConfig
from kraftwire.raft import ElectionState
from kraftwire.storage import StorageError

CONFIRM_FLAG = "--i-understand-data-loss"


@dataclass(frozen=True, slots=True)
class Survey:
    """What the directory holds and what recovering from it keeps, commits and cannot know."""

    node_id: int
    kraft_version: int
    voters: tuple[int, ...]
    quorum_epoch: int
    start_offset: int
    end_offset: int
    last_epoch: int
    proven_end: int          # offsets below this are committed for certain (the latest snapshot)
    unproven_records: int    # records from proven_end to end_offset
    unproven_batches: int
    unproven_epochs: tuple[int, int] | None

    def lines(self) -> list[str]:
        kind = "dynamic (KIP-853)" if self.kraft_version >= 1 else "static (controller.quorum.voters)"
        out = [f"Node {self.node_id}: metadata log offsets {self.start_offset} to {self.end_offset - 1} "
               f"(log end {self.end_offset}, last epoch {self.last_epoch}), quorum epoch {self.quorum_epoch}, "
               f"kraft.version {self.kraft_version} {kind}, voters {list(self.voters)}.",
               (f"Committed for certain: every offset below {self.proven_end} (the latest snapshot; snapshots hold "
                "only committed records)." if self.proven_end > 0 else "Committed for certain: nothing this node can "
                "prove (it holds no snapshot beyond offset 0; snapshots hold only committed records).")]
        if self.unproven_records:
            lo, hi = self.unproven_epochs or (0, 0)
            out.append(f"Not proven committed: offsets {self.proven_end} to {self.end_offset - 1} ({self.unproven_records} "
                       f"records in {self.unproven_batches} batches, epochs {lo}-{hi}): they are kept and the new "
                       "quorum commits them, including any the old quorum never acknowledged.")
        else:
            out.append("Not proven committed: nothing (the log ends at the latest snapshot).")
        out.append(f"Lost for good: whatever the old quorum committed above offset {self.end_offset - 1} that this node "
                   "never received; nothing here can tell how much: recover the survivor with the longest log.")
        return out


def survey(cfg: NodeConfig, log: object, saved: ElectionState | None, kraft_version: int,
           voters: tuple[int, ...]) -> Survey:
    """What ``log`` (an open FileLog) holds, for the report."""
    sid = log.latest_snapshot_id()   # type: ignore[attr-defined]
    proven = max(sid.end_offset if sid is not None else 0, log.start_offset)   # type: ignore[attr-defined]
    records = batches = 0
    epochs: list[int] = []
    offset = proven
    end = log.end_offset   # type: ignore[attr-defined]
    while offset < end:
        got = log.read(offset, 8 << 20)   # type: ignore[attr-defined]
        if not got:
            break
        for b in got:
            records += b.next_offset - max(b.base_offset, offset)
            batches += 1
            epochs.append(b.leader_epoch)
        offset = got[-1].next_offset
    return Survey(cfg.node_id, kraft_version, voters, saved.epoch if saved else 0, log.start_offset,   # type: ignore[attr-defined]
                  end, log.last_epoch(), proven, records, batches,   # type: ignore[attr-defined]
                  (min(epochs), max(epochs)) if epochs else None)


def recover_as_single_voter(cfg: NodeConfig, *, confirmed: bool, say: object = print) -> Survey:
    """Survey the node's metadata directory, and (``confirmed``) make it a one-voter quorum; see the module."""
    from kraftwire.node.dynamic_quorum import read_control_state
    from kraftwire.raft.voter_set import VoterNode, VoterSet
    from kraftwire.storage.lock import DirectoryLock
    from kraftwire.storage.log import FileLog
    from kraftwire.storage.meta_properties import read_meta
    from kraftwire.storage.quorum_state import FileQuorumStateStore

    emit = say if callable(say) else print
    node = cfg.node_id
    if not cfg.is_controller:
        raise StorageError(f"recover-as-single-voter: node {node} is not a controller (process.roles="
                           f"{','.join(cfg.roles)}): run it on a surviving voter's configuration")
    meta_dir = Path(cfg.metadata_log_dir)
    meta = read_meta(meta_dir)
    if meta is None:
        raise StorageError(f"recover-as-single-voter: {meta_dir} is not formatted: run it on a surviving voter's "
                           "directory, not on a new one")
    if meta.node_id != node:
        raise StorageError(f"recover-as-single-voter: {meta_dir} belongs to node {meta.node_id}, the configuration "
                           f"says node.id={node}: use that node's server.properties")
    part = meta_dir / "__cluster_metadata-0"
    if not part.is_dir():
        raise StorageError(f"recover-as-single-voter: {part} does not exist: this directory never held the metadata "
                           "log (a broker-only node?)")
    lock = DirectoryLock(meta_dir).acquire()   # one line naming the running process otherwise
    try:
        if (part / "rejoining").exists():
            reason = (part / "rejoining").read_text(errors="replace").splitlines()[:1]
            raise StorageError(f"recover-as-single-voter: node {node} was re-joining the quorum ({reason[0] if reason else '?'}):"
                               " its log may hold less than the quorum committed; recover another survivor")
        log = FileLog(part)
        try:
            store = FileQuorumStateStore(part / "quorum-state")
            saved = store.read()
            control = read_control_state(log)
            dynamic = control.kraft_version >= 1 and control.voters is not None
            if dynamic:
                assert control.voters is not None
                voters = tuple(sorted(control.voters.ids))
                me = control.voters.get(node)
            else:
                voters = tuple(sorted({v.node_id for v in cfg.voters} | set(saved.voters if saved else ())))
                me = None
            if node not in voters:
                raise StorageError(f"recover-as-single-voter: node {node} is not a voter of this quorum (voters "
                                   f"{list(voters)}): only a voter's log can become the new quorum")
            if voters == (node,):
                raise StorageError(f"recover-as-single-voter: node {node} is already the only voter: start it as it is")
            found = survey(cfg, log, saved, control.kraft_version, voters)
            for line in found.lines():
                emit(line)
            if not confirmed:
                raise OperatorError(f"recover-as-single-voter: nothing changed; this makes node {node} the only voter "
                                    f"and loses what is listed above: run again with {CONFIRM_FLAG} to do it",
                                    ExitCode.USAGE)
            epoch = max(found.quorum_epoch, found.last_epoch) + 1
            if dynamic:
                assert me is not None
                alone = VoterSet((VoterNode(me.node_id, me.directory_id, me.endpoints, me.kraft_range),))
                log.append_as_leader([alone.to_record()], epoch, control=True, timestamp_ms=int(time.time() * 1000))
                log.flush()
            store.write(ElectionState(epoch, None, None, frozenset({node})))
        finally:
            log.close()
    finally:
        lock.release()
    emit(f"Node {node} is now the only voter of its quorum (epoch {epoch}; it stands at once when started).")
    if dynamic:
        emit(f"Start it as before. Add controllers back one at a time: format each on an empty directory with "
             f"`kraftwire storage format --cluster-id {meta.cluster_id} --no-initial-controllers`, start it with "
             f"controller.quorum.bootstrap.servers naming node {node}, then run `kraftwire metadata-quorum "
             f"--bootstrap-controller <node {node}> --command-config <its server.properties> add-controller`.")
    else:
        mine = next((v for v in cfg.voters if v.node_id == node), None)
        where = f"{node}@{mine.host}:{mine.port}" if mine is not None else f"{node}@<host>:<port>"
        emit(f"Start it with controller.quorum.voters={where} (this node only), and set the same on every broker. "
             "To grow the quorum again, format new controllers on empty directories and list them in "
             "controller.quorum.voters everywhere, one rolling restart at a time.")
    emit("Do not restart the old voters on their old directories: wipe and re-add them.")
    return found
