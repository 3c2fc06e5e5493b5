"""Sans-I/O KIP-595 Raft: a pure state machine driven by (time, message) events.

The package's API for shells (server, simulator, tools): the core and its outputs (``messages``),
the storage contracts a shell implements, the in-memory implementations, snapshot framing and the
test-only fault object. Shells import these names from ``kraftwire.raft``.
"""

from kraftwire.raft import messages, snapshot
from kraftwire.raft.config import RaftConfig
from kraftwire.raft.core import NotLeaderError, RaftCore, RaftFatalError, RaftListener, SnapshotListener
from kraftwire.raft.faults import NO_FAULTS, RaftFaults
from kraftwire.raft.log import (
    ElectionState,
    LogTruncationError,
    OffsetAndEpoch,
    QuorumStateStore,
    ReplicatedLog,
    SnapshotId,
)
from kraftwire.raft.memory import MemoryLog, MemoryStateStore, SimulatedCrash
from kraftwire.raft.state import IllegalTransition

__all__ = [
    "NO_FAULTS", "ElectionState", "IllegalTransition", "LogTruncationError", "MemoryLog", "MemoryStateStore",
    "NotLeaderError", "OffsetAndEpoch", "QuorumStateStore", "RaftConfig", "RaftCore", "RaftFatalError",
    "RaftFaults", "RaftListener", "ReplicatedLog", "SimulatedCrash", "SnapshotId", "SnapshotListener",
    "messages", "snapshot",
]
