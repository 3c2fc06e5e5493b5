"""kraftwire.metadata: the metadata image every role builds from ``__cluster_metadata``.

The image and its delta (``image``), metadata.version and feature levels (``features``), what a
node does about levels it lacks (``support``), and the image ↔ records writer with the snapshot and
retention policies (``snapshot``). The controller,
brokers, security and analytics import these from here; nothing here imports a role.
"""

from kraftwire.metadata.features import bootstrap_records
from kraftwire.metadata.image import (
    EMPTY_IMAGE,
    ImageLoader,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
)
from kraftwire.metadata.snapshot import SnapshotPolicy, image_to_records

__all__ = [
    "EMPTY_IMAGE", "ImageLoader", "MetadataDelta", "MetadataImage", "MetadataReplayError", "SnapshotPolicy",
    "bootstrap_records", "image_to_records",
]
