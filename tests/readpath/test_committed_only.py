"""Consumers see committed records only, from any node; bad client requests cost only their connection."""

from __future__ import annotations

import io
import json
import signal
import struct
import time

import anyio
import pytest
from kafka import KafkaConsumer, TopicPartition

from kraftwire.cli.console_consumer import consume
from tests.processes.harness import Cluster

pytestmark = pytest.mark.processes
TP = TopicPartition("__cluster_metadata", 0)


def read_all(addr: str, timeout_s: float = 20.0) -> list[int]:
    """Offsets a kafka-python consumer reads from earliest up to the end offset seen at start.

    The active controller commits a NoOpRecord every idle interval, so "until quiet" never comes:
    read up to a fixed end instead, bounded in time.
    """
    consumer = KafkaConsumer(bootstrap_servers=addr, auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer.assign([TP])
        consumer.seek_to_beginning(TP)
        end = consumer.end_offsets([TP])[TP]
        offsets: list[int] = []
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (not offsets or offsets[-1] < end - 1):
            for records in consumer.poll(timeout_ms=500).values():
                offsets.extend(m.offset for m in records)
        return offsets
    finally:
        consumer.close()


def direct_offsets(addr: str) -> list[int]:
    """Offsets a plain consumer Fetch loop (ReplicaId -1) gets from exactly this node."""
    out = io.StringIO()
    anyio.run(lambda: consume(addr, start="earliest", max_records=0, idle_timeout=2, include_control=True,
                              out=out))
    return [json.loads(line)["offset"] for line in out.getvalue().splitlines()]


def test_consumer_stops_at_the_high_watermark_when_followers_are_stopped(tmp_path):
    c = Cluster(tmp_path, 3)
    try:
        c.start_all()
        status = c.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 3, [1, 2, 3])
        leader = status["LeaderId"]
        followers = [n for n in (1, 2, 3) if n != leader]
        for f in followers:
            c.kill(f, signal.SIGSTOP)
        # The active controller keeps appending NoOpRecords that can no longer commit (until check-quorum
        # makes the leader resign ~1.5 s later; the high watermark cannot move either way).
        from kraftwire.cli.metadata_quorum import describe

        time.sleep(0.7)
        snap = anyio.run(describe, c.addr(leader), 2.0)
        hw = snap["HighWatermark"]
        lead_row = next(r for r in snap["Replication"] if r["NodeId"] == leader)
        assert lead_row["LogEndOffset"] > hw + 2, snap
        offsets = direct_offsets(c.addr(leader))
        assert offsets, "nothing consumed"
        assert max(offsets) < hw, f"consumer read offset {max(offsets)} at/above the high watermark {hw}"
        for f in followers:
            c.kill(f, signal.SIGCONT)
        # Once a majority is back, the rest commits and becomes readable.
        later = c.wait_status(lambda s: s["HighWatermark"] > lead_row["LogEndOffset"], [leader])
        assert max(read_all(c.addr(leader))) >= lead_row["LogEndOffset"] - 1
        assert lead_row["LogEndOffset"] <= later["HighWatermark"]
    finally:
        c.stop_all()


def test_reading_from_a_follower_sees_what_the_leader_committed(tmp_path):
    c = Cluster(tmp_path, 3)
    try:
        c.start_all()
        status = c.wait_status(lambda s: s["LeaderId"] > 0 and s["HighWatermark"] > 5, [1, 2, 3])
        follower = next(n for n in (1, 2, 3) if n != status["LeaderId"])
        target = status["HighWatermark"]

        async def from_node(node: int, n: int) -> list[dict]:
            out = io.StringIO()
            await consume(c.addr(node), start="earliest", max_records=n, idle_timeout=10, include_control=False,
                          out=out)
            return [json.loads(line) for line in out.getvalue().splitlines()]

        via_follower = anyio.run(from_node, follower, target - 2)
        via_leader = anyio.run(from_node, status["LeaderId"], target - 2)
        assert len(via_follower) == target - 2
        assert via_follower == via_leader
    finally:
        c.stop_all()


def _exchange(addr: str, payload: bytes) -> bytes:
    import socket

    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(payload)
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
                if len(data) >= 4 and len(data) >= 4 + struct.unpack(">i", data[:4])[0]:
                    break
        except TimeoutError:
            pass
        return data


def test_malformed_and_unsupported_requests_cost_only_the_connection(tmp_path):
    c = Cluster(tmp_path, 1)
    try:
        c.start_all()
        c.wait_status(lambda s: s["LeaderId"] == 1, [1])
        addr = c.addr(1)
        # ApiVersions v9: answered UNSUPPORTED_VERSION (35) in the v0 layout.
        body = struct.pack(">hhih", 18, 9, 42, 3) + b"cli"
        data = _exchange(addr, struct.pack(">i", len(body)) + body)
        assert struct.unpack_from(">ih", data, 4) == (42, 35)
        # Fetch v99, a truncated Metadata, garbage, an absurd size: the connection is closed.
        for payload in (struct.pack(">i", 10) + struct.pack(">hhih", 1, 99, 1, -1),
                        struct.pack(">i", 12) + struct.pack(">hhih", 3, 12, 1, -1) + b"\x00\x05",
                        struct.pack(">i", 6) + b"\xff" * 6,
                        struct.pack(">i", 0x7FFFFFF0)):
            assert _exchange(addr, payload) == b""
        # The node is fine: a real client still reads.
        assert read_all(addr)
        assert c.procs[1].poll() is None
    finally:
        c.stop_all()
