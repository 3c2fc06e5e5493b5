"""Committed metadata batches → the latest image, for replicas that only follow the log (brokers).

The standby side of a controller without the controller: offsets already applied are skipped (a
snapshot or a redelivery), metadata transactions are honoured by ``ImageLoader``, and a snapshot
replaces the state. What a snapshot of the result needs (``committed_image``, ``committed_offset``,
``in_transaction``) is named as on ``QuorumController``, so both feed the same snapshot steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraftwire.metadata.fast import replay_value
from kraftwire.metadata.image import EMPTY_IMAGE, ImageLoader, MetadataImage


class MetadataLoader:
    """The image after every committed record replayed so far."""

    def __init__(self, image: MetadataImage = EMPTY_IMAGE, offset: int = -1) -> None:
        self._loader = ImageLoader(image)
        self._offset = offset

    @property
    def committed_image(self) -> MetadataImage:
        return self._loader.image

    @property
    def committed_offset(self) -> int:
        """Offset of the last record replayed (-1 before any)."""
        return self._offset

    @property
    def in_transaction(self) -> bool:
        return self._loader.in_transaction

    @property
    def committed_features(self) -> dict[str, int]:
        """Finalized feature levels replayed so far (without freezing a pending image)."""
        return self._loader.features

    def replay_batches(self, batches: Iterable[Any]) -> None:
        """Replay committed v2 batches of metadata records; raises MetadataReplayError/DecodeError."""
        loader = self._loader
        for batch in batches:
            base = batch.base_offset
            for i, rec in enumerate(batch.records):
                offset = base + i
                if offset <= self._offset:
                    continue
                if rec.value is not None:
                    replay_value(loader, rec.value)
                self._offset = offset

    def load_snapshot(self, image: MetadataImage, end_offset: int) -> None:
        """Replace the state with a snapshot's image (covering offsets below ``end_offset``)."""
        self._loader = ImageLoader(image)
        self._offset = end_offset - 1
