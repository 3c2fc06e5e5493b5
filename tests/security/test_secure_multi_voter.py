"""A three-voter controller cluster with a PLAINTEXT controller listener and a SASL_SSL client listener:
every voter registers its listeners (ControllerRegistration), so Metadata and DescribeCluster name every
node at its address on the listener the client came in on, and a real client bootstrapped at a follower
reaches the leader over SASL_SSL."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.config import load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.metadata import bootstrap_records
from kraftwire.node.server import Server
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest
from kraftwire.protocol.messages.register_controller_record import RegisterControllerRecord
from kraftwire.raft import MemoryLog, MemoryStateStore
from kraftwire.security.authorizer import READ
from tests.node.harness import free_ports, wait_for

from .harness import SecureNode, scram_records
from .test_real_clients import ck_consume
from .test_secure_broker import records_after

pytestmark = pytest.mark.anyio


def voter(node_id: int, cports: list[int], client_ports: list[int], plain_ports: list[int], certs) -> Server:
    i = node_id - 1
    props = {
        "process.roles": "controller", "node.id": str(node_id),
        "controller.quorum.voters": ",".join(f"{n + 1}@127.0.0.1:{p}" for n, p in enumerate(cports)),
        "listeners": f"CONTROLLER://127.0.0.1:{cports[i]},CLIENTS://127.0.0.1:{client_ports[i]},"
                     f"INTERNAL://127.0.0.1:{plain_ports[i]}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,CLIENTS:SASL_SSL,INTERNAL:PLAINTEXT",
        "controller.quorum.election.timeout.ms": "300", "controller.quorum.fetch.timeout.ms": "1500",
        "controller.quorum.request.timeout.ms": "1000", "metadata.max.idle.interval.ms": "0",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS", "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "ssl.keystore.location": str(certs.server_keystore), "ssl.truststore.location": str(certs.ca),
    }
    return Server(load_config(props), log=MemoryLog(), store=MemoryStateStore(), cluster_id="kw-multi-voter-0001",
                bootstrap=bootstrap_records() + scram_records(), offset_store=MemoryOffsetStore())


async def test_every_voter_is_listed_on_the_clients_listener(certs):
    ports = free_ports(9)   # one call: separate calls may hand out the same just-closed port twice
    cports, client_ports, plain_ports = ports[:3], ports[3:6], ports[6:]
    nodes = [voter(n, cports, client_ports, plain_ports, certs) for n in (1, 2, 3)]
    async with anyio.create_task_group() as tg:
        for node in nodes:
            await tg.start(node.run)

        def registered() -> bool:
            return all(len(n.voter.controller.controller.committed_image.controllers) == 3 for n in nodes)

        await wait_for(registered, 20)
        leader = next(n for n in nodes if n.voter.controller.controller.active)
        follower = next(n for n in nodes if n is not leader)
        regs = follower.voter.controller.controller.committed_image.controllers
        assert {(r.id, ep.name, ep.port, ep.security_protocol) for r in regs.values() for ep in r.listeners} == {
            (i + 1, name, ports[i], proto) for i in range(3)
            for name, ports, proto in (("CONTROLLER", cports, 0), ("CLIENTS", client_ports, 3),
                                       ("INTERNAL", plain_ports, 0))}
        regs_in_log = [m for m in records_after(leader, 0) if type(m) is RegisterControllerRecord]
        assert sorted(m.controller_id for m in regs_in_log) == [1, 2, 3]

        fi = nodes.index(follower)
        helper = SecureNode(follower, {"CLIENTS": client_ports[fi], "INTERNAL": plain_ports[fi]}, certs)
        admin = helper.connection(tg, "CLIENTS", helper.sasl("admin", mechanism="SCRAM-SHA-512",
                                                             listener="SASL_SSL"))
        md = await admin.request(MetadataRequest(topics=None), 12, 10)
        assert sorted((b.node_id, b.port) for b in md.brokers) == [(i + 1, client_ports[i]) for i in range(3)]
        assert md.controller_id == nodes.index(leader) + 1
        dc = await admin.request(DescribeClusterRequest(), 0, 10)
        assert sorted((b.broker_id, b.port) for b in dc.brokers) == [(i + 1, client_ports[i]) for i in range(3)]
        # the same question on the PLAINTEXT INTERNAL listener gets the INTERNAL ports
        plain = helper.connection(tg, "INTERNAL")
        md = await plain.request(MetadataRequest(topics=None), 12, 10)
        assert sorted((b.node_id, b.port) for b in md.brokers) == [(i + 1, plain_ports[i]) for i in range(3)]
        await admin.close()
        await plain.close()

        # a real client bootstrapped at the follower follows the metadata topic's leader over SASL_SSL
        await admin_grant(tg, SecureNode(leader, {"INTERNAL": plain_ports[nodes.index(leader)]}, certs))
        conf = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "alice",
                "sasl.password": "alice-secret", "ssl.ca.location": str(certs.ca)}
        got, errors = await anyio.to_thread.run_sync(lambda: ck_consume(client_ports[fi], 3, 15, **conf))
        assert len(got) == 3, errors
        tg.cancel_scope.cancel()


async def admin_grant(tg, helper: SecureNode) -> None:
    from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest

    conn = helper.connection(tg, "INTERNAL")     # the leader; User:ANONYMOUS is a super user in this cluster
    resp = await conn.request(CreateAclsRequest(creations=[AclCreation(
        2, "__cluster_metadata", 3, "User:alice", "*", READ, 3)]), 3, 10)
    assert resp.results[0].error_code == 0
    await conn.close()
