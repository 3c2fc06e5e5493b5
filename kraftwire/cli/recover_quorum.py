"""``kraftwire storage recover-as-single-voter``: a surviving voter's directory becomes a new one-voter quorum.

For a quorum that lost a majority of its voters for good (etcd's ``--force-new-cluster``; Kafka has nothing):
the survivor keeps its whole metadata log and becomes the only voter, so the cluster can run again and voters
can be added back. It is data loss by construction, so it refuses without ``--i-understand-data-loss`` and
first prints what may be lost:

* offsets below the latest snapshot (the last high watermark the node recorded) are committed for certain
  (a snapshot is only taken of committed records);
* the records from there on are not proven committed: they are kept, and the new quorum commits them;
* whatever the old quorum committed from there on that this node holds differently or never received is
  gone; nothing on this node can say how much, so recover the survivor with the longest log (compare
  ``kraftwire storage info`` / log end offsets).

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
The survey and the rewrite are ``kraftwire.raft.recovery`` (pure; the simulator runs the same code); this
module checks the directory, holds its lock and talks to the operator.
"""

from __future__ import annotations

import time
from pathlib import Path

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.config import NodeConfig
from kraftwire.raft.recovery import RecoveryRefused, Survey, make_single_voter, plan
from kraftwire.storage import StorageError

CONFIRM_FLAG = "--i-understand-data-loss"


def recover_as_single_voter(cfg: NodeConfig, *, confirmed: bool, say: object = print) -> Survey:
    """Survey the node's metadata directory, and (``confirmed``) make it a one-voter quorum; see the module."""
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
            try:
                found, me = plan(node, log, store.read(), (v.node_id for v in cfg.voters))
            except RecoveryRefused as exc:
                raise StorageError(f"recover-as-single-voter: {exc}") from None
            for line in found.lines():
                emit(line)
            if not confirmed:
                raise OperatorError(f"recover-as-single-voter: nothing changed; this makes node {node} the only voter "
                                    f"and loses what is listed above: run again with {CONFIRM_FLAG} to do it",
                                    ExitCode.USAGE)
            epoch = make_single_voter(log, store, found, me, int(time.time() * 1000))
        finally:
            log.close()
    finally:
        lock.release()
    emit(f"Node {node} is now the only voter of its quorum (epoch {epoch}; it stands at once when started).")
    if me is not None:
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
