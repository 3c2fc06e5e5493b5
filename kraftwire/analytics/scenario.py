"""Build real metadata logs from a scripted controller, at controlled times.

``ScenarioLog`` drives a ``QuorumController`` with ordinary requests (BrokerRegistration,
BrokerHeartbeat, CreateTopics, AlterPartition, DeleteTopics, UnregisterBroker) and appends what it
returns to a ``FileLog`` with the batch timestamp set to a scripted clock. Raft leader elections are
written the way a new KRaft leader writes them: a LeaderChange control batch as the first batch of
the new epoch. Every batch is committed at once (the high watermark follows the log end).

``demo_log`` is the scenario the analytics tests, docs and CLI (``kraftwire analytics demo-log``)
use; ``churn_log`` writes a large log of ISR churn for benchmarks.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.metadata import bootstrap_records, image_to_records
from kraftwire.protocol.control import leader_change_record
from kraftwire.protocol.messages import alter_partition_request as apq
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import delete_topics_request as dtq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.messages.unregister_broker_request import UnregisterBrokerRequest
from kraftwire.protocol.metadata import MetadataRecord, encode_record
from kraftwire.protocol.records import Record
from kraftwire.raft import SnapshotId
from kraftwire.storage.log import FileLog
from kraftwire.storage.snapshot import frame_snapshot

CLUSTER_ID = "a3JhZnR3aXJlLWFuYWx5dGk"
MINUTE = 60_000
DEMO_START_MS = 1_767_571_200_000  # 2026-01-05T00:00:00Z
LATEST_MV = 21


class ScenarioError(RuntimeError):
    """A scripted request was refused by the controller (the script is wrong)."""


class ScenarioLog:
    """A scripted active controller appending to ``root/__cluster_metadata-0``."""

    def __init__(self, root: Path, *, start_ms: int = DEMO_START_MS, metadata_version: int = LATEST_MV,
                 session_timeout_ms: int = 30_000, segment_bytes: int = 1 << 30, seed: int = 7) -> None:
        self.root = Path(root)
        self.log = FileLog(self.root / "__cluster_metadata-0", segment_bytes=segment_bytes)
        self.ctl = QuorumController(ControllerConfig(cluster_id=CLUSTER_ID, session_timeout_ms=session_timeout_ms,
                                                     max_idle_interval_ms=0, auto_leader_rebalance=False),
                                    seed=seed)
        self.start_ms = start_ms
        self.now = start_ms
        self.epoch = 0
        self.mv = metadata_version
        self.incarnations: dict[int, int] = {}

    # -- clock and log ----------------------------------------------------------------------------------
    def at(self, minutes: float) -> ScenarioLog:
        """Move the clock to ``minutes`` after the start (never backwards)."""
        t = self.start_ms + round(minutes * MINUTE)
        if t < self.now:
            raise ScenarioError(f"time goes backwards: {t} < {self.now}")
        self.now = t
        return self

    def _append(self, records: Sequence[MetadataRecord]) -> None:
        if not records:
            return
        values = [Record(value=encode_record(r.message, r.version)) for r in records]
        self.log.append_as_leader(values, self.epoch, timestamp_ms=self.now)
        self.log.flush()
        self.ctl.handle_commit(self.log.end_offset - 1)

    def _run(self, request: Any) -> Any:
        if not self.ctl.active:
            raise ScenarioError("no active controller: call elect() first")
        res = self.ctl.handle(self.now, request)
        self._append(res.records)
        return res.response

    # -- raft ---------------------------------------------------------------------------------------------
    def elect(self, epoch: int, leader: int, voters: Sequence[int] = (1, 2, 3),
              granting: Sequence[int] | None = None) -> None:
        """A new Raft leader for ``epoch``: its LeaderChange batch, then controller failover."""
        if epoch <= self.epoch:
            raise ScenarioError(f"epoch {epoch} is not above {self.epoch}")
        granting = list(granting) if granting is not None else [leader, *[v for v in voters if v != leader]][:2]
        self.epoch = epoch
        self.log.append_as_leader([leader_change_record(leader, list(voters), granting)], epoch, control=True,
                                  timestamp_ms=self.now)
        self.log.flush()
        self.ctl.deactivate()
        first = self.ctl.activate(epoch, self.log.end_offset, self.now, bootstrap=bootstrap_records(self.mv))
        self._append(first)

    # -- brokers ------------------------------------------------------------------------------------------
    def register(self, bid: int, *, restart: bool = False, rack: str | None = None) -> int:
        """BrokerRegistration; ``restart`` means a new process (incarnation). Returns the broker epoch."""
        gen = self.incarnations.get(bid, -1) + 1 if restart or bid not in self.incarnations else self.incarnations[bid]
        self.incarnations[bid] = gen
        req = brq.BrokerRegistrationRequest(
            broker_id=bid, cluster_id=CLUSTER_ID, incarnation_id=uuid.UUID(int=(bid << 32) | (gen + 1)),
            listeners=[brq.Listener("PLAINTEXT", f"broker{bid}.kraftwire.test", 9092, 0)],
            features=[brq.Feature("metadata.version", 1, LATEST_MV)], rack=rack,
            log_dirs=[uuid.UUID(int=(bid << 64) | 0xD1)])
        resp = self._run(req)
        if resp.error_code:
            raise ScenarioError(f"registration of broker {bid} failed: {resp.error_code}")
        return resp.broker_epoch

    def heartbeat(self, bid: int, *, want_shut_down: bool = False, want_fence: bool = False) -> Any:
        """A caught-up broker's heartbeat (unfences a fenced one, drives controlled shutdown)."""
        b = self.ctl.image.brokers.get(bid)
        resp = self._run(BrokerHeartbeatRequest(
            broker_id=bid, broker_epoch=b.epoch if b else -1, current_metadata_offset=self.log.end_offset - 1,
            want_fence=want_fence, want_shut_down=want_shut_down))
        if resp.error_code:
            raise ScenarioError(f"heartbeat of broker {bid} failed: {resp.error_code}")
        return resp

    def expire(self, bid: int) -> None:
        """Broker ``bid`` stops heartbeating: the others heartbeat, then its lease runs out."""
        for other, b in sorted(self.ctl.image.brokers.items()):
            if other != bid and not b.fenced:
                self.heartbeat(other)
        sessions = self.ctl.sessions
        session = sessions.pop(bid)
        session.last_seen_ms = min(session.last_seen_ms, self.now - self.ctl.config.session_timeout_ms - 1)
        self.ctl.sessions = {bid: session, **sessions}    # sessions are kept oldest contact first
        self._append(self.ctl.tick(self.now))
        if not self.ctl.image.brokers[bid].fenced:
            raise ScenarioError(f"broker {bid} was not fenced")

    def controlled_shutdown(self, bid: int) -> None:
        """Broker ``bid`` asks to shut down: leaderships move away (if it leads), then it is fenced
        once every other active broker has caught up."""
        self.heartbeat(bid, want_shut_down=True)

    def finish_shutdown(self, bid: int) -> None:
        for other, b in sorted(self.ctl.image.brokers.items()):
            if other != bid and not b.fenced and not b.in_controlled_shutdown:
                self.heartbeat(other)
        # Below metadata.version 3.3-IV3 the image has no in-controlled-shutdown flag and our
        # controller counts the broker's own (stale) offset once more: it may take a second heartbeat.
        for _ in range(2):
            if self.heartbeat(bid, want_shut_down=True).should_shut_down:
                return
        raise ScenarioError(f"broker {bid} may not shut down yet")

    def unregister(self, bid: int) -> None:
        resp = self._run(UnregisterBrokerRequest(broker_id=bid))
        if resp.error_code:
            raise ScenarioError(f"unregistering broker {bid} failed: {resp.error_code}")

    # -- topics -------------------------------------------------------------------------------------------
    def create_topic(self, name: str, assignments: Sequence[Sequence[int]]) -> str:
        t = ctq.CreatableTopic(name=name, num_partitions=-1, replication_factor=-1, assignments=[
            ctq.CreatableReplicaAssignment(i, list(a)) for i, a in enumerate(assignments)])
        resp = self._run(ctq.CreateTopicsRequest(topics=[t]))
        if resp.topics[0].error_code:
            raise ScenarioError(f"creating {name} failed: {resp.topics[0].error_code}")
        from kraftwire.analytics.rows import kafka_uuid

        return kafka_uuid(resp.topics[0].topic_id)

    def delete_topic(self, name: str) -> None:
        resp = self._run(dtq.DeleteTopicsRequest(topics=[dtq.DeleteTopicState(name=name)], topic_names=[name]))
        if resp.responses[0].error_code:
            raise ScenarioError(f"deleting {name} failed: {resp.responses[0].error_code}")

    def alter_isr(self, topic: str, changes: dict[int, Sequence[int]]) -> None:
        """The partitions' leader(s) propose new ISRs (one AlterPartition per leader)."""
        image = self.ctl.image
        t = image.topic_by_name(topic)
        if t is None:
            raise ScenarioError(f"no topic {topic}")
        by_leader: dict[int, list[apq.PartitionData]] = {}
        for pid, isr in changes.items():
            p = t.partitions[pid]
            by_leader.setdefault(p.leader, []).append(apq.PartitionData(
                partition_index=pid, leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                new_isr_with_epochs=[apq.BrokerState(b, image.brokers[b].epoch) for b in isr]))
        for leader, parts in by_leader.items():
            resp = self._run(apq.AlterPartitionRequest(broker_id=leader, broker_epoch=image.brokers[leader].epoch,
                                                       topics=[apq.TopicData(topic_id=t.id, partitions=parts)]))
            errors = [p.error_code for td in resp.topics for p in td.partitions if p.error_code]
            if resp.error_code or errors:
                raise ScenarioError(f"AlterPartition on {topic} failed: {resp.error_code} {errors}")

    # -- files --------------------------------------------------------------------------------------------
    def snapshot(self) -> SnapshotId:
        """Snapshot the committed image at the log end, as the controller would."""
        sid = SnapshotId(self.log.end_offset, self.epoch)
        batches = frame_snapshot(sid, image_to_records(self.ctl.committed_image), timestamp_ms=self.now,
                                 last_contained_timestamp_ms=self.now)
        self.log.create_snapshot(sid, batches)
        return sid

    def close(self) -> None:
        self.log.close()


def demo_log(root: Path, *, segment_bytes: int = 2048, snapshot: bool = True,
             metadata_version: int = LATEST_MV) -> ScenarioLog:
    """Three hours of a small cluster (controllers 1-3, brokers 101-104); see docs/analytics.md.

    Minutes after 2026-01-05T00:00Z:

    ====  ==========================================================================================
    0     epoch 1, controller 1 leads (bootstrap records)
    1     brokers 101, 102, 103 register; 2: they are unfenced
    5     topic orders [101,102,103] [102,103,101] [103,101,102]; 6: payments [101,102]
    20    orders-0 ISR shrinks to [101,102]; 30: back to [101,102,103]
    40    broker 103's lease expires: fenced, dropped from orders ISRs (it led orders-2)
    60    epoch 3, controller 2 leads (epoch 2 never elected anyone)
    70    broker 103 is unfenced; 80: orders-0/1/2 take it back into their ISRs
    90    broker 102 starts a controlled shutdown (it leads orders-1); 91: it is fenced
    105   broker 102 restarts (new incarnation, new epoch); 106: unfenced
    110   orders-0 and orders-2 take 102 back
    120   broker 104 registers; 121: unfenced; 125: topic audit [104,101]
    130   orders-1 takes 102 back; 135: drops it again; 140: takes it back
    150   topic payments deleted
    160   epoch 4, controller 1 leads
    170   broker 104 unregisters (decommissioned)
    180   a snapshot of the image at the log end
    ====  ==========================================================================================
    """
    s = ScenarioLog(root, segment_bytes=segment_bytes, metadata_version=metadata_version)
    s.at(0).elect(1, 1)
    s.at(1)
    for b in (101, 102, 103):
        s.register(b)
    s.at(2)
    for b in (101, 102, 103):
        s.heartbeat(b)
    s.at(5).create_topic("orders", [[101, 102, 103], [102, 103, 101], [103, 101, 102]])
    s.at(6).create_topic("payments", [[101, 102]])
    s.at(20).alter_isr("orders", {0: [101, 102]})
    s.at(30).alter_isr("orders", {0: [101, 102, 103]})
    s.at(40).expire(103)
    s.at(60).elect(3, 2)
    s.at(70).heartbeat(103)
    s.at(80).alter_isr("orders", {0: [101, 102, 103], 1: [102, 101, 103], 2: [101, 102, 103]})
    s.at(90).controlled_shutdown(102)
    s.at(91).finish_shutdown(102)
    s.at(105).register(102, restart=True)
    s.at(106).heartbeat(102)
    s.at(110).alter_isr("orders", {0: [101, 103, 102], 2: [101, 103, 102]})
    s.at(120).register(104)
    s.at(121).heartbeat(104)
    s.at(125).create_topic("audit", [[104, 101]])
    s.at(130).alter_isr("orders", {1: [101, 103, 102]})
    s.at(135).alter_isr("orders", {1: [101, 103]})
    s.at(140).alter_isr("orders", {1: [101, 103, 102]})
    s.at(150).delete_topic("payments")
    s.at(160).elect(4, 1)
    s.at(170).unregister(104)
    if snapshot:
        s.at(180).snapshot()
    return s


def churn_log(root: Path, records: int, *, partitions: int = 1000, per_request: int = 100,
              segment_bytes: int = 8 << 20) -> int:
    """A log of at least ``records`` records, mostly ISR shrinks/expands on ``partitions`` partitions
    of one topic (replicas on brokers 1-3), one batch per AlterPartition of ``per_request`` partitions,
    a second apart. Returns the number of records written."""
    s = ScenarioLog(root, start_ms=DEMO_START_MS, segment_bytes=segment_bytes)
    s.at(0).elect(1, 1)
    for b in (1, 2, 3):
        s.register(b)
    for b in (1, 2, 3):
        s.heartbeat(b)
    s.create_topic("churn", [[1 + (i % 3), 1 + (i + 1) % 3, 1 + (i + 2) % 3] for i in range(partitions)])
    image = s.ctl.image
    topic = image.topic_by_name("churn")
    assert topic is not None
    shrunk = False
    step = 0
    while s.log.end_offset < records:
        shrunk = not shrunk
        for lo in range(0, partitions, per_request):
            step += 1
            s.now = DEMO_START_MS + step * 1000
            changes = {}
            for pid in range(lo, min(lo + per_request, partitions)):
                replicas = s.ctl.image.topics[topic.id].partitions[pid].replicas
                changes[pid] = replicas[:2] if shrunk else replicas
            s.alter_isr("churn", changes)
            if s.log.end_offset >= records:
                break
    n = s.log.end_offset
    s.close()
    return n
