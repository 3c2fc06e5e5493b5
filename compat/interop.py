"""The interop matrix against real Apache Kafka releases: clusters mixing kraftwire and Kafka nodes, and
the checks (cells) run on them. Each check returns a ``Result``; ``python -m compat --kafka`` prints them
as rows per release and ``tests/interop`` asserts them.

Clusters (every node on its own loopback address, see ``compat/kafka.py``):

* ``KraftwireControllers``: 3 kraftwire voters and 2 Kafka brokers — rows (a) Kafka's tools on kraftwire
  and (b) real Kafka brokers on a kraftwire controller quorum;
* ``KafkaControllers``: 3 Kafka controllers and 1 kraftwire broker — rows (c) and (e);
* ``MixedQuorum``: kraftwire and Kafka voters in one quorum — row (d).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from compat.kafka import (
    CONTROLLER_PORT,
    KafkaDist,
    KafkaNode,
    KraftwireNode,
    loopback_hosts,
    start_all,
    wait_for,
)
from compat.matrix import Result
from kraftwire.metadata.features import (
    KRAFT_VERSION,
    KRAFT_VERSION_UPGRADE,
    default_feature_levels,
    parse_release_version,
)
from kraftwire.protocol.records import iter_batches
from kraftwire.storage.meta_properties import random_uuid

#: (format at, upgrade to) per release: an older level every node knows, then the newest both sides share.
#: Kafka controllers (row c) are formatted at the second, mixed quorums (row d) at the first. None: each node's
#: `storage format` default, i.e. Kafka 4.1 as a new user runs it (4.1-IV1 with eligible.leader.replicas.version 1
#: on both sides); the feature check then re-applies 4.1-IV1 with `upgrade --release-version`.
RELEASE_LEVELS: dict[tuple[int, int], tuple[str | None, str | None]] = {
    (3, 7): ("3.7-IV0", "3.7-IV4"), (3, 9): ("3.7-IV4", "3.9-IV0"), (4, 1): (None, None)}
DEFAULT_RELEASE = "4.1-IV1"   # what kraftwire and Kafka 4.1 format at without --release-version
KRAFTWIRE_FAST = {"metadata.max.idle.interval.ms": "500", "controller.quorum.request.timeout.ms": "2000",
                  "metadata.log.max.record.bytes.between.snapshots": "4000",
                  "metadata.log.max.snapshot.interval.ms": "10000"}
KAFKA_BROKER_FAST = {"replica.lag.time.max.ms": "4000", "default.replication.factor": "2",
                     "min.insync.replicas": "1", "offsets.topic.replication.factor": "2",
                     "transaction.state.log.replication.factor": "2", "auto.create.topics.enable": "false"}


def release_levels(dist: KafkaDist) -> tuple[str | None, str | None]:
    return RELEASE_LEVELS.get(dist.version_tuple[:2], (None, None))


def kraftwire_cli(*args: str, timeout_s: float = 60.0) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=timeout_s)
    return p.returncode, p.stdout + p.stderr


def describe_quorum(bootstrap: str, what: str = "--status", *, server: bool = False) -> dict | list | None:
    """kraftwire's ``metadata-quorum describe --json`` (None when it fails)."""
    flag = "--bootstrap-server" if server else "--bootstrap-controller"
    p = subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum", flag, bootstrap, "--timeout", "5",
                        "describe", what, "--json"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        return None
    try:
        return json.loads(p.stdout)
    except ValueError:
        return None


class Cluster:
    """Nodes of one test cluster; ``stop()`` ends them all (brokers first)."""

    def __init__(self, dist: KafkaDist, root: Path) -> None:
        self.dist = dist
        self.root = Path(root)
        self.cluster_id = random_uuid()
        self.nodes: dict[int, KafkaNode | KraftwireNode] = {}
        self.format_level, self.upgrade_level = release_levels(dist)

    def voters(self) -> list[int]:
        return sorted(i for i, n in self.nodes.items() if n.is_controller)

    def brokers(self) -> list[int]:
        return sorted(i for i, n in self.nodes.items() if n.is_broker)

    def voter_addrs(self) -> str:
        return ",".join(self.nodes[i].controller_address for i in self.voters())

    def stop(self) -> None:
        for node in sorted(self.nodes.values(), key=lambda n: n.is_controller):
            node.stop(timeout_s=20.0)

    def logs(self, lines: int = 60) -> str:
        return "\n".join(n.log_tail(lines) for n in self.nodes.values())

    def status(self) -> dict | None:
        """DescribeQuorum (kraftwire's tool) asked of each voter in turn."""
        for i in self.voters():
            if self.nodes[i].running():
                d = describe_quorum(self.nodes[i].controller_address)
                if d is not None and d.get("LeaderId", -1) >= 0:
                    return d
        return None

    def wait_leader(self, timeout_s: float = 60.0, exclude: int | None = None) -> dict:
        return wait_for(lambda: (s := self.status()) and s["LeaderId"] != exclude and s, timeout_s,
                        "a quorum leader")

    # -- clients (librdkafka, no JVM start per call) --------------------------------------------
    def admin(self, broker: int | None = None):  # noqa: ANN201
        from confluent_kafka.admin import AdminClient

        ids = [broker] if broker is not None else [b for b in self.brokers() if self.nodes[b].running()]
        return AdminClient({"bootstrap.servers": ",".join(self.nodes[b].bootstrap for b in ids)})

    def partitions(self, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
        """partition → (leader, replicas, isr) as a broker's Metadata answers."""
        md = self.admin().list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            return {}
        return {p.id: (p.leader, sorted(p.replicas), sorted(p.isrs)) for p in t.partitions.values()}


class KraftwireControllers(Cluster):
    """3 kraftwire voters (ids 1-3) and 2 Kafka brokers (ids 4, 5) of ``dist``."""

    def __init__(self, dist: KafkaDist, root: Path, voters: int = 3, brokers: int = 2) -> None:
        super().__init__(dist, root)
        hosts = loopback_hosts(voters + brokers)
        quorum = [(i, hosts[i - 1], CONTROLLER_PORT) for i in range(1, voters + 1)]
        for i in range(1, voters + 1):
            self.nodes[i] = KraftwireNode(self.root, i, "controller", hosts[i - 1], quorum, props=KRAFTWIRE_FAST)
        for i in range(voters + 1, voters + brokers + 1):
            self.nodes[i] = KafkaNode(dist, self.root, i, "broker", hosts[i - 1], quorum, props=KAFKA_BROKER_FAST)

    def start(self, timeout_s: float = 150.0) -> None:
        for node in self.nodes.values():
            node.format(self.cluster_id, release_version=self.format_level)
        start_all([self.nodes[i] for i in self.voters()], 60)
        self.wait_leader(60)
        start_all([self.nodes[i] for i in self.brokers()], timeout_s)


# -- (b) real Kafka brokers on kraftwire controllers -------------------------------------------------
def check_brokers_register(c: Cluster) -> Result:
    """Both Kafka brokers register with the kraftwire controller and are unfenced (a broker lists both)."""
    want = c.brokers()
    got = wait_for(lambda: sorted(c.admin().list_topics(timeout=10).brokers) == want and want, 60,
                   f"brokers {want} listed")
    return Result("pass", f"brokers {got} registered and unfenced (Kafka {c.dist.version}, metadata.version "
                          f"{c.format_level or DEFAULT_RELEASE + ' by default'})")


def create_topic(c: Cluster, topic: str, partitions: int = 4, rf: int = 2, broker: int | None = None) -> str:
    """``kafka-topics.sh --create`` through a Kafka broker: the broker forwards it in an Envelope."""
    b = broker if broker is not None else c.brokers()[0]
    rc, out = c.dist.run("kafka-topics.sh", ["--bootstrap-server", c.nodes[b].bootstrap, "--create", "--topic",
                                             topic, "--partitions", str(partitions), "--replication-factor",
                                             str(rf)], timeout_s=90)
    if rc != 0:
        raise AssertionError(f"kafka-topics.sh --create {topic} exited {rc}: {out.strip()[-400:]}")
    wait_for(lambda: len(c.partitions(topic)) == partitions and all(
        len(isr) == rf and leader >= 0 for leader, _, isr in c.partitions(topic).values()), 60,
        f"{topic}: {partitions} partitions with full ISR")
    return out.strip().splitlines()[-1]


class Producer:
    """An idempotent acks=all producer whose acknowledged values are remembered."""

    def __init__(self, c: Cluster, topic: str) -> None:
        from confluent_kafka import Producer as P

        self.topic = topic
        self.p = P({"bootstrap.servers": ",".join(c.nodes[b].bootstrap for b in c.brokers()),
                    "enable.idempotence": True, "acks": "all", "linger.ms": 5, "message.timeout.ms": 120000})
        self.acked: set[str] = set()
        self.errors: list[str] = []

    def _cb(self, err, msg) -> None:  # noqa: ANN001
        if err is None:
            self.acked.add(msg.value().decode())
        else:
            self.errors.append(str(err))

    def send(self, values: list[str]) -> None:
        for v in values:
            while True:
                try:
                    self.p.produce(self.topic, v.encode(), key=v.encode(), on_delivery=self._cb)
                    break
                except BufferError:
                    self.p.poll(0.1)
            self.p.poll(0)

    def flush(self, timeout_s: float = 120.0) -> int:
        return self.p.flush(timeout_s)


def consume_all(c: Cluster, topic: str, expect: int, timeout_s: float = 90.0) -> list[str]:
    """Every value of ``topic`` from the beginning (a fresh group), until ``expect`` or the deadline."""
    from confluent_kafka import Consumer

    cons = Consumer({"bootstrap.servers": ",".join(c.nodes[b].bootstrap for b in c.brokers() if c.nodes[b].running()),
                     "group.id": f"interop-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "earliest",
                     "enable.auto.commit": False})
    out: list[str] = []
    try:
        cons.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while len(out) < expect and time.monotonic() < deadline:
            m = cons.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m.value().decode())
    finally:
        cons.close()
    return out


def check_produce_consume(c: Cluster, topic: str = "interop-orders", n: int = 1000) -> Result:
    """A topic with RF 2 created through a Kafka broker; n idempotent acks=all messages produced and read."""
    create_topic(c, topic)
    prod = Producer(c, topic)
    prod.send([f"m{i}" for i in range(n)])
    left = prod.flush()
    if left or prod.errors or len(prod.acked) != n:
        return Result("fail", f"{len(prod.acked)}/{n} acknowledged, {left} unflushed, errors {prod.errors[:3]}")
    got = consume_all(c, topic, n)
    if sorted(got) != sorted(prod.acked):
        return Result("fail", f"consumed {len(got)} ({len(set(got))} distinct), produced {n}")
    return Result("pass", f"topic {topic} (4 partitions, RF 2) created via Envelope; {n}/{n} produced "
                          f"(idempotent, acks=all) and consumed")


def _replica_partitions(c: Cluster, topic: str, broker: int) -> list[int]:
    return [p for p, (_, replicas, _) in c.partitions(topic).items() if broker in replicas]


def check_isr_shrink_expand(c: Cluster, topic: str = "interop-orders") -> Result:
    """Stop a replica broker (controlled shutdown): it leaves every ISR; start it again: the leaders' AlterPartition
    requests bring it back into every ISR (KIP-497 with real brokers)."""
    victim = c.brokers()[-1]
    parts = _replica_partitions(c, topic, victim)
    c.nodes[victim].stop()
    wait_for(lambda: all(victim not in c.partitions(topic)[p][2] for p in parts), 60,
             f"broker {victim} out of the ISR of {topic} {parts}")
    shrunk = {p: c.partitions(topic)[p][2] for p in parts}
    c.nodes[victim].start()
    c.nodes[victim].wait_started(120)
    wait_for(lambda: all(victim in c.partitions(topic)[p][2] for p in parts), 90,
             f"broker {victim} back in the ISR of {topic} {parts}")
    return Result("pass", f"broker {victim} stopped: ISRs {shrunk}; restarted: back in the ISR of partitions {parts}")


def check_leader_election(c: Cluster, topic: str = "interop-orders") -> Result:
    """kill -9 of a broker leading partitions: after its session expires the other replica leads them all."""
    victim, other = c.brokers()[0], c.brokers()[1]
    led = [p for p, (leader, _, _) in c.partitions(topic).items() if leader == victim]
    if not led:
        return Result("fail", f"broker {victim} leads no partition of {topic}: {c.partitions(topic)}")
    c.nodes[victim].kill()
    t0 = time.monotonic()
    wait_for(lambda: all(c.partitions(topic).get(p, (-1,))[0] == other for p in led), 60,
             f"broker {other} leading {topic} {led}")
    took = time.monotonic() - t0
    c.nodes[victim].start()
    c.nodes[victim].wait_started(120)
    wait_for(lambda: all(victim in isr for _, _, isr in c.partitions(topic).values()), 90, f"broker {victim} in all ISRs")
    return Result("pass", f"broker {victim} killed (-9): partitions {led} led by {other} after {took:.1f}s; "
                          f"restarted, back in every ISR")


def check_controlled_shutdown(c: Cluster, topic: str = "interop-orders") -> Result:
    """SIGTERM of a Kafka broker: the kraftwire controller moves its leaderships away before it exits by itself."""
    victim, other = c.brokers()[-1], c.brokers()[0]
    led = [p for p, (leader, _, _) in c.partitions(topic).items() if leader == victim]
    node = c.nodes[victim]
    assert isinstance(node, KafkaNode)
    marks = {i: len(c.nodes[i].log_text()) for i in c.voters()}
    code = node.stop(timeout_s=60)
    # Asked at once (within 3 s, half the 6 s session): a broker that merely died would still lead until it expires.
    deadline = time.monotonic() + 3
    after = c.partitions(topic)
    while not all(after[p][0] == other for p in after) and time.monotonic() < deadline:
        time.sleep(0.2)
        after = c.partitions(topic)
    problems = []
    if code not in (0, 143):
        problems.append(f"exit status {code} (killed after the shutdown timeout?)")
    if not all(after[p][0] == other for p in after):
        problems.append(f"leaders right after shutdown {after}")
    said = [ln for i in c.voters() for ln in c.nodes[i].log_text()[marks[i]:].splitlines()
            if f"Broker {victim} " in ln and "controlled shutdown" in ln]
    if not said:
        problems.append("no kraftwire controller logged the broker's controlled shutdown")
    node.start()
    node.wait_started(120)
    wait_for(lambda: all(victim in isr for _, _, isr in c.partitions(topic).values()), 90, f"broker {victim} in all ISRs")
    if problems:
        return Result("fail", "; ".join(problems))
    return Result("pass", f"broker {victim} shut down cleanly; its partitions {led} moved to {other}; restarted")


def check_controller_failover(c: Cluster, topic: str = "interop-failover", seconds: float = 6.0) -> Result:
    """kill -9 of the active kraftwire controller while a producer writes: a new controller takes over, the brokers
    follow it, and no acknowledged message is lost."""
    create_topic(c, topic, partitions=2)
    prod = Producer(c, topic)
    stop = threading.Event()
    sent = [0]

    def produce() -> None:
        while not stop.is_set():
            prod.send([f"f{sent[0] + i}" for i in range(20)])
            sent[0] += 20
            time.sleep(0.02)

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    try:
        time.sleep(seconds / 2)
        before = c.wait_leader(30)
        old = before["LeaderId"]
        c.nodes[old].kill()
        after = wait_for(lambda: (s := c.status()) and s["LeaderId"] not in (-1, old) and s, 60,
                         "a new kraftwire leader")
        c.nodes[old].start()
        c.nodes[old].wait_started(60)
        time.sleep(seconds / 2)
        create_topic(c, topic + "-after", partitions=1)  # forwarded to the new controller
    finally:
        stop.set()
        t.join(30)
    left = prod.flush()
    got = set(consume_all(c, topic, len(prod.acked)))
    lost = prod.acked - got
    if lost or left:
        return Result("fail", f"{len(lost)} acknowledged messages lost (e.g. {sorted(lost)[:3]}), {left} unflushed; "
                              f"errors {prod.errors[:2]}")
    return Result("pass", f"leader {old} killed mid-traffic, {after['LeaderId']} took over in epoch "
                          f"{after['LeaderEpoch']}; {len(prod.acked)}/{sent[0]} acknowledged, all consumed; "
                          f"topic created after the failover")


# -- (a) Kafka's tools on kraftwire ------------------------------------------------------------------
def _copy_dir(src: Path) -> Path:
    """A readable copy of a node's log directory (Kafka's tools take the directory's lock)."""
    dst = Path(tempfile.mkdtemp(prefix="kraftwire-interop-"))
    for f in src.iterdir():
        if f.is_file() and f.name != ".lock":
            shutil.copyfile(f, dst / f.name)
    return dst


def check_dump_log(c: Cluster) -> Result:
    """``kafka-dump-log.sh --cluster-metadata-decoder`` decodes every record of the kraftwire leader's segment."""
    leader = c.wait_leader()["LeaderId"]
    copy = _copy_dir(c.nodes[leader].metadata_dir)
    try:
        seg = sorted(copy.glob("*.log"), key=lambda p: int(p.stem))[0]
        offsets = [b.base_offset + i for b, _, _ in iter_batches(seg.read_bytes()) for i in range(len(b.records))]
        rc, out = c.dist.run("kafka-dump-log.sh", ["--cluster-metadata-decoder", "--files", str(seg)], timeout_s=90)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    seen = [int(m) for m in re.findall(r"^\| offset: (\d+)", out, re.M)]
    bad = [ln for ln in out.splitlines() if re.search(r"exception|error", ln, re.I)]
    if rc != 0 or bad or seen != offsets:
        return Result("fail", f"exit {rc}, {len(seen)} records decoded of {len(offsets)}: {(bad or [out[-200:]])[0]}")
    kinds = sorted(set(re.findall(r'"type":"?(\w+)', out)) | set(re.findall(r"payload: \{\"type\":\"(\w+)", out)))
    return Result("pass", f"{len(seen)} records of {seg.name} decoded" + (f" ({', '.join(kinds[:6])}...)" if kinds else ""))


def check_metadata_shell(c: Cluster) -> Result:
    """``kafka-metadata-shell.sh --snapshot`` reads a kraftwire snapshot and a kraftwire log segment (the two
    inputs Kafka's shell takes) and finds the brokers under /image/cluster/brokers."""
    leader = c.wait_leader()["LeaderId"]
    node = c.nodes[leader]
    wait_for(lambda: sorted(node.metadata_dir.glob("*.checkpoint")), 60, "a kraftwire snapshot")
    copy = _copy_dir(node.metadata_dir)
    details = []
    try:
        snap = sorted(copy.glob("*.checkpoint"))[-1]
        seg = sorted(copy.glob("*.log"), key=lambda p: int(p.stem))[-1]
        for target in (snap, seg):
            for _ in range(3):  # Kafka's shell may answer before its loader published the whole file: ask again
                rc, out = c.dist.run("kafka-metadata-shell.sh", ["--snapshot", str(target), "ls",
                                                                 "/image/cluster/brokers"], timeout_s=90)
                listed = sorted(int(x) for x in re.findall(r"^(\d+)$", out, re.M))
                if rc == 0 and listed == c.brokers():
                    break
            if rc != 0 or listed != c.brokers():
                return Result("fail", f"--snapshot {target.name}: exit {rc}, /image/cluster/brokers lists {listed}: "
                                      + " | ".join(ln for ln in out.splitlines() if "control record" not in ln)[-300:])
            details.append(f"{target.name}: brokers {listed}")
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return Result("pass", "; ".join(details))


def check_metadata_quorum(c: Cluster) -> Result:
    """``kafka-metadata-quorum.sh describe --status/--replication`` through a kraftwire voter and through a Kafka
    broker (which forwards DescribeQuorum to the kraftwire controller in an Envelope)."""
    truth = c.wait_leader()
    out_all = []
    for flag, addr in (("--bootstrap-controller", c.nodes[c.voters()[0]].controller_address),
                       ("--bootstrap-server", c.nodes[c.brokers()[0]].bootstrap)):
        for what in ("--status", "--replication"):
            rc, out = c.dist.run("kafka-metadata-quorum.sh", [flag, addr, "describe", what], timeout_s=90)
            if rc != 0:
                return Result("fail", f"{flag} {what}: exit {rc}: {out.strip()[-300:]}")
            if what == "--status":
                fields = dict(re.findall(r"^(\w+):\s+(.*)$", out, re.M))
                voters = sorted({int(v) for v in re.findall(r'"id":\s*(\d+)', fields.get("CurrentVoters", ""))}
                                or {int(v) for v in re.findall(r"\d+", fields.get("CurrentVoters", ""))})
                got = (fields.get("ClusterId"), int(fields.get("LeaderId", -1)), voters)
                if got != (c.cluster_id, truth["LeaderId"], c.voters()):
                    return Result("fail", f"{flag} --status: {got}, the quorum is "
                                          f"{(c.cluster_id, truth['LeaderId'], c.voters())}")
            else:
                rows = re.findall(r"^\s*(\d+)\s.*\s(Leader|Follower|Observer)\s*$", out, re.M)
                roles = {int(i): r for i, r in rows}
                want = {**{v: "Follower" for v in c.voters()}, truth["LeaderId"]: "Leader",
                        **{b: "Observer" for b in c.brokers() if c.nodes[b].running()}}
                if {k: roles.get(k) for k in want} != want:
                    return Result("fail", f"{flag} --replication: roles {roles}, expected {want}")
        out_all.append(flag)
    return Result("pass", f"--status and --replication via {' and '.join(out_all)}: leader {truth['LeaderId']}, "
                          f"voters {c.voters()}, brokers as observers")


def check_storage_info(c: Cluster) -> Result:
    """``kafka-storage.sh info`` reads a kraftwire node's meta.properties."""
    node = c.nodes[c.voters()[0]]
    rc, out = c.dist.run("kafka-storage.sh", ["info", "-c", str(node.config)], timeout_s=60)
    if rc != 0 or c.cluster_id not in out or "problem" in out.lower():
        return Result("fail", f"exit {rc}: {out.strip()[-300:]}")
    return Result("pass", f"cluster.id {c.cluster_id}, node.id {node.node_id} read from {node.data.name}")


def _finalized_mv(c: Cluster, flag: str, addr: str) -> tuple[int, str]:
    rc, out = c.dist.run("kafka-features.sh", [flag, addr, "describe"], timeout_s=60)
    m = re.search(r"Feature: metadata\.version\s+SupportedMinVersion: [^\t]+\s+SupportedMaxVersion: ([^\t]+)\s+"
                  r"FinalizedVersionLevel: (\S+)", out)
    if rc != 0 or m is None:
        raise AssertionError(f"kafka-features.sh {flag} describe: exit {rc}: {out.strip()[-300:]}")
    return parse_release_version(m.group(2)), out


def _finalized(out: str, feature: str) -> str | None:
    m = re.search(rf"Feature: {re.escape(feature)}\s.*?FinalizedVersionLevel: (\S+)", out)
    return m.group(1) if m else None


def upgrade_41_features() -> list[str]:
    """``kafka-features.sh upgrade`` arguments for Kafka 4.1's release defaults at 4.1-IV1: ``--release-version``
    when kraftwire can make every change it asks for, else each feature but kraft.version (its 0 -> 1 upgrade of a
    static quorum is not built, ``KRAFT_VERSION_UPGRADE``; Kafka refuses the whole --release-version request then)."""
    if KRAFT_VERSION_UPGRADE:
        return ["--release-version", DEFAULT_RELEASE]
    level = parse_release_version(DEFAULT_RELEASE)
    args = ["--feature", f"metadata.version={level}"]
    for name, value in sorted(default_feature_levels(level).items()):
        if value and name != KRAFT_VERSION:
            args += ["--feature", f"{name}={value}"]
    return args


def check_features(c: Cluster) -> Result:
    """``kafka-features.sh describe`` via a broker and via a kraftwire voter, then ``upgrade`` metadata.version
    from the format level to the newest level every node supports, while Kafka and kraftwire nodes run. At the
    format defaults (Kafka 4.1) both describe 4.1-IV1 with eligible.leader.replicas.version 1, and an upgrade to
    4.1's defaults (``upgrade_41_features``) is accepted."""
    broker = ("--bootstrap-server", c.nodes[c.brokers()[0]].bootstrap)
    voter = ("--bootstrap-controller", c.nodes[c.voters()[0]].controller_address)
    start = parse_release_version(c.format_level or DEFAULT_RELEASE)
    target = parse_release_version(c.upgrade_level or DEFAULT_RELEASE)
    for flag, addr in (broker, voter):
        level, out = _finalized_mv(c, flag, addr)
        if level != start:
            return Result("fail", f"{flag} describe: finalized metadata.version {level}, formatted {start}")
        if c.format_level is None and _finalized(out, "eligible.leader.replicas.version") != "1":
            return Result("fail", f"{flag} describe: eligible.leader.replicas.version not 1: {out.strip()[-400:]}")
    if c.upgrade_level is None:
        upgrade = ["upgrade", *upgrade_41_features()]
    else:
        upgrade = ["upgrade", "--feature", f"metadata.version={target}"]
    rc, out = c.dist.run("kafka-features.sh", [*broker, *upgrade], timeout_s=90)
    if rc != 0:
        return Result("fail", f"{' '.join(upgrade)}: exit {rc}: {out.strip()[-300:]}")
    for flag, addr in (broker, voter):
        wait_for(lambda f=flag, a=addr: _finalized_mv(c, f, a)[0] == target, 60, f"{flag} describes {target}")
    if c.format_level is None:
        return Result("pass", f"described via broker and controller: {DEFAULT_RELEASE} ({target}) and "
                              f"eligible.leader.replicas.version 1 at the format defaults; "
                              f"`{' '.join(upgrade)}` accepted")
    return Result("pass", f"described via broker and controller; upgraded metadata.version {c.format_level} "
                          f"→ {c.upgrade_level} ({start} → {target})")


#: (row, check title, function) of the KraftwireControllers cluster, in the order they run.
KRAFTWIRE_CONTROLLER_CHECKS: list[tuple[str, str, Callable[[Cluster], Result]]] = [
    ("(b) Kafka brokers on kraftwire controllers", "register, unfence", check_brokers_register),
    ("(b) Kafka brokers on kraftwire controllers", "create RF 2, idempotent produce, consume", check_produce_consume),
    ("(a) Kafka tools on kraftwire", "kafka-dump-log.sh", check_dump_log),
    ("(a) Kafka tools on kraftwire", "kafka-metadata-shell.sh", check_metadata_shell),
    ("(a) Kafka tools on kraftwire", "kafka-metadata-quorum.sh", check_metadata_quorum),
    ("(a) Kafka tools on kraftwire", "kafka-storage.sh info", check_storage_info),
    ("(a) Kafka tools on kraftwire", "kafka-features.sh describe, upgrade", check_features),
    ("(b) Kafka brokers on kraftwire controllers", "ISR shrink and expand (AlterPartition)", check_isr_shrink_expand),
    ("(b) Kafka brokers on kraftwire controllers", "leader election after kill -9", check_leader_election),
    ("(b) Kafka brokers on kraftwire controllers", "controlled shutdown", check_controlled_shutdown),
    ("(b) Kafka brokers on kraftwire controllers", "kill -9 of the active controller mid-traffic",
     check_controller_failover),
]


# -- (c) kraftwire brokers on Kafka controllers, (e) kraftwire reads Kafka's files ---------------------
KAFKA_CONTROLLER_FAST = {"metadata.log.max.record.bytes.between.snapshots": "4000",
                         "metadata.log.max.snapshot.interval.ms": "10000", "metadata.max.idle.interval.ms": "500"}


class KafkaControllers(Cluster):
    """3 Kafka controllers (ids 1-3) of ``dist`` and 1 kraftwire broker (id 4)."""

    def __init__(self, dist: KafkaDist, root: Path, voters: int = 3) -> None:
        super().__init__(dist, root)
        hosts = loopback_hosts(voters + 1)
        quorum = [(i, hosts[i - 1], CONTROLLER_PORT) for i in range(1, voters + 1)]
        for i in range(1, voters + 1):
            self.nodes[i] = KafkaNode(dist, self.root, i, "controller", hosts[i - 1], quorum, props=KAFKA_CONTROLLER_FAST)
        b = voters + 1
        self.nodes[b] = KraftwireNode(self.root, b, "broker", hosts[b - 1], quorum)

    def start(self, timeout_s: float = 150.0) -> None:
        for node in self.nodes.values():
            node.format(self.cluster_id, release_version=self.upgrade_level)
        start_all([self.nodes[i] for i in self.voters()], timeout_s)
        self.wait_leader(60)
        b = self.nodes[self.brokers()[0]]
        b.start()
        b.wait_started(60)


def check_kraftwire_broker_registers(c: Cluster) -> Result:
    """The kraftwire broker registers with the Kafka controllers, is unfenced, and Kafka's quorum tool lists it as an
    observer; clients bootstrapped at it see the cluster (cluster id, itself as the only broker)."""
    b = c.brokers()[0]
    md = wait_for(lambda: (m := c.admin().list_topics(timeout=10)) and sorted(m.brokers) == [b] and m, 60,
                  f"kraftwire broker {b} serving metadata")
    rc, out = c.dist.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", c.nodes[1].controller_address,
                                                      "describe", "--replication"], timeout_s=90)
    observers = [int(i) for i in re.findall(r"^\s*(\d+)\s.*\sObserver\s*$", out, re.M)]
    if rc != 0 or observers != [b]:
        return Result("fail", f"kafka-metadata-quorum --replication: exit {rc}, observers {observers}: {out[-300:]}")
    if md.cluster_id != c.cluster_id:
        return Result("fail", f"cluster id {md.cluster_id} served, the cluster is {c.cluster_id}")
    return Result("pass", f"broker {b} registered, unfenced, an observer of the Kafka quorum; Metadata: cluster "
                          f"{md.cluster_id}, controller {md.controller_id}, brokers {sorted(md.brokers)}")


def check_kraftwire_broker_forwards(c: Cluster) -> Result:
    """Admin writes sent to the kraftwire broker reach the Kafka controller in Envelopes: a topic is created and
    its config altered; the broker's metadata then shows both."""
    from confluent_kafka.admin import ConfigResource, NewTopic

    admin = c.admin()
    topic = "interop-via-kraftwire"
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    wait_for(lambda: len(c.partitions(topic)) == 2, 60, f"{topic} in the broker's metadata")
    res = ConfigResource("topic", topic, set_config={"retention.ms": "123456"})
    admin.alter_configs([res])[res].result(30)

    def retention() -> str | None:
        got = admin.describe_configs([ConfigResource("topic", topic)])
        entry = next(iter(got.values())).result(30).get("retention.ms")
        return entry.value if entry is not None else None
    wait_for(lambda: retention() == "123456", 60, "retention.ms=123456 described")
    return Result("pass", f"{topic} created (2 partitions) and retention.ms altered through the kraftwire broker")


def _kafka_segment_copy(c: Cluster) -> Path:
    return _copy_dir(c.nodes[c.wait_leader()["LeaderId"]].metadata_dir)


def check_kraftwire_dump_log_on_kafka(c: Cluster) -> Result:
    """``kraftwire dump-log`` decodes a Kafka controller's segment: the same records at the same offsets as Kafka's
    own dump-log prints."""
    copy = _kafka_segment_copy(c)
    try:
        seg = sorted(copy.glob("*.log"), key=lambda p: int(p.stem))[0]
        rc, out = kraftwire_cli("dump-log", "--cluster-metadata-decoder", "--files", str(seg))
        krc, kout = c.dist.run("kafka-dump-log.sh", ["--cluster-metadata-decoder", "--files", str(seg)], timeout_s=90)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    ours = re.findall(r"^\| offset: (\d+) .*$", out, re.M)
    theirs = re.findall(r"^\| offset: (\d+) .*$", kout, re.M)
    same_text = len(set(re.findall(r"^\| offset: .*$", out, re.M)) & set(re.findall(r"^\| offset: .*$", kout, re.M)))
    if rc != 0 or krc != 0 or not ours or ours != theirs:
        return Result("fail", f"kraftwire exit {rc} ({len(ours)} records), Kafka exit {krc} ({len(theirs)}): {out[-200:]}")
    return Result("pass", f"{len(ours)} records of Kafka's {seg.name}, offsets {ours[0]}..{ours[-1]}, as Kafka's "
                          f"dump-log ({same_text} record lines identical in text)")


def check_kraftwire_shell_on_kafka(c: Cluster) -> Result:
    """``kraftwire metadata-shell`` reads a Kafka controller's snapshot, a segment and the log directory."""
    leader = c.wait_leader()["LeaderId"]
    wait_for(lambda: sorted(c.nodes[leader].metadata_dir.glob("*.checkpoint")), 90, "a Kafka snapshot")
    copy = _copy_dir(c.nodes[leader].metadata_dir)
    details = []
    try:
        snap = sorted(copy.glob("*.checkpoint"))[-1]
        seg = sorted(copy.glob("*.log"), key=lambda p: int(p.stem))[0]
        for target in (snap, seg, copy):
            rc, out = kraftwire_cli("metadata-shell", "--snapshot", str(target), "ls", "/cluster/brokers")
            listed = sorted(int(x) for x in re.findall(r"^(\d+)$", out, re.M))
            if rc != 0 or listed != c.brokers():
                return Result("fail", f"{target.name}: exit {rc}, /cluster/brokers {listed}: {out.strip()[-300:]}")
            details.append(f"{target.name if target != copy else 'log directory'}: brokers {listed}")
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return Result("pass", "; ".join(details))


def check_kraftwire_live_tools_on_kafka(c: Cluster) -> Result:
    """``kraftwire metadata-shell`` and ``metadata-quorum`` with ``--bootstrap-controller`` at each Kafka controller
    (the leader and the followers): the shell reads the live log as a Raft observer (the leader's snapshot through
    FetchSnapshot, then the log above it) and lists the same brokers and topics as the broker's Metadata; the
    quorum tool names the same leader as Kafka's own."""
    truth = c.wait_leader()
    leader = truth["LeaderId"]
    wait_for(lambda: sorted(c.nodes[leader].metadata_dir.glob("*.checkpoint")), 90, "a Kafka snapshot")
    topics = sorted(t for t in c.admin().list_topics(timeout=10).topics if not t.startswith("__"))
    details = []
    for node in c.voters():
        addr = c.nodes[node].controller_address
        rc, out = kraftwire_cli("metadata-shell", "--bootstrap-controller", addr, "ls", "/cluster/brokers")
        listed = sorted(int(x) for x in re.findall(r"^(\d+)$", out, re.M))
        if rc != 0 or listed != c.brokers():
            return Result("fail", f"metadata-shell at {node}: exit {rc}, /cluster/brokers {listed}: {out.strip()[-300:]}")
        rc, out = kraftwire_cli("metadata-shell", "--bootstrap-controller", addr, "ls", "/topics")
        seen = sorted(t for t in out.split() if not t.startswith("__"))
        if rc != 0 or not set(topics) <= set(seen):
            return Result("fail", f"metadata-shell at {node}: exit {rc}, /topics {seen}, Metadata lists {topics}")
        rc, out = kraftwire_cli("metadata-shell", "--bootstrap-controller", addr, "cat", "/provenance/snapshot")
        if rc != 0 or out.strip() == "none":
            return Result("fail", f"metadata-shell at {node}: the leader's snapshot was not read: {out.strip()[-300:]}")
        status = describe_quorum(addr)
        if not isinstance(status, dict) or status.get("LeaderId") != leader:
            return Result("fail", f"metadata-quorum at {node}: {status}, Kafka's leader is {leader}")
        details.append(f"{node}{' (leader)' if node == leader else ''}")
    krc, kout = c.dist.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", c.nodes[c.voters()[-1]].controller_address,
                                                        "describe", "--status"], timeout_s=90)
    theirs = re.search(r"LeaderId:\s+(\d+)", kout)
    if krc != 0 or theirs is None or int(theirs.group(1)) != leader:
        return Result("fail", f"kafka-metadata-quorum: exit {krc}: {kout[-300:]}")
    return Result("pass", f"metadata-shell and metadata-quorum at controllers {', '.join(details)}: brokers "
                          f"{c.brokers()}, topics {topics}, snapshot read, leader {leader} as Kafka's tool says")


KAFKA_CONTROLLER_CHECKS: list[tuple[str, str, Callable[[Cluster], Result]]] = [
    ("(c) kraftwire broker on Kafka controllers", "register, unfence, serve metadata", check_kraftwire_broker_registers),
    ("(c) kraftwire broker on Kafka controllers", "forward admin writes", check_kraftwire_broker_forwards),
    ("(e) kraftwire reads Kafka's files", "kraftwire dump-log", check_kraftwire_dump_log_on_kafka),
    ("(e) kraftwire reads Kafka's files", "kraftwire metadata-shell", check_kraftwire_shell_on_kafka),
    ("(e) kraftwire reads Kafka's files", "kraftwire live tools at Kafka controllers", check_kraftwire_live_tools_on_kafka),
]


# -- (d) mixed quorums ---------------------------------------------------------------------------------
class MixedQuorum(Cluster):
    """kraftwire voters and Kafka voters of ``dist`` in one static quorum (default 1 + 2, Kafka last)."""

    def __init__(self, dist: KafkaDist, root: Path, kraftwire: int = 1, kafka: int = 2) -> None:
        super().__init__(dist, root)
        n = kraftwire + kafka
        hosts = loopback_hosts(n)
        quorum = [(i, hosts[i - 1], CONTROLLER_PORT) for i in range(1, n + 1)]
        for i in range(1, n + 1):
            if i <= kraftwire:
                # Kafka voters do not run the offsets quorum: groups stay on per-voter files (docs/groups.md)
                self.nodes[i] = KraftwireNode(self.root, i, "controller", hosts[i - 1], quorum,
                                              props={**KRAFTWIRE_FAST, "kraftwire.group.offsets.replication": "local"})
            else:
                self.nodes[i] = KafkaNode(dist, self.root, i, "controller", hosts[i - 1], quorum,
                                          props=KAFKA_CONTROLLER_FAST)

    def kind(self, node: int) -> str:
        return "kraftwire" if isinstance(self.nodes[node], KraftwireNode) else f"Kafka {self.dist.version}"

    def start(self, timeout_s: float = 150.0) -> None:
        for node in self.nodes.values():
            node.format(self.cluster_id, release_version=self.format_level)
        start_all(list(self.nodes.values()), timeout_s)
        self.wait_leader(90)


def _kafka_voter(c: Cluster) -> int:
    return next(i for i in c.voters() if isinstance(c.nodes[i], KafkaNode))


def check_mixed_quorum_forms(c: Cluster) -> Result:
    """A leader is elected, every voter agrees on it, and Kafka's quorum tool bootstrapped at the Kafka voter finds
    the leader whichever kind it is (KIP-919 registrations of the kraftwire voters)."""
    truth = c.wait_leader(90)
    k = _kafka_voter(c)
    deadline = time.monotonic() + 60
    while True:
        rc, out = c.dist.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", c.nodes[k].controller_address,
                                                          "describe", "--status"], timeout_s=90)
        # A Kafka controller refuses direct-to-controller requests until its image holds a metadata.version that
        # supports them (3.7+): right after an election it may not have replayed the bootstrap records yet.
        if rc == 0 or "current MetadataVersion" not in out or time.monotonic() > deadline:
            break
        time.sleep(1)
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", out, re.M))
    if rc != 0 or int(fields.get("LeaderId", -1)) != truth["LeaderId"]:
        return Result("fail", f"via Kafka voter {k}: exit {rc}: {out.strip()[-300:]}")
    views = {i: describe_quorum(c.nodes[i].controller_address) for i in c.voters() if isinstance(c.nodes[i], KraftwireNode)}
    bad = {i: v and v.get("LeaderId") for i, v in views.items() if not v or v.get("LeaderId") != truth["LeaderId"]}
    if bad:
        return Result("fail", f"voters disagree on the leader {truth['LeaderId']}: {bad}")
    assert isinstance(c, MixedQuorum)
    return Result("pass", f"leader {truth['LeaderId']} ({c.kind(truth['LeaderId'])}) in epoch {truth['LeaderEpoch']}, "
                          f"described through Kafka voter {k}")


def check_leadership_both_ways(c: Cluster, rounds: int = 10) -> Result:
    """Kill the leader (-9), let the others elect, restart it; until leadership has passed from kraftwire to Kafka
    and from Kafka to kraftwire. Killed, not stopped: a graceful EndQuorumEpoch names the preferred successor, which
    would then always win, while after a kill the followers wait out the fetch timeout and race."""
    assert isinstance(c, MixedQuorum)
    moves: list[tuple[int, int]] = []
    seen: set[tuple[str, str]] = set()
    for _ in range(rounds):
        before = c.wait_leader(60)
        old = before["LeaderId"]
        kafka = c.kind(_kafka_voter(c))
        if c.kind(old) != "kraftwire" and (kafka, "kraftwire") not in seen:
            _kill_kafka_leader_for_kraftwire(c, old)
        else:
            c.nodes[old].kill()
        after = wait_for(lambda old=old: (s := c.status()) and s["LeaderId"] not in (-1, old) and s, 90,
                         f"a new leader after stopping {old}")
        c.nodes[old].start()
        c.nodes[old].wait_started(120)
        moves.append((old, after["LeaderId"]))
        seen.add((c.kind(old), c.kind(after["LeaderId"])))
        if ("kraftwire", c.kind(_kafka_voter(c))) in seen and (c.kind(_kafka_voter(c)), "kraftwire") in seen:
            c.wait_leader(60)
            return Result("pass", "leader moves " + ", ".join(f"{a}→{b}" for a, b in moves)
                          + f" (kraftwire→Kafka and Kafka→kraftwire, epoch {after['LeaderEpoch']})")
    return Result("fail", f"after {rounds} leader changes {moves}, transitions seen {sorted(seen)}")


_PREVOTE_LOST = re.compile(r"Completed transition to (?:Follower|Unattached)State\(.*from ProspectiveState\(")


def _kill_kafka_leader_for_kraftwire(c: MixedQuorum, old: int) -> None:
    """Kill Kafka leader ``old`` so that a kraftwire voter can be the one elected after it.

    Kafka 3.x stands without pre-vote, so the first voter to time out wins, and kraftwire draws its fetch timeout
    below Kafka's fixed one: it is killed and nothing else. (Freezing the other Kafka voters, tried before, left
    kraftwire unable to learn a frozen voter's Vote version, so its pre-vote round could neither fall back to a
    direct candidacy nor end before that voter resumed and stood itself: 5 of 5 such kills lost once.)

    Kafka 4.x (KIP-996) makes the *last* voter to time out win: a follower that has fetched from its leader
    rejects every pre-vote until its own fetch timer fires, while a prospective (and a follower whose pre-vote
    round was lost, which starts a fresh follower state) grants them. The first to time out is rejected, then
    grants the second. kraftwire draws its fetch timeout below Kafka's fixed one, so it always came first and lost;
    freezing the Kafka follower only made that follower later still. So the kraftwire voters are frozen instead,
    until a surviving Kafka voter's own pre-vote round has been lost (its log says so); resumed, they stand first
    against a fresh follower state, as a Kafka 4.x voter that timed out second would."""
    pre_vote = not c.dist.version.startswith("3.")
    if not pre_vote:
        c.nodes[old].kill()
        return
    paused = [i for i in c.voters() if isinstance(c.nodes[i], KraftwireNode) and c.nodes[i].running()]
    watch = [c.nodes[i] for i in c.voters() if i != old and isinstance(c.nodes[i], KafkaNode) and c.nodes[i].running()]
    marks = {n.node_id: len(n.log_text()) for n in watch}
    c.nodes[old].kill()
    for i in paused:
        os.killpg(c.nodes[i].proc.pid, signal.SIGSTOP)
    try:
        if watch:
            try:
                wait_for(lambda: any(_PREVOTE_LOST.search(n.log_text()[marks[n.node_id]:]) for n in watch), 30,
                         "a surviving Kafka voter losing its pre-vote round", interval_s=0.1)
            except TimeoutError:
                pass  # this round may elect a Kafka voter; the caller tries again
    finally:
        for i in paused:
            os.killpg(c.nodes[i].proc.pid, signal.SIGCONT)


def _dump_records(c: Cluster, node: int) -> dict[int, str]:
    """offset → the record line Kafka's dump-log prints for it, over every segment of ``node``."""
    copy = _copy_dir(c.nodes[node].metadata_dir)
    try:
        segs = sorted(copy.glob("*.log"), key=lambda p: int(p.stem))
        rc, out = c.dist.run("kafka-dump-log.sh", ["--cluster-metadata-decoder", "--files", *map(str, segs)],
                             timeout_s=120)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    if rc != 0:
        raise AssertionError(f"kafka-dump-log.sh on node {node}: exit {rc}: {out[-300:]}")
    return {int(m.group(1)): m.group(0) for m in re.finditer(r"^\| offset: (\d+) .*$", out, re.M)}


def check_logs_identical(c: Cluster) -> Result:
    """Below the high watermark every voter's log holds the same records at the same offsets, as Kafka's dump-log
    decodes them (record timestamps and payloads included)."""
    # A voter restarted just before may still hold its own epoch's uncommitted suffix (or lack the newest
    # committed records) until its next Fetch: compare again for a bounded time. Diverged committed data
    # never converges, so it still fails.
    deadline = time.monotonic() + 60
    while True:
        hw = c.wait_leader(60)["HighWatermark"]
        logs = {i: _dump_records(c, i) for i in c.voters()}
        start = max(min(log) for log in logs.values())  # a node may have cleaned below its snapshot
        ref_id = c.voters()[0]
        ref = {o: ln for o, ln in logs[ref_id].items() if start <= o < hw}
        diff = next(((i, sorted(set(mine.items()) ^ set(ref.items()))[:1]) for i, log in logs.items()
                     if (mine := {o: ln for o, ln in log.items() if start <= o < hw}) != ref), None)
        if diff is None:
            return Result("pass", f"{len(ref)} records at offsets {start}..{hw - 1} identical on voters {c.voters()}")
        if time.monotonic() > deadline:
            return Result("fail", f"node {diff[0]} differs from node {ref_id} below HW {hw} (from {start}): "
                                  f"{str(diff[1])[:300]}")
        time.sleep(3)


MIXED_QUORUM_CHECKS: list[tuple[str, str, Callable[[Cluster], Result]]] = [
    ("(d) mixed quorum", "elect, describe via the Kafka voter", check_mixed_quorum_forms),
    ("(d) mixed quorum", "leadership both ways (kill -9)", check_leadership_both_ways),
    ("(d) mixed quorum", "logs identical (Kafka's dump-log)", check_logs_identical),
]


# -- the runner behind ``python -m compat --kafka`` -------------------------------------------------------
CLUSTERS: list[tuple[type[Cluster], list[tuple[str, str, Callable[[Cluster], Result]]]]] = [
    (KraftwireControllers, KRAFTWIRE_CONTROLLER_CHECKS),
    (KafkaControllers, KAFKA_CONTROLLER_CHECKS),
    (MixedQuorum, MIXED_QUORUM_CHECKS),
]
Cell = tuple[str, str, str, Result]   # (release, matrix row, check, result)


def run_release(dist: KafkaDist, root: Path, log: Callable[[str], None] = print) -> list[Cell]:
    """Every cluster and check of the matrix against one release; a failure never stops the others."""
    cells: list[Cell] = []
    for kind, checks in CLUSTERS:
        cluster = kind(dist, root / f"{kind.__name__}-{dist.version}")
        t0 = time.monotonic()
        try:
            cluster.start()
        except Exception as e:  # noqa: BLE001 - reported as the failure of every cell of this cluster
            cells += [(dist.version, row, title, Result("fail", f"cluster did not start: {e}"[:400]))
                      for row, title, _ in checks]
            cluster.stop()
            continue
        try:
            for row, title, fn in checks:
                try:
                    result = fn(cluster)
                except Exception as e:  # noqa: BLE001 - a check that raises fails with the reason
                    result = Result("fail", f"{type(e).__name__}: {e}"[:400])
                cells.append((dist.version, row, title, result))
                log(f"Kafka {dist.version} {row} / {title}: {result.status}")
        finally:
            cluster.stop()
        log(f"Kafka {dist.version} {kind.__name__}: {time.monotonic() - t0:.0f}s")
    return cells


def render_cells(cells: list[Cell]) -> str:
    lines = ["| Kafka | matrix row | check | result |", "| --- | --- | --- | --- |"]
    lines += [f"| {v} | {row} | {title} | {r.cell()} |" for v, row, title, r in cells]
    return "\n".join(lines)
