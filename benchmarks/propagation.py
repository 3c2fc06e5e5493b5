"""Metadata propagation: a change acknowledged -> visible on every broker, kraftwire side by side with Kafka.

    PYTHONPATH=. .venv/bin/python benchmarks/propagation.py --changes 500 --observers 1000
    PYTHONPATH=. .venv/bin/python benchmarks/propagation.py --setups kraftwire kafka-on-kraftwire kafka

Setups (each a 3-controller quorum with Kafka's default quorum timeouts and 3 real brokers, StandardAuthorizer
semantics with ``super.users=User:ANONYMOUS``):

- ``kraftwire``: kraftwire controllers and kraftwire brokers;
- ``kafka-on-kraftwire``: kraftwire controllers and Apache Kafka brokers (the same brokers as ``kafka``, so
  the difference is the controllers');
- ``kafka``: Apache Kafka controllers and brokers (``KRAFTWIRE_BENCH_KAFKA``, default 4.1.0).

Beside the real brokers, ``--observers`` simulated observers (replica ids from 10,000) long-poll the
leader's log with Raft Fetch requests as a broker does (following leader changes and snapshots), so the
leader serves as many fetchers as a large cluster has brokers.

Changes are made one at a time through broker 1's client listener (forwarded to the active controller),
cycling through three kinds: CreateTopics (visible when the broker's Metadata lists the topic with a
leader), IncrementalAlterConfigs of a topic's ``retention.ms`` (visible in the broker's DescribeConfigs)
and CreateAcls (visible in the broker's DescribeAcls, which brokers answer from the ACLs they apply).
For each change the clock starts at the acknowledgement; every broker is polled until the change shows,
and the change's propagation time is the slowest broker's (a broker that already shows it counts 0).
Prints p50 / p99 / max per kind and overall, and the ratios kraftwire / Kafka. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

os.environ.setdefault("KRAFTWIRE_BENCH_KAFKA", "4.1.0")

from _quorum import KAFKA_DEFAULTS, kafka_dist, kafka_missing  # noqa: E402

from compat.kafka import (  # noqa: E402
    BROKER_PORT,
    CONTROLLER_PORT,
    KafkaNode,
    KraftwireNode,
    loopback_hosts,
)
from kraftwire.net.client import Connection  # noqa: E402
from kraftwire.protocol.framing import decode_response, encode_request  # noqa: E402
from kraftwire.protocol.messages import create_acls_request as cacl  # noqa: E402
from kraftwire.protocol.messages import create_topics_request as ct  # noqa: E402
from kraftwire.protocol.messages import describe_acls_request as dacl  # noqa: E402
from kraftwire.protocol.messages import describe_configs_request as dc  # noqa: E402
from kraftwire.protocol.messages import incremental_alter_configs_request as iac  # noqa: E402
from kraftwire.protocol.messages import metadata_request as md  # noqa: E402
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest  # noqa: E402
from kraftwire.raft import messages as rm  # noqa: E402
from kraftwire.storage.meta_properties import random_uuid  # noqa: E402

SECURITY = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS"}
KINDS = ("create", "config", "acl")
_SIZE = struct.Struct(">i")
OBSERVER_BASE = 10_000


# ------------------------------------------------------------------------------------------- the cluster
def build(setup: str, root: Path) -> tuple[list, list, str]:
    """Format (not start) 3 controllers and 3 brokers of ``setup``: (controllers, brokers, cluster id)."""
    hosts = loopback_hosts(6, (CONTROLLER_PORT, BROKER_PORT))
    voters = [(i + 1, h, CONTROLLER_PORT) for i, h in enumerate(hosts[:3])]
    props = dict(KAFKA_DEFAULTS, **SECURITY)
    dist = kafka_dist() if setup != "kraftwire" else None

    def kafka(i: int, roles: str, h: str) -> KafkaNode:
        return KafkaNode(dist, root, i, roles, h, voters, props=props)

    def kraftwire(i: int, roles: str, h: str) -> KraftwireNode:
        return KraftwireNode(root, i, roles, h, voters, props=props)

    ctl_make = kafka if setup == "kafka" else kraftwire
    brk_make = kraftwire if setup == "kraftwire" else kafka
    controllers = [ctl_make(i, "controller", h) for i, h, _ in voters]
    brokers = [brk_make(4 + k, "broker", hosts[3 + k]) for k in range(3)]
    cluster_id = random_uuid()
    # A Kafka 4.1 broker on kraftwire controllers: format both at a level both know (4.1's default).
    for node in controllers + brokers:
        node.format(cluster_id)
    return controllers, brokers, cluster_id


# ------------------------------------------------------------------------------------- simulated observers
class _Fetcher(asyncio.Protocol):
    """One simulated broker following the metadata log as a Raft observer over its own connection."""

    def __init__(self, bench: Observers, replica_id: int, node: int) -> None:
        self.bench = bench
        self.replica_id = replica_id
        self.node = node
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.corr = 0
        self.offset = 0
        self.epoch = 0
        self.leader_epoch = 0   # as a broker starting from an empty quorum-state: at least its last epoch
        self.closed = asyncio.Event()

    def connection_made(self, transport) -> None:  # noqa: ANN001
        self.transport = transport
        self.send()

    def send(self) -> None:
        b = self.bench
        msg = rm.FetchRequest(cluster_id=b.cluster_id, replica_id=self.replica_id, max_wait_ms=500,
                              fetch_offset=self.offset, last_fetched_epoch=self.epoch,
                              current_leader_epoch=self.leader_epoch, max_bytes=1 << 20)
        self.corr += 1
        body = b.wire.request_to_wire(msg, b.version)
        assert self.transport is not None
        self.transport.write(encode_request(body, b.version, self.corr, "observer"))

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while len(self.buf) >= 4:
            (size,) = _SIZE.unpack_from(self.buf, 0)
            if len(self.buf) < 4 + size:
                return
            frame = bytes(self.buf[4:4 + size])
            del self.buf[:4 + size]
            self.answer(frame)

    def answer(self, frame: bytes) -> None:
        b = self.bench
        _, body = decode_response(frame, 1, b.version)
        resp = b.wire.response_from_wire(1, body)
        b.fetches += 1
        part = resp.partition
        if resp.error_code or part is None:
            b.error(resp.error_code)
            self.transport.close()
            return
        if part.current_leader.leader_epoch > self.leader_epoch:
            self.leader_epoch = part.current_leader.leader_epoch
        if part.error_code:   # NOT_LEADER / FENCED: follow the leader it names
            b.error(part.error_code)
            leader = part.current_leader.leader_id
            if leader == self.node:
                self.send()
                return
            if leader > 0:
                b.leader = leader
            self.transport.close()
            return
        if part.snapshot_id is not None:   # behind the log start: skip to the snapshot's end
            self.offset, self.epoch = part.snapshot_id.end_offset, part.snapshot_id.epoch
        elif part.diverging_epoch is not None:
            self.offset = part.diverging_epoch.end_offset
            self.epoch = part.diverging_epoch.epoch
        for batch in part.batches:
            self.offset, self.epoch = batch.next_offset, batch.leader_epoch
        self.send()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


class Observers:
    """``n`` simulated observers fetching from the leader, reconnecting to the current leader when told."""

    def __init__(self, n: int, cluster_id: str, controllers: list[tuple[int, str]], version: int) -> None:
        from kraftwire.node import wire

        self.wire = wire
        self.n = n
        self.cluster_id = cluster_id
        self.addrs = dict(controllers)
        self.version = version
        self.leader = controllers[0][0]
        self.fetches = 0
        self.errors: dict[int, int] = {}
        self.stopping = False

    async def run_one(self, replica_id: int) -> None:
        loop = asyncio.get_running_loop()
        state = None
        while not self.stopping:
            node = self.leader
            try:
                _, proto = await loop.create_connection(lambda node=node: _Fetcher(self, replica_id, node), self.addrs[node],
                                                        CONTROLLER_PORT)
            except OSError:
                await asyncio.sleep(0.2)
                continue
            if state is not None:
                proto.offset, proto.epoch, proto.leader_epoch = state
            await proto.closed.wait()
            state = (proto.offset, proto.epoch, proto.leader_epoch)
            await asyncio.sleep(0.05)

    def error(self, code: int) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def stop(self) -> None:
        self.stopping = True


# ------------------------------------------------------------------------------------------- the changes
async def _request(conn: Connection, body, timeout_s: float = 10.0):  # noqa: ANN001, ANN202
    return await conn.request(body, None, timeout_s)


def change(kind: str, i: int):  # noqa: ANN201
    """The request making change ``i`` of ``kind``."""
    if kind == "create":
        return ct.CreateTopicsRequest(topics=[ct.CreatableTopic(name=f"prop-{i}", num_partitions=1,
                                                                replication_factor=1)], timeout_ms=10000)
    if kind == "config":
        return iac.IncrementalAlterConfigsRequest(resources=[iac.AlterConfigsResource(
            resource_type=2, resource_name="prop-0", configs=[iac.AlterableConfig(
                name="retention.ms", config_operation=0, value=str(86_400_000 + i))])])
    return cacl.CreateAclsRequest(creations=[cacl.AclCreation(
        resource_type=2, resource_name=f"prop-acl-{i}", resource_pattern_type=3, principal=f"User:u{i}",
        host="*", operation=3, permission_type=3)])


def acked(kind: str, resp) -> int:  # noqa: ANN001
    """The change's error code in its answer (0: acknowledged)."""
    if kind == "create":
        return resp.topics[0].error_code
    if kind == "config":
        return resp.responses[0].error_code
    return resp.results[0].error_code


def query(kind: str, i: int):  # noqa: ANN201
    if kind == "create":
        return md.MetadataRequest(topics=[md.MetadataRequestTopic(name=f"prop-{i}")],
                                  allow_auto_topic_creation=False)
    if kind == "config":
        return dc.DescribeConfigsRequest(resources=[dc.DescribeConfigsResource(
            resource_type=2, resource_name="prop-0", configuration_keys=["retention.ms"])])
    return dacl.DescribeAclsRequest(resource_type_filter=2, resource_name_filter=f"prop-acl-{i}",
                                    pattern_type_filter=3, principal_filter=f"User:u{i}", host_filter=None,
                                    operation=1, permission_type=1)


def visible(kind: str, i: int, resp) -> bool:  # noqa: ANN001
    if kind == "create":
        t = resp.topics[0]
        return t.error_code == 0 and bool(t.partitions) and t.partitions[0].leader_id >= 0
    if kind == "config":
        r = resp.results[0]
        return r.error_code == 0 and any(c.name == "retention.ms" and c.value == str(86_400_000 + i)
                                         for c in r.configs)
    return resp.error_code == 0 and len(resp.resources) == 1


async def wait_visible(conn: Connection, kind: str, i: int, deadline: float) -> float:
    """Poll one broker until change ``i`` shows; the monotonic time it was first seen."""
    while True:
        resp = await _request(conn, query(kind, i))
        now = time.monotonic()
        if visible(kind, i, resp):
            return now
        if now > deadline:
            raise TimeoutError(f"change {i} ({kind}) not visible on a broker after 30 s")
        await anyio.sleep(0.001)


async def drive(setup: str, controllers: list, brokers: list, cluster_id: str, changes: int,
                observers: int) -> dict:
    hosts = [(n.node_id, n.host) for n in controllers]
    async with anyio.create_task_group() as tg:
        leader_conn = Connection(tg, controllers[0].host, CONTROLLER_PORT, client_id="propagation")
        # The Fetch version both sides speak (Kafka 4.1: up to 18 on a controller).
        versions = await leader_conn.request(ApiVersionsRequest(client_software_name="propagation",
                                                                client_software_version="1"), 3, 10.0)
        fetch_hi = next(k.max_version for k in versions.api_keys if k.api_key == 1)
        await leader_conn.close()
        obs = Observers(observers, cluster_id, hosts, min(fetch_hi, 17))
        for k in range(observers):
            tg.start_soon(obs.run_one, OBSERVER_BASE + k)
        admin = Connection(tg, brokers[0].host, BROKER_PORT, client_id="propagation-admin")
        pollers = [Connection(tg, b.host, BROKER_PORT, client_id=f"propagation-poll-{b.node_id}") for b in brokers]
        # prop-0 exists before the measured changes (config changes alter it).
        resp = await _request(admin, change("create", 0))
        if acked("create", resp) not in (0, 36):
            raise RuntimeError(f"{setup}: creating prop-0 failed: {resp.topics[0].error_code}")
        for p in pollers:
            await wait_visible(p, "create", 0, time.monotonic() + 60)
        lat: dict[str, list[float]] = {k: [] for k in KINDS}
        early = 0
        await anyio.sleep(2.0)   # observers connected and caught up
        fetches0, errors0 = obs.fetches, dict(obs.errors)
        t_start = time.monotonic()
        for i in range(1, changes + 1):
            kind = KINDS[i % 3]
            resp = await _request(admin, change(kind, i))
            t_ack = time.monotonic()
            code = acked(kind, resp)
            if code:
                raise RuntimeError(f"{setup}: change {i} ({kind}) refused with error {code}")
            seen: list[float] = []

            async def poll(conn: Connection, i: int = i, kind: str = kind, seen: list[float] = seen,
                           deadline: float = t_ack + 30) -> None:
                seen.append(await wait_visible(conn, kind, i, deadline))

            async with anyio.create_task_group() as polls:
                for p in pollers:
                    polls.start_soon(poll, p)
            slowest = max(seen) - t_ack
            if slowest <= 0.002:
                early += 1
            lat[kind].append(max(0.0, slowest) * 1000)
        elapsed = time.monotonic() - t_start
        obs.stop()
        tg.cancel_scope.cancel()
    every = [x for k in KINDS for x in lat[k]]
    return {"lat": lat, "all": every, "first_poll": early, "observer_fetches": obs.fetches - fetches0,
            "observer_errors": {c: n - errors0.get(c, 0) for c, n in obs.errors.items() if n > errors0.get(c, 0)}, "elapsed_s": elapsed}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def run_setup(setup: str, root: Path, changes: int, observers: int) -> dict:
    controllers, brokers, cluster_id = build(setup, root)
    nodes = controllers + brokers
    try:
        for n in nodes:
            n.start()
        for n in nodes:
            n.wait_started(180)
        return anyio.run(drive, setup, controllers, brokers, cluster_id, changes, observers)
    finally:
        for n in nodes:
            try:
                n.stop(timeout_s=10.0)
            except Exception:  # noqa: BLE001 - kill by PID instead
                n.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--changes", type=int, default=500)
    ap.add_argument("--observers", type=int, default=1000)
    ap.add_argument("--setups", nargs="+", default=["kraftwire", "kafka-on-kraftwire", "kafka"],
                    choices=["kraftwire", "kafka-on-kraftwire", "kafka"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if any(s != "kraftwire" for s in args.setups):
        missing = kafka_missing()
        if missing:
            raise SystemExit(f"cannot run Kafka here: {missing}")
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}: load average {os.getloadavg()[0]:.2f}; "
          f"{args.changes} changes, {args.observers} observers; Kafka {os.environ['KRAFTWIRE_BENCH_KAFKA']}",
          flush=True)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="kw-prop-") as tmp:
        for setup in args.setups:
            r = run_setup(setup, Path(tmp) / setup, args.changes, args.observers)
            results[setup] = r
            print(f"== {setup} (load average {os.getloadavg()[0]:.2f}): {args.changes} changes in "
                  f"{r['elapsed_s']:.1f} s, already visible at the first poll {r['first_poll']}, observer "
                  f"fetches {r['observer_fetches']:,} (errors {r['observer_errors']})", flush=True)
            for k in (*KINDS, "all"):
                xs = r["all"] if k == "all" else r["lat"][k]
                print(f"   {k:<7} p50 {statistics.median(xs):7.1f} ms  p99 {pct(xs, 0.99):7.1f} ms  "
                      f"max {max(xs):7.1f} ms  (n={len(xs)})", flush=True)
    if "kafka" in results:
        base = results["kafka"]["all"]
        for setup in results:
            if setup != "kafka":
                xs = results[setup]["all"]
                print(f"{setup} / kafka: p50 {statistics.median(xs) / statistics.median(base):.2f}  "
                      f"p99 {pct(xs, 0.99) / pct(base, 0.99):.2f}  max {max(xs) / max(base):.2f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        print(json.dumps({s: {k: v for k, v in r.items() if k != "lat"} for s, r in results.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
