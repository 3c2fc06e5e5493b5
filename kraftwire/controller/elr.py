"""Eligible leader replicas (KIP-966) around the partition builder: when they are on, min ISR, and the
config records Kafka 4.1 writes with them (ClearElrRecord, the cluster-level min.insync.replicas)."""

from __future__ import annotations

from typing import Any

from kraftwire.metadata.features import ELR_VERSION, wrap
from kraftwire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from kraftwire.protocol.messages.clear_elr_record import ClearElrRecord
from kraftwire.protocol.messages.config_record import ConfigRecord
from kraftwire.protocol.metadata import MetadataRecord

MIN_ISR = "min.insync.replicas"
DEFAULT_MIN_ISR = "1"


def elr_enabled(image: MetadataImage) -> bool:
    """Kafka's isElrFeatureEnabled: eligible.leader.replicas.version is finalized at 1 or more."""
    return image.features.get(ELR_VERSION, 0) >= 1


def static_min_isr(static: dict[str, str]) -> int:
    """The controller's static min.insync.replicas (server.properties), Kafka's default 1."""
    try:
        return max(1, int(static.get(MIN_ISR, DEFAULT_MIN_ISR)))
    except ValueError:
        return 1


def topic_min_isr(image: MetadataImage, topic: str, replication_factor: int, static: dict[str, str],
                  node_id: int = -1) -> int:
    """Kafka's getTopicEffectiveMinIsr: topic, then this controller's node, then the cluster default,
    then the static config; never above the replication factor."""
    configs = image.configs
    for key in ((TOPIC_RESOURCE, topic), (BROKER_RESOURCE, str(node_id)), (BROKER_RESOURCE, "")):
        value = configs.get(key, {}).get(MIN_ISR)
        if value is not None:
            try:
                level = int(value)
            except ValueError:
                continue
            return min(level, replication_factor) if replication_factor else level
    level = static_min_isr(static)
    return min(level, replication_factor) if replication_factor else level


def change_options(image: MetadataImage, topic: Any, static: dict[str, str], node_id: int = -1) -> dict[str, Any]:
    """Keyword arguments of ``build_change`` for one topic: ELR on/off and its min ISR, and which replicas'
    directories are online (KIP-858, ``directories.online_check``)."""
    from kraftwire.controller.directories import online_check

    online = online_check(image)
    opts: dict[str, Any] = {} if online is None else {"dir_online": online}
    if not elr_enabled(image):
        return opts
    first = topic.partitions.get(0)
    rf = len(first.replicas) if first is not None else 0
    return {**opts, "elr": True, "min_isr": topic_min_isr(image, topic.name, rf, static, node_id)}


def clear_elr_records(image: MetadataImage, records: list[MetadataRecord]) -> list[MetadataRecord]:
    """ClearElrRecords for each min.insync.replicas change among ``records`` (while ELR is on): a topic's
    clears that topic, a broker-level one every topic."""
    if not elr_enabled(image):
        return []
    out: list[MetadataRecord] = []
    for r in records:
        msg = r.message
        if type(msg) is ConfigRecord and msg.name == MIN_ISR:
            if msg.resource_type == TOPIC_RESOURCE:
                out.append(wrap(ClearElrRecord(topic_name=msg.resource_name)))
            else:
                out.append(wrap(ClearElrRecord(topic_name="")))
    return out


def min_isr_change_error(image: MetadataImage, rtype: int, rname: str, value: str | None) -> str | None:
    """Kafka refuses, while ELR is on, a per-broker min.insync.replicas and removing the cluster one."""
    if rtype != BROKER_RESOURCE or not elr_enabled(image):
        return None
    if rname:
        return f"Broker-level {MIN_ISR} cannot be altered while ELR is enabled."
    if value is None:
        return f"Cluster-level {MIN_ISR} cannot be removed while ELR is enabled."
    return None


def safety_records(image: MetadataImage, static: dict[str, str]) -> list[MetadataRecord]:
    """Kafka's maybeGenerateElrSafetyRecords, written before ELR is turned on: a cluster-level
    min.insync.replicas (the static value) if none is set, and no broker-level ones."""
    out: list[MetadataRecord] = []
    if MIN_ISR not in image.configs.get((BROKER_RESOURCE, ""), {}):
        out.append(cluster_min_isr_record(static))
    for (rtype, rname), kv in sorted(image.configs.items()):
        if rtype == BROKER_RESOURCE and rname and MIN_ISR in kv:
            out.append(wrap(ConfigRecord(resource_type=BROKER_RESOURCE, resource_name=rname, name=MIN_ISR,
                                         value=None)))
    return out


def cluster_min_isr_record(static: dict[str, str]) -> MetadataRecord:
    """The cluster-level min.insync.replicas Kafka writes at activation when the bootstrap turns ELR on."""
    return wrap(ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="", name=MIN_ISR,
                             value=str(static_min_isr(static))))
