"""A tiny driver around QuorumController: an in-memory log, commits, and request builders."""

from __future__ import annotations

import uuid
from typing import Any

from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.protocol.messages import alter_partition_request as apq
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.metadata import MetadataRecord, decode_record, encode_record


def dir_for(bid: int) -> uuid.UUID:
    return uuid.UUID(int=(bid + 1) << 64 | 0xABCDEF)


def inc_for(bid: int, gen: int = 0) -> uuid.UUID:
    return uuid.UUID(int=(bid + 1) << 32 | gen + 7)


class Harness:
    def __init__(self, mv: int = 21, seed: int = 1, **cfg: Any) -> None:
        cfg.setdefault("cluster_id", "test-cluster")
        cfg.setdefault("auto_leader_rebalance", False)
        cfg.setdefault("max_idle_interval_ms", 0)
        self.config = ControllerConfig(**cfg)
        self.mv = mv
        self.ctl = QuorumController(self.config, seed=seed)
        self.log: list[tuple[int, MetadataRecord]] = []
        self.now = 0
        self.append(self.ctl.activate(1, 0, self.now, bootstrap=bootstrap_records(mv)))
        self.commit()

    @property
    def image(self):
        return self.ctl.image

    def append(self, records: list[MetadataRecord]) -> None:
        for r in records:
            back = decode_record(encode_record(r.message, r.version))  # every record must encode
            assert back.message == r.message, (r, back)
            self.log.append((len(self.log), r))
        assert self.ctl.next_offset == len(self.log)

    def commit(self) -> None:
        if self.log:
            self.ctl.handle_commit(len(self.log) - 1)

    def run(self, request: Any, version: int | None = None, commit: bool = True) -> Any:
        res = self.ctl.handle(self.now, request, version)
        self.append(res.records)
        if commit:
            self.commit()
        self.last = res
        return res.response

    def tick(self, now: int | None = None) -> list[MetadataRecord]:
        if now is not None:
            self.now = now
        recs = self.ctl.tick(self.now)
        self.append(recs)
        self.commit()
        return recs

    # -- brokers --------------------------------------------------------------------------------------
    def registration(self, bid: int, rack: str | None = None, gen: int = 0, mv_range=(1, 21),
                     cluster_id: str = "test-cluster", dirs: list[uuid.UUID] | None = None):
        # Above 3.9 the bootstrap finalizes group.version and transaction.version too: such a
        # harness registers brokers with everything a kraftwire broker supports.
        features = ([brq.Feature(n, lo, hi) for n, (lo, hi) in sorted(BROKER_SUPPORTED_FEATURES.items())]
                    if self.mv > 21 and mv_range == (1, 21) else [brq.Feature("metadata.version", *mv_range)])
        return brq.BrokerRegistrationRequest(
            broker_id=bid, cluster_id=cluster_id, incarnation_id=inc_for(bid, gen),
            listeners=[brq.Listener("PLAINTEXT", f"b{bid}", 9092, 0)],
            features=features, rack=rack,
            log_dirs=[dir_for(bid)] if dirs is None else dirs)

    def register(self, bid: int, rack: str | None = None, gen: int = 0) -> int:
        resp = self.run(self.registration(bid, rack, gen))
        assert resp.error_code == 0, resp
        return resp.broker_epoch

    def heartbeat(self, bid: int, epoch: int | None = None, offset: int | None = None, *,
                  want_fence: bool = False, want_shut_down: bool = False, commit: bool = True):
        b = self.image.brokers.get(bid)
        req = BrokerHeartbeatRequest(
            broker_id=bid, broker_epoch=(b.epoch if b else -1) if epoch is None else epoch,
            current_metadata_offset=len(self.log) - 1 if offset is None else offset,
            want_fence=want_fence, want_shut_down=want_shut_down)
        return self.run(req, commit=commit)

    def start_brokers(self, *ids: int, racks: dict[int, str] | None = None) -> None:
        for bid in ids:
            self.register(bid, (racks or {}).get(bid))
        for bid in ids:
            r = self.heartbeat(bid)
            assert r.error_code == 0 and not r.is_fenced, r

    # -- topics ----------------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, rf: int = 1, configs: dict | None = None,
                     assignments: list[list[int]] | None = None, validate_only: bool = False):
        t = ctq.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf,
                               configs=[ctq.CreatableTopicConfig(k, v) for k, v in (configs or {}).items()])
        if assignments is not None:
            t.num_partitions = t.replication_factor = -1
            t.assignments = [ctq.CreatableReplicaAssignment(i, a) for i, a in enumerate(assignments)]
        resp = self.run(ctq.CreateTopicsRequest(topics=[t], validate_only=validate_only))
        return resp.topics[0]

    def topic(self, name: str):
        return self.image.topic_by_name(name)

    def alter_partition(self, bid: int, topic: str, pid: int, isr: list[int], *, leader_epoch=None,
                        partition_epoch=None, version: int = 3, broker_epoch=None, epochs=None,
                        recovery: int = 0):
        t = self.topic(topic)
        p = t.partitions.get(pid) if t else None
        pd = apq.PartitionData(
            partition_index=pid,
            leader_epoch=(p.leader_epoch if p else 0) if leader_epoch is None else leader_epoch,
            partition_epoch=(p.partition_epoch if p else 0) if partition_epoch is None else partition_epoch,
            leader_recovery_state=recovery)
        if version >= 3:
            pd.new_isr_with_epochs = [apq.BrokerState(b, (epochs or {}).get(b, -1)) for b in isr]
        else:
            pd.new_isr = list(isr)
        b = self.image.brokers.get(bid)
        req = apq.AlterPartitionRequest(
            broker_id=bid, broker_epoch=(b.epoch if b else -1) if broker_epoch is None else broker_epoch,
            topics=[apq.TopicData(topic_name=topic, topic_id=t.id if t else uuid.uuid4(), partitions=[pd])])
        return self.run(req, version)
