"""The controller's audit file: who wrote which offsets of the metadata log.

``kraftwire-metadata-audit.jsonl`` lies in the metadata log directory, beside ``__cluster_metadata-0``
(a plain file: Kafka's log manager looks only at directories there, and the metadata log itself is
unchanged, so Kafka's readers see the same log). One JSON object per line, one line per controller
write: the offsets its records took, the leader epoch, the time, and the request's API, principal
(for a forwarded request the Envelope's), client id, client address and listener. Each voter writes
the entries of the writes it made while active, so every voter that led keeps its own part; an entry
whose offsets a later leader overwrote (its epoch no longer matches the log's) is reported as such by
readers. The file is trimmed with the log: entries wholly below the log start offset are dropped.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

AUDIT_FILE = "kraftwire-metadata-audit.jsonl"


class AuditFileError(ValueError):
    """A line of the audit file is not an audit entry (damaged or foreign file)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Who sent a controller request, and where it came in."""

    principal: str
    client_id: str
    client_host: str
    listener: str
    forwarded: bool = False


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One controller write: metadata log offsets ``first_offset..last_offset`` and who asked for them."""

    first_offset: int
    last_offset: int
    epoch: int
    time_ms: int
    node_id: int
    api_key: int
    api: str
    principal: str
    client_id: str
    client_host: str
    listener: str
    forwarded: bool = False

    def to_line(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":")) + "\n"

    @classmethod
    def from_line(cls, line: str) -> AuditEntry:
        try:
            data = json.loads(line)
            return cls(**data)
        except (ValueError, TypeError) as e:
            raise AuditFileError(f"not an audit entry ({e})") from None


def audit_path(log_dir: str | Path) -> Path:
    """The audit file of a metadata log directory (the directory holding ``__cluster_metadata-0``)."""
    return Path(log_dir) / AUDIT_FILE


class AuditWriter:
    """Appends entries durably (fsync each) and trims what fell below the log start. Blocking: the node
    calls it from a worker thread."""

    def __init__(self, log_dir: str | Path) -> None:
        self.path = audit_path(log_dir)
        self._trimmed_below = 0
        self._lock = threading.Lock()    # appends and trims from several worker threads

    def append(self, entry: AuditEntry, log_start: int = 0) -> None:
        with self._lock:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(entry.to_line())
                f.flush()
                os.fsync(f.fileno())
            if log_start > self._trimmed_below:
                self._trim(log_start)

    @property
    def trimmed_below(self) -> int:
        """The log start the file was last trimmed to."""
        return self._trimmed_below

    def trim(self, log_start: int) -> None:
        """Drop the entries whose offsets all lie below ``log_start`` (atomically: write, fsync, rename)."""
        with self._lock:
            self._trim(log_start)

    def _trim(self, log_start: int) -> None:
        self._trimmed_below = log_start
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        except FileNotFoundError:
            return
        kept = [ln for ln in lines if not _below(ln, log_start)]
        if len(kept) == len(lines):
            return
        tmp = self.path.with_suffix(".jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(kept)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def _below(line: str, log_start: int) -> bool:
    try:
        return AuditEntry.from_line(line).last_offset < log_start
    except AuditFileError:
        return False   # never drop what we cannot read; readers report it


def read_audit(path: str | Path) -> tuple[list[AuditEntry], list[str]]:
    """Entries of an audit file and one warning per line that is not an entry (a torn last line included)."""
    entries: list[AuditEntry] = []
    warnings: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entries.append(AuditEntry.from_line(line))
            except AuditFileError as e:
                warnings.append(f"{path}: line {n}: {e}")
    return entries, warnings
