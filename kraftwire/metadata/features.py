"""Finalized features: metadata.version levels, record versions per level, bootstrap records.

The metadata.version numbers are Kafka's (``MetadataVersion`` in Kafka 3.9): each level names the
release whose metadata layout it enables. kraftwire writes and reads levels 1 ... 21 (3.9-IV0).
"""

from __future__ import annotations

from dataclasses import dataclass

from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.metadata import RECORD_TYPES, MetadataRecord

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
GROUP_VERSION = "group.version"
TRANSACTION_VERSION = "transaction.version"

#: metadata.version level -> Kafka's IBP name.
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2",
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0",
}
MINIMUM_KRAFT_LEVEL = 1           # 3.0-IV1: what a broker that sends no range is assumed to support
MINIMUM_BOOTSTRAP_LEVEL = 4       # 3.3-IV0: the oldest level `storage format` accepts
LATEST_LEVEL = 21                 # 3.9-IV0
DEFAULT_LEVEL = LATEST_LEVEL

# Levels at which Kafka changed behaviour that this controller mirrors.
MV_BROKER_REGISTRATION_CHANGE = 6   # 3.3-IV2: BrokerRegistrationChangeRecord replaces Fence/Unfence
MV_IN_CONTROLLED_SHUTDOWN = 7       # 3.3-IV3: registrations carry in_controlled_shutdown
MV_MIGRATION = 8                    # 3.4-IV0
MV_NO_ISR_SHRINK_EPOCH_BUMP = 12    # 3.6-IV0: ISR shrinks no longer bump the leader epoch
MV_CONTROLLER_REGISTRATION = 15     # 3.7-IV0
MV_DIRECTORY_ASSIGNMENT = 17        # 3.7-IV2: log directories in registrations and partitions

#: Features this controller can finalize and the levels it supports (inclusive).
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {
    METADATA_VERSION: (MINIMUM_KRAFT_LEVEL, LATEST_LEVEL),
    KRAFT_VERSION: (0, 0),   # 1 (KIP-853 dynamic quorums) is not built yet: never advertise it
    GROUP_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
}


def metadata_version_name(level: int) -> str:
    return METADATA_VERSIONS.get(level, f"unknown({level})")


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
        return 1 if self.level >= MV_DIRECTORY_ASSIGNMENT else 0

    @property
    def partition_change(self) -> int:
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
    finalized features (level 0 entries are skipped: 0 means "not finalized").
    """
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
METADATA_CHANGED: frozenset[int] = frozenset({1, 3, 5, 6, 7, 8, 11, 13, 14, 15, 17})


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
