"""Issue #15's goals, kraftwire and Apache Kafka measured side by side in one run; prints one table.

    .venv/bin/python benchmarks/side_by_side.py --out /tmp/perf.json          # everything (~25 min)
    .venv/bin/python benchmarks/side_by_side.py --only startup failover       # some sections

Sections (each runs both systems on this box, interleaved where the figure is a distribution):

* ``bounds``    - what the hardware allows: fsync of a 4 KiB append on the data disk, loopback TCP
                  bandwidth with send() and with os.sendfile();
* ``startup``   - ``kraftwire --help``/``--version`` against Kafka's tools (benchmarks/startup.py), and 3
                  fresh voters from launch to an elected leader (Kafka's default timeouts), both systems;
* ``commit``    - CreateTopics (1 partition, RF 1) through a broker of a 3-controller quorum: one client
                  serially (p50/p99, CPU of the active controller per create), then 4 clients (creates/s);
* ``failover``  - kill -9 of the active controller of 3, until both survivors report the same new leader;
                  trials alternate between the systems; a split vote = the new epoch is more than old + 1;
                  each trial prints when a survivor stood and when the new leader was elected (from the
                  nodes' QuorumState log lines, the same in both systems);
* ``fetch``     - the same 1M records served by a kraftwire voter (``__cluster_metadata``, benchmarks/consume.py's
                  log) and by a Kafka broker (a topic holding the same record values), both up at once and
                  read in interleaved trials: a raw Fetch reader (a blocking socket, Fetch v12, 1 MiB per
                  partition as a consumer's default; with the serving process's CPU per MB and the
                  reader's own ceiling on the same bytes in memory) and confluent-kafka (with the
                  client's CPU per record);
* ``image``     - benchmarks/image_load.py: a 1M-partition snapshot / log -> image, this tree against the
                  tree the goal's "today" figures came from;
* ``heartbeats``- benchmarks/heartbeats.py, both systems;
* ``spark``     - benchmarks/analytics.py reads, Spark local[2] against one Python process.

Ratios are kraftwire / Kafka for times (lower is better) and kraftwire / Kafka for rates (higher is
better); the target column is the issue's. Kafka is Apache Kafka ``KRAFTWIRE_BENCH_KAFKA`` (3.9.0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _quorum as qm  # noqa: E402

from kraftwire.net.client import Connection  # noqa: E402
from kraftwire.protocol.messages.create_topics_request import CreatableTopic, CreateTopicsRequest  # noqa: E402

HERE = Path(__file__).resolve().parent
_HEAD = struct.Struct(">qi")     # a v2 batch: base offset, batch length
_DELTA = struct.Struct(">i")     # last offset delta, at byte 23 of the batch
_LEN = struct.Struct(">i")       # batch length, at byte 8
ROWS: list[dict] = []


def row(goal: str, what: str, ours: float | None, peer: float | None, unit: str, *, higher_better: bool = False,
        target: str = "", met: bool | None = None, note: str = "") -> None:
    ratio = None if ours is None or peer in (None, 0) else ours / peer
    r = {"goal": goal, "what": what, "kraftwire": ours, "kafka": peer, "unit": unit, "ratio": ratio,
         "higher_better": higher_better, "target": target, "met": met, "note": note}
    ROWS.append(r)
    fmt = lambda v: "-" if v is None else (f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}")  # noqa: E731
    print(f"  [{goal}] {what}: kraftwire {fmt(ours)} {unit} | kafka {fmt(peer)} {unit} | ratio "
          f"{'-' if ratio is None else f'{ratio:.2f}'} | target {target or '-'} | "
          f"{'met' if met else 'NOT met' if met is False else ''} {note}", flush=True)


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


# -- bounds ----------------------------------------------------------------------------------------
def bench_bounds(root: Path) -> dict:
    """fsync of 4 KiB appends on this disk; loopback TCP with send() and os.sendfile()."""
    path = root / "fsync-probe"
    lat = []
    with open(path, "ab") as f:
        block = b"x" * 4096
        for _ in range(200):
            t0 = time.perf_counter()
            f.write(block)
            f.flush()
            os.fsync(f.fileno())
            lat.append(time.perf_counter() - t0)
    path.unlink()
    out = {"fsync_p50_ms": statistics.median(lat) * 1e3, "fsync_p99_ms": pct(lat, 0.99) * 1e3}
    data = root / "sendfile-probe"
    data.write_bytes(os.urandom(1 << 20) * 64)
    for mode in ("send", "sendfile"):
        out[f"loopback_{mode}_MBps"] = _loopback(data, mode, 2.0)
    data.unlink()
    print(f"  bounds: fsync 4 KiB p50 {out['fsync_p50_ms']:.2f} ms p99 {out['fsync_p99_ms']:.2f} ms; loopback "
          f"send() {out['loopback_send_MBps']:,.0f} MB/s, sendfile() {out['loopback_sendfile_MBps']:,.0f} MB/s",
          flush=True)
    return out


def _loopback(data: Path, mode: str, seconds: float) -> float:
    srv = socket.create_server(("127.0.0.1", 0))
    received = [0]

    def sink() -> None:
        conn, _ = srv.accept()
        buf = bytearray(1 << 20)
        with conn:
            while n := conn.recv_into(buf):
                received[0] += n

    t = threading.Thread(target=sink, daemon=True)
    t.start()
    cli = socket.create_connection(srv.getsockname())
    size = data.stat().st_size
    chunk = data.read_bytes()[: 1 << 20]
    t0 = time.perf_counter()
    sent = 0
    with open(data, "rb") as f:
        while time.perf_counter() - t0 < seconds:
            if mode == "send":
                cli.sendall(chunk)
                sent += len(chunk)
            else:
                off = sent % size
                sent += os.sendfile(cli.fileno(), f.fileno(), off, min(1 << 20, size - off))
    cli.close()
    t.join(10)
    srv.close()
    return received[0] / (time.perf_counter() - t0) / 1e6


# -- where the time goes: both systems log Kafka's QuorumState lines ("[time] INFO [RaftManager id=N]
# Completed transition to LeaderState(epoch=E, ...) from ...") in the same layout and clock
_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] ")
# (Kafka 4.1 names the leader's state "Leader(localVoterNode=..., epoch=E, ...)")
_TRANSITION = re.compile(r"\[RaftManager id=(\d+)\] Completed transition to ([A-Z][a-z]+)(?:State)?\(.*?\bepoch=(\d+)")


def raft_transitions(node) -> list[tuple[float, int, str, int]]:  # noqa: ANN001 - KafkaNode or KraftwireNode
    """(wall time, node id, state, epoch) of every metadata-quorum transition the node logged."""
    out = []
    for line in node.log_text().splitlines():
        t, m = _LOG_TIME.match(line), _TRANSITION.search(line)
        if t and m:
            wall = time.mktime(time.strptime(t.group(1), "%Y-%m-%d %H:%M:%S")) + int(t.group(2)) / 1000
            out.append((wall, int(m.group(1)), m.group(2), int(m.group(3))))
    return out


def first_leader_at(nodes: list, after: float, epoch_above: int = 0) -> float | None:
    """Wall time of the first LeaderState transition after ``after`` in an epoch above ``epoch_above``."""
    times = [t for n in nodes for t, _, state, epoch in raft_transitions(n)
             if state == "Leader" and epoch > epoch_above and t >= after - 0.001]
    return min(times) if times else None


def detected_at(nodes: list, after: float) -> float | None:
    """Wall time a survivor first left FollowerState after ``after`` (its fetch timer fired, or it knew
    its leader was gone)."""
    times = [t for n in nodes for t, _, state, _ in raft_transitions(n)
             if state in ("Prospective", "Candidate", "Unattached") and t >= after - 0.001]
    return min(times) if times else None


def _ms(v: float | None) -> str:
    return "?" if v is None else f"{v * 1e3:.0f}"


# -- startup ---------------------------------------------------------------------------------------
def bench_startup(root: Path, trials: int, runs: int) -> None:
    import startup

    env = dict(os.environ, PYTHONPATH=str(HERE.parent), KAFKA_HEAP_OPTS="-Xmx256m -Xms64m")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    kw = [sys.executable, "-m", "kraftwire"]
    base = startup.DEFAULT_KAFKA
    pairs = [("`kraftwire --help` vs `kafka-metadata-quorum.sh --help` (3.9)", kw + ["--help"],
              startup.kafka_tool(base, "3.9.0", "kafka-metadata-quorum.sh"), ["--help"]),
             ("`kraftwire --version` vs `kafka-storage.sh version` (4.1)", kw + ["--version"],
              startup.kafka_tool(base, "4.1.0", "kafka-storage.sh"), ["version"])]
    for what, ours, tool, args in pairs:
        startup.wall(ours, env)
        if tool:
            startup.wall([str(tool), *args], env)
        a, b = [], []
        for _ in range(runs):
            a.append(startup.wall(ours, env))
            if tool:
                b.append(startup.wall([str(tool), *args], env))
        ma = statistics.median(a)
        row("3 startup", what, ma, statistics.median(b) if b else None, "s", target="≤ 0.25 s", met=ma <= 0.25)
    times: dict[str, list[float]] = {"kraftwire": [], "kafka": []}
    systems = ["kraftwire"] + ([] if qm.kafka_missing() else ["kafka"])
    startup.compile_package()   # bytecode as an installed package has it (Kafka's classes are compiled too)
    for i in range(trials):
        for system in systems:
            q = qm.build(system, root / f"launch-{system}-{i}")
            t0, w0 = time.perf_counter(), time.time()
            try:
                q.launch()
                qm.wait_leader(q, 120)
                times[system].append(time.perf_counter() - t0)
            finally:
                q.stop()
            # launch -> first log line of the slowest voter (process start: interpreter / JVM, imports,
            # configuration) -> the first LeaderState (election timeout, pre-vote, vote) -> seen by the poll
            firsts = []
            for n in q.controllers:
                stamps = [_LOG_TIME.match(x) for x in n.log_text().splitlines()]
                first = next((m for m in stamps if m), None)
                if first:
                    firsts.append(time.mktime(time.strptime(first.group(1), "%Y-%m-%d %H:%M:%S"))
                                  + int(first.group(2)) / 1000 - w0)
            leader = first_leader_at(q.controllers, w0)
            print(f"  launch {system} trial {i + 1}: {times[system][-1]:.2f} s (first log line of each voter "
                  f"{', '.join(f'{x:.2f}' for x in sorted(firsts))} s; leader elected at "
                  f"{'?' if leader is None else f'{leader - w0:.2f}'} s)", flush=True)
    ours = statistics.median(times["kraftwire"])
    peer = statistics.median(times["kafka"]) if times["kafka"] else None
    row("5 start-up", f"3 fresh voters, launch -> elected leader (median of {trials})", ours, peer, "s",
        target="≤ 1.5 s", met=ours <= 1.5,
        note=f"kraftwire {', '.join(f'{t:.2f}' for t in times['kraftwire'])}; "
             f"kafka {', '.join(f'{t:.2f}' for t in times['kafka'])}")


# -- commit ----------------------------------------------------------------------------------------
async def _creates(host: str, port: int, clients: int, seconds: float, prefix: str) -> list[float]:
    lat: list[float] = []
    deadline = time.monotonic() + seconds
    counter = [0]

    async def client(conn: Connection) -> None:
        while time.monotonic() < deadline:
            counter[0] += 1
            req = CreateTopicsRequest(topics=[CreatableTopic(f"{prefix}-{counter[0]}", 1, 1)], timeout_ms=30000)
            t0 = time.monotonic()
            resp = await conn.request(req, 5, 30.0)
            lat.append(time.monotonic() - t0)
            if resp.topics[0].error_code:
                raise RuntimeError(f"CreateTopics failed: error {resp.topics[0].error_code} "
                                   f"{resp.topics[0].error_message}")

    async with anyio.create_task_group() as tg:
        conns = [Connection(tg, host, port) for _ in range(clients)]
        # warm the connections (and the broker's path to the controller) outside the measurement
        for c in conns:
            counter[0] += 1
            await c.request(CreateTopicsRequest(topics=[CreatableTopic(f"{prefix}-w{counter[0]}", 1, 1)]), 5, 60.0)
        deadline = time.monotonic() + seconds
        async with anyio.create_task_group() as inner:
            for c in conns:
                inner.start_soon(client, c)
        for c in conns:
            await c.close()
        tg.cancel_scope.cancel()
    return lat


def bench_commit(root: Path, seconds: float) -> None:
    results = {}
    for system in ["kraftwire"] + ([] if qm.kafka_missing() else ["kafka"]):
        q = qm.build(system, root / f"commit-{system}", brokers=1)
        try:
            q.launch()
            q.wait_started(180)
            leader, _ = qm.wait_leader(q, 120)
            broker = q.brokers[0]
            host, port = broker.host, broker.broker_port
            # the broker is registered and unfenced once a create succeeds
            deadline = time.monotonic() + 120
            while True:
                try:
                    anyio.run(_creates, host, port, 1, 0.0, "probe")
                    break
                except Exception:  # noqa: BLE001 - not ready yet
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            anyio.run(_creates, host, port, 1, 3.0, "warm")   # JIT and caches warm on both sides
            leader, _ = qm.wait_leader(q, 60)
            active = next(n for n in q.controllers if n.node_id == leader)
            cpu0 = qm.cpu_seconds(active.proc.pid)
            serial = anyio.run(_creates, host, port, 1, seconds, "serial")
            cpu = qm.cpu_seconds(active.proc.pid) - cpu0
            conc = anyio.run(_creates, host, port, 4, seconds, "conc")
            results[system] = {"p50": statistics.median(serial) * 1e3, "p99": pct(serial, 0.99) * 1e3,
                               "n": len(serial), "cpu_us": cpu / max(1, len(serial)) * 1e6,
                               "rate4": len(conc) / seconds, "p50_4": statistics.median(conc) * 1e3}
            print(f"  commit {system}: {results[system]}", flush=True)
        finally:
            q.stop()
    k = results.get("kafka", {})
    o = results["kraftwire"]
    row("1 commit", "CreateTopics via a broker, 1 client: p50", o["p50"], k.get("p50"), "ms",
        target="≤ 0.25× Kafka", met=bool(k) and o["p50"] <= 0.25 * k["p50"])
    row("1 commit", "CreateTopics via a broker, 1 client: p99", o["p99"], k.get("p99"), "ms",
        target="≤ 0.5× Kafka", met=bool(k) and o["p99"] <= 0.5 * k["p99"])
    row("1 commit", "CreateTopics via a broker, 4 clients: creates/s", o["rate4"], k.get("rate4"), "/s",
        higher_better=True, target="≥ 3× Kafka", met=bool(k) and o["rate4"] >= 3 * k["rate4"])
    row("1 commit", "active controller CPU per create (1 client)", o["cpu_us"], k.get("cpu_us"), "µs")


# -- failover --------------------------------------------------------------------------------------
def _failover_trial(system: str, root: Path) -> tuple[float, bool, float | None, float | None]:
    """(kill -> agreed s, split vote, kill -> a survivor stood s, kill -> new leader s)."""
    q = qm.build(system, root)
    try:
        q.launch()
        q.wait_started(180)
        leader, epoch = qm.wait_leader(q, 120)
        # steady state: every voter knows the leader and followers are fetching
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all((qm.leader_of(n.controller_address) or (0, 0))[0] == leader for n in q.controllers):
                break
            time.sleep(0.1)
        time.sleep(1.5)
        leader, epoch = qm.leader_of(next(n for n in q.controllers if n.node_id == leader).controller_address) \
            or (leader, epoch)
        victim = next(n for n in q.controllers if n.node_id == leader)
        survivors = [n for n in q.controllers if n is not victim]
        os.killpg(victim.proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        killed_wall = time.time()
        killed_ms = int(killed_wall * 1000)
        ids = {n.node_id for n in survivors}
        while time.monotonic() - t0 < 60:
            # agreed: a survivor answers DescribeQuorum as leader of a newer epoch, and the other survivor
            # has fetched from it since the kill (only a leader answers DescribeQuorum in Kafka)
            for n in survivors:
                r = qm.quorum_from(n.controller_address, 0.5)
                if r is None or r["LeaderId"] not in ids or r["LeaderEpoch"] <= epoch:
                    continue
                other = ids - {r["LeaderId"]}
                if all(x["LastFetchTimestamp"] >= killed_ms for x in r["Replication"] if x["NodeId"] in other):
                    agreed = time.monotonic() - t0
                    stood, led = detected_at(survivors, killed_wall), first_leader_at(survivors, killed_wall, epoch)
                    return (agreed, r["LeaderEpoch"] > epoch + 1, None if stood is None else stood - killed_wall,
                            None if led is None else led - killed_wall)
            time.sleep(0.02)
        raise TimeoutError(f"{system}: no agreed new leader within 60 s")
    finally:
        q.stop()


def bench_failover(root: Path, trials: int) -> None:
    times: dict[str, list[float]] = {"kraftwire": [], "kafka": []}
    splits = {"kraftwire": 0, "kafka": 0}
    systems = ["kraftwire"] + ([] if qm.kafka_missing() else ["kafka"])
    phases: dict[str, list[tuple[float | None, float | None]]] = {"kraftwire": [], "kafka": []}
    for i in range(trials):
        for system in systems:
            t, split, stood, led = _failover_trial(system, root / f"failover-{system}-{i}")
            times[system].append(t * 1e3)
            splits[system] += split
            phases[system].append((stood, led))
            # detection: kill -> a survivor leaves FollowerState (fetch timeout; kraftwire also a refused
            # connection); election: -> LeaderState of a newer epoch; agreement: -> the other survivor fetched
            print(f"  failover {system} trial {i + 1}: {t * 1e3:.0f} ms{' (split vote)' if split else ''} "
                  f"(a survivor stood at {_ms(stood)} ms, new leader at {_ms(led)} ms)", flush=True)
    o = statistics.median(times["kraftwire"])
    k = statistics.median(times["kafka"]) if times["kafka"] else None
    wo, wk = max(times["kraftwire"]), max(times["kafka"] or [0])

    def stood_med(system: str) -> str:
        xs = [x for x, _ in phases[system] if x is not None]
        return _ms(statistics.median(xs)) if xs else "?"
    row("5 failover", f"kill -9 of the leader -> survivors agree (median of {trials})", o, k, "ms",
        target="≤ 0.3× Kafka", met=k is not None and o <= 0.3 * k,
        note=f"a survivor stood at (median) kraftwire {stood_med('kraftwire')} ms, kafka {stood_med('kafka')} ms")
    row("5 failover", f"same, worst of {trials}", wo, wk or None, "ms", target="≤ 0.5× Kafka",
        met=bool(wk) and wo <= 0.5 * wk)
    row("5 failover", "trials without a split vote", 100 * (1 - splits["kraftwire"] / trials),
        100 * (1 - splits["kafka"] / trials) if times["kafka"] else None, "%", higher_better=True,
        target="≥ 95 %", met=splits["kraftwire"] / trials <= 0.05)


# -- fetch -----------------------------------------------------------------------------------------
def _raw_fetch(host: str, port: int, topic: str, last: int, partition_max: int) -> tuple[int, float]:
    """Fetch v12 from offset 0 until ``last`` is read, one request at a time, on a blocking socket into one
    reused buffer (no client library between the reader and the bytes); (record bytes, seconds).
    The next offset is found by walking batch lengths to the last whole batch (answers may end torn)."""
    from kraftwire.protocol import framing
    from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic

    offset = got = corr = 0
    buf = bytearray(partition_max + (1 << 20))
    view = memoryview(buf)
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.perf_counter()
        while offset <= last:
            corr += 1
            req = FetchRequest(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                               topics=[FetchTopic(topic=topic, partitions=[
                                   FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=partition_max)])])
            sock.sendall(framing.encode_request(req, 12, corr))
            have = 0
            while have < 4 or have < 4 + _LEN.unpack_from(buf, 0)[0]:
                if have >= 4 and 4 + _LEN.unpack_from(buf, 0)[0] > len(buf):
                    raise RuntimeError(f"answer of {_LEN.unpack_from(buf, 0)[0]} bytes exceeds the reader's buffer")
                n = sock.recv_into(view[have:])
                if not n:
                    raise RuntimeError("connection closed")
                have += n
            size = _LEN.unpack_from(buf, 0)[0]
            reply = framing.decode_response(view[4:4 + size], 1, 12)[1]
            p = reply.responses[0].partitions[0]
            if p.error_code:
                raise RuntimeError(f"Fetch error {p.error_code} at {offset}")
            data = p.records if p.records is not None else b""
            got += len(data)
            # the next offset: after the last whole batch; only lengths are read on the way there
            end, pos, final, length_at = len(data), 0, -1, _LEN.unpack_from
            while pos + 12 <= end:
                nxt = pos + 12 + length_at(data, pos + 8)[0]
                if nxt > end:
                    break
                final, pos = pos, nxt
            if final < 0:
                raise RuntimeError(f"no whole batch at {offset} ({len(data)} bytes)")
            offset = _HEAD.unpack_from(data, final)[0] + _DELTA.unpack_from(data, final + 23)[0] + 1
            del data, p, reply    # the views into ``buf`` go before the next answer overwrites it
        dt = time.perf_counter() - t0
    return got, dt


def _one_raw(host: str, port: int, topic: str, last: int, server_pid: int) -> dict:
    """One raw read from offset 0 to ``last``: MB/s, records/s, bytes, and the serving process's CPU per MB."""
    cpu0 = qm.cpu_seconds(server_pid)
    size, dt = _raw_fetch(host, port, topic, last, 1 << 20)
    cpu = qm.cpu_seconds(server_pid) - cpu0
    return {"raw": size / dt / 1e6, "raw_rate": (last + 1) / dt, "bytes": size,
            "server_cpu_ms_per_MB": cpu * 1e3 / (size / 1e6)}


def _confluent(bootstrap: str, topic: str, last: int, server_pid: int) -> dict:
    """confluent-kafka from the earliest offset to ``last`` with client defaults: records/s and the CPU (in
    cores) of this process (librdkafka's threads + the Python loop) and of the serving process."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-unused", "enable.auto.commit": False})
    t0, c0, s0 = time.perf_counter(), time.process_time(), qm.cpu_seconds(server_pid)
    n = 0
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 600
        done = False
        while not done and time.monotonic() < deadline:
            for msg in c.consume(num_messages=10_000, timeout=1.0):
                if msg.error():
                    raise RuntimeError(str(msg.error()))
                n += 1
                done = msg.offset() >= last
        dt = time.perf_counter() - t0
        return {"confluent": n / dt, "records": n, "client_cores": (time.process_time() - c0) / dt,
                "client_us_per_record": (time.process_time() - c0) / max(1, n) * 1e6,
                "server_cores": (qm.cpu_seconds(server_pid) - s0) / dt}
    finally:
        c.close()


def _reader_ceiling(data: bytes, partition_max: int = 1 << 20) -> float:
    """MB/s of ``_raw_fetch``'s own per-answer work on bytes already in memory: answers of ``partition_max``
    bytes cut at a batch boundary, each walked by batch lengths to its last whole batch (no network)."""
    t0 = time.perf_counter()
    start, length_at = 0, _LEN.unpack_from
    while start < len(data):
        chunk = data[start:start + partition_max]
        end, pos = len(chunk), 0
        while pos + 12 <= end:
            nxt = pos + 12 + length_at(chunk, pos + 8)[0]
            if nxt > end:
                break
            pos = nxt
        start += pos
    return len(data) / (time.perf_counter() - t0) / 1e6


def _produce_same_values(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "compression.type": "none",
                  "queue.buffering.max.messages": 2_000_000})
    for v in values:
        while True:
            try:
                p.produce(topic, v, partition=0)
                break
            except BufferError:
                p.poll(0.1)
    if p.flush(300) != 0:
        raise RuntimeError("Kafka producer did not deliver every record")


def bench_fetch(root: Path, records: int, trials: int = 3) -> None:
    """Both servers up at once, one warm-up read each, then trials interleaved (kraftwire, Kafka, kraftwire,
    ...); medians reported."""
    import consume

    from compat.cluster import Quorum as KwQuorum
    from kraftwire.protocol.records import iter_batches

    kw = KwQuorum(root / "fetch-kraftwire", n=1)
    log_dir = kw.log_dir(1)
    last = consume.generate(log_dir, records, 2000, 8)
    segments = [seg.read_bytes() for seg in sorted(log_dir.glob("*.log"), key=lambda p: int(p.stem))]
    values = [rec.value for data in segments for b, _, _ in iter_batches(data, verify_crc=False) if not b.control
              for rec in b.records]
    ceiling = statistics.median(_reader_ceiling(b"".join(segments)) for _ in range(3))
    print(f"  the raw reader's own walk over the same bytes in memory: {ceiling:,.0f} MB/s", flush=True)
    del segments
    targets: dict[str, tuple[str, int, str, int, int]] = {}   # system -> host, port, topic, last, pid
    q = None
    try:
        kw.start()
        kw.wait_ready(min_hw=last + 1, timeout_s=900)
        host, port = kw.bootstrap.split(",")[0].rsplit(":", 1)
        targets["kraftwire"] = (host, int(port), "__cluster_metadata", last, kw.procs[1].pid)
        if not qm.kafka_missing():
            q = qm.build("kafka", root / "fetch-kafka", controllers=1, brokers=1)
            q.launch()
            q.wait_started(180)
            b = q.brokers[0]
            _produce_same_values(f"{b.host}:{b.broker_port}", "bench", values)
            targets["kafka"] = (b.host, b.broker_port, "bench", len(values) - 1, qm.jvm_or_python_pid(b))
        del values
        raw: dict[str, list[dict]] = {s: [] for s in targets}
        conf: dict[str, list[dict]] = {s: [] for s in targets}
        for h, p, topic, end, _pid in targets.values():   # warm-up, not counted: page cache, JIT, imports
            _raw_fetch(h, p, topic, end, 1 << 20)
        for _ in range(trials):
            for system, (h, p, topic, end, pid) in targets.items():
                raw[system].append(_one_raw(h, p, topic, end, pid))
                print(f"  raw {system}: {raw[system][-1]} (load {os.getloadavg()[0]:.2f})", flush=True)
        for _ in range(2):
            for system, (h, p, topic, end, pid) in targets.items():
                conf[system].append(_confluent(f"{h}:{p}", topic, end, pid))
                print(f"  confluent {system}: {conf[system][-1]} (load {os.getloadavg()[0]:.2f})", flush=True)
    finally:
        kw.stop()
        if q is not None:
            q.stop()

    def med(system: str, runs: dict[str, list[dict]], key: str) -> float | None:
        return statistics.median(r[key] for r in runs[system]) if runs.get(system) else None

    rates = {s: ", ".join(f"{r['raw']:.0f}" for r in raw[s]) for s in raw}
    row("2 fetch", f"raw Fetch reader, 1 MiB per partition (median of {trials} interleaved)",
        med("kraftwire", raw, "raw"), med("kafka", raw, "raw"), "MB/s", higher_better=True, target="≥ 150 MB/s",
        met=med("kraftwire", raw, "raw") >= 150,
        note=f"trials {rates}; records/s {med('kraftwire', raw, 'raw_rate'):,.0f} vs "
             f"{med('kafka', raw, 'raw_rate') or 0:,.0f}; reader ceiling {ceiling:,.0f} MB/s")
    row("2 fetch", "serving process CPU per MB read (raw reader)", med("kraftwire", raw, "server_cpu_ms_per_MB"),
        med("kafka", raw, "server_cpu_ms_per_MB"), "ms")
    row("2 fetch", f"confluent-kafka reading {conf['kraftwire'][0]['records']:,} records (median of 2)",
        med("kraftwire", conf, "confluent"), med("kafka", conf, "confluent"), "records/s", higher_better=True,
        target="≥ 5× 181,374 (the issue's today)", met=med("kraftwire", conf, "confluent") >= 5 * 181_374,
        note=f"client CPU {med('kraftwire', conf, 'client_us_per_record'):.2f} vs "
             f"{med('kafka', conf, 'client_us_per_record') or 0:.2f} µs/record, "
             f"{med('kraftwire', conf, 'client_cores'):.2f} vs {med('kafka', conf, 'client_cores') or 0:.2f} cores; "
             f"server {med('kraftwire', conf, 'server_cores'):.2f} vs {med('kafka', conf, 'server_cores') or 0:.2f} cores")


# -- subprocess sections ---------------------------------------------------------------------------
def _run_script(args: list[str], timeout_s: float) -> str:
    print(f"  $ {' '.join(args)}", flush=True)
    p = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout_s, cwd=HERE.parent)
    sys.stdout.write(p.stdout[-4000:])
    if p.returncode:
        sys.stdout.write(p.stderr[-2000:])
    return p.stdout


def bench_image(partitions: int, base: str, pairs: int) -> None:
    out = _run_script([str(HERE / "image_load.py"), "--partitions", str(partitions), "--base", base,
                       "--pairs", str(pairs), "--json"], 3600)
    data = json.loads(out.strip().splitlines()[-1])
    b, a = data["before"], data["after"]
    for what, key in (("snapshot -> image", "snapshot"), ("log -> image", "log")):
        row("5 records", f"{partitions:,} partitions, {what}: CPU, this tree vs {base[:7]} (median of {pairs})",
            a[key + "_cpu"], b[key + "_cpu"], "s (peer = before)", target="≤ 0.5× before",
            met=a[key + "_cpu"] <= 0.5 * b[key + "_cpu"],
            note=f"wall {a[key]:.2f} s vs {b[key]:.2f} s ({a[key] / b[key]:.2f}x)")


def bench_heartbeats(brokers: list[int], duration: float, listener_processes: int = 0) -> None:
    out = _run_script([str(HERE / "heartbeats.py"), "--brokers", *map(str, brokers), "--duration", str(duration),
                       "--listener-processes", str(listener_processes)], 3600)
    rows: dict[tuple[str, int], list[str]] = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) >= 13 and cells[1].isdigit():   # heartbeats.py may add columns at the end
            rows[("kafka" if cells[0].startswith("kafka") else "kraftwire", int(cells[1]))] = cells
    for n in brokers:
        o, k = rows.get(("kraftwire", n)), rows.get(("kafka", n))
        if o is None:
            continue
        p99o, p99k = float(o[5]), (float(k[5]) if k else None)
        per_hb = lambda c: c[14] if c and len(c) > 14 else "-"  # noqa: E731 - µs of the active controller
        row("2 heartbeats", f"{n:,} brokers: heartbeat p99", p99o, p99k, "ms",
            target="≤ 1× Kafka, 0 timeouts, 0 leader changes",
            met=p99k is not None and p99o <= p99k and o[7] == "0" and o[9] == "0",
            note=f"p50 {o[4]} vs {k[4] if k else '-'} ms; timeouts {o[7]} vs {k[7] if k else '-'}; fences {o[8]}; "
                 f"leader changes {o[9]}; active CPU {o[11]} % vs {k[11] if k else '-'} %, "
                 f"{per_hb(o)} vs {per_hb(k)} µs per heartbeat; heartbeats {o[3]} vs {k[3] if k else '-'}")


def bench_spark(log: Path) -> None:
    out = _run_script([str(HERE / "analytics.py"), "--dir", str(log), "--repeat", "2"], 3600)
    one = re.search(r"one Python process.*?= ([\d,]+) rows/s", out)
    reads = [float(x.replace(",", "")) for x in re.findall(r"spark read \d+:.*?= ([\d,]+) rows/s", out)]
    if one and reads:
        peer = float(one.group(1).replace(",", ""))
        spark = max(reads)
        row("6 spark", "Spark local[2] reads vs one Python process", spark, peer, "rows/s (peer = 1 process)",
            higher_better=True, target="≥ 1.6× one process", met=spark >= 1.6 * peer)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", default=["bounds", "startup", "commit", "failover", "fetch", "image",
                                                     "heartbeats", "spark"])
    ap.add_argument("--out", type=Path, help="write the rows (and bounds) as JSON here")
    ap.add_argument("--trials", type=int, default=5, help="failover trials per system")
    ap.add_argument("--launch-trials", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0, help="commit: seconds per phase")
    ap.add_argument("--records", type=int, default=1_000_000, help="fetch: records in the log")
    ap.add_argument("--fetch-trials", type=int, default=3, help="fetch: interleaved raw reads per system")
    ap.add_argument("--partitions", type=int, default=1_000_000, help="image: partitions")
    ap.add_argument("--base", default="cbe36e0", help="image: the commit whose code is 'today' in the goal")
    ap.add_argument("--pairs", type=int, default=2, help="image: before/after pairs")
    ap.add_argument("--brokers", type=int, nargs="+", default=[2000, 5000])
    ap.add_argument("--duration", type=float, default=30.0, help="heartbeats: measured seconds")
    ap.add_argument("--listener-processes", type=int, default=0,
                    help="heartbeats: kraftwire's kraftwire.listener.processes (issue #25 goal 2)")
    ap.add_argument("--spark-log", type=Path, default=Path(tempfile.gettempdir()) / "kraftwire-churn-1m")
    args = ap.parse_args()
    reason = qm.kafka_missing()
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; load average {os.getloadavg()}; commit "
          f"{subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True, cwd=HERE).stdout.strip()}"
          f"; Kafka {qm.KAFKA_RELEASE}: {reason or 'available'}", flush=True)
    record: dict = {"started": time.time(), "load_start": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="kw-side-") as tmp:
        root = Path(tmp)
        for section in args.only:
            print(f"== {section} (load average {os.getloadavg()[0]:.2f})", flush=True)
            t0 = time.monotonic()
            try:
                if section == "bounds":
                    record["bounds"] = bench_bounds(root)
                elif section == "startup":
                    bench_startup(root, args.launch_trials, 7)
                elif section == "commit":
                    bench_commit(root, args.seconds)
                elif section == "failover":
                    bench_failover(root, args.trials)
                elif section == "fetch":
                    bench_fetch(root, args.records, args.fetch_trials)
                elif section == "image":
                    bench_image(args.partitions, args.base, args.pairs)
                elif section == "heartbeats":
                    bench_heartbeats(args.brokers, args.duration, args.listener_processes)
                elif section == "spark":
                    bench_spark(args.spark_log)
            except Exception as e:  # noqa: BLE001 - one failed section must not lose the others
                print(f"  {section} failed: {type(e).__name__}: {e}", flush=True)
                record.setdefault("failed", {})[section] = f"{type(e).__name__}: {e}"
            record.setdefault("load", {})[section] = os.getloadavg()
            print(f"   ({section}: {time.monotonic() - t0:.0f} s)", flush=True)
    record["rows"] = ROWS
    if args.out:
        args.out.write_text(json.dumps(record, indent=1))
    print("\n| goal | what | kraftwire | Kafka | ratio | target | met |\n|---|---|---:|---:|---:|---|---|")
    for r in ROWS:
        f = lambda v: "-" if v is None else (f"{v:,.3f}" if abs(v) < 10 else f"{v:,.0f}")  # noqa: E731
        print(f"| {r['goal']} | {r['what']} | {f(r['kraftwire'])} {r['unit']} | {f(r['kafka'])} | "
              f"{'-' if r['ratio'] is None else format(r['ratio'], '.2f')} | {r['target']} | "
              f"{'yes' if r['met'] else 'no' if r['met'] is False else ''} |")
    return 0


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    sys.exit(main())
