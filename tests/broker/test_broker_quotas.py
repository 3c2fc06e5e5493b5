"""Client quotas through kraftwire brokers: AlterClientQuotas forwarded in an Envelope, DescribeClientQuotas
answered by brokers and controllers from their own images."""

from __future__ import annotations

import pytest

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_client_quotas_request as acq
from kraftwire.protocol.messages import describe_client_quotas_request as dcq
from tests.node.harness import wait_for

from .harness import all_running, broker_cluster
from .test_broker_inprocess import request

pytestmark = pytest.mark.anyio


def _set(entity: dict, key: str, value: float | None) -> acq.EntryData:
    return acq.EntryData(entity=[acq.EntityData(t, n) for t, n in entity.items()],
                         ops=[acq.OpData(key, value or 0.0, value is None)])


async def test_quota_altered_through_a_broker_is_described_everywhere():
    async with broker_cluster() as c:
        await all_running(c)
        alter = acq.AlterClientQuotasRequest(entries=[_set({"user": "alice"}, "producer_byte_rate", 2048.0),
                                                      _set({"group": "g"}, "producer_byte_rate", 1.0)])
        resp = await request(c.port(12), alter, 1)
        assert [(e.entity[0].entity_type, e.error_code) for e in resp.entries] == [
            ("user", 0), ("group", Errors.INVALID_REQUEST)]
        assert resp.entries[1].error_message == "Unhandled client quota entity type: group"
        assert c.broker(12).broker.forwarding_metrics.forwards.total == 1
        key = (("user", "alice"),)
        await wait_for(lambda: all(b.broker.metadata.image.quotas.get(key) for b in c.brokers.values()), 10)
        describe = dcq.DescribeClientQuotasRequest(components=[dcq.ComponentData("user", 0, "alice")], strict=True)
        ports = [c.port(11), c.port(12), *c.controller_ports]
        for port in ports:
            got = await request(port, describe, 1)
            assert got.error_code == 0, (port, got)
            assert [(v.key, v.value) for e in got.entries for v in e.values] == [("producer_byte_rate", 2048.0)]
        bad = dcq.DescribeClientQuotasRequest(components=[dcq.ComponentData("group", 0, "g")], strict=False)
        got = await request(c.port(11), bad, 1)
        assert (got.error_code, got.error_message) == (Errors.UNSUPPORTED_VERSION, "Unsupported entity type group")
        resp = await request(c.port(11), acq.AlterClientQuotasRequest(entries=[_set({"user": "alice"},
                                                                                   "producer_byte_rate", None)]), 1)
        assert resp.entries[0].error_code == 0
        await wait_for(lambda: all(key not in b.broker.metadata.image.quotas for b in c.brokers.values()), 10)


async def test_bad_config_resources_and_quotas_get_kafkas_codes_through_a_broker():
    """Every config resource type id (known, unknown, negative) and bad quota entities, through a broker and
    straight at the active controller: each gets its own error code; the connections and the nodes stay up."""
    from kraftwire.protocol.messages import describe_configs_request as dcq
    from kraftwire.protocol.messages import incremental_alter_configs_request as iaq
    from kraftwire.protocol.messages.list_config_resources_request import ListConfigResourcesRequest

    types = (0, 1, 2, 4, 8, 16, 32, 64, 127, -1)
    async with broker_cluster() as c:
        await all_running(c)
        active = c.controller_ports[c.controllers.index(c.active())]
        for port in (c.port(11), active):
            inc = iaq.IncrementalAlterConfigsRequest(resources=[
                iaq.AlterConfigsResource(t, "x", [iaq.AlterableConfig("k", 0, "v")]) for t in types])
            resp = await request(port, inc, 1)
            codes = {r.resource_type: r.error_code for r in resp.responses}
            assert codes[0] == codes[1] == codes[64] == codes[127] == codes[-1] == Errors.UNSUPPORTED_VERSION
            assert codes[2] == Errors.UNKNOWN_TOPIC_OR_PARTITION or codes[2] == Errors.INVALID_CONFIG
            assert codes[4] == Errors.INVALID_REQUEST                # "x" is not a broker id
            assert codes[8] == Errors.INVALID_REQUEST                # "x" is not this node's id
            assert codes[16] == Errors.INVALID_REQUEST               # unknown client metrics key
            assert codes[32] == Errors.INVALID_CONFIG                # unknown group config
            desc = await request(port, dcq.DescribeConfigsRequest(resources=[
                dcq.DescribeConfigsResource(t, "x", None) for t in types]), 4)
            assert all(r.error_code != 0 for r in desc.results if r.resource_type not in (16, 32)), desc
        listed = await request(c.port(11), ListConfigResourcesRequest(resource_types=[99]), 1)
        assert listed.error_code == Errors.UNSUPPORTED_VERSION
        bad = acq.AlterClientQuotasRequest(entries=[_set({"user": "u"}, "bogus_key", 1.0), _set({}, "x", 1.0),
                                                    _set({"ip": "not-an-ip", "user": "u"}, "x", 1.0)])
        resp = await request(c.port(12), bad, 1)
        assert [e.error_code for e in resp.entries] == [Errors.INVALID_REQUEST] * 3
        assert (await request(c.port(12), acq.AlterClientQuotasRequest(entries=[]), 1)).entries == []
