"""A real metadata log: QuorumController commands appended to a FileLog, plus snapshots of its image."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from kraftwire.controller import ControllerConfig, QuorumController
from kraftwire.metadata import bootstrap_records, image_to_records
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.protocol.control import leader_change_record
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_acls_request as caq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import incremental_alter_configs_request as iacq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.protocol.metadata import encode_record
from kraftwire.protocol.records import Record
from kraftwire.raft import SnapshotId
from kraftwire.storage.log import FileLog
from kraftwire.storage.snapshot import frame_snapshot

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
EPOCH = 1


class MetadataWriter:
    """The active controller for epoch 1 writing into ``root/__cluster_metadata-0`` (HW = LEO)."""

    def __init__(self, root: Path, **log_kw: Any) -> None:
        self.log = FileLog(root / "__cluster_metadata-0", **log_kw)
        self.log.append_as_leader([leader_change_record(1, [1], [1])], EPOCH, control=True)
        self.ctl = QuorumController(ControllerConfig(cluster_id=CLUSTER_ID, max_idle_interval_ms=0,
                                                     auto_leader_rebalance=False), seed=7)
        self.now = 1_000
        self._append(self.ctl.activate(EPOCH, self.log.end_offset, self.now, bootstrap=bootstrap_records(21)))

    def _append(self, records: list[Any]) -> None:
        if records:
            values = [Record(value=encode_record(r.message, r.version)) for r in records]
            self.log.append_as_leader(values, EPOCH, timestamp_ms=self.now)
            self.log.flush()
            self.ctl.handle_commit(self.log.end_offset - 1)

    def run(self, request: Any, version: int | None = None) -> Any:
        res = self.ctl.handle(self.now, request, version)
        self._append(res.records)
        return res.response

    def register(self, bid: int, rack: str | None = None) -> int:
        resp = self.run(brq.BrokerRegistrationRequest(
            broker_id=bid, cluster_id=CLUSTER_ID, incarnation_id=uuid.UUID(int=bid * 1000 + 1),
            listeners=[brq.Listener("PLAINTEXT", f"broker{bid}.example", 9092, 0)],
            features=[brq.Feature(n, lo, hi) for n, (lo, hi) in BROKER_SUPPORTED_FEATURES.items()], rack=rack,
            log_dirs=[uuid.UUID(int=(bid << 64) | 5)]))
        assert resp.error_code == 0, resp
        return resp.broker_epoch

    def unfence(self, bid: int) -> None:
        epoch = self.ctl.image.brokers[bid].epoch
        resp = self.run(BrokerHeartbeatRequest(broker_id=bid, broker_epoch=epoch,
                                               current_metadata_offset=self.log.end_offset - 1))
        assert resp.error_code == 0 and not resp.is_fenced, resp

    def create_topic(self, name: str, partitions: int, rf: int, configs: dict[str, str] | None = None) -> Any:
        resp = self.run(ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=rf,
            configs=[ctq.CreatableTopicConfig(k, v) for k, v in (configs or {}).items()])]))
        assert resp.topics[0].error_code == 0, resp
        return resp.topics[0]

    def snapshot(self) -> SnapshotId:
        """Snapshot the committed image at the log end (what the controller would do)."""
        sid = SnapshotId(self.log.end_offset, EPOCH)
        batches = frame_snapshot(sid, image_to_records(self.ctl.committed_image), timestamp_ms=self.now,
                                 last_contained_timestamp_ms=self.now)
        self.log.create_snapshot(sid, batches)
        return sid


def populated(root: Path, **log_kw: Any) -> MetadataWriter:
    """Three brokers, two topics, a topic config, a broker default config and an ACL."""
    w = MetadataWriter(root, **log_kw)
    for bid, rack in ((1, "r1"), (2, "r2"), (3, "r1")):
        w.register(bid, rack)
    for bid in (1, 2, 3):
        w.unfence(bid)
    w.create_topic("orders", 3, 2, {"cleanup.policy": "compact"})
    w.create_topic("payments", 1, 3)
    retention = iacq.AlterableConfig("log.retention.ms", 0, "86400000")
    w.run(iacq.IncrementalAlterConfigsRequest(resources=[iacq.AlterConfigsResource(
        resource_type=4, resource_name="", configs=[retention])]))
    resp = w.run(caq.CreateAclsRequest(creations=[caq.AclCreation(2, "orders", 3, "User:alice", "*", 3, 3)]))
    assert resp.results[0].error_code == 0, resp
    return w
