"""The node core: a replica's Raft core and the roles it runs, sans-I/O (see ``node_core``).

Shells (the server's ``node/``, the simulator's ``sim/``) import these names from here.
"""

from kraftwire.core.api_door import ApiDoor, DoorPlane, Park, Read, Relay, RelayKind, Route
from kraftwire.core.broker_lifecycle_role import BrokerLifecycleRole
from kraftwire.core.controller_role import ControllerObserver, ControllerRole
from kraftwire.core.group_role import GroupRole
from kraftwire.core.listeners import FanOutListener
from kraftwire.core.node_core import NodeCore, NodeOutput
from kraftwire.core.outputs import Audit, Respond, SendController, TakeSnapshot
from kraftwire.core.raft_apis import RaftApis, is_raft_request, raft_topic
from kraftwire.core.snapshots import SnapshotJob

__all__ = [
    "ApiDoor",
    "Audit",
    "BrokerLifecycleRole",
    "ControllerObserver",
    "ControllerRole",
    "DoorPlane",
    "FanOutListener",
    "GroupRole",
    "NodeCore",
    "NodeOutput",
    "Park",
    "RaftApis",
    "Read",
    "Relay",
    "RelayKind",
    "Route",
    "Respond",
    "SendController",
    "SnapshotJob",
    "TakeSnapshot",
    "is_raft_request",
    "raft_topic",
]
