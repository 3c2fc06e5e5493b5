"""Shared controller types: configuration, command results, command errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.metadata import MetadataRecord


@dataclass(slots=True)
class ControllerConfig:
    """Controller settings (Kafka property names in comments)."""

    node_id: int = 0                              # node.id
    cluster_id: str = ""                          # meta.properties cluster.id ("" = don't check)
    session_timeout_ms: int = 9000                # broker.session.timeout.ms
    max_idle_interval_ms: int = 500               # metadata.max.idle.interval.ms (NoOpRecord; 0 = off)
    default_num_partitions: int = 1               # num.partitions
    default_replication_factor: int = 1           # default.replication.factor
    producer_id_block_size: int = 1000
    auto_leader_rebalance: bool = True            # auto.leader.rebalance.enable
    leader_imbalance_check_interval_ms: int = 300_000   # leader.imbalance.check.interval.seconds
    max_elections_per_rebalance: int = 1000
    static_broker_configs: dict[str, str] = field(default_factory=dict)
    quorum_node_ids: tuple[int, ...] = ()         # controller.quorum.voters (UpdateFeatures checks they registered)
    token_secret_key: str | None = None           # delegation.token.secret.key (None: tokens disabled)
    token_max_lifetime_ms: int = 7 * 24 * 3600 * 1000    # delegation.token.max.lifetime.ms
    token_renew_ms: int = 24 * 3600 * 1000        # delegation.token.expiry.time.ms
    token_expiry_check_interval_ms: int = 3600 * 1000    # delegation.token.expiry.check.interval.ms


@dataclass(slots=True)
class ControllerResult:
    """What a command produced.

    Append ``records`` (as one batch when ``atomic``) in order; they get consecutive offsets from the
    offset the controller was told (see QuorumController.next_offset). Send ``response`` once the
    committed offset reaches ``commit_offset`` (-1: send at once — errors, or nothing to wait for).
    """

    records: list[MetadataRecord]
    response: Any
    commit_offset: int = -1
    atomic: bool = True


class CommandError(Exception):
    """Aborts a command: the whole request fails with ``code`` (top-level error)."""

    def __init__(self, code: Errors, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message
