"""Whether a node can follow the committed metadata: a finalized level it lacks parks it, never stops it.

A node that meets a metadata.version it does not support keeps running: it stops applying the log
at that point ("parks"), logs one line naming the level and the release that needs it
(``features.unsupported_reason``), and is then a fenced broker or a voter that never activates its
controller. Records it cannot decode after such a level are part of the same story, so the level is
also read from the failing batches themselves, skipping records that do not decode. Other feature
levels it lacks (say eligible.leader.replicas.version 1 on a kraftwire voter) do not change the
records' layout: replay goes on, and only activation is refused (``unsupported``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kraftwire.metadata.features import METADATA_VERSION, unsupported_reason
from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.metadata import decode_record


def finalized_levels(batches: Iterable[Any]) -> dict[str, int]:
    """Feature levels set by the FeatureLevelRecords of ``batches`` (last wins; undecodable records skipped)."""
    out: dict[str, int] = {}
    for batch in batches:
        if getattr(batch, "control", False):
            continue
        for rec in batch.records:
            if rec.value is None:
                continue
            try:
                msg = decode_record(rec.value).message
            except KafkaProtocolError:
                continue
            if type(msg) is FeatureLevelRecord:
                out[msg.name] = msg.feature_level
    return out


def park_reason(features: Mapping[str, int], batches: Iterable[Any] = (),
                supported: dict[str, tuple[int, int]] | None = None) -> str | None:
    """Why a node holding ``features`` and meeting ``batches`` must stop following the log, or None.

    Only metadata.version parks a node: it alone decides the layout of the records that follow.
    """
    levels = dict(features)
    levels.update(finalized_levels(batches))
    level = levels.get(METADATA_VERSION, 0)
    return unsupported_reason({METADATA_VERSION: level}, supported) if level else None
