"""UpdateFeatures: finalize feature levels (metadata.version upgrades, safe downgrades)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraftwire.controller import elr
from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import (
    ELR_VERSION,
    FEATURE_DEPENDENCIES,
    KRAFT_VERSION_UPGRADE,
    METADATA_VERSION,
    METADATA_VERSIONS,
    MINIMUM_BOOTSTRAP_LEVEL,
    MINIMUM_KRAFT_LEVEL,
    MV_CONTROLLER_REGISTRATION,
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
    return CommandError(Errors.INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. {why}")


def _range_text(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _reason(what: str, level: int, rng: tuple[int, int]) -> str | None:
    """Kafka's ``QuorumFeatures.reasonNotSupported``."""
    lo, hi = rng
    if lo <= level <= hi:
        return None
    return f"{what} does not support this feature." if hi == 0 else f"{what} only supports versions {_range_text(lo, hi)}"


def reason_not_supported(image: MetadataImage, name: str, level: int, node_id: int,
                         quorum_node_ids: tuple[int, ...] = ()) -> str | None:
    """Why ``name`` cannot be finalized at ``level``, checked as Kafka's FeatureControlManager does: this
    controller, every registered broker, then (from 3.7-IV0, when controllers register) every registered
    controller and every voter of ``controller.quorum.voters`` that has not registered."""
    default = (MINIMUM_KRAFT_LEVEL, MINIMUM_KRAFT_LEVEL) if name == METADATA_VERSION else (0, 0)
    why = _reason(f"Local controller {node_id}", level, SUPPORTED_FEATURES.get(name, (0, 0)))
    if why:
        return why
    for b in image.brokers.values():
        why = _reason(f"Broker {b.id}", level, b.feature_range(name) or default)
        if why:
            return why
    if image.features.get(METADATA_VERSION, 0) < MV_CONTROLLER_REGISTRATION:
        return None  # Kafka cannot verify controllers before 3.7-IV0 either
    found = {node_id}
    for c in image.controllers.values():
        if c.id == node_id:
            continue
        rng = next(((lo, hi) for n, lo, hi in c.features if n == name), default)
        why = _reason(f"Controller {c.id}", level, rng)
        if why:
            return why
        found.add(c.id)
    for voter in quorum_node_ids:
        if voter not in found:
            return f"controller {voter} has not registered, and may not support this feature"
    return None


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
                 proposed: dict[str, int] | None = None, node_id: int = 0,
                 quorum_node_ids: tuple[int, ...] = ()) -> MetadataRecord:
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        raise _bad(name, level, "The controller does not support the given upgrade type.")
    if name == "kraft.version" and not KRAFT_VERSION_UPGRADE:
        # Kafka 4.x upgrades it through the Raft leader (KRaftVersionRecord + VotersRecord from the static voters).
        raise _bad(name, level, "kraftwire does not change kraft.version at run time yet (a dynamic quorum is "
                                "formatted with --standalone or --initial-controllers)")
    current = image.features.get(name, 0)
    if level < 0:
        raise _bad(name, level, "A feature version cannot be less than 0.")
    why = reason_not_supported(image, name, level, node_id, quorum_node_ids)
    if why:
        raise _bad(name, level, why)
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


def update_features(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[list[Any], Any]:
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
        records.append(check_update(image, u.feature, u.max_version_level, upgrade_type, proposed,
                                    ctl.config.node_id, ctl.config.quorum_node_ids))
    resp = UpdateFeaturesResponse(error_message=None, results=[
        UpdatableFeatureResult(u.feature, 0, None) for u in req.feature_updates])
    if req.validate_only:
        return [], resp
    if proposed.get(ELR_VERSION, 0) > 0:
        # Kafka writes the ELR safety configs first, in the same atomic batch.
        records = elr.safety_records(image, ctl.config.static_broker_configs) + records
    return records, resp
