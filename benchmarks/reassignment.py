"""Partition reassignment: N partitions moved between two Kafka brokers, on kraftwire's controllers and on Kafka's.

    PYTHONPATH=. .venv/bin/python benchmarks/reassignment.py --partitions 1000 --trials 3
    PYTHONPATH=. .venv/bin/python benchmarks/reassignment.py --partitions 50 --trials 1 --kb 100   # smoke

Each system (``kraftwire``: 3 kraftwire controllers; ``kafka``: 3 Apache Kafka controllers of
``KRAFTWIRE_BENCH_KAFKA``, default 4.1.0, from ../shared/kafka) runs with Kafka's default quorum timeouts and
the same two Apache Kafka brokers (ids 4 and 5), so the difference is the controllers'. ``--partitions``
partitions (topics of ``--per-topic`` partitions, replication factor 1, all on broker 4) get ``--kb`` KiB of
1 KiB messages each. A trial sends one AlterPartitionReassignments (as ``kafka-reassign-partitions.sh
--execute`` does, through a broker) moving every partition to the other broker, unthrottled; trials
alternate the direction. The move is complete when both brokers' Metadata shows every partition's replicas
equal to the target and ListPartitionReassignments is empty. Measured per trial: the time from sending the
request to completion, and the CPU seconds of the active controller's process over the same span.

A move that makes no progress for ``--stall`` seconds, or is not done in ``--timeout`` seconds, is reported
with the state it is stuck in (ongoing reassignments, replicas / ISR of partitions not at the target) and the
system's remaining trials are skipped. Prints each trial, the medians and the ratios kraftwire / Kafka.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

os.environ.setdefault("KRAFTWIRE_BENCH_KAFKA", "4.1.0")

from _quorum import Quorum, build, cpu_seconds, jvm_or_python_pid, kafka_missing, wait_leader  # noqa: E402

from compat.kafka import BROKER_PORT  # noqa: E402
from kraftwire.net.client import Connection  # noqa: E402
from kraftwire.protocol.messages import alter_partition_reassignments_request as apr  # noqa: E402
from kraftwire.protocol.messages import create_topics_request as ct  # noqa: E402
from kraftwire.protocol.messages import list_partition_reassignments_request as lpr  # noqa: E402
from kraftwire.protocol.messages import metadata_request as md  # noqa: E402

SYSTEMS = ("kraftwire", "kafka")
A, B = 4, 5   # the two Kafka brokers (controllers are 1-3)
BROKER_PROPS = {"auto.create.topics.enable": "false", "num.replica.fetchers": "1"}
MESSAGE = 1024


@dataclass
class Trial:
    source: int
    target: int
    seconds: float | None = None   # None: not completed
    cpu_s: float = 0.0
    controller: int = -1
    stuck: str = ""


@dataclass
class Layout:
    topics: list[str]
    per_topic: int

    @property
    def partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t in self.topics for p in range(self.per_topic)]


@dataclass
class State:
    """Where a move stands, from both brokers' Metadata (and the controller's list when asked)."""

    at_target: int = 0
    total: int = 0
    off_target: list[str] = field(default_factory=list)
    ongoing: list[str] | None = None


# ------------------------------------------------------------------------------------------- requests
async def metadata(conn: Connection, topics: list[str]) -> dict[tuple[str, int], tuple[list[int], list[int], int]]:
    """(topic, partition) -> (replicas, isr, leader) as a broker's Metadata answers."""
    resp = await conn.request(md.MetadataRequest(topics=[md.MetadataRequestTopic(name=t) for t in topics],
                                                 allow_auto_topic_creation=False), None, 30.0)
    return {(t.name, p.partition_index): (list(p.replica_nodes), list(p.isr_nodes), p.leader_id)
            for t in resp.topics for p in t.partitions}


async def ongoing(conn: Connection) -> list[str]:
    """Every ongoing reassignment the controller lists, as ``topic-p replicas=.. adding=.. removing=..``."""
    resp = await conn.request(lpr.ListPartitionReassignmentsRequest(timeout_ms=30000, topics=None), None, 30.0)
    if resp.error_code:
        raise RuntimeError(f"ListPartitionReassignments refused: error {resp.error_code} {resp.error_message}")
    return [f"{t.name}-{p.partition_index} replicas={p.replicas} adding={p.adding_replicas} "
            f"removing={p.removing_replicas}" for t in resp.topics for p in t.partitions]


async def create_topics(conn: Connection, layout: Layout, broker: int) -> None:
    """Every topic with all its partitions on ``broker``, replication factor 1."""
    batch = 50
    for k in range(0, len(layout.topics), batch):
        topics = [ct.CreatableTopic(name=t, num_partitions=-1, replication_factor=-1, assignments=[
            ct.CreatableReplicaAssignment(partition_index=p, broker_ids=[broker]) for p in range(layout.per_topic)])
            for t in layout.topics[k:k + batch]]
        resp = await conn.request(ct.CreateTopicsRequest(topics=topics, timeout_ms=60000), None, 90.0)
        bad = [(t.name, t.error_code, t.error_message) for t in resp.topics if t.error_code not in (0, 36)]
        if bad:
            raise RuntimeError(f"CreateTopics refused: {bad[:3]}")


async def state_of(conns: list[Connection], layout: Layout, target: int) -> State:
    seen = [await metadata(c, layout.topics) for c in conns]
    st = State(total=len(layout.partitions))
    for tp in layout.partitions:
        views = [s.get(tp) for s in seen]
        if all(v is not None and v[0] == [target] for v in views):
            st.at_target += 1
        elif len(st.off_target) < 5:
            v = views[0]
            st.off_target.append(f"{tp[0]}-{tp[1]} " + ("absent" if v is None else
                                                        f"replicas={v[0]} isr={v[1]} leader={v[2]}"))
    return st


# ------------------------------------------------------------------------------------------- one system
def load(q: Quorum, layout: Layout, kb: int) -> float:
    """Create the topics on broker A and write ``kb`` KiB into each partition; seconds taken."""
    from confluent_kafka import Producer

    t0 = time.monotonic()

    async def create() -> None:
        async with anyio.create_task_group() as tg:
            conns = [Connection(tg, b.host, BROKER_PORT, client_id="reassign-setup") for b in q.brokers]
            await create_topics(conns[0], layout, A)
            deadline = time.monotonic() + 120
            while True:
                seen = await metadata(conns[0], layout.topics)
                if all(seen.get(tp, ([], [], -1))[2] == A for tp in layout.partitions):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError("topics not led by broker 4 within 120 s")
                await anyio.sleep(0.2)
            tg.cancel_scope.cancel()

    anyio.run(create)
    value = os.urandom(MESSAGE)
    errors: list[str] = []
    prod = Producer({"bootstrap.servers": q.brokers[0].bootstrap, "acks": "1", "linger.ms": 20,
                     "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})
    for t, p in layout.partitions:
        for _ in range(kb):
            while True:
                try:
                    prod.produce(t, value, partition=p,
                                 on_delivery=lambda err, _m: err is not None and errors.append(str(err)))
                    break
                except BufferError:
                    prod.poll(0.1)
        prod.poll(0)
    if prod.flush(300) or errors:
        raise RuntimeError(f"producing the data failed: {errors[:3] or 'messages still queued after 300 s'}")
    return time.monotonic() - t0


async def move(q: Quorum, layout: Layout, trial: Trial, pid: int, stall_s: float, timeout_s: float) -> None:
    """One trial: send the reassignment, poll until complete / stalled / timed out (CPU of process ``pid``)."""
    async with anyio.create_task_group() as tg:
        conns = [Connection(tg, b.host, BROKER_PORT, client_id="reassign") for b in q.brokers]
        req = apr.AlterPartitionReassignmentsRequest(timeout_ms=60000, topics=[apr.ReassignableTopic(
            name=t, partitions=[apr.ReassignablePartition(partition_index=p, replicas=[trial.target])
                                for p in range(layout.per_topic)]) for t in layout.topics])
        cpu0 = cpu_seconds(pid)
        t0 = time.monotonic()
        resp = await conns[1].request(req, None, 90.0)
        if resp.error_code:
            raise RuntimeError(f"AlterPartitionReassignments refused: {resp.error_code} {resp.error_message}")
        bad = [f"{t.name}-{p.partition_index}: {p.error_code} {p.error_message}"
               for t in resp.responses for p in t.partitions if p.error_code]
        if bad:
            raise RuntimeError(f"AlterPartitionReassignments refused {len(bad)} partitions: {bad[:3]}")
        best, best_at = -1, t0
        while True:
            st = await state_of(conns, layout, trial.target)
            now = time.monotonic()
            if st.at_target == st.total and not await ongoing(conns[1]):
                trial.seconds = time.monotonic() - t0
                trial.cpu_s = cpu_seconds(pid) - cpu0
                break
            if st.at_target > best:
                best, best_at = st.at_target, now
            why = (f"no progress for {stall_s:g} s" if now - best_at > stall_s else
                   f"not done after {timeout_s:g} s" if now - t0 > timeout_s else "")
            if why:
                trial.cpu_s = cpu_seconds(pid) - cpu0
                listed = await ongoing(conns[1])
                trial.stuck = (f"{why}: {st.at_target}/{st.total} partitions at the target on both brokers; "
                               f"{len(listed)} reassignments listed {listed[:3]}; not at target: {st.off_target}")
                break
            await anyio.sleep(0.1)
        tg.cancel_scope.cancel()


def run_system(system: str, root: Path, layout: Layout, kb: int, trials: int, stall_s: float,
               timeout_s: float) -> list[Trial]:
    q = build(system, root, controllers=3, brokers=2, props=BROKER_PROPS, broker_system="kafka")
    done: list[Trial] = []
    try:
        for n in q.controllers:
            n.start()
        for n in q.controllers:
            n.wait_started(180)
        wait_leader(q, 120)
        for n in q.brokers:
            n.start()
        for n in q.brokers:
            n.wait_started(180)
        secs = load(q, layout, kb)
        print(f"   {system}: {len(layout.partitions)} partitions x {kb} KiB written in {secs:.1f} s", flush=True)
        for k in range(trials):
            trial = Trial(A, B) if k % 2 == 0 else Trial(B, A)
            time.sleep(2.0)   # the previous move's deletions and ISR updates settle
            trial.controller, _ = wait_leader(q, 60)
            pid = jvm_or_python_pid(next(c for c in q.controllers if c.node_id == trial.controller))
            anyio.run(move, q, layout, trial, pid, stall_s, timeout_s)
            done.append(trial)
            if trial.seconds is None:
                print(f"   {system} trial {k + 1}: broker {trial.source} -> {trial.target} STUCK (controller "
                      f"{trial.controller}, CPU {trial.cpu_s:.2f} s): {trial.stuck}", flush=True)
                break
            print(f"   {system} trial {k + 1}: broker {trial.source} -> {trial.target} in {trial.seconds:.2f} s, "
                  f"active controller {trial.controller} CPU {trial.cpu_s:.2f} s "
                  f"(load average {os.getloadavg()[0]:.2f})", flush=True)
    finally:
        for n in q.brokers + q.controllers:
            try:
                n.stop(timeout_s=20.0)
            except Exception:  # noqa: BLE001 - kill by PID instead
                n.kill()
    return done


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--per-topic", type=int, default=10, help="partitions per topic")
    ap.add_argument("--kb", type=int, default=200, help="KiB written into each partition")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--stall", type=float, default=60.0, help="seconds without progress before giving up")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before a move is given up")
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    missing = kafka_missing()
    if missing:
        raise SystemExit(f"cannot run Kafka here (the brokers are Kafka's): {missing}")
    n_topics = max(1, -(-args.partitions // args.per_topic))
    layout = Layout([f"move-{i:04d}" for i in range(n_topics)], min(args.per_topic, args.partitions))
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}: load average {os.getloadavg()[0]:.2f}; "
          f"{len(layout.partitions)} partitions ({n_topics} topics) x {args.kb} KiB, {args.trials} trials; "
          f"Kafka {os.environ['KRAFTWIRE_BENCH_KAFKA']} brokers", flush=True)
    results: dict[str, list[Trial]] = {}
    with tempfile.TemporaryDirectory(prefix="kw-reassign-") as tmp:
        for system in args.systems:
            print(f"== {system} controllers", flush=True)
            results[system] = run_system(system, Path(tmp) / system, layout, args.kb, args.trials, args.stall,
                                         args.timeout)
    medians: dict[str, tuple[float, float]] = {}
    for system, trials in results.items():
        ok = [t for t in trials if t.seconds is not None]
        if len(ok) < len(trials) or not ok:
            print(f"{system}: {len(trials) - len(ok)} move(s) did not complete; no median")
            continue
        medians[system] = (statistics.median(t.seconds for t in ok), statistics.median(t.cpu_s for t in ok))
        print(f"{system}: median {medians[system][0]:.2f} s, active controller CPU {medians[system][1]:.2f} s "
              f"(n={len(ok)})")
    if "kraftwire" in medians and "kafka" in medians:
        (kt, kc), (bt, bc) = medians["kraftwire"], medians["kafka"]
        print(f"kraftwire / kafka: time {kt / bt:.2f}  controller CPU {kc / bc if bc else float('nan'):.2f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.json:
        print(json.dumps({s: [t.__dict__ for t in ts] for s, ts in results.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
