"""UpdateFeatures: finalize feature levels (metadata.version upgrades, safe downgrades)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraftwire.controller import elr
from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import (
    ELR_VERSION,
    FEATURE_DEPENDENCIES,
    METADATA_VERSION,
    METADATA_VERSIONS,
    MINIMUM_BOOTSTRAP_LEVEL,
    MINIMUM_KRAFT_LEVEL,
    SUPPORTED_FEATURES,
    metadata_changed_between,
    wrap,
)
from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.feature_level_record import FeatureLevelRecord
from kraftwire.protocol.messages.update_features_response import (
    UpdatableFeatureResult,
    UpdateFeaturesResponse,
)
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def _bad(name: str, level: int, why: str) -> CommandError:
    return CommandError(Errors.INVALID_UPDATE_VERSION, f"invalid update version {level} for feature {name}. {why}")


def _check_nodes(image: MetadataImage, name: str, level: int) -> None:
    default = (MINIMUM_KRAFT_LEVEL, MINIMUM_KRAFT_LEVEL) if name == METADATA_VERSION else (0, 0)
    for b in image.brokers.values():
        lo, hi = b.feature_range(name) or default
        if not lo <= level <= hi:
            raise _bad(name, level, f"Broker {b.id} does not support this feature.")
    for c in image.controllers.values():
        rng = next(((lo, hi) for n, lo, hi in c.features if n == name), default)
        if not rng[0] <= level <= rng[1]:
            raise _bad(name, level, f"Controller {c.id} does not support this feature.")


def _check_dependencies(image: MetadataImage, name: str, level: int, proposed: dict[str, int]) -> None:
    """Kafka's Feature.validateVersion: a level's dependencies hold among the proposed levels."""
    needs = FEATURE_DEPENDENCIES.get((name, level))
    if needs is None:
        return
    mv = proposed.get(METADATA_VERSION, image.features.get(METADATA_VERSION, 0))
    if mv < needs:
        raise _bad(name, level, f"{name} could not be set to {level} because it depends on metadata.version "
                                f"level {needs} ({METADATA_VERSIONS[needs]}).")


def check_update(image: MetadataImage, name: str, level: int, upgrade_type: int,
                 proposed: dict[str, int] | None = None) -> MetadataRecord:
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        raise _bad(name, level, "The controller does not support the given upgrade type.")
    current = image.features.get(name, 0)
    if level < 0:
        raise _bad(name, level, "A feature version cannot be less than 0.")
    lo, hi = SUPPORTED_FEATURES.get(name, (0, 0))  # a feature we do not know: level 0 only, as Kafka
    if not lo <= level <= hi:
        raise _bad(name, level, f"The controller only supports versions {lo}-{hi}.")
    _check_nodes(image, name, level)
    _check_dependencies(image, name, level, proposed or {})
    if level < current and upgrade_type == UPGRADE:
        raise _bad(name, level, "Can't downgrade the version of this feature without setting the "
                                "upgrade type to either safe or unsafe downgrade.")
    if level > current and upgrade_type != UPGRADE:
        raise _bad(name, level, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        if level not in METADATA_VERSIONS:
            raise _bad(name, level, "Unknown metadata.version.")
        if level < MINIMUM_BOOTSTRAP_LEVEL:
            raise _bad(name, level, "Unable to set a metadata.version less than 3.3-IV0.")
        if level < current and metadata_changed_between(current, level):
            if upgrade_type == UNSAFE_DOWNGRADE:
                raise _bad(name, level, "Unsafe metadata downgrade is not supported in this version.")
            raise _bad(name, level, "Refusing to perform the requested downgrade because it might "
                                    "delete metadata information.")
    return wrap(FeatureLevelRecord(name=name, feature_level=level))


def update_features(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[list, Any]:
    """All updates succeed together or the request fails with the first error (as Kafka 3.9)."""
    image = ctl.image
    records = []
    seen: set[str] = set()
    proposed = {u.feature: u.max_version_level for u in req.feature_updates}
    for u in req.feature_updates:
        if u.feature in seen:
            raise CommandError(Errors.INVALID_REQUEST, f"duplicate feature update {u.feature}")
        seen.add(u.feature)
        upgrade_type = u.upgrade_type if version >= 1 else (SAFE_DOWNGRADE if u.allow_downgrade else UPGRADE)
        records.append(check_update(image, u.feature, u.max_version_level, upgrade_type, proposed))
    resp = UpdateFeaturesResponse(error_message=None, results=[
        UpdatableFeatureResult(u.feature, 0, None) for u in req.feature_updates])
    if req.validate_only:
        return [], resp
    if proposed.get(ELR_VERSION, 0) > 0:
        # Kafka writes the ELR safety configs first, in the same atomic batch.
        records = elr.safety_records(image, ctl.config.static_broker_configs) + records
    return records, resp
