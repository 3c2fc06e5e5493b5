"""KIP-595's raft-manager metrics, exported in the Prometheus text format over HTTP.

Names follow Kafka's JMX group ``kafka.server:type=raft-metrics`` flattened the way the Prometheus
JMX exporter does: ``kafka_server_raft_metrics_<name with dashes as underscores>``.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

import anyio
from anyio.abc import SocketStream

log = logging.getLogger(__name__)
STATES = ["unattached", "voted", "candidate", "leader", "follower", "resigned", "observer"]
WINDOW_S = 30.0


class _Rate:
    """Events per second over a sliding window."""

    def __init__(self) -> None:
        self.events: deque[tuple[float, int]] = deque()
        self.total = 0

    def add(self, n: int, now: float) -> None:
        self.events.append((now, n))
        self.total += n

    def rate(self, now: float) -> float:
        while self.events and self.events[0][0] < now - WINDOW_S:
            self.events.popleft()
        return sum(n for _, n in self.events) / WINDOW_S


class _Latency:
    def __init__(self) -> None:
        self.samples: deque[tuple[float, float]] = deque()

    def add(self, ms: float, now: float) -> None:
        self.samples.append((now, ms))

    def stats(self, now: float) -> tuple[float, float]:
        while self.samples and self.samples[0][0] < now - WINDOW_S:
            self.samples.popleft()
        if not self.samples:
            return float("nan"), float("nan")
        values = [ms for _, ms in self.samples]
        return sum(values) / len(values), max(values)


class RaftMetrics:
    """Collects what the gauges cannot read directly: latencies and rates."""

    def __init__(self, core: Any, log_: Any, clock: Any = time.monotonic) -> None:
        self.core = core
        self.log = log_
        self.clock = clock
        self.election = _Latency()
        self.commit = _Latency()
        self.append = _Rate()
        self.fetch = _Rate()
        self._leaderless_since: float | None = clock()
        self._append_times: deque[tuple[int, float]] = deque()

    # -- events from the node ----------------------------------------------------------------------
    def leader_changed(self, leader_id: int | None) -> None:
        now = self.clock()
        if leader_id is None:
            if self._leaderless_since is None:
                self._leaderless_since = now
        elif self._leaderless_since is not None:
            self.election.add((now - self._leaderless_since) * 1000, now)
            self._leaderless_since = None

    def appended(self, offsets: list[int]) -> None:
        if offsets:
            now = self.clock()
            self.append.add(len(offsets), now)
            self._append_times.append((offsets[-1], now))

    def committed(self, last_offset: int) -> None:
        now = self.clock()
        while self._append_times and self._append_times[0][0] <= last_offset:
            _, t = self._append_times.popleft()
            self.commit.add((now - t) * 1000, now)

    def fetched(self, records: int) -> None:
        if records:
            self.fetch.add(records, self.clock())

    # -- export ------------------------------------------------------------------------------------
    def samples(self) -> list[tuple[str, float, str]]:
        core = self.core
        now = self.clock()
        state = core.state_name
        vote = core.voted_for()
        leader = core.leader_id
        hw = core.hw
        e_avg, e_max = self.election.stats(now)
        c_avg, c_max = self.commit.stats(now)
        out = [
            ("current_leader", -1 if leader is None else leader, "Current leader id, -1 if unknown"),
            ("current_epoch", core.epoch, "Current quorum epoch"),
            ("current_vote", -1 if vote is None else vote, "Voted-for id in this epoch, -1 if none"),
            ("log_end_offset", self.log.end_offset, "Log end offset of the local replica"),
            ("log_end_epoch", self.log.last_epoch(), "Epoch of the last record in the log"),
            ("high_watermark", -1 if hw is None else hw, "High watermark, -1 if unknown"),
            ("election_latency_avg", e_avg, "Average ms without a known leader before one was found"),
            ("election_latency_max", e_max, "Maximum election latency in ms"),
            ("commit_latency_avg", c_avg, "Average ms from append to commit on the leader"),
            ("commit_latency_max", c_max, "Maximum commit latency in ms"),
            ("append_records_rate", self.append.rate(now), "Records appended by the leader per second"),
            ("fetch_records_rate", self.fetch.rate(now), "Records fetched from the leader per second"),
        ]
        for name in STATES:
            out.append((f'current_state{{state="{name}"}}', 1.0 if state == name else 0.0,
                       "1 for the replica's current state"))
        return out

    def render(self) -> str:
        lines = []
        seen = set()
        for name, value, help_text in self.samples():
            base = name.split("{", 1)[0]
            metric = f"kafka_server_raft_metrics_{base}"
            if base not in seen:
                seen.add(base)
                lines.append(f"# HELP {metric} {help_text}")
                lines.append(f"# TYPE {metric} gauge")
            label = name[len(base):]
            lines.append(f"{metric}{label} {_num(value)}")
        return "\n".join(lines) + "\n"


def _num(v: float) -> str:
    if v != v:  # NaN
        return "NaN"
    return str(int(v)) if float(v).is_integer() else f"{v:.3f}"


async def serve_metrics(metrics: RaftMetrics, host: str, port: int,
                        task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """A minimal HTTP/1.0 endpoint: GET /metrics → the Prometheus text; anything else → 404."""
    listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    task_status.started(listener.extra(anyio.abc.SocketAttribute.local_address))

    async def handle(stream: SocketStream) -> None:
        async with stream:
            data = b""
            with anyio.move_on_after(5):
                while b"\r\n\r\n" not in data and len(data) < 8192:
                    try:
                        data += await stream.receive()
                    except anyio.EndOfStream:
                        break
            first = data.split(b"\r\n", 1)[0].split()
            if len(first) >= 2 and first[0] == b"GET" and first[1].split(b"?")[0] in (b"/metrics", b"/"):
                body = metrics.render().encode()
                head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
            else:
                body = b"not found\n"
                head = b"HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n"
            try:
                await stream.send(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            except (anyio.BrokenResourceError, OSError):
                pass

    async with listener:
        await listener.serve(handle)


class ForwardingMetrics:
    """KIP-590's forwarding metrics on a broker (``kafka.server:type=forwarding-metrics``).

    ``num_client_forwarding_to_controller_*``: client requests waiting on a forward (count) and
    how fast forwards start (rate); ``num_messages_redirected_*``: Envelope requests sent, retries
    included; ``request_forwarding_to_controller_authorization_fail_count``: envelopes the
    controller refused with CLUSTER_AUTHORIZATION_FAILED; plus the client-observed latency.
    """

    PREFIX = "kafka_server_forwarding_metrics_"

    def __init__(self, clock: Any = time.monotonic) -> None:
        self.clock = clock
        self.pending = 0
        self.forwards = _Rate()
        self.redirected = _Rate()
        self.auth_failures = 0
        self.timeouts = 0
        self.latency = _Latency()

    def started(self) -> float:
        now = self.clock()
        self.pending += 1
        self.forwards.add(1, now)
        return now

    def envelope_sent(self) -> None:
        self.redirected.add(1, self.clock())

    def finished(self, started: float) -> None:
        now = self.clock()
        self.pending -= 1
        self.latency.add((now - started) * 1000, now)

    def samples(self) -> list[tuple[str, float, str]]:
        now = self.clock()
        avg, mx = self.latency.stats(now)
        return [
            ("num_client_forwarding_to_controller_count", self.pending,
             "Client requests currently waiting on a forward to the controller"),
            ("num_client_forwarding_to_controller_rate", self.forwards.rate(now),
             "Client requests forwarded to the controller per second"),
            ("num_client_forwarding_to_controller_total", self.forwards.total,
             "Client requests forwarded to the controller since start"),
            ("num_messages_redirected_count", self.redirected.total, "Envelope requests sent, retries included"),
            ("num_messages_redirected_rate", self.redirected.rate(now), "Envelope requests sent per second"),
            ("request_forwarding_to_controller_authorization_fail_count", self.auth_failures,
             "Envelopes refused by the controller with CLUSTER_AUTHORIZATION_FAILED"),
            ("request_forwarding_to_controller_timeout_count", self.timeouts,
             "Forwards that ran out of the client's time budget"),
            ("forwarding_latency_avg", avg, "Average ms from receiving a forwardable request to answering it"),
            ("forwarding_latency_max", mx, "Maximum forwarding latency in ms"),
        ]

    def render(self) -> str:
        lines = []
        for name, value, help_text in self.samples():
            metric = self.PREFIX + name
            lines.append(f"# HELP {metric} {help_text}")
            lines.append(f"# TYPE {metric} gauge")
            lines.append(f"{metric} {_num(value)}")
        return "\n".join(lines) + "\n"


class CombinedMetrics:
    """Several metric sets behind one /metrics endpoint."""

    def __init__(self, *parts: Any) -> None:
        self.parts = parts

    def render(self) -> str:
        return "".join(p.render() for p in self.parts)
