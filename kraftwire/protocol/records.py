"""Kafka v2 record batches (magic 2): the unit the metadata log stores and Fetch carries.

The dataclasses here are what the Raft core, storage and the network shell exchange; encoding
and decoding to Kafka's exact bytes lives in this module too.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch. Metadata records carry only a value; control records a key too."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_delta: int = 0


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A v2 batch: records with consecutive offsets from ``base_offset``, written in one leader epoch."""

    base_offset: int
    leader_epoch: int
    records: tuple[Record, ...]
    control: bool = False
    base_timestamp: int = 0
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False
    compression: int = 0
    raw: bytes | None = field(default=None, compare=False, repr=False)

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)
