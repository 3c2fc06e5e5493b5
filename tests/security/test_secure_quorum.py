"""Three controllers whose CONTROLLER listener is secured: Raft traffic (Vote, BeginQuorumEpoch, Fetch) goes over
the node's own outbound TLS/SASL connections, authenticated as a super user; a quorum forms and commits."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.config import ConfigError, load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.metadata import bootstrap_records
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.node.server import Server
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.describe_quorum_request import (
    DescribeQuorumRequest,
    PartitionData,
    TopicData,
)
from kraftwire.protocol.messages.vote_request import VoteRequest
from kraftwire.raft import MemoryLog, MemoryStateStore
from kraftwire.security.settings import client_security
from tests.node.harness import free_ports, wait_for

from .certs import Certs
from .harness import USERS, plain_jaas, scram_records

pytestmark = pytest.mark.anyio


def quorum_props(i: int, ports: list[int], certs: Certs, mode: str) -> dict[str, str]:
    props = {
        "process.roles": "controller", "node.id": str(i),
        "controller.quorum.voters": ",".join(f"{n + 1}@127.0.0.1:{p}" for n, p in enumerate(ports)),
        "listeners": f"CONTROLLER://127.0.0.1:{ports[i - 1]}", "controller.listener.names": "CONTROLLER",
        "controller.quorum.election.timeout.ms": "400", "controller.quorum.fetch.timeout.ms": "2000",
        "controller.quorum.election.backoff.max.ms": "400", "controller.quorum.request.timeout.ms": "2000",
        "metadata.max.idle.interval.ms": "50",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "ssl.truststore.location": str(certs.ca),
    }
    if mode == "mtls":
        # controllers present the controller certificate; its DN is the super user
        props.update({"listener.security.protocol.map": "CONTROLLER:SSL", "ssl.client.auth": "required",
                      "ssl.keystore.location": str(certs.ctl_keystore),
                      "super.users": "User:CN=controller,O=kraftwire"})
    else:
        mech = "SCRAM-SHA-512" if mode == "scram" else "PLAIN"
        login = ("org.apache.kafka.common.security.scram.ScramLoginModule" if mode == "scram"
                 else "org.apache.kafka.common.security.plain.PlainLoginModule")
        jaas = f'{login} required username="admin" password="{USERS["admin"]}"'
        if mode == "plain":
            jaas = plain_jaas().rstrip(";") + f' username="admin" password="{USERS["admin"]}";'
        else:
            jaas += ";"
        props.update({"listener.security.protocol.map": "CONTROLLER:SASL_SSL", "sasl.enabled.mechanisms": mech,
                      "sasl.mechanism.controller.protocol": mech,
                      f"listener.name.controller.{mech.lower()}.sasl.jaas.config": jaas,
                      "ssl.keystore.location": str(certs.server_keystore), "super.users": "User:admin"})
    return props


@pytest.mark.parametrize("mode", ["mtls", "scram", "plain"])
async def test_quorum_forms_over_secured_controller_listener(certs, mode):
    ports = free_ports(3)
    nodes = [Server(load_config(quorum_props(i, ports, certs, mode)), log=MemoryLog(), store=MemoryStateStore(),
                  cluster_id="kw-secure-quorum-01", bootstrap=bootstrap_records() + scram_records(),
                  offset_store=MemoryOffsetStore()) for i in (1, 2, 3)]
    async with anyio.create_task_group() as tg:
        for node in nodes:
            await tg.start(node.run)
        await wait_for(lambda: any(n.voter.controller.controller.active for n in nodes), 20)
        leader = next(n for n in nodes if n.voter.controller.controller.active)
        target = leader.log.end_offset + 3
        await wait_for(lambda: all((n.core.hw or 0) >= target for n in nodes), 20)

        # an outsider on the same listener: TLS is fine, but it is not the super user
        if mode == "mtls":
            outsider = client_security({"security.protocol": "SSL", "ssl.truststore.location": str(certs.ca),
                                        "ssl.certificate.location": str(certs.alice_cert),
                                        "ssl.key.location": str(certs.alice_key)})
        else:
            outsider = client_security({"security.protocol": "SASL_SSL", "ssl.truststore.location": str(certs.ca),
                                        "sasl.mechanism": "SCRAM-SHA-512" if mode == "scram" else "PLAIN",
                                        "sasl.username": "alice", "sasl.password": USERS["alice"]})
        port = ports[leader.cfg.node_id - 1]
        conn = Connection(tg, "127.0.0.1", port, security=outsider)
        vote = await conn.request(VoteRequest(cluster_id="kw-secure-quorum-01"), 1, 10)
        assert vote.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
        dq = await conn.request(DescribeQuorumRequest([TopicData("__cluster_metadata", [PartitionData(0)])]), 2, 10)
        assert dq.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
        await conn.close()
        # no TLS at all: the handshake fails and the connection is dropped
        plain = Connection(tg, "127.0.0.1", port, connect_timeout_s=3)
        with pytest.raises(RequestFailed):
            await plain.request(VoteRequest(cluster_id="kw-secure-quorum-01"), 1, 3)
        tg.cancel_scope.cancel()


def test_bad_security_settings_are_config_errors(certs, tmp_path):
    ports = free_ports(1)
    base = quorum_props(1, ports, certs, "scram")
    base["controller.quorum.voters"] = f"1@127.0.0.1:{ports[0]}"
    cases = {
        "sasl.enabled.mechanisms": ("GSSAPI", "sasl.enabled.mechanisms"),
        "ssl.keystore.type": ("JKS", "PEM only"),
        "ssl.keystore.location": (str(tmp_path / "missing.pem"), "no such file"),
        "ssl.client.auth": ("sometimes", "ssl.client.auth"),
        "ssl.enabled.protocols": ("SSLv3", "ssl.enabled.protocols"),
        "super.users": ("admin", "super.users"),
    }
    for key, (value, message) in cases.items():
        props = dict(base, **{key: value})
        with pytest.raises(ConfigError, match=message):
            Server(load_config(props), log=MemoryLog(), store=MemoryStateStore(), cluster_id="x",
                 offset_store=MemoryOffsetStore())
    # a SASL controller listener without a login for this node's own connections
    props = {k: v for k, v in base.items() if not k.endswith("sasl.jaas.config")}
    with pytest.raises(ConfigError, match="username and password"):
        Server(load_config(props), log=MemoryLog(), store=MemoryStateStore(), cluster_id="x",
             offset_store=MemoryOffsetStore())
    # an encrypted key without its password
    props = dict(base, **{"ssl.keystore.location": "", "ssl.certificate.location": str(certs.server_cert),
                          "ssl.key.location": str(certs.server_enc_key), "ssl.key.password": "wrong"})
    with pytest.raises(ConfigError, match="ssl.key.password"):
        Server(load_config(props), log=MemoryLog(), store=MemoryStateStore(), cluster_id="x",
             offset_store=MemoryOffsetStore())
