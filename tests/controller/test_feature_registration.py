"""UpdateFeatures refuses, with Kafka's words, while a voter of controller.quorum.voters has not registered
(KIP-919) or a registered controller lacks the level (FeatureControlManager.reasonNotSupported)."""

from __future__ import annotations

import uuid

from kraftwire.metadata.features import SUPPORTED_FEATURES
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import controller_registration_request as crq
from kraftwire.protocol.messages import update_features_request as ufq

from .harness import Harness


def _controller(h: Harness, cid: int, mv_range: tuple[int, int] = (1, 27)) -> None:
    req = crq.ControllerRegistrationRequest(
        controller_id=cid, incarnation_id=uuid.UUID(int=cid), zk_migration_ready=False,
        listeners=[crq.Listener("CONTROLLER", f"127.0.0.{cid}", 9093, 0)],
        features=[crq.Feature("metadata.version", *mv_range)])
    assert h.run(req).error_code == 0


def _upgrade(h: Harness, level: int, feature: str = "metadata.version"):
    return h.run(ufq.UpdateFeaturesRequest(feature_updates=[ufq.FeatureUpdateKey(feature, level, False, 1)]))


def test_unregistered_voter_blocks_an_upgrade() -> None:
    h = Harness(mv=19, node_id=1, quorum_node_ids=(1, 2, 3))
    h.start_brokers(1)
    _controller(h, 2)
    r = _upgrade(h, 21)
    assert r.error_code == Errors.INVALID_UPDATE_VERSION
    assert r.error_message == ("Invalid update version 21 for feature metadata.version. "
                               "controller 3 has not registered, and may not support this feature")
    assert h.image.metadata_version == 19
    _controller(h, 3)
    assert _upgrade(h, 21).error_code == 0 and h.image.metadata_version == 21


def test_registered_controller_range_is_named() -> None:
    h = Harness(mv=19, node_id=1, quorum_node_ids=(1, 2))
    _controller(h, 2, mv_range=(1, 19))
    r = _upgrade(h, 21)
    assert (r.error_code, r.error_message) == (
        Errors.INVALID_UPDATE_VERSION,
        "Invalid update version 21 for feature metadata.version. Controller 2 only supports versions 1-19")
    r = _upgrade(h, 1, feature="group.version")
    assert r.error_message == ("Invalid update version 1 for feature group.version. "
                               "Controller 2 does not support this feature.")


def test_local_controller_and_old_metadata_versions() -> None:
    lo, hi = SUPPORTED_FEATURES["metadata.version"]
    h = Harness(mv=19, node_id=1, quorum_node_ids=(1, 2))
    r = _upgrade(h, hi + 1)
    assert r.error_message == (f"Invalid update version {hi + 1} for feature metadata.version. "
                               f"Local controller 1 only supports versions {lo}-{hi}")
    # Before 3.7-IV0 controllers do not register: Kafka cannot check them and does not refuse.
    old = Harness(mv=14, node_id=1, quorum_node_ids=(1, 2, 3))
    assert _upgrade(old, 15).error_code == 0 and old.image.metadata_version == 15
