"""Three real nodes on loopback (memory storage): election, replication and describe over the wire."""

from __future__ import annotations

import pytest

from kraftwire.cli.metadata_quorum import describe

from .harness import memory_cluster, wait_for

pytestmark = pytest.mark.anyio


def leaders(nodes):
    return [n for n in nodes if n.core.is_leader]


async def test_three_nodes_elect_one_leader_and_replicate():
    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: len(leaders(nodes)) == 1)
        leader = leaders(nodes)[0]
        target = leader.log.end_offset + 5  # the active controller writes NoOpRecords while idle
        await wait_for(lambda: all((n.core.hw or 0) > target for n in nodes))
        assert {n.voter.view.leader_id for n in nodes} == {leader.cfg.node_id}
        result = await describe(f"127.0.0.1:{ports[0]}", 5.0)
        assert result["LeaderId"] == leader.cfg.node_id
        assert result["CurrentVoters"] == [1, 2, 3]
        assert result["HighWatermark"] > target
        assert result["ClusterId"] == "kw-test-cluster-0000001"


async def test_prometheus_metrics_endpoint_reports_raft_state():
    import anyio

    from kraftwire.node.metrics import serve_metrics

    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: len(leaders(nodes)) == 1 and all(n.core.hw for n in nodes))
        leader = leaders(nodes)[0]
        async with anyio.create_task_group() as tg:
            host, port = await tg.start(serve_metrics, leader.metrics, "127.0.0.1", 0)
            async with await anyio.connect_tcp(host, port) as s:
                await s.send(b"GET /metrics HTTP/1.0\r\n\r\n")
                data = b""
                while True:
                    try:
                        data += await s.receive()
                    except anyio.EndOfStream:
                        break
            tg.cancel_scope.cancel()
        text = data.decode()
        assert text.startswith("HTTP/1.0 200 OK")
        values = {k: float(v) for k, v in (line.rsplit(" ", 1) for line in text.split("\r\n\r\n", 1)[1].splitlines()
                                           if line and not line.startswith("#"))}
        assert values["kafka_server_raft_metrics_current_leader"] == leader.cfg.node_id
        assert values['kafka_server_raft_metrics_current_state{state="leader"}'] == 1
        assert values["kafka_server_raft_metrics_high_watermark"] > 0
        assert values["kafka_server_raft_metrics_election_latency_max"] == values["kafka_server_raft_metrics_election_latency_max"]
        assert values["kafka_controller_kafkacontroller_activecontrollercount"] == 1
        assert 'kafka_controller_controllereventmanager_eventqueueprocessingtimems{quantile="0.99"}' in values
        assert values["process_resident_memory_bytes"] > 0


async def test_console_consumer_prints_committed_records_decoded():
    import io
    import json

    from kraftwire.cli.console_consumer import consume

    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: len(leaders(nodes)) == 1 and (leaders(nodes)[0].core.hw or 0) > 6)
        out = io.StringIO()
        n = await consume(f"127.0.0.1:{ports[1]}", start="earliest", max_records=4, idle_timeout=5,
                          include_control=False, out=out)
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        assert n == 4 and len(lines) == 4
        assert lines[0]["payload"]["type"] == "FeatureLevelRecord"
        assert lines[0]["payload"]["data"]["name"] == "metadata.version"
        assert [r["offset"] for r in lines] == sorted(r["offset"] for r in lines)


async def test_a_follower_forwards_describe_quorum_beside_its_fetch_long_poll():
    """Issue #12 item 8: forwarded on the Raft connection, the answer waited behind the parked Fetch
    (~500 ms). It goes over a connection of the peer pool now."""
    import anyio

    from kraftwire.net.client import Connection
    from kraftwire.protocol.messages import describe_quorum_request as dq

    async with memory_cluster(3) as (nodes, ports):
        await wait_for(lambda: len(leaders(nodes)) == 1 and all(n.core.hw for n in nodes))
        leader = leaders(nodes)[0]
        follower = next(n for n in nodes if n is not leader)
        relayed: list[int] = []   # API keys the follower sent over its peer pool
        pool_relay = follower.peers.relay

        async def spy(node_id, body, *args, **kwargs):
            relayed.append(body.API_KEY)
            return await pool_relay(node_id, body, *args, **kwargs)

        follower.peers.relay = spy
        port = ports[follower.cfg.node_id - 1]
        req = dq.DescribeQuorumRequest([dq.TopicData("__cluster_metadata", [dq.PartitionData(0)])])
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", port)
            took = []
            for _ in range(3):
                start = anyio.current_time()
                resp = await conn.request(req, 1, 5.0)
                took.append(anyio.current_time() - start)
            await conn.close()
        part = resp.topics[0].partitions[0]
        assert part.error_code == 0 and part.leader_id == leader.cfg.node_id
        assert relayed.count(dq.DescribeQuorumRequest.API_KEY) == 3, "forwarded on the peer pool, not the Raft one"
        assert follower.peers.opened <= 2, "pool connections are reused (one more for a concurrent registration)"
        print("follower's DescribeQuorum answered in " + ", ".join(f"{t * 1000:.1f}" for t in took) + " ms")
