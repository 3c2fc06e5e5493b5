"""``net/metadata_log.QuorumLog`` (the live reader of metadata-shell, the Spark data source and stream) against a
Kafka controller quorum of each release: reads that start mid-log (a stream's micro-batches) and the log's
committed end, as a Raft observer of the active controller."""

from __future__ import annotations

import anyio
import pytest

from compat.kafka import CONTROLLER_PORT, KafkaNode, wait_for
from kraftwire.metadata import EMPTY_IMAGE
from kraftwire.net.client import Connection
from kraftwire.net.metadata_log import QuorumLog, parse_addresses
from kraftwire.protocol.messages import incremental_alter_configs_request as iac
from kraftwire.protocol.metadata import decode_record
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


async def _set_retention(addr: str, value: int) -> int:
    host, _, port = addr.rpartition(":")
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, int(port), client_id="test-metadata-log")
        try:
            req = iac.IncrementalAlterConfigsRequest(resources=[iac.AlterConfigsResource(
                resource_type=4, resource_name="", configs=[iac.AlterableConfig(
                    name="log.retention.ms", config_operation=0, value=str(value))])])
            return (await conn.request(req, None, 10.0)).responses[0].error_code
        finally:
            await conn.close()
            tg.cancel_scope.cancel()


def test_quorum_log_reads_a_kafka_quorum_from_the_middle(kafka_dist, tmp_path):
    with Fleet(tmp_path) as fleet:
        hosts = fleet.hosts(3)
        voters = [(i + 1, h, CONTROLLER_PORT) for i, h in enumerate(hosts)]
        nodes = [fleet.add(KafkaNode(kafka_dist, tmp_path, i, "controller", h, voters)) for i, h, _ in voters]
        cluster = random_uuid()
        for node in nodes:
            node.format(cluster)
            node.start()
        for node in nodes:
            node.wait_started()
        bootstrap = ",".join(n.controller_address for n in nodes)
        log = QuorumLog(parse_addresses(bootstrap), timeout_s=10.0)
        for i in range(5):   # each at whichever controller accepts it (the active one)
            wait_for(lambda i=i: any(anyio.run(_set_retention, n.controller_address, 700_000_000 + i) == 0
                                     for n in nodes), 60, f"change {i} accepted")
        start, hw = anyio.run(log.bounds)
        assert start == 0 and hw > 5
        whole: list = []
        anyio.run(log.read, 0, hw, whole.append)
        offsets = [b.base_offset + k for b in whole for k in range(len(b.records)) if b.base_offset + k < hw]
        assert offsets == list(range(hw)), "the whole committed log, each offset once"
        mid = hw // 2
        tail: list = []
        anyio.run(log.read, mid, hw, tail.append)   # a micro-batch's range: Raft epochs unknown at mid
        got = [b.base_offset + k for b in tail for k in range(len(b.records)) if mid <= b.base_offset + k < hw]
        assert got == list(range(mid, hw))
        image = EMPTY_IMAGE.replay_all([decode_record(r.value) for b in whole if not b.control
                                        for k, r in enumerate(b.records) if r.value is not None
                                        and b.base_offset + k < hw])
        assert any(v.get("log.retention.ms") == "700000004" for v in image.configs.values())
