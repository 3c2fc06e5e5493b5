"""metadata.version levels 4 ... 27 (3.3-IV0 ... 4.1-IV1): bootstrap, record versions, replay, features."""

from __future__ import annotations

import uuid

import pytest

from kraftwire.metadata import image_to_records
from kraftwire.metadata.features import (
    BROKER_SUPPORTED_FEATURES,
    LATEST_LEVEL,
    METADATA_VERSIONS,
    MINIMUM_BOOTSTRAP_LEVEL,
    SUPPORTED_FEATURES,
    RecordVersions,
    bootstrap_records,
    default_feature_levels,
    metadata_changed_between,
    metadata_version_name,
    unsupported_reason,
)
from kraftwire.metadata.image import EMPTY_IMAGE, MetadataReplayError, Partition
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import update_features_request as ufq
from kraftwire.protocol.messages.clear_elr_record import ClearElrRecord
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.messages.topic_record import TopicRecord
from kraftwire.protocol.metadata import decode_record, encode_record

from .harness import Harness

LEVELS = range(MINIMUM_BOOTSTRAP_LEVEL, LATEST_LEVEL + 1)


def test_kafka_41_levels_and_names() -> None:
    assert LATEST_LEVEL == 27 and METADATA_VERSIONS[27] == "4.1-IV1"
    assert [METADATA_VERSIONS[v] for v in range(22, 28)] == [
        "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1"]
    assert metadata_version_name(28) == "4.2-IV0" and metadata_version_name(99) == "unknown(99)"
    # 4.0-IV1 changed the layout (PartitionRecord/PartitionChangeRecord v2): no safe downgrade across it
    assert metadata_changed_between(27, 22) and not metadata_changed_between(27, 23)


def test_record_versions_per_level() -> None:
    assert [RecordVersions(v).partition for v in (16, 17, 22, 23, 27)] == [0, 1, 1, 2, 2]
    assert [RecordVersions(v).partition_change for v in (16, 17, 22, 23, 27)] == [0, 1, 1, 2, 2]
    assert RecordVersions(27).register_broker == 3


def test_default_feature_levels_follow_kafka_41() -> None:
    # Kafka 4.1's Feature.defaultLevel at 3.9-IV0, 4.0-IV0, 4.0-IV2 and 4.1-IV0/IV1
    assert default_feature_levels(21) == {"kraft.version": 1, "group.version": 0, "transaction.version": 0,
                                          "eligible.leader.replicas.version": 0, "share.version": 0,
                                          "streams.version": 0}
    assert default_feature_levels(22)["group.version"] == 1
    assert default_feature_levels(23)["transaction.version"] == 0
    assert default_feature_levels(24)["transaction.version"] == 2
    assert default_feature_levels(25)["eligible.leader.replicas.version"] == 0
    assert default_feature_levels(27)["eligible.leader.replicas.version"] == 1
    assert default_feature_levels(27)["share.version"] == 0 == default_feature_levels(27)["streams.version"]


def test_bootstrap_at_the_default_level_finalizes_the_supported_defaults() -> None:
    recs = bootstrap_records()
    assert [(r.message.name, r.message.feature_level) for r in recs] == [
        ("metadata.version", 27), ("eligible.leader.replicas.version", 1), ("group.version", 1),
        ("transaction.version", 2)]
    # ELR (KIP-966) is Kafka's default from 4.1-IV0, as `kafka-storage.sh format` writes it
    assert SUPPORTED_FEATURES["eligible.leader.replicas.version"] == (0, 1)
    assert BROKER_SUPPORTED_FEATURES["eligible.leader.replicas.version"] == (0, 1)
    assert [(r.message.name, r.message.feature_level) for r in bootstrap_records(25)] == [
        ("metadata.version", 25), ("group.version", 1), ("transaction.version", 2)]
    assert [r.message.name for r in bootstrap_records(21)] == ["metadata.version"]
    with pytest.raises(ValueError):
        bootstrap_records(28)


@pytest.mark.parametrize("mv", LEVELS)
def test_controller_at_every_level(mv: int) -> None:
    """Bootstrap, register, create, shrink an ISR, snapshot, replay: record versions as the level says."""
    h = Harness(mv=mv)
    h.start_brokers(1, 2, 3)
    assert h.image.metadata_version == mv
    assert h.create_topic("t", partitions=2, rf=3).error_code == 0
    want = RecordVersions(mv)
    parts = [r for _, r in h.log if r.type_name == "PartitionRecord"]
    assert parts and all(r.version == want.partition for r in parts)
    leader = h.topic("t").partitions[0].leader
    isr = [b for b in (1, 2, 3) if b != (leader % 3) + 1]
    assert h.alter_partition(leader, "t", 0, isr).error_code == 0
    changes = [r for _, r in h.log if r.type_name == "PartitionChangeRecord"]
    assert changes and all(r.version == want.partition_change for r in changes)
    for _, r in h.log:  # every record decodes back in the version it was written in
        back = decode_record(encode_record(r.message, r.version))
        assert back.version == r.version and back.message == r.message
    replayed = EMPTY_IMAGE.replay_all(r.message for r in image_to_records(h.image))
    assert replayed.features == h.image.features
    assert replayed.topics[h.topic("t").id].partitions == h.topic("t").partitions


def test_upgrade_39_to_41_and_feature_rules() -> None:
    h = Harness(mv=21)
    h.start_brokers(1)
    h.mv = 27  # broker 2 registers with a kraftwire broker's full feature ranges
    h.register(2)
    h.heartbeat(2)

    def upd(**levels: int) -> int:
        keys = [ufq.FeatureUpdateKey(n.replace("_", "."), v, False, 1) for n, v in levels.items()]
        return h.run(ufq.UpdateFeaturesRequest(feature_updates=keys)).error_code

    # broker 1 registered with metadata.version 1-21 only: it blocks the upgrade
    assert upd(metadata_version=27) == Errors.INVALID_UPDATE_VERSION
    h = Harness(mv=21)
    h.mv = 27
    h.start_brokers(1, 2)
    # what `kafka-features.sh upgrade --release-version 4.1-IV1` sends: every feature at its default
    # ELR 1 depends on metadata.version 4.0-IV1 among the proposed levels
    assert upd(metadata_version=22, eligible_leader_replicas_version=1) == Errors.INVALID_UPDATE_VERSION
    assert h.image.metadata_version == 21
    assert upd(metadata_version=27, group_version=1, transaction_version=2,
               eligible_leader_replicas_version=1, share_version=0,
               streams_version=0, some_future_feature=0) == 0
    # unknown features at level 0 are accepted, as Kafka does; turning ELR on sets the cluster min ISR
    assert h.image.features == {"metadata.version": 27, "group.version": 1, "transaction.version": 2,
                                "eligible.leader.replicas.version": 1}
    assert h.image.configs[(4, "")] == {"min.insync.replicas": "1"}
    assert upd(some_future_feature=1) == Errors.INVALID_UPDATE_VERSION
    # 27 -> 23 changes no layout: a safe downgrade; 23 -> 22 crosses PartitionRecord v2
    assert h.run(ufq.UpdateFeaturesRequest(feature_updates=[
        ufq.FeatureUpdateKey("metadata.version", 23, False, 2)])).error_code == 0
    assert h.run(ufq.UpdateFeaturesRequest(feature_updates=[
        ufq.FeatureUpdateKey("metadata.version", 22, False, 2)])).error_code == Errors.INVALID_UPDATE_VERSION


def _image_with_elr():
    tid, other = uuid.uuid4(), uuid.uuid4()
    img = EMPTY_IMAGE.replay_all([
        TopicRecord("a", tid), TopicRecord("b", other),
        PartitionRecord(0, tid, [1, 2, 3], [1], leader=1, partition_epoch=4,
                        eligible_leader_replicas=[2], last_known_elr=[3]),
        PartitionRecord(1, tid, [1, 2, 3], [1, 2, 3], leader=1, partition_epoch=4),
        PartitionRecord(0, other, [1, 2], [1], leader=1, partition_epoch=7, eligible_leader_replicas=[2]),
    ])
    return img, tid, other


def test_clear_elr_record_for_one_topic_and_for_all() -> None:
    img, tid, other = _image_with_elr()
    one = img.replay(ClearElrRecord(topic_name="a"))
    assert one.topics[tid].partitions[0] == Partition((1, 2, 3), (1,), 1, -1, 5)  # cleared, epoch bumped
    assert one.topics[tid].partitions[1] == img.topics[tid].partitions[1]       # no ELR: untouched
    assert one.topics[other].partitions[0].elr == (2,)
    every = img.replay(ClearElrRecord(topic_name=""))
    assert every.topics[other].partitions[0].elr == () and every.topics[other].partitions[0].partition_epoch == 8
    with pytest.raises(MetadataReplayError):
        img.replay(ClearElrRecord(topic_name="missing"))


def test_snapshot_keeps_elr_fields() -> None:
    img, tid, _ = _image_with_elr()
    again = EMPTY_IMAGE.replay_all(r.message for r in image_to_records(img))
    assert again.topics[tid].partitions == img.topics[tid].partitions


def test_unsupported_levels_name_the_release_that_needs_them() -> None:
    assert unsupported_reason({"metadata.version": 27, "group.version": 1, "transaction.version": 2}) is None
    why = unsupported_reason({"metadata.version": 28})
    assert why is not None and "metadata.version 28 (4.2-IV0)" in why and "Apache Kafka 4.2" in why
    assert "4.1-IV1" in why and "\n" not in why
    far = unsupported_reason({"metadata.version": 40})
    assert far is not None and "newer than 4.2" in far
    assert unsupported_reason({"metadata.version": 27, "eligible.leader.replicas.version": 1}) is None
    share = unsupported_reason({"metadata.version": 27, "share.version": 1})
    assert share is not None and share.startswith("share.version 1") and "4.2-IV0" in share
    assert unsupported_reason({"eligible.leader.replicas.version": 1}, BROKER_SUPPORTED_FEATURES) is None
    share = unsupported_reason({"share.version": 1}, BROKER_SUPPORTED_FEATURES)
    assert share is not None and "4.2-IV0" in share


def test_feature_checks_do_not_freeze_a_standby_replay() -> None:
    """Nodes check the committed features after every batch; that must not materialize an image each time."""
    from kraftwire.controller import QuorumController
    from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord

    ctl = QuorumController()
    ctl.replay(0, FeatureLevelRecord(name="metadata.version", feature_level=28))
    ctl.replay(1, TopicRecord("t", uuid.uuid4()))
    assert ctl.committed_features == {"metadata.version": 28}
    assert ctl._loader._delta is not None, "reading the features froze the pending delta"
    why = ctl.unsupported()
    assert why is not None and "4.2-IV0" in why
    assert ctl.committed_image.metadata_version == 28 and ctl.committed_image.topic_by_name("t") is not None


def test_update_features_v2_answers_without_per_feature_results() -> None:
    from kraftwire.protocol.messages.update_features_response import UpdateFeaturesResponse

    h = Harness(mv=21)
    h.mv = 27
    h.start_brokers(1)
    ok = h.run(ufq.UpdateFeaturesRequest(feature_updates=[ufq.FeatureUpdateKey("metadata.version", 22, False, 1)]), 2)
    back = UpdateFeaturesResponse.decode(ok.encode(2), 2)
    assert (back.error_code, back.results) == (0, []) and h.image.metadata_version == 22
    bad = h.run(ufq.UpdateFeaturesRequest(feature_updates=[ufq.FeatureUpdateKey("kraft.version", 1, False, 1)]), 2)
    back = UpdateFeaturesResponse.decode(bad.encode(2), 2)
    assert back.error_code == Errors.INVALID_UPDATE_VERSION and "kraft.version" in back.error_message
