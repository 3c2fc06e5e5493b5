"""A one-voter kraftwire node in process, with PLAINTEXT, SASL_PLAINTEXT, SSL, mutual-TLS and SASL_SSL
listeners, SCRAM users from bootstrap records and the ACL authorizer on."""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio

from kraftwire.config import load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.metadata import bootstrap_records
from kraftwire.metadata.features import wrap
from kraftwire.net.client import Connection
from kraftwire.node.server import Server
from kraftwire.protocol.messages.user_scram_credential_record import UserScramCredentialRecord
from kraftwire.raft import MemoryLog, MemoryStateStore
from kraftwire.security.scram import SHA256, SHA512
from kraftwire.security.settings import ClientSecurity, client_security
from tests.node.harness import free_ports, wait_for

from .certs import KEY_PASSWORD, Certs

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
LISTENERS = ("CONTROLLER", "SASL_PLAINTEXT", "SSL", "MTLS", "SASL_SSL")


def scram_records(users: dict[str, str] = USERS) -> list:
    out = []
    for name, password in users.items():
        for mech in (SHA256, SHA512):
            c = mech.credential(password, iterations=4096)
            out.append(wrap(UserScramCredentialRecord(name=name, mechanism=mech.type_id, salt=c.salt,
                                                      stored_key=c.stored_key, server_key=c.server_key,
                                                      iterations=c.iterations)))
    return out


def plain_jaas(users: dict[str, str] = USERS) -> str:
    entries = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {entries};"


def node_properties(ports: dict[str, int], certs: Certs, **extra: str) -> dict[str, str]:
    props = {
        "process.roles": "controller", "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{ports['CONTROLLER']}",
        "listeners": ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items()),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,MTLS:SSL,"
                                          "SASL_SSL:SASL_SSL",
        "controller.quorum.election.timeout.ms": "300", "controller.quorum.fetch.timeout.ms": "1500",
        "metadata.max.idle.interval.ms": "0",       # no NoOpRecords: the log end moves only for real writes
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(),
        # SSL: separate certificate and encrypted key files (librdkafka-style names)
        "listener.name.ssl.ssl.certificate.location": str(certs.server_cert),
        "listener.name.ssl.ssl.key.location": str(certs.server_enc_key),
        "listener.name.ssl.ssl.key.password": KEY_PASSWORD,
        # MTLS and SASL_SSL: Kafka's PEM keystore (key + chain in one file) and a PEM truststore
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs.server_keystore),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs.ca),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
    }
    props.update(extra)
    return props


@dataclass
class SecureNode:
    node: Server
    ports: dict[str, int]
    certs: Certs

    def port(self, listener: str) -> int:
        return self.ports[listener]

    @property
    def end_offset(self) -> int:
        return self.node.log.end_offset

    def sasl(self, user: str, password: str | None = None, mechanism: str = "SCRAM-SHA-256",
             listener: str = "SASL_PLAINTEXT") -> ClientSecurity:
        props = {"security.protocol": "SASL_SSL" if listener == "SASL_SSL" else "SASL_PLAINTEXT",
                 "sasl.mechanism": mechanism, "sasl.username": user,
                 "sasl.password": USERS.get(user, "") if password is None else password,
                 "ssl.truststore.location": str(self.certs.ca)}
        return client_security(props)

    def connection(self, tg, listener: str, security: ClientSecurity | None = None) -> Connection:
        return Connection(tg, "127.0.0.1", self.ports[listener], client_id="security-test", security=security)


@asynccontextmanager
async def secure_node(certs: Certs, **extra: str):
    ports = dict(zip(LISTENERS, free_ports(len(LISTENERS)), strict=True))
    cfg = load_config(node_properties(ports, certs, **extra))
    node = Server(cfg, log=MemoryLog(), store=MemoryStateStore(), cluster_id="kw-security-test-001",
                bootstrap=bootstrap_records() + scram_records(), offset_store=MemoryOffsetStore())
    async with anyio.create_task_group() as tg:
        await tg.start(node.run)
        try:
            await wait_for(lambda: node.voter.controller.controller.active and (node.core.hw or 0) >= node.log.end_offset,
                           15)
            await wait_for(lambda: node.voter.controller.controller.committed_image.scram, 10)
            yield SecureNode(node, ports, certs)
        finally:
            tg.cancel_scope.cancel()
