"""The node core: a replica's Raft core and the roles it runs, sans-I/O (see ``node_core``).

Shells (the server's ``node/``, the simulator's ``sim/``) import these names from here.
"""

from kraftwire.core.broker_lifecycle_role import BrokerLifecycleRole
from kraftwire.core.controller_role import ControllerObserver, ControllerRole
from kraftwire.core.group_role import GroupRole
from kraftwire.core.listeners import FanOutListener
from kraftwire.core.node_core import Audit, NodeCore, NodeOutput, Respond, SendController, TakeSnapshot
from kraftwire.core.snapshots import SnapshotJob

__all__ = [
    "Audit",
    "BrokerLifecycleRole",
    "ControllerObserver",
    "ControllerRole",
    "FanOutListener",
    "GroupRole",
    "NodeCore",
    "NodeOutput",
    "Respond",
    "SendController",
    "SnapshotJob",
    "TakeSnapshot",
]
