"""A Kafka broker downloads the metadata snapshot from a kraftwire controller (KIP-630 FetchSnapshot).

A kraftwire controller that snapshots and cleans its metadata log often serves a Kafka broker that starts
after the log start moved past 0: the broker's first Fetch is answered with the latest SnapshotId, it
downloads the snapshot with FetchSnapshot (chunks read by kraftwire's shell off the event loop), loads
it, and knows every topic created before it started. Runs at every release under ../shared/kafka."""

from __future__ import annotations

import pytest

from compat.interop import release_levels
from compat.kafka import BROKER_PORT, CONTROLLER_PORT, KafkaNode, KraftwireNode, wait_for
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

# a snapshot every few hundred bytes of records, the log cleaned below it at once
CLEAN_OFTEN = {"metadata.log.segment.bytes": "600", "metadata.log.max.record.bytes.between.snapshots": "600",
               "metadata.max.retention.bytes": "0", "metadata.max.idle.interval.ms": "0"}


def _log_start(node: KraftwireNode) -> int:
    """The base offset of the controller's oldest metadata segment (0 while nothing was cleaned)."""
    bases = [int(p.stem) for p in node.metadata_dir.glob("*.log")]
    return min(bases) if bases else 0


def test_kafka_broker_starting_late_downloads_the_kraftwire_snapshot(kafka_dist, tmp_path):
    from confluent_kafka.admin import AdminClient

    with Fleet(tmp_path) as fleet:
        chost, first_host, late_host = fleet.hosts(3)
        voters = [(1, chost, CONTROLLER_PORT)]
        ctl = fleet.add(KraftwireNode(tmp_path, 1, "controller", chost, voters, props=CLEAN_OFTEN))
        fleet.watch("kraftwire controller", ctl.log_path)
        cluster = random_uuid()
        level, _ = release_levels(kafka_dist)   # the release's own metadata.version (3.7 knows no 4.1 level)
        fleet.start(ctl, cluster, level)
        fleet.start(KafkaNode(kafka_dist, tmp_path, 2, "broker", first_host, voters), cluster, level)

        topics = ["before-a", "before-b"]   # some hundred partition records: several snapshots, the log cleaned
        for topic in topics:
            rc, out = kafka_dist.run("kafka-topics.sh", ["--bootstrap-server", f"{first_host}:{BROKER_PORT}", "--create",
                                                         "--topic", topic, "--partitions", "100"], timeout_s=90)
            assert rc == 0, out
        wait_for(lambda: _log_start(ctl) > 0, 60, "the kraftwire controller cleaning its log below a snapshot")

        late = fleet.start(KafkaNode(kafka_dist, tmp_path, 3, "broker", late_host, voters), cluster, level)
        late_admin = AdminClient({"bootstrap.servers": f"{late_host}:{BROKER_PORT}"})
        wait_for(lambda: all(len(getattr(late_admin.list_topics(timeout=10).topics.get(t), "partitions", {})) == 100
                             for t in topics), 60, "the late broker knowing every topic and partition")
        downloaded = sorted(p.name for p in late.metadata_dir.glob("*.checkpoint"))
        assert downloaded, "the late broker's metadata came as a snapshot (FetchSnapshot), not from offset 0"
        assert "Traceback" not in ctl.log_text() and late.running()
