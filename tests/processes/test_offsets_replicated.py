"""Committed group offsets survive the loss of any one voter (the offsets quorum, docs/groups.md).

3 voter processes. kafka-python commits offsets of a group; the voter coordinating the groups (the
offsets quorum's leader, as FindCoordinator names it) is killed with kill -9.

* wiped: its data directory is deleted and re-formatted, it is restarted, and the same offsets are read
  back; once it has re-joined the offsets quorum the new coordinator is killed too, so the two voters
  left (one of them the wiped one) must still hold the offsets.
* stays down: the other two elect a coordinator that answers the same offsets and takes new commits.
"""

from __future__ import annotations

import shutil
import signal
import time

import anyio
import pytest

from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.net.client import Connection
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest

from .harness import Cluster

pytestmark = pytest.mark.processes

TOPIC = "__cluster_metadata"
GROUP = "offsets-survive"
PROPS = ["group.initial.rebalance.delay.ms=100"]
REJOIN_MARKER = "__kraftwire_offsets-0/rejoining"


def coordinator(c: Cluster, asked: list[int], timeout: float = 60.0, group: str = GROUP) -> int:
    """The voter the asked voters agree coordinates the groups (FindCoordinator), one of them (a killed
    coordinator is still named until its followers' fetch timeout)."""
    async def find(node: int) -> int | None:
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", int(c.addr(node).split(":")[1]))
            try:
                resp = await conn.request(FindCoordinatorRequest(key=group, key_type=0), 3, 5.0)
            finally:
                await conn.close()
        return resp.node_id if resp.error_code == 0 else None

    deadline = time.monotonic() + timeout
    answers: set[int | None] = set()
    while time.monotonic() < deadline:
        try:
            answers = {anyio.run(find, node) for node in asked}
        except (OSError, Exception):  # a connection refused while a voter starts: not yet
            answers = {None}
        if len(answers) == 1 and answers <= set(asked):
            return answers.pop()
        time.sleep(0.2)
    logs = {n: [ln for ln in c.log_text(n).splitlines() if "offsets" in ln or "starting" in ln][-8:]
            for n in asked}
    raise AssertionError(f"no agreed group coordinator among {asked}: {answers}; {logs}")


def commit(addr: str, offset: int, timeout: float = 60.0) -> None:
    """kafka-python commits ``offset`` (with metadata) for GROUP, retrying while no coordinator answers."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    tp = TopicPartition(TOPIC, 0)
    deadline = time.monotonic() + timeout
    while True:
        consumer = KafkaConsumer(bootstrap_servers=addr, group_id=GROUP, enable_auto_commit=False,
                                 request_timeout_ms=10000, retry_backoff_ms=200)
        try:
            consumer.assign([tp])
            consumer.commit({tp: OffsetAndMetadata(offset, f"at {offset}", -1)})
            return
        except KafkaError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
        finally:
            consumer.close()


def committed(addr: str, timeout: float = 60.0) -> int | None:
    """The offset kafka-python reads back as GROUP's commit (None never counts: retried until the deadline)."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError

    tp = TopicPartition(TOPIC, 0)
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        consumer = KafkaConsumer(bootstrap_servers=addr, group_id=GROUP, enable_auto_commit=False,
                                 request_timeout_ms=10000, retry_backoff_ms=200)
        try:
            value = consumer.committed(tp)
            if value is not None:
                return value
        except KafkaError:
            pass
        finally:
            consumer.close()
        time.sleep(0.5)
    return value


def wipe(c: Cluster, node: int) -> None:
    shutil.rmtree(c.data_dir(node))
    format_storage(load_config(c.configs[node - 1]), c.cluster_id, quiet=True)


def test_offsets_survive_a_wiped_coordinator(tmp_path):
    c = Cluster(tmp_path, 3)
    try:
        for node in (1, 2, 3):
            c.start(node, *PROPS)
        owner = coordinator(c, [1, 2, 3])
        commit(c.addr(owner), 1234)
        assert committed(c.addr(owner)) == 1234

        c.kill(owner, signal.SIGKILL)
        wipe(c, owner)
        assert not (c.data_dir(owner) / "__kraftwire_offsets-0").exists()
        c.start(owner, *PROPS)
        assert committed(c.addr(owner)) == 1234, "the wiped voter's clients read the replicated commit"
        rest = [n for n in (1, 2, 3) if n != owner]
        assert committed(c.addr(rest[0])) == 1234

        # The wiped voter re-joins the offsets quorum with the log; then it is one of the last two.
        deadline = time.monotonic() + 60
        while (c.data_dir(owner) / REJOIN_MARKER).exists():
            assert time.monotonic() < deadline, c.log_text(owner)[-3000:]
            time.sleep(0.2)
        second = coordinator(c, [1, 2, 3])
        c.kill(second, signal.SIGKILL)
        survivors = [n for n in (1, 2, 3) if n != second]
        assert owner in survivors or second == owner
        coordinator(c, survivors)
        assert committed(c.addr(survivors[0])) == 1234, "two voters left, one of them the wiped one"
        for n in (1, 2, 3):
            assert "Traceback" not in c.log_text(n)
    finally:
        c.stop_all()


def test_offsets_survive_while_the_coordinator_stays_down(tmp_path):
    c = Cluster(tmp_path, 3)
    try:
        for node in (1, 2, 3):
            c.start(node, *PROPS)
        owner = coordinator(c, [1, 2, 3])
        commit(c.addr(owner), 77)
        c.kill(owner, signal.SIGKILL)
        rest = [n for n in (1, 2, 3) if n != owner]
        successor = coordinator(c, rest)
        assert successor in rest
        for n in rest:   # bootstrapped at either survivor, the client is sent to the new coordinator
            assert committed(c.addr(n)) == 77
        commit(c.addr(rest[0]), 78)
        assert committed(c.addr(rest[1])) == 78
    finally:
        c.stop_all()
