"""``quorum-state``: the durable election state, in Kafka's JSON format (QuorumStateData v0)."""

from __future__ import annotations

import json
from pathlib import Path

from kraftwire.raft import ElectionState
from kraftwire.storage import StorageError
from kraftwire.storage.fsutil import atomic_write


class FileQuorumStateStore:
    """Reads and atomically rewrites ``quorum-state`` (temp file + fsync + rename + dir fsync)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A temp file left by a crash mid-write never replaced the real one: drop it.
        self.path.with_name(self.path.name + ".tmp").unlink(missing_ok=True)

    def read(self) -> ElectionState | None:
        if not self.path.exists():
            return None
        text = self.path.read_text()
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            leader = data.get("leaderId", -1)
            voted = data.get("votedId", -1)
            voters = frozenset(v["voterId"] for v in data.get("currentVoters") or [])
            return ElectionState(int(data["leaderEpoch"]), None if leader < 0 else leader,
                                 None if voted < 0 else voted, voters)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise StorageError(f"{self.path}: corrupt quorum-state ({e}); "
                               "refusing to guess the epoch") from None

    def write(self, state: ElectionState) -> None:
        data = {
            "clusterId": "",
            "leaderId": -1 if state.leader_id is None else state.leader_id,
            "leaderEpoch": state.epoch,
            "votedId": -1 if state.voted_id is None else state.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": v} for v in sorted(state.voters)],
            "data_version": 0,
        }
        atomic_write(self.path, json.dumps(data, separators=(",", ":")).encode())
