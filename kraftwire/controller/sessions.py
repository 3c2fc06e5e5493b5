"""Broker heartbeat leases on the active controller (never written to the log)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Session:
    """A broker's heartbeat lease on the active controller (never written to the log)."""

    last_seen_ms: int
    metadata_offset: int = -1
    shutdown_offset: int = -1   # end offset of the batch that started controlled shutdown


def touch_session(sessions: dict[int, Session], broker_id: int, session: Session, now: int) -> None:
    """Renew a lease. ``sessions`` stays ordered by last contact (oldest first) so that lease expiry
    looks at the few oldest sessions instead of every broker (5,000 brokers heartbeat 2,500 times a
    second; a full scan per tick starved the event loop)."""
    session.last_seen_ms = now
    if sessions.get(broker_id) is session:
        del sessions[broker_id]
        sessions[broker_id] = session
