"""Settings of the group coordinator (Kafka's ``group.*`` / ``offsets.*`` broker configs)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID


def metadata_topic_name(topic_id: uuid.UUID) -> str | None:
    """Topic ids a kraftwire coordinator resolves (OffsetCommit/OffsetFetch v10): the metadata topic's."""
    return METADATA_TOPIC if topic_id == METADATA_TOPIC_ID else None


def metadata_topic_id(name: str) -> uuid.UUID | None:
    return METADATA_TOPIC_ID if name == METADATA_TOPIC else None


def metadata_partition_only(topic: str, partition: int) -> bool:
    """The only partition a kraftwire node serves: ``__cluster_metadata``-0."""
    return topic == METADATA_TOPIC and partition == 0


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Coordinator settings; defaults are Kafka 3.9's.

    ``host``/``port`` are what FindCoordinator answers for this node. ``partition_exists`` decides which
    committed partitions are accepted (others get UNKNOWN_TOPIC_OR_PARTITION).
    """

    host: str = "localhost"
    port: int = 9092
    initial_rebalance_delay_ms: int = 3000          # group.initial.rebalance.delay.ms
    min_session_timeout_ms: int = 6000              # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000         # group.max.session.timeout.ms
    max_group_size: int = 2**31 - 1                 # group.max.size
    new_member_join_timeout_ms: int = 300_000       # fixed in Kafka (NewMemberJoinTimeoutMs)
    offset_metadata_max_bytes: int = 4096           # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    partition_exists: Callable[[str, int], bool] = field(default=metadata_partition_only)
    topic_name: Callable[[uuid.UUID], str | None] = field(default=metadata_topic_name)
    topic_id: Callable[[str], uuid.UUID | None] = field(default=metadata_topic_id)

    @classmethod
    def from_properties(cls, props: Mapping[str, object], *, host: str, port: int,
                        partition_exists: Callable[[str, int], bool] = metadata_partition_only) -> GroupConfig:
        """Build from Kafka-named properties (missing keys keep the defaults)."""
        def get(name: str, default: int) -> int:
            v = props.get(name)
            return default if v is None or v == "" else int(str(v))

        d = cls()
        return cls(
            host=host, port=port,
            initial_rebalance_delay_ms=get("group.initial.rebalance.delay.ms", d.initial_rebalance_delay_ms),
            min_session_timeout_ms=get("group.min.session.timeout.ms", d.min_session_timeout_ms),
            max_session_timeout_ms=get("group.max.session.timeout.ms", d.max_session_timeout_ms),
            max_group_size=get("group.max.size", d.max_group_size),
            offset_metadata_max_bytes=get("offset.metadata.max.bytes", d.offset_metadata_max_bytes),
            offsets_retention_ms=get("offsets.retention.minutes", d.offsets_retention_ms // 60_000) * 60_000,
            offsets_retention_check_interval_ms=get("offsets.retention.check.interval.ms",
                                                    d.offsets_retention_check_interval_ms),
            partition_exists=partition_exists,
        )
