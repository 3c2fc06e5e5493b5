"""ApiVersions v3+ carries supported and finalized features, as Kafka's nodes send them: kafka-features.sh
describe --bootstrap-controller reads them from a voter (it printed nothing before)."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.metadata.features import LATEST_LEVEL, SUPPORTED_FEATURES
from kraftwire.net.client import Connection
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from tests.node.harness import memory_cluster, wait_for

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def test_voters_answer_supported_and_finalized_features():
    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: all(n.voter.controller.controller.committed_image.metadata_version for n in nodes), 20)
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", ports[1], negotiate=False)
            v4 = await conn.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4, 10)
            v3 = await conn.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3, 10)
            v2 = await conn.request(ApiVersionsRequest(), 2, 10)
            await conn.close()
            tg.cancel_scope.cancel()
    supported4 = {f.name: (f.min_version, f.max_version) for f in v4.supported_features}
    assert supported4 == SUPPORTED_FEATURES and supported4["metadata.version"] == (1, LATEST_LEVEL)
    assert {f.name: f.max_version_level for f in v4.finalized_features}["metadata.version"] == LATEST_LEVEL
    assert all(f.min_version_level == f.max_version_level for f in v4.finalized_features)
    assert v4.finalized_features_epoch >= 0
    assert {f.name for f in v3.supported_features} == {n for n, (lo, _) in supported4.items() if lo > 0}
    assert v2.supported_features == [] and v2.finalized_features_epoch == -1
