"""What the server gives the roles it composes: exactly the state and calls ``VoterRole``, ``BrokerRole`` and
``VoterChangeApis`` use (``node/server.Server`` satisfies it), so a role names what it depends on instead of
reaching into an untyped server."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Protocol

from kraftwire.config import NodeConfig
from kraftwire.core import FanOutListener, NodeCore
from kraftwire.net.peers import PeerClient
from kraftwire.node.disk_worker import DiskWorker
from kraftwire.raft.config import RaftConfig
from kraftwire.raft.core import RaftCore

if TYPE_CHECKING:
    from kraftwire.node.metrics import RaftMetrics
    from kraftwire.node.raft_driver import RaftDriver

Address = tuple[str, int]


class RoleHost(Protocol):
    """The server, as its roles see it."""

    cfg: NodeConfig
    node_id: int
    cluster_id: str
    directory_id: uuid.UUID | None
    log: Any                          # the metadata log (a FileLog, or a MemoryLog in tests)
    voters: dict[int, Address]        # voter id -> controller-listener address
    voter_set: Any                    # KIP-853 voter set read from the log (None: controller.quorum.voters)
    snapshot_control: tuple[Any, ...]
    raft_config: RaftConfig
    raft_listeners: FanOutListener    # the roles replay the committed log through it
    peers: PeerClient
    disk: DiskWorker
    bound: dict[str, Address]         # listener name -> bound address
    core: RaftCore | None             # built once the voters are known
    node: NodeCore | None
    driver: RaftDriver | None
    metrics: RaftMetrics | None
    voter: object | None              # the voter role when this node runs one (the roles only ask whether)

    def stop(self, why: str) -> None:
        """A role cannot go on: the process stops, naming ``why``."""
