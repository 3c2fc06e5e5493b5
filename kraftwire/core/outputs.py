"""The node core's outputs besides Raft's own (see ``core/node_core.py`` and ``core/api_door.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraftwire.core.snapshots import FramingJob
from kraftwire.storage.audit import AuditEntry


@dataclass(frozen=True, slots=True)
class Respond:
    """The answer to the request ``request_id``: a controller or group request submitted with ``submit`` /
    ``submit_group`` (``body`` is the response body), or a request that entered ``handle_api`` (``body`` is
    the ``protocol.requests.Reply`` to write, None for no answer)."""

    request_id: int
    body: Any


@dataclass(frozen=True, slots=True)
class TakeSnapshot:
    """A snapshot of the committed image (or offsets state) is due: frame ``job`` and call ``snapshot_framed``."""

    job: FramingJob


@dataclass(frozen=True, slots=True)
class Audit:
    """A controller write and who asked for it: the shell appends ``entry`` to the audit file beside the
    metadata log (off the event loop)."""

    entry: AuditEntry


@dataclass(frozen=True, slots=True)
class SendController:
    """A broker lifecycle request (``kind`` "register" or "heartbeat") for the active controller."""

    request_id: int
    kind: str
    request: Any
