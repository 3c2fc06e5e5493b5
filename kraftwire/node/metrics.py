"""Kafka's raft, controller and forwarding metrics through prometheus_client, served over HTTP.

Names are the ones the Prometheus JMX exporter gives Kafka's MBeans with its Kafka example rules
(``lowercaseOutputName: true``): ``kafka.server:type=raft-metrics`` → ``kafka_server_raft_metrics_<name
with dashes as underscores>``, ``kafka.controller:type=KafkaController,name=X`` →
``kafka_controller_kafkacontroller_<x>``, ``kafka.server:type=forwarding-metrics`` →
``kafka_server_forwarding_metrics_<name>``, ``kafka.server:type=broker-metadata-metrics`` →
``kafka_server_broker_metadata_metrics_<name>``. Cumulative counts are counters (``_total``), the rest
gauges; process and Python metrics come from prometheus_client's own collectors.

The HTTP endpoint answers ``/metrics`` (Prometheus text), ``/health`` (200 while the process serves)
and ``/ready`` (200 once the node knows the quorum's leader and high watermark, else 503).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
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

    def window(self, now: float) -> deque[tuple[float, float]]:
        while self.samples and self.samples[0][0] < now - WINDOW_S:
            self.samples.popleft()
        return self.samples

    def stats(self, now: float) -> tuple[float, float]:
        self.window(now)
        if not self.samples:
            return float("nan"), float("nan")
        values = [ms for _, ms in self.samples]
        return sum(values) / len(values), max(values)


class RaftMetrics:
    """Collects what the gauges cannot read directly: latencies and rates."""

    def __init__(self, core: Any, log_: Any, clock: Any = time.monotonic, controller: Any = None) -> None:
        self.core = core
        self.log = log_
        self.controller = controller   # a voter's controller role (its QuorumController and fatal state)
        self.clock = clock
        self.election = _Latency()
        self.processing = _Latency()   # ControllerEventManager's EventQueueProcessingTimeMs
        self.processed = 0
        self.processed_ms = 0.0
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

    def controller_processed(self, ms: float) -> None:
        """One controller API request processed by the controller (commit wait excluded)."""
        self.processing.add(ms, self.clock())
        self.processed += 1
        self.processed_ms += ms

    def fetched(self, records: int) -> None:
        if records:
            self.fetch.add(records, self.clock())

    # -- export ------------------------------------------------------------------------------------
    def samples(self) -> list[tuple[str, float, str]]:
        core = self.core
        now = self.clock()
        state = core.state_name
        if state == "follower" and core.node_id not in getattr(core, "voters", ()):
            state = "observer"   # Kafka's current-state for a non-voter following the leader
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

    def ready(self) -> tuple[bool, str]:
        """Ready once a leader and the high watermark are known (and this node is not still catching up)."""
        core = self.core
        if core.leader_id is None:
            return False, "no known leader"
        if core.hw is None:
            return False, "high watermark unknown"
        return True, f"leader {core.leader_id}, epoch {core.epoch}, high watermark {core.hw}"

    def collect(self) -> Iterator[Any]:
        yield from _families("kafka_server_raft_metrics_", self.samples(), COUNTERS)
        yield from controller_families(self.controller, self.core)
        if self.controller is not None:
            yield from self._processing_families()
        yield from broker_families(getattr(self.core, "listener", None))

    def _processing_families(self) -> Iterator[Any]:
        """``kafka.controller:type=ControllerEventManager,name=EventQueueProcessingTimeMs`` as a summary:
        percentiles over the last 30 s, and the count and sum since start."""
        from prometheus_client.core import Metric

        name = "kafka_controller_controllereventmanager_eventqueueprocessingtimems"
        fam = Metric(name, "ms the controller spent processing a request (commit wait excluded)", "summary")
        values = sorted(ms for _, ms in self.processing.window(self.clock()))
        for q in (0.5, 0.75, 0.95, 0.99, 0.999):
            fam.add_sample(name, {"quantile": str(q)},
                           values[min(len(values) - 1, int(q * len(values)))] if values else float("nan"))
        fam.add_sample(name + "_count", {}, self.processed)
        fam.add_sample(name + "_sum", {}, self.processed_ms)
        yield fam

    def render(self) -> str:
        return CombinedMetrics(self).render()


# Samples that are cumulative counts: exposed as counters (``<name>_total``).
COUNTERS = {"num_client_forwarding_to_controller_total": "num_client_forwarding_to_controller",
            "num_messages_redirected_count": "num_messages_redirected",
            "request_forwarding_to_controller_authorization_fail_count":
                "request_forwarding_to_controller_authorization_fail",
            "request_forwarding_to_controller_timeout_count": "request_forwarding_to_controller_timeout"}


def _families(prefix: str, samples: list[tuple[str, float, str]], counters: dict[str, str]) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    grouped: dict[str, Any] = {}
    for name, value, help_text in samples:
        base, _, labels = name.partition("{")
        if base in counters:
            yield CounterMetricFamily(prefix + counters[base], help_text, value=value)
            continue
        fam = grouped.get(base)
        if fam is None:
            label_names = [kv.split("=")[0] for kv in labels.rstrip("}").split(",")] if labels else []
            fam = grouped[base] = GaugeMetricFamily(prefix + base, help_text, labels=label_names)
        if labels:
            fam.add_metric([kv.split("=")[1].strip('"') for kv in labels.rstrip("}").split(",")], value)
        else:
            fam.add_metric([], value)
    yield from grouped.values()


def broker_families(listener: Any) -> Iterator[Any]:
    """``kafka.server:type=broker-metadata-metrics`` of a broker: its metadata listener is the Raft
    listener itself, or one of a combined node's fan-out listeners (nothing on a controller-only node)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from kraftwire.broker.metadata import BrokerMetadataListener

    candidates = [listener, *getattr(listener, "listeners", [])]
    listener = next((c for c in candidates if isinstance(c, BrokerMetadataListener)), None)
    if listener is None:
        return
    prefix = "kafka_server_broker_metadata_metrics_"
    yield GaugeMetricFamily(prefix + "last_applied_record_offset", "Offset of the last record applied to the "
                            "broker's metadata image", value=listener.applied_offset)
    yield CounterMetricFamily(prefix + "metadata_apply_error", "Committed records the broker could not apply",
                              value=1 if listener.fatal is not None else 0)
    yield CounterMetricFamily(prefix + "metadata_load_snapshots", "Snapshots loaded into the metadata image",
                              value=listener.snapshots_loaded)


def controller_families(shell: Any, core: Any) -> Iterator[Any]:
    """``kafka.controller:type=KafkaController`` gauges of a controller node (``shell``: its controller
    role; None on a broker)."""
    from prometheus_client.core import GaugeMetricFamily

    ctl = getattr(shell, "controller", None)
    image = getattr(ctl, "committed_image", None)
    if ctl is None or image is None or not hasattr(image, "brokers"):
        return
    brokers = list(image.brokers.values())
    partitions = [p for t in image.topics.values() for p in t.partitions.values()]
    hw = getattr(core, "hw", None)
    values = {
        "activecontrollercount": (1 if getattr(ctl, "active", False) else 0,
                                  "1 on the active controller, 0 elsewhere"),
        "activebrokercount": (sum(1 for b in brokers if not b.fenced), "Registered brokers that are not fenced"),
        "fencedbrokercount": (sum(1 for b in brokers if b.fenced), "Registered brokers that are fenced"),
        "globaltopiccount": (len(image.topics), "Topics in the cluster"),
        "globalpartitioncount": (len(partitions), "Partitions in the cluster"),
        "offlinepartitionscount": (sum(1 for p in partitions if p.leader < 0), "Partitions without a leader"),
        "preferredreplicaimbalancecount": (sum(1 for p in partitions if p.replicas and p.leader != p.replicas[0]),
                                           "Partitions whose leader is not their preferred replica"),
        "metadataerrorcount": (1 if getattr(shell, "fatal", None) else 0,
                               "Metadata records this controller could not apply"),
        "lastappliedrecordoffset": (getattr(ctl, "committed_offset", -1),
                                    "Offset of the last record applied to the controller's image"),
        "lastcommittedrecordoffset": (-1 if hw is None else hw - 1, "Offset of the last committed record"),
    }
    for name, (value, help_text) in values.items():
        yield GaugeMetricFamily(f"kafka_controller_kafkacontroller_{name}", help_text, value=value)


def _num(v: float) -> str:
    if v != v:  # NaN
        return "NaN"
    return str(int(v)) if float(v).is_integer() else f"{v:.3f}"


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

    def collect(self) -> Iterator[Any]:
        yield from _families(self.PREFIX, self.samples(), COUNTERS)

    def render(self) -> str:
        return CombinedMetrics(self).render()


class CombinedMetrics:
    """Several metric sets behind one /metrics endpoint, with process and Python metrics.

    Parts with ``collect()`` are exported through a prometheus_client registry of this node's own;
    parts that render Prometheus text themselves (the socket server) are appended as they are.
    """

    def __init__(self, *parts: Any) -> None:
        from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

        self.parts = parts
        self.registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        for part in parts:
            if hasattr(part, "collect"):
                self.registry.register(_Parts(part))

    def render(self) -> str:
        from prometheus_client import generate_latest

        text = generate_latest(self.registry).decode()
        return text + "".join(p.render() for p in self.parts if not hasattr(p, "collect"))

    def ready(self) -> tuple[bool, str]:
        for part in self.parts:
            if hasattr(part, "ready"):
                return part.ready()
        return True, "serving"


class _Parts:
    def __init__(self, part: Any) -> None:
        self.part = part

    def collect(self) -> Iterator[Any]:
        return self.part.collect()


async def serve_metrics(metrics: Any, host: str, port: int, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    """A minimal HTTP/1.0 endpoint: ``GET /metrics`` → Prometheus text, ``/health`` → 200 while serving,
    ``/ready`` → 200 once ready (503 with the reason before); anything else → 404."""
    if not isinstance(metrics, CombinedMetrics):
        metrics = CombinedMetrics(metrics)
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
            path = first[1].split(b"?")[0] if len(first) >= 2 and first[0] == b"GET" else b""
            status, ctype, body = _answer(metrics, path)
            head = f"HTTP/1.0 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
            try:
                await stream.send(head.encode() + body)
            except (anyio.BrokenResourceError, OSError):
                pass

    async with listener:
        await listener.serve(handle)


def _answer(metrics: CombinedMetrics, path: bytes) -> tuple[str, str, bytes]:
    from prometheus_client import CONTENT_TYPE_LATEST

    if path in (b"/metrics", b"/"):
        return "200 OK", CONTENT_TYPE_LATEST, metrics.render().encode()
    if path == b"/health":
        return "200 OK", "text/plain", b"ok\n"
    if path == b"/ready":
        ok, why = metrics.ready()
        return ("200 OK" if ok else "503 Service Unavailable"), "text/plain", f"{why}\n".encode()
    return "404 Not Found", "text/plain", b"not found\n"
