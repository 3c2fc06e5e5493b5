"""Finalized features: metadata.version levels, record versions per level, bootstrap records.

The metadata.version numbers are Kafka's (``MetadataVersion`` in Kafka 4.1): each level names the
release whose metadata layout it enables. kraftwire writes and reads levels 1 ... 27 (4.1-IV1).
Levels Kafka defines beyond that (``LATER_RELEASES``) are only named, so that a node meeting one can
say which release needs it (``unsupported_reason``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.metadata import RECORD_TYPES, MetadataRecord

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
# UpdateFeatures kraft.version 0 -> 1 (Kafka 4.x upgrades a static quorum through its Raft leader) is not built:
# a dynamic quorum is formatted with --standalone / --initial-controllers.
KRAFT_VERSION_UPGRADE = False
GROUP_VERSION = "group.version"
TRANSACTION_VERSION = "transaction.version"
ELR_VERSION = "eligible.leader.replicas.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

#: metadata.version level -> Kafka's IBP name.
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2",
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
    25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1",
}
#: Levels Kafka 4.1 defines but does not ship as production ones (4.2's), named for error messages.
LATER_RELEASES: dict[int, str] = {28: "4.2-IV0", 29: "4.2-IV1"}
MINIMUM_KRAFT_LEVEL = 1           # 3.0-IV1: what a broker that sends no range is assumed to support
MINIMUM_BOOTSTRAP_LEVEL = 4       # 3.3-IV0: the oldest level `storage format` accepts
LATEST_LEVEL = 27                 # 4.1-IV1
DEFAULT_LEVEL = LATEST_LEVEL

# Levels at which Kafka changed behaviour that this controller mirrors.
MV_BROKER_REGISTRATION_CHANGE = 6   # 3.3-IV2: BrokerRegistrationChangeRecord replaces Fence/Unfence
MV_IN_CONTROLLED_SHUTDOWN = 7       # 3.3-IV3: registrations carry in_controlled_shutdown
MV_MIGRATION = 8                    # 3.4-IV0
MV_NO_ISR_SHRINK_EPOCH_BUMP = 12    # 3.6-IV0: ISR shrinks no longer bump the leader epoch
MV_CONTROLLER_REGISTRATION = 15     # 3.7-IV0
MV_DIRECTORY_ASSIGNMENT = 17        # 3.7-IV2: log directories in registrations and partitions
MV_ELR = 23                         # 4.0-IV1: PartitionRecord/PartitionChangeRecord v2 (ELR fields)

#: Features this controller can finalize and the levels it supports (inclusive). Features missing
#: here are supported at level 0 only, as Kafka treats features it does not know.
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (MINIMUM_KRAFT_LEVEL, LATEST_LEVEL),
    KRAFT_VERSION: (0, 1),   # 1: KIP-853 dynamic quorums (voter changes: raft/reconfig.py)
    GROUP_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
    ELR_VERSION: (0, 1),
    SHARE_VERSION: (0, 0),
    STREAMS_VERSION: (0, 0),
}

#: What a kraftwire broker registers (the same ranges: it hosts no partition data, so ELRs, which
#: constrain the controller's elections and the data leaders' high watermarks, ask nothing more of it).
BROKER_SUPPORTED_FEATURES: dict[str, tuple[int, int]] = dict(SUPPORTED_FEATURES)

#: Kafka 4.1's feature dependencies: (feature, level) -> the metadata.version level it needs.
FEATURE_DEPENDENCIES: dict[tuple[str, int], int] = {(ELR_VERSION, 1): MV_ELR}

#: Kafka 4.1's Feature.defaultLevel: the level `kafka-storage.sh format` and `kafka-features.sh
#: upgrade --release-version` pick for each feature at a metadata.version: (feature, from level, value).
_DEFAULTS: tuple[tuple[str, int, int], ...] = (
    (KRAFT_VERSION, 21, 1), (GROUP_VERSION, 22, 1), (TRANSACTION_VERSION, 24, 2), (ELR_VERSION, 26, 1),
    (SHARE_VERSION, 28, 1), (STREAMS_VERSION, 29, 1),
)
#: The release (metadata.version level) that introduced each feature level, for messages.
FEATURE_RELEASES: dict[tuple[str, int], int] = {
    (KRAFT_VERSION, 1): 21, (GROUP_VERSION, 1): 22, (TRANSACTION_VERSION, 1): 24, (TRANSACTION_VERSION, 2): 24,
    (ELR_VERSION, 1): 26, (SHARE_VERSION, 1): 28, (STREAMS_VERSION, 1): 29,
}


def metadata_version_name(level: int) -> str:
    return METADATA_VERSIONS.get(level) or LATER_RELEASES.get(level) or f"unknown({level})"


def default_feature_levels(metadata_version: int) -> dict[str, int]:
    """Kafka 4.1's default level of every feature (but metadata.version) at ``metadata_version``."""
    out = {name: 0 for name, _, _ in _DEFAULTS}
    for name, since, level in _DEFAULTS:
        if metadata_version >= since:
            out[name] = level
    return out


def _release(level: int) -> str:
    """The Apache Kafka release a metadata.version level first appears in."""
    name = METADATA_VERSIONS.get(level) or LATER_RELEASES.get(level)
    if name is None:
        return f"an Apache Kafka release newer than {LATER_RELEASES[max(LATER_RELEASES)].split('-')[0]}"
    return f"Apache Kafka {name.split('-')[0]} ({name})"


def unsupported_reason(features: dict[str, int], supported: dict[str, tuple[int, int]] | None = None) -> str | None:
    """One line naming a finalized feature level outside ``supported`` and the release that needs it."""
    supported = SUPPORTED_FEATURES if supported is None else supported
    for name, level in sorted(features.items(), key=lambda kv: kv[0] != METADATA_VERSION):
        lo, hi = supported.get(name, (0, 0))
        if lo <= level <= hi:
            continue
        if name == METADATA_VERSION:
            return (f"metadata.version {level} ({metadata_version_name(level)}) is finalized; it needs "
                    f"{_release(level)}, and this kraftwire supports metadata.version {lo}-{hi} "
                    f"(up to {metadata_version_name(hi)}): upgrade kraftwire or keep the cluster at "
                    f"{metadata_version_name(hi)}")
        since = FEATURE_RELEASES.get((name, level))
        needs = _release(since) if since is not None else "a newer release"
        return (f"{name} {level} is finalized; it comes with {needs}, and this kraftwire supports {name} "
                f"{lo}-{hi}: downgrade the feature (kafka-features.sh downgrade --feature {name}={hi}) "
                f"or run nodes that support it")
    return None


@dataclass(frozen=True, slots=True)
class RecordVersions:
    """Which version of each versioned record a metadata.version level writes."""

    level: int

    @property
    def register_broker(self) -> int:
        if self.level >= MV_DIRECTORY_ASSIGNMENT:
            return 3
        if self.level >= MV_MIGRATION:
            return 2
        return 1 if self.level >= MV_IN_CONTROLLED_SHUTDOWN else 0

    @property
    def partition(self) -> int:
        if self.level >= MV_ELR:
            return 2
        return 1 if self.level >= MV_DIRECTORY_ASSIGNMENT else 0

    @property
    def partition_change(self) -> int:
        if self.level >= MV_ELR:
            return 2
        return 1 if self.level >= MV_DIRECTORY_ASSIGNMENT else 0

    @property
    def registration_changes(self) -> bool:
        return self.level >= MV_BROKER_REGISTRATION_CHANGE

    @property
    def in_controlled_shutdown(self) -> bool:
        return self.level >= MV_IN_CONTROLLED_SHUTDOWN

    @property
    def directories(self) -> bool:
        return self.level >= MV_DIRECTORY_ASSIGNMENT

    @property
    def epoch_bump_on_isr_shrink(self) -> bool:
        return self.level < MV_NO_ISR_SHRINK_EPOCH_BUMP


def wrap(message: object, version: int = 0) -> MetadataRecord:
    """A generated record object as a (type id, version, message) frame ready to append."""
    return MetadataRecord(RECORD_TYPES[type(message).__name__], version, message)


def bootstrap_records(
    metadata_version: int = DEFAULT_LEVEL, features: dict[str, int] | None = None
) -> list[MetadataRecord]:
    """The records `storage format` writes into the bootstrap checkpoint (and the first leader commits).

    metadata.version comes first, as Kafka's BootstrapMetadata requires; ``features`` adds other
    finalized features (level 0 entries are skipped: 0 means "not finalized"). Without ``features``,
    each feature this controller supports gets Kafka's default level for ``metadata_version``, capped
    at what it supports (kraft.version is not a FeatureLevelRecord: KRaftVersionRecord carries it).
    """
    if features is None:
        features = {name: min(level, SUPPORTED_FEATURES.get(name, (0, 0))[1])
                    for name, level in default_feature_levels(metadata_version).items() if name != KRAFT_VERSION}
    if not MINIMUM_BOOTSTRAP_LEVEL <= metadata_version <= LATEST_LEVEL:
        raise ValueError(
            f"metadata.version {metadata_version} is outside {MINIMUM_BOOTSTRAP_LEVEL}..{LATEST_LEVEL}"
        )
    out = [wrap(FeatureLevelRecord(name=METADATA_VERSION, feature_level=metadata_version))]
    for name, level in sorted((features or {}).items()):
        if name == METADATA_VERSION:
            continue
        lo, hi = SUPPORTED_FEATURES.get(name, (0, -1))
        if not lo <= level <= hi:
            raise ValueError(f"feature {name} level {level} is not supported")
        if level:
            out.append(wrap(FeatureLevelRecord(name=name, feature_level=level)))
    return out

#: Levels whose layout differs from the level below (Kafka's didMetadataChange); downgrades across
#: them could lose information and are refused.
METADATA_CHANGED: frozenset[int] = frozenset({1, 3, 5, 6, 7, 8, 11, 13, 14, 15, 17, 23})


def metadata_changed_between(a: int, b: int) -> bool:
    lo, hi = sorted((a, b))
    return any(v in METADATA_CHANGED for v in range(lo + 1, hi + 1))


def parse_release_version(text: str) -> int:
    """A Kafka release name as ``kafka-storage.sh format --release-version`` takes it → metadata.version level.

    ``3.7-IV4`` names one level; ``3.7`` (or ``3.7.0``) the newest level of that release, as Kafka's
    ``MetadataVersion.fromVersionString`` does. Raises ValueError naming the known releases.
    """
    name = text.strip().upper()
    by_name = {v.upper(): k for k, v in METADATA_VERSIONS.items()}
    if name in by_name:
        return by_name[name]
    parts = name.split(".")
    if "-" not in name and len(parts) in (2, 3) and all(p.isdigit() for p in parts):
        release = f"{int(parts[0])}.{int(parts[1])}-"
        levels = [k for k, v in METADATA_VERSIONS.items() if v.startswith(release)]
        if levels:
            return max(levels)
    raise ValueError(f"unknown release version {text!r}: kraftwire knows {METADATA_VERSIONS[MINIMUM_KRAFT_LEVEL]} "
                     f"... {METADATA_VERSIONS[LATEST_LEVEL]} (e.g. 3.7-IV4, or 3.7 for that release's newest)")
