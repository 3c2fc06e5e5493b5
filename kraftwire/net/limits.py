"""Connection limits as Kafka's socket server has them, and a raised open-files limit.

``max.connections``: at the limit a listener stops accepting until a connection closes (the kernel
queues the rest in the listen backlog). ``max.connections.per.ip`` (with per-host exceptions in
``max.connections.per.ip.overrides``, ``host:count,...``; 0 refuses the host): a connection over its host's limit is
closed right after accept. Every refusal is counted for the metrics endpoint.
"""

from __future__ import annotations

import logging
import resource
from collections import Counter

import anyio

log = logging.getLogger(__name__)
UNLIMITED = 2**31 - 1


class ConnectionLimits:
    """Counts open connections overall and per client address; decides who may connect."""

    def __init__(self, max_connections: int = UNLIMITED, per_ip: int = UNLIMITED,
                 overrides: dict[str, int] | None = None) -> None:
        self.max_connections = max_connections
        self.per_ip = per_ip
        self.overrides = dict(overrides or {})
        self.total = 0
        self.by_ip: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()    # reason → connections refused
        self.blocked = 0                           # times a listener paused at max.connections
        self._room = anyio.Event()
        self._room.set()

    @classmethod
    def from_config(cls, cfg: object) -> ConnectionLimits:
        get = cfg.__getitem__  # type: ignore[attr-defined]
        return cls(get("max.connections"), get("max.connections.per.ip"), get("max.connections.per.ip.overrides"))

    def limit_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.per_ip)

    async def wait_for_room(self) -> None:
        """Return once fewer than ``max.connections`` are open."""
        if self.total < self.max_connections:
            return
        self.blocked += 1
        while self.total >= self.max_connections:
            if self._room.is_set():
                self._room = anyio.Event()
            await self._room.wait()

    def admit(self, ip: str) -> str | None:
        """Count a new connection from ``ip``; the config key that refuses it, if one does."""
        if self.by_ip[ip] >= self.limit_for(ip):
            self.rejected["max.connections.per.ip"] += 1
            return "max.connections.per.ip"
        self.by_ip[ip] += 1
        self.total += 1
        return None

    def release(self, ip: str) -> None:
        self.total -= 1
        self.by_ip[ip] -= 1
        if self.by_ip[ip] <= 0:
            del self.by_ip[ip]
        if self.total < self.max_connections:
            self._room.set()

    def render(self, accept_failures: int = 0) -> str:
        """Prometheus text: open connections, refusals by cause, paused accepts, failed accepts."""
        p = "kafka_server_socket_server_metrics_"
        lines = [f"# HELP {p}connection_count Open client connections",
                 f"# TYPE {p}connection_count gauge", f"{p}connection_count {self.total}",
                 f"# HELP {p}connections_rejected_total Connections closed at accept by a limit",
                 f"# TYPE {p}connections_rejected_total counter"]
        for reason in ("max.connections.per.ip",):
            lines.append(f'{p}connections_rejected_total{{reason="{reason}"}} {self.rejected[reason]}')
        lines += [f"# HELP {p}accept_blocked_total Times a listener stopped accepting at max.connections",
                  f"# TYPE {p}accept_blocked_total counter", f"{p}accept_blocked_total {self.blocked}",
                  f"# HELP {p}accept_failures_total accept() failures (EMFILE and the like), backed off",
                  f"# TYPE {p}accept_failures_total counter", f"{p}accept_failures_total {accept_failures}"]
        return "\n".join(lines) + "\n"


def raise_open_files_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; (old soft, new soft)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as e:
            log.info("could not raise the open-files limit from %d to %d: %s", soft, target, e)
            return soft, soft
        return soft, target
    return soft, soft
