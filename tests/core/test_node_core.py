"""The sans-I/O node core (kraftwire.core.node_core): a one-voter quorum driven by hand, as a shell would."""

from __future__ import annotations

import random
import uuid

from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.core.controller_role import ControllerRole
from kraftwire.core.node_core import Audit, NodeCore, Respond, TakeSnapshot
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.metadata.snapshot import RetentionPolicy, SnapshotPolicy, Snapshotter
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.raft import MemoryLog, MemoryStateStore, RaftConfig, RaftCore
from kraftwire.raft import messages as m
from kraftwire.storage.audit import Origin

CLUSTER = "kw-node-core-test-0001"


def _node(snapshot_every: int = 0) -> NodeCore:
    snap = Snapshotter(SnapshotPolicy(max_records=snapshot_every, max_bytes=0),
                       RetentionPolicy(max_bytes=-1, max_ms=-1)) if snapshot_every else None
    role = ControllerRole(1, QuorumController(ControllerConfig(cluster_id=CLUSTER, default_replication_factor=1)),
                          bootstrap_records(), snapshotter=snap)
    raft = RaftCore(1, [1], RaftConfig(defer_flush=True), MemoryLog(), MemoryStateStore(), random.Random(1),
                    CLUSTER, 0, role)
    return NodeCore(raft, role)


def _create(name: str) -> ctq.CreateTopicsRequest:
    return ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic(name=name, num_partitions=1, replication_factor=-1)],
                                   timeout_ms=1000)


def _register(broker_id: int) -> brq.BrokerRegistrationRequest:
    return brq.BrokerRegistrationRequest(
        broker_id=broker_id, cluster_id=CLUSTER, incarnation_id=uuid.UUID(int=broker_id),
        listeners=[brq.Listener("PLAINTEXT", "localhost", 9092, 0)],
        features=[brq.Feature(n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())],
        log_dirs=[uuid.UUID(int=broker_id << 64 | 1)])


class Shell:
    """What the server's driver does with outputs, without I/O: fsyncs complete when told to."""

    def __init__(self, node: NodeCore) -> None:
        self.node = node
        self.now = 0
        self.answers: dict[int, object] = {}
        self.persist: list[int] = []
        self.snapshots: list[TakeSnapshot] = []
        self.audits: list[Audit] = []

    def take(self, outputs: list) -> None:
        for out in outputs:
            if isinstance(out, m.PersistLog):
                self.persist.append(out.end_offset)
            elif isinstance(out, Respond):
                self.answers[out.request_id] = out.body
            elif isinstance(out, TakeSnapshot):
                self.snapshots.append(out)
            elif isinstance(out, Audit):
                self.audits.append(out)
            else:
                raise AssertionError(f"a one-voter node sends nothing: {out}")

    def sync(self) -> None:
        while self.persist:
            end = self.persist.pop(0)
            self.node.log.sync()
            self.take(self.node.handle_persisted(self.now, end))

    def run_until(self, pred, limit_ms: int = 5000) -> None:
        while not pred():
            assert self.now < limit_ms, "condition not reached"
            self.now += 10
            self.take(self.node.tick(self.now))
            self.sync()


def _active(shell: Shell) -> None:
    shell.run_until(lambda: shell.node.controller.controller.active)


def test_an_answer_leaves_only_once_its_records_are_durable() -> None:
    shell = Shell(_node())
    _active(shell)
    shell.take(shell.node.submit(shell.now, 7, _register(11), 0))
    assert 7 not in shell.answers and shell.persist, "appended and asked to persist, not answered"
    shell.sync()
    assert shell.answers[7].error_code == 0
    assert 11 in shell.node.controller.controller.committed_image.brokers


def test_an_answer_that_writes_nothing_leaves_at_once() -> None:
    shell = Shell(_node())
    _active(shell)
    shell.take(shell.node.submit(shell.now, 2, _create("orders"), 5))   # no broker to place it on: refused
    assert shell.answers[2].topics[0].error_code == Errors.INVALID_REPLICATION_FACTOR and not shell.persist


def test_a_write_with_a_known_origin_comes_out_as_an_audit_entry() -> None:
    shell = Shell(_node())
    _active(shell)
    alice = Origin("User:alice", "admin-cli", "10.1.2.3", "CONTROLLER", forwarded=True)
    first = shell.node.log.end_offset
    shell.take(shell.node.submit(shell.now, 7, _register(11), 0, alice))
    [audit] = shell.audits
    e = audit.entry
    assert (e.first_offset, e.last_offset) == (first, first) and e.epoch == shell.node.raft.epoch
    assert (e.api, e.api_key, e.principal, e.client_id, e.client_host, e.listener, e.forwarded, e.node_id) == (
        "BrokerRegistration", 62, "User:alice", "admin-cli", "10.1.2.3", "CONTROLLER", True, 1)
    shell.take(shell.node.submit(shell.now, 8, _create("orders"), 5, alice))   # refused: wrote nothing
    shell.take(shell.node.submit(shell.now, 9, _register(12), 0))               # no origin: not audited
    assert len(shell.audits) == 1


def test_stopping_answers_waiting_requests_not_controller() -> None:
    shell = Shell(_node())
    _active(shell)
    shell.take(shell.node.submit(shell.now, 3, _register(11), 0))
    assert 3 not in shell.answers
    shell.take(shell.node.stop(shell.now))
    assert shell.answers[3].error_code == Errors.NOT_CONTROLLER


def test_a_due_snapshot_is_asked_for_once_and_stored_when_handed_back() -> None:
    shell = Shell(_node(snapshot_every=3))
    _active(shell)
    for i in range(4):
        shell.take(shell.node.submit(shell.now, 10 + i, _register(11 + i), 0))
        shell.sync()
    assert len(shell.snapshots) == 1, "one TakeSnapshot in flight at a time"
    job = shell.snapshots[0].job
    shell.take(shell.node.snapshot_framed(shell.now, job.sid, job.frame()))
    assert shell.node.log.latest_snapshot_id() == job.sid and shell.node.snapshots_taken == 1


def test_the_next_deadline_covers_the_controllers_timers() -> None:
    shell = Shell(_node())
    _active(shell)
    ctl_deadline = shell.node.controller.next_deadline()
    assert ctl_deadline is not None and shell.node.next_deadline() <= ctl_deadline
