"""Combined nodes (process.roles=broker,controller), as Kafka's example server.properties runs them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import KafkaError

from .harness import Cluster

pytestmark = pytest.mark.processes

PROPS = ["broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=200"]


def admin(c: Cluster, nodes: list[int]) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=[c.client_addr(n) for n in nodes], request_timeout_ms=5000,
                            client_id="combined-test")


def live_brokers(c: Cluster, nodes: list[int]) -> set[int]:
    a = admin(c, nodes)
    try:
        return {b["broker_id"] for b in a.describe_cluster()["brokers"]}
    finally:
        a.close()


def wait_for(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = pred()
            if last:
                return last
        except KafkaError as e:
            last = e
        time.sleep(0.3)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")


def test_three_combined_nodes_serve_clients_and_survive_kill_9_mid_traffic(tmp_path: Path) -> None:
    c = Cluster(tmp_path, 3, combined=True)
    try:
        for node in (1, 2, 3):
            c.start(node, *PROPS)
        wait_for(lambda: live_brokers(c, [1, 2, 3]) == {1, 2, 3}, 60, "three registered brokers")
        acked: list[str] = []

        def create(a: KafkaAdminClient, name: str) -> bool:
            try:
                resp = a.create_topics([NewTopic(name, 2, 2)], timeout_ms=8000)
            except KafkaError:
                return False                 # a request lost with the killed node: the ledger keeps acks only
            ok = all(t["error_code"] == 0 for t in resp["topics"])
            if ok:
                acked.append(name)
            return ok

        a = admin(c, [1, 2, 3])
        try:
            for i in range(10):
                create(a, f"t{i}")
            status = c.describe(1)
            victim = status["LeaderId"] if status else 1
            c.kill(victim)                   # the active controller and one of the brokers, mid-traffic
            create(a, "t10")                 # in flight across the failover (kafka-python may still target it)
        finally:
            a.close()
        survivors = [n for n in (1, 2, 3) if n != victim]
        after_kill = 0
        a = admin(c, survivors)              # a client (re)bootstrapped at the surviving brokers
        try:
            deadline = time.monotonic() + 60
            i = 11
            while after_kill < 10 and time.monotonic() < deadline:
                if create(a, f"t{i}"):
                    after_kill += 1
                else:
                    time.sleep(0.2)
                i += 1
        finally:
            a.close()
        assert after_kill >= 10, f"creates acknowledged after the failover: {acked}"
        c.start(victim, *PROPS)             # within its old session: re-registers once that expires
        # Its client listener accepts only once it has caught up (never answering from an empty image).
        wait_for(lambda: live_brokers(c, [victim]) == {1, 2, 3}, 60, "the restarted node serving again")
        a = admin(c, [victim])
        try:
            listed = set(a.list_topics())
        finally:
            a.close()
        assert set(acked) <= listed, f"acknowledged topics missing after kill -9: {set(acked) - listed}"
        assert "Traceback" not in c.log_text(victim)
    finally:
        c.stop_all()
