"""``storage format --standalone | --initial-controllers | --no-initial-controllers`` (KIP-853), as Kafka 3.9/4.x's
``kafka-storage.sh`` formats them: the voter set goes into the bootstrap snapshot
``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`` of the metadata log directory."""

from __future__ import annotations

import base64
import binascii
import uuid
from pathlib import Path

from kraftwire.config import NodeConfig
from kraftwire.raft import SnapshotId
from kraftwire.raft.snapshot import encode
from kraftwire.raft.voter_set import VoterNode, VoterSet, bootstrap_snapshot
from kraftwire.storage import StorageError
from kraftwire.storage.snapshot import snapshot_name, write_durably

MV_KRAFT_VERSION_1 = 21   # 3.9-IV0: the first metadata.version with which kraft.version 1 may be finalized
NO_QUORUM_FLAG = ("Because controller.quorum.voters is not set on this controller, you must specify one of the "
                  "following: --standalone, --initial-controllers, or --no-initial-controllers.")


def check_quorum_flags(cfg: NodeConfig, standalone: bool, initial: str | None, none: bool, level: int) -> None:
    dynamic = standalone or initial is not None
    if standalone and not cfg.is_controller:
        raise StorageError("You can only use --standalone on a controller.")
    if dynamic and cfg.voters:
        raise StorageError("You cannot specify controller.quorum.voters and format the node with "
                           "--initial-controllers or --standalone. If you want to use dynamic quorum, please remove "
                           "controller.quorum.voters and specify controller.quorum.bootstrap.servers instead.")
    if cfg.is_controller and not cfg.voters and not dynamic and not none:
        raise StorageError(NO_QUORUM_FLAG)
    if dynamic and level < MV_KRAFT_VERSION_1:
        raise StorageError(f"a dynamic quorum (kraft.version 1) needs metadata.version {MV_KRAFT_VERSION_1} "
                           f"(3.9-IV0) or later; this format would use {level}: use --release-version 3.9-IV0 or "
                           "newer, or controller.quorum.voters")


def _uuid(text: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16 or len(text) != 22:
        raise StorageError(f"--initial-controllers: {text!r} is not a directory id (22 base64url characters)")
    return uuid.UUID(bytes=raw)


def uuid_text(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def parse_initial_controllers(text: str, listener: str) -> VoterSet:
    """``id@host:port:directory,...`` (Kafka's ``DynamicVoters.parse``)."""
    voters = []
    for item in (x.strip() for x in text.split(",")):
        try:
            node, rest = item.split("@", 1)
            hostport, directory = rest.rsplit(":", 1)
            host, port = hostport.rsplit(":", 1)
            host = host.strip("[]")
            voter = VoterNode(int(node), _uuid(directory), ((listener, host, int(port)),))
        except ValueError:
            raise StorageError(f"--initial-controllers: {item!r} is not id@host:port:directory") from None
        voters.append(voter)
    if len({v.node_id for v in voters}) != len(voters):
        raise StorageError("--initial-controllers: a node id is listed twice")
    return VoterSet(tuple(voters))


def dynamic_voters(cfg: NodeConfig, standalone: bool, initial: str | None,
                   own_dir: str) -> tuple[VoterSet | None, str]:
    """The initial voter set to write (None: none) and this node's metadata directory id."""
    listener = cfg.controller_listener if cfg.is_controller else (cfg.values["controller.listener.names"] or [""])[0]
    if standalone:
        ep = next((e for e in [*cfg.advertised(), *cfg.listeners] if e.name == listener), None)
        if ep is None:
            raise StorageError(f"--standalone: no {listener} listener in listeners")
        return VoterSet((VoterNode(cfg.node_id, _uuid(own_dir), ((listener, ep.host, ep.port),)),)), own_dir
    if initial is not None:
        voters = parse_initial_controllers(initial, listener)
        mine = voters.get(cfg.node_id)
        if mine is not None:
            own_dir = uuid_text(mine.directory_id)
        return (voters if cfg.is_controller and mine is not None else None), own_dir
    return None, own_dir


def write_voters_snapshot(log_dir: Path, voters: VoterSet) -> Path:
    """The bootstrap snapshot at offset 0, epoch 0: KRaftVersionRecord(1) and the VotersRecord."""
    import time

    d = Path(log_dir) / "__cluster_metadata-0"
    d.mkdir(parents=True, exist_ok=True)
    path = d / snapshot_name(SnapshotId(0, 0))
    write_durably(path, encode(bootstrap_snapshot(voters, int(time.time() * 1000))))
    return path
