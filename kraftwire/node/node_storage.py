"""Opening a node's metadata log directory, the first thing a server does (before its roles are built).

``open_node_storage`` locks the data directories (Kafka's ``.lock``), reads ``meta.properties``, opens the
``__cluster_metadata-0`` log and its ``quorum-state``, marks a fresh voter re-joining (raft/core.py decides
whether it may vote) and reads the bootstrap records. ``open_quorum_log`` and ``recover_voter_log`` open
and check the voters' offsets quorum's directory the same way (``node/offsets_quorum.py``); the rest of a
replica's assembly is ``node/replica.py``'s. It imports storage modules only, so that
``kraftwire server`` can open the log and note *when* before it imports the controller, the group
coordinator and the listeners: as in Kafka (``SharedServer.start`` initializes the Raft client over
its opened log before ``ControllerServer`` builds the QuorumController and enables request
processing), the Raft core's timers start there (``NodeStorage.opened_ms``), and building the rest of
the node runs on that clock.
"""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftwire.config import NodeConfig


def directory_uuid(directory_id: str) -> uuid.UUID:
    """meta.properties' base64url directory.id as the UUID BrokerRegistration carries."""
    try:
        raw = base64.urlsafe_b64decode(directory_id + "==")
        if len(raw) == 16:
            return uuid.UUID(bytes=raw)
    except ValueError:
        pass
    return uuid.uuid4()


def open_quorum_log(directory: Path, cfg: NodeConfig) -> tuple[Any, Any]:
    """A quorum's ``FileLog`` in ``directory`` and its ``quorum-state`` store (both quorums of a node)."""
    from kraftwire.storage.log import FileLog
    from kraftwire.storage.quorum_state import FileQuorumStateStore

    return FileLog(directory, segment_bytes=cfg["metadata.log.segment.bytes"]), FileQuorumStateStore(
        directory / "quorum-state")


def recover_voter_log(log: Any, store: Any, cfg: NodeConfig, *, fresh: str) -> None:
    """Make a voter's log safe to vote with: drop epochs above the saved one (a damaged batch header), or, in
    a quorum of several voters (``cfg.voters``, resolved before the call), mark an empty directory re-joining
    with ``fresh`` as the reason (only the other voters can tell a fresh directory from a wiped one)."""
    saved = store.read()
    if saved is not None:
        log.discard_epochs_above(saved.epoch)
    elif (len(cfg.voters) > 1 and any(v.node_id == cfg.node_id for v in cfg.voters)
            and log.end_offset == 0 and log.latest_snapshot_id() is None):
        # Fresh or wiped? Only the other voters can tell: re-join until they say (raft/core.py).
        log.mark_rejoining(fresh)


@dataclass
class NodeStorage:
    """What the server runs on: the metadata log, its quorum-state, the cluster and directory ids."""

    log: Any
    store: Any
    cluster_id: str
    directory_id: uuid.UUID | None
    bootstrap: list[Any] | None
    dir_locks: list[Any]
    voter_set: Any = None            # KIP-853 voter set read from the log (no controller.quorum.voters)
    snapshot_control: tuple[Any, ...] = ()   # the control records every snapshot of that log carries
    opened_ms: int = 0               # wall clock (ms) when the log was open: the Raft core's start


def open_node_storage(cfg: NodeConfig) -> NodeStorage:
    """Lock and open the node's data directories (one-line ``OperatorError`` on a bad directory)."""
    from kraftwire.node.bootstrap import read_bootstrap
    from kraftwire.storage.data_dirs import open_data_dirs

    meta, locks = open_data_dirs(cfg)  # held for the process life
    directory_id = directory_uuid(meta.directory_id) if meta.directory_id else None
    log, store = open_quorum_log(cfg.metadata_log_dir / "__cluster_metadata-0", cfg)
    voter_set: Any = None
    control: tuple[Any, ...] = ()
    if cfg.is_controller and not cfg.voters:   # KIP-853: the voter set is in the log (format --standalone ...)
        from kraftwire.node.dynamic_quorum import resolve_voters

        voter_set, control = resolve_voters(cfg, log, directory_id)
    if cfg.is_controller:
        recover_voter_log(log, store, cfg, fresh="voter started on an empty directory (fresh, or wiped and re-formatted)")
    return NodeStorage(log, store, meta.cluster_id, directory_id, read_bootstrap(cfg.metadata_log_dir), locks,
                       voter_set, control, int(time.time() * 1000))
