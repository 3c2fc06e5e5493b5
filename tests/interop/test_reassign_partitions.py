"""``kafka-reassign-partitions.sh`` against two Kafka brokers on a kraftwire 3-voter quorum, per release, and once
against Kafka's own controllers as the baseline (a step failing there is a wrong test).

--generate proposes a plan; with Kafka 4.1, --disallow-replication-factor-change refuses a plan that changes the
replication factor; --execute --throttle starts a move (topic and broker throttles set), --verify waits
for it and removes the throttles; --cancel stops a move held back by a 1 byte/s throttle (still pending after its
target broker stopped and came back) and the partition is back on its original broker. The moved replica really holds the data: kafka-log-dirs shows it on the new broker,
and with the old broker stopped every message is read from the new one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compat.interop import (
    KAFKA_BROKER_FAST,
    KAFKA_CONTROLLER_FAST,
    KRAFTWIRE_FAST,
    Cluster,
    KraftwireControllers,
    Producer,
)
from compat.kafka import (
    CONTROLLER_PORT,
    KafkaDist,
    KafkaNode,
    KraftwireNode,
    loopback_hosts,
    start_all,
    wait_for,
)
from tests.interop.kafka import Fleet
from tests.interop.test_kafka41 import consume

pytestmark = [pytest.mark.kafka, pytest.mark.processes, pytest.mark.slow]

OLD, NEW = 4, 5   # the two Kafka brokers (voters are 1-3)
MESSAGES = 300
HEAVY = 3000       # 1 KiB messages: more than one replica fetch, so a 1 byte/s throttle holds the move back


class KafkaQuorum(Cluster):
    """The baseline: 3 Kafka controllers (ids 1-3) and 2 Kafka brokers (ids 4, 5) of ``dist``."""

    def __init__(self, dist: KafkaDist, root: Path) -> None:
        super().__init__(dist, root)
        hosts = loopback_hosts(5)
        quorum = [(i, hosts[i - 1], CONTROLLER_PORT) for i in (1, 2, 3)]
        for i in (1, 2, 3):
            self.nodes[i] = KafkaNode(dist, self.root, i, "controller", hosts[i - 1], quorum,
                                      props=KAFKA_CONTROLLER_FAST)
        for i in (OLD, NEW):
            self.nodes[i] = KafkaNode(dist, self.root, i, "broker", hosts[i - 1], quorum, props=KAFKA_BROKER_FAST)

    def start(self, timeout_s: float = 150.0) -> None:
        for node in self.nodes.values():
            node.format(self.cluster_id, release_version=self.format_level)
        start_all([self.nodes[i] for i in self.voters()], timeout_s)
        self.wait_leader(60)
        start_all([self.nodes[i] for i in self.brokers()], timeout_s)


class KraftwireBrokers(Cluster):
    """Kafka's tools against kraftwire brokers (4, 5) on 3 kraftwire voters: brokers that host no data."""

    def __init__(self, dist: KafkaDist, root: Path) -> None:
        super().__init__(dist, root)
        hosts = loopback_hosts(5)
        quorum = [(i, hosts[i - 1], CONTROLLER_PORT) for i in (1, 2, 3)]
        for i in (1, 2, 3):
            self.nodes[i] = KraftwireNode(self.root, i, "controller", hosts[i - 1], quorum, props=KRAFTWIRE_FAST)
        for i in (OLD, NEW):
            self.nodes[i] = KraftwireNode(self.root, i, "broker", hosts[i - 1], quorum)

    def start(self, timeout_s: float = 60.0) -> None:
        for node in self.nodes.values():
            node.format(self.cluster_id)
        for node in self.nodes.values():
            node.start()
        for node in self.nodes.values():
            node.wait_started(timeout_s)


def _target_leaves_and_returns(c: Cluster) -> None:
    """The target broker goes away mid-move (controlled shutdown, then fenced) and comes back: still pending.

    Not at 3.7-IV0: a Kafka 3.7.0 broker that replayed a move there gives the new replica an UNASSIGNED
    directory, and after a restart cannot write its own image at that level ("Metadata has been lost ...
    the directory assignment state of one or more replicas"); it never starts, with Kafka's own 3.7
    controllers as with kraftwire's (both checked)."""
    c.nodes[NEW].stop()
    wait_for(lambda: sorted(c.admin(OLD).list_topics(timeout=10).brokers) == [OLD], 60, f"broker {NEW} gone")
    assert "held-0: replicas: 5,4. adding: 5. removing: 4." in _tool(c, "--list", via=OLD)
    c.nodes[NEW].start()
    c.nodes[NEW].wait_started(120)
    wait_for(lambda: sorted(c.admin().list_topics(timeout=10).brokers) == [OLD, NEW], 60, f"broker {NEW} back")


def _cluster(kind: str, dist: KafkaDist, root: Path) -> Cluster:
    return KraftwireControllers(dist, root) if kind == "kraftwire" else KafkaQuorum(dist, root)


@pytest.fixture(params=["kraftwire", "kafka"])
def quorum_kind(request, kafka_dist):
    if request.param == "kafka" and kafka_dist.version_tuple[:2] != (4, 1):
        pytest.skip("the Kafka-controller baseline runs once, at 4.1")
    return request.param


def _tool(c: Cluster, *args: str, timeout_s: float = 120, ok: bool = True, via: int = NEW) -> str:
    rc, out = c.dist.run("kafka-reassign-partitions.sh", ["--bootstrap-server", c.nodes[via].bootstrap, *args],
                         timeout_s=timeout_s)
    assert (rc == 0) == ok, f"kafka-reassign-partitions {' '.join(args)} exited {rc}: {out[-1500:]}"
    return out


def _refuses_replication_factor_change(c: Cluster, tmp_path: Path) -> None:
    """Kafka 4.1's --disallow-replication-factor-change (AlterPartitionReassignments v1, KIP-860)."""
    if not c.dist.at_least(4, 1):
        return
    plan = _plan(tmp_path / "grow.json", {"moving": [OLD, NEW]})
    out = _tool(c, "--reassignment-json-file", plan, "--execute", "--disallow-replication-factor-change", ok=False)
    assert "Error reassigning partition(s):" in out and "The replication factor is changed from 1 to 2" in out, out
    assert c.partitions("moving")[0][1] == [OLD]


def _plan(path: Path, moves: dict[str, list[int]]) -> str:
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": 0, "replicas": r, "log_dirs": ["any"] * len(r)} for t, r in moves.items()]}))
    return str(path)


def _create(c: Cluster, topic: str) -> None:
    rc, out = c.dist.run("kafka-topics.sh", ["--bootstrap-server", c.nodes[OLD].bootstrap, "--create", "--topic",
                                             topic, "--replica-assignment", str(OLD)], timeout_s=90)
    assert rc == 0, out
    wait_for(lambda: c.partitions(topic).get(0, (-1,))[0] == OLD, 60, f"{topic} led by broker {OLD}")


def _produce(c: Cluster, topic: str, values: list[str]) -> None:
    prod = Producer(c, topic)
    prod.send(values)
    assert prod.flush() == 0 and not prod.errors and len(prod.acked) == len(values), prod.errors[:3]


def _configs(c: Cluster, kind: str, name: str) -> str:
    rc, out = c.dist.run("kafka-configs.sh", ["--bootstrap-server", c.nodes[OLD].bootstrap, "--describe",
                                              "--entity-type", kind, "--entity-name", name], timeout_s=90)
    assert rc == 0, out
    return out


def _log_dir_size(c: Cluster, broker: int, partition: str) -> int | None:
    rc, out = c.dist.run("kafka-log-dirs.sh", ["--bootstrap-server", c.nodes[broker].bootstrap, "--describe",
                                               "--broker-list", str(broker)], timeout_s=90)
    assert rc == 0, out
    line = next(ln for ln in out.splitlines() if ln.startswith("{"))
    for b in json.loads(line)["brokers"]:
        for d in b["logDirs"]:
            for p in d["partitions"]:
                if p["partition"] == partition:
                    return p["size"]
    return None


def test_reassign_partitions_tool(kafka_dist, quorum_kind, tmp_path):
    c = _cluster(quorum_kind, kafka_dist, tmp_path)
    with Fleet(tmp_path) as fleet:
        fleet.nodes = list(c.nodes.values())
        c.start()
        wait_for(lambda: sorted(c.admin().list_topics(timeout=10).brokers) == [OLD, NEW], 60, "both brokers")
        _create(c, "moving")
        _create(c, "held")
        _refuses_replication_factor_change(c, tmp_path)
        values = [f"m{i}" for i in range(MESSAGES)]
        _produce(c, "moving", values)
        _produce(c, "held", [f"h{i:05d}" + "x" * 1018 for i in range(HEAVY)])

        # --generate: a proposal over both brokers, the current assignment printed first
        topics = tmp_path / "topics.json"
        topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "moving"}]}))
        out = _tool(c, "--topics-to-move-json-file", str(topics), "--broker-list", f"{OLD},{NEW}", "--generate")
        assert "Current partition replica assignment" in out and "Proposed partition reassignment" in out, out
        assert f'"replicas":[{OLD}]' in out.replace(" ", ""), out

        # --cancel: a move held back by a 1 byte/s throttle is still running; cancelling puts it back
        out = _tool(c, "--reassignment-json-file", _plan(tmp_path / "held.json", {"held": [NEW]}), "--execute",
                    "--throttle", "1")
        assert "Successfully started partition reassignment" in out, out
        out = _tool(c, "--reassignment-json-file", str(tmp_path / "held.json"), "--verify", "--preserve-throttles")
        assert "Reassignment of partition held-0 is still in progress." in out, out
        if c.format_level != "3.7-IV0":
            _target_leaves_and_returns(c)
        out = _tool(c, "--reassignment-json-file", str(tmp_path / "held.json"), "--cancel")
        assert "Successfully cancelled partition reassignment" in out and "held-0" in out, out
        wait_for(lambda: c.partitions("held").get(0, (-1, []))[1] == [OLD], 60, "held-0 back on the old broker")
        assert "leader.replication.throttled.replicas" not in _configs(c, "topics", "held")

        # --execute --throttle, then --verify until done; --verify removes the throttles
        out = _tool(c, "--reassignment-json-file", _plan(tmp_path / "moving.json", {"moving": [NEW]}), "--execute",
                    "--throttle", "50000000")
        assert "Successfully started partition reassignment" in out, out
        throttled = _configs(c, "topics", "moving")
        assert "leader.replication.throttled.replicas=0:4" in throttled, throttled
        assert "follower.replication.throttled.replicas=0:5" in throttled, throttled
        assert "follower.replication.throttled.rate=50000000" in _configs(c, "brokers", str(NEW))

        def verified() -> str | None:
            got = _tool(c, "--reassignment-json-file", str(tmp_path / "moving.json"), "--verify")
            return got if "Reassignment of partition moving-0 is completed." in got else None
        out = wait_for(verified, 120, "moving-0 reassigned")
        assert "Clearing topic-level throttles on topic moving" in out, out
        assert "leader.replication.throttled.replicas" not in _configs(c, "topics", "moving")
        assert "follower.replication.throttled.rate" not in _configs(c, "brokers", str(NEW))
        assert c.partitions("moving")[0] == (NEW, [NEW], [NEW])

        # the data is on the new broker: its log dir holds the partition, and it serves every message alone
        assert (_log_dir_size(c, NEW, "moving-0") or 0) > 0
        assert _log_dir_size(c, OLD, "moving-0") is None
        c.nodes[OLD].stop()
        got = consume(c.nodes[NEW].bootstrap, "moving", MESSAGES)
        assert sorted(got) == sorted(values), f"{len(got)}/{MESSAGES} read from broker {NEW}"
        assert "No partition reassignments found." in _tool(c, "--list")


def test_reassign_partitions_tool_on_kraftwire_brokers(kafka_dist, tmp_path):
    """kraftwire brokers host no data, so a move to a new broker never gets its replica in sync: --execute
    (throttled), --list and --verify show it in progress, --cancel puts the partition back and clears the
    throttles — every call forwarded by a kraftwire broker to the kraftwire controller."""
    if kafka_dist.version_tuple[:2] != (4, 1):
        pytest.skip("Kafka's tool against kraftwire brokers runs once, at 4.1")
    c = KraftwireBrokers(kafka_dist, tmp_path)
    with Fleet(tmp_path) as fleet:
        fleet.nodes = list(c.nodes.values())
        c.start()
        wait_for(lambda: sorted(c.admin().list_topics(timeout=10).brokers) == [OLD, NEW], 60, "both brokers")
        _create(c, "moving")
        _refuses_replication_factor_change(c, tmp_path)
        plan = _plan(tmp_path / "moving.json", {"moving": [NEW]})
        out = _tool(c, "--reassignment-json-file", plan, "--execute", "--throttle", "1000000")
        assert "Successfully started partition reassignment" in out, out
        assert "follower.replication.throttled.replicas=0:5" in _configs(c, "topics", "moving")
        listed = _tool(c, "--list")
        assert "moving-0: replicas: 5,4. adding: 5. removing: 4." in listed, listed
        out = _tool(c, "--reassignment-json-file", plan, "--verify", "--preserve-throttles")
        assert "Reassignment of partition moving-0 is still in progress." in out, out
        assert c.partitions("moving")[0] == (OLD, [OLD, NEW], [OLD])
        out = _tool(c, "--reassignment-json-file", plan, "--cancel")
        assert "Successfully cancelled partition reassignment" in out and "moving-0" in out, out
        wait_for(lambda: c.partitions("moving").get(0, (-1, []))[1] == [OLD], 60, "moving-0 back on broker 4")
        assert "No partition reassignments found." in _tool(c, "--list")
        assert "throttled" not in _configs(c, "topics", "moving")
        assert "throttled" not in _configs(c, "brokers", str(NEW))
