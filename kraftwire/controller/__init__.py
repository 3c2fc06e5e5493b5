"""kraftwire.controller: the sans-I/O KRaft quorum controller and its metadata image."""

from kraftwire.controller.controller import QuorumController, Session
from kraftwire.controller.features import bootstrap_records
from kraftwire.controller.image import (
    EMPTY_IMAGE,
    ImageLoader,
    MetadataDelta,
    MetadataImage,
    MetadataReplayError,
)
from kraftwire.controller.result import ControllerConfig, ControllerResult
from kraftwire.controller.snapshot import SnapshotPolicy, image_to_records

__all__ = [
    "EMPTY_IMAGE", "ControllerConfig", "ControllerResult", "ImageLoader", "MetadataDelta",
    "MetadataImage", "MetadataReplayError", "QuorumController", "Session", "SnapshotPolicy",
    "bootstrap_records", "image_to_records",
]
