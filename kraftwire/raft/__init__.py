"""Sans-I/O KIP-595 Raft: a pure state machine driven by (time, message) events.

The package's API for shells (server, simulator, tools): the core and its outputs (``messages``),
the storage contracts a shell implements, the in-memory implementations, snapshot framing and the
test-only fault object. Shells import these names from ``kraftwire.raft``.

The storage contracts (``raft/log.py``) load with the package; the rest when first named (PEP 562):
a server opens its log directory, and starts its Raft timers, before the core's modules are loaded
(``node/node_storage.py``), and tools that only read a log never load them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from kraftwire.raft.log import (
    ElectionState,
    LogTruncationError,
    OffsetAndEpoch,
    QuorumStateStore,
    ReplicatedLog,
    SnapshotId,
)

if TYPE_CHECKING:
    from kraftwire.raft import messages, snapshot
    from kraftwire.raft.config import RaftConfig
    from kraftwire.raft.core import NotLeaderError, RaftCore, RaftFatalError, RaftListener, SnapshotListener
    from kraftwire.raft.faults import NO_FAULTS, RaftFaults
    from kraftwire.raft.memory import MemoryLog, MemoryStateStore, SimulatedCrash
    from kraftwire.raft.state import IllegalTransition

_LAZY = {
    "messages": "", "snapshot": "", "RaftConfig": "config", "NotLeaderError": "core", "RaftCore": "core",
    "RaftFatalError": "core", "RaftListener": "core", "SnapshotListener": "core", "NO_FAULTS": "faults",
    "RaftFaults": "faults", "MemoryLog": "memory", "MemoryStateStore": "memory", "SimulatedCrash": "memory",
    "IllegalTransition": "state",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = import_module(f"{__name__}.{name}") if module == "" else getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "NO_FAULTS", "ElectionState", "IllegalTransition", "LogTruncationError", "MemoryLog", "MemoryStateStore",
    "NotLeaderError", "OffsetAndEpoch", "QuorumStateStore", "RaftConfig", "RaftCore", "RaftFatalError",
    "RaftFaults", "RaftListener", "ReplicatedLog", "SimulatedCrash", "SnapshotId", "SnapshotListener",
    "messages", "snapshot",
]
