"""The API registry: for every API key whose schema names a plane's listener, the plane serves it (with an
authorization rule, or on the listener itself), forwards or relays it, or refuses it with a written reason."""

from __future__ import annotations

import pytest

from kraftwire.core.api_registry import ApiRegistry, How, Plane
from kraftwire.protocol.api import LISTENERS, ApiKey

REGISTRIES = [ApiRegistry.controller(), ApiRegistry.broker()]


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.plane.value)
def test_every_api_of_the_plane_is_accounted_for(registry: ApiRegistry) -> None:
    for key, where in LISTENERS.items():
        if registry.plane.value not in where:
            continue
        entry = registry.entry(key)
        assert entry.how is not How.NOT_ADVERTISED, f"{key.name}: neither served nor refused with a reason"
        if entry.how is How.REFUSED:
            assert entry.reason and entry.versions is None and entry.rule is None
        elif entry.how is not How.LISTENER:
            assert entry.versions is not None and entry.rule is not None, key.name


@pytest.mark.parametrize("registry", REGISTRIES, ids=lambda r: r.plane.value)
def test_entries_enumerate_served_and_refused_keys_once_in_order(registry: ApiRegistry) -> None:
    keys = [e.key for e in registry.entries()]
    assert keys == sorted(set(keys))
    assert set(registry.versions) <= set(keys) and set(registry.refused) <= set(keys)


def test_how_each_plane_answers() -> None:
    ctl, brk = ApiRegistry.controller(), ApiRegistry.broker()
    assert ctl.plane is Plane.CONTROLLER and brk.plane is Plane.BROKER
    assert ctl.how(ApiKey.VOTE) is How.SERVED and brk.how(ApiKey.VOTE) is How.NOT_ADVERTISED
    assert ctl.how(ApiKey.CREATE_TOPICS) is How.SERVED and brk.how(ApiKey.CREATE_TOPICS) is How.FORWARDED
    assert brk.how(ApiKey.METADATA) is How.FROM_IMAGE and brk.how(ApiKey.DESCRIBE_QUORUM) is How.RELAYED
    assert brk.how(ApiKey.JOIN_GROUP) is How.RELAYED
    assert ctl.how(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS) is How.FROM_IMAGE
    assert ctl.how(ApiKey.SASL_HANDSHAKE) is How.LISTENER
    assert brk.how(ApiKey.ADD_RAFT_VOTER) is How.REFUSED and brk.entry(ApiKey.ADD_RAFT_VOTER).reason
