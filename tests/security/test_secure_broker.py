"""A broker on a secured cluster: it logs in to the controllers over SASL_SSL as a super user, authenticates its
own clients with SCRAM credentials from its replayed image, and the controller authorizes forwarded admin writes
as the client inside the Envelope. A broker whose login is not privileged cannot even register."""

from __future__ import annotations

import uuid

import anyio
import pytest

from kraftwire.broker.lifecycle import BrokerState
from kraftwire.config import load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.metadata import bootstrap_records
from kraftwire.node.server import Server
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest, MetadataRequestTopic
from kraftwire.raft import MemoryLog, MemoryStateStore
from kraftwire.security.authorizer import CREATE, DESCRIBE, PREFIXED
from tests.node.harness import free_ports, wait_for

from .harness import USERS, scram_records

pytestmark = pytest.mark.anyio
CLUSTER_ID = "kw-secure-broker-0001"
TIMING = {"controller.quorum.election.timeout.ms": "300", "controller.quorum.fetch.timeout.ms": "1500",
          "controller.quorum.request.timeout.ms": "1000", "metadata.max.idle.interval.ms": "50",
          "broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "100"}
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def common(certs, login: str, cport: int) -> dict[str, str]:
    return {
        "controller.quorum.voters": f"1@127.0.0.1:{cport}", "controller.listener.names": "CONTROLLER",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "SCRAM-SHA-512",
        "listener.name.controller.scram-sha-512.sasl.jaas.config":
            f'{SCRAM} required username="{login}" password="{USERS[login]}";',
        "ssl.keystore.location": str(certs.server_keystore), "ssl.truststore.location": str(certs.ca), **TIMING}


def controller(certs, cport: int) -> Server:
    props = {"process.roles": "controller", "node.id": "1", "listeners": f"CONTROLLER://127.0.0.1:{cport}",
             "listener.security.protocol.map": "CONTROLLER:SASL_SSL", **common(certs, "admin", cport)}
    return Server(load_config(props), log=MemoryLog(), store=MemoryStateStore(), cluster_id=CLUSTER_ID,
                bootstrap=bootstrap_records() + scram_records(), offset_store=MemoryOffsetStore())


def broker(certs, node_id: int, port: int, cport: int, login: str) -> Server:
    props = {"process.roles": "broker", "node.id": str(node_id), "listeners": f"CLIENTS://127.0.0.1:{port}",
             "listener.security.protocol.map": "CONTROLLER:SASL_SSL,CLIENTS:SASL_PLAINTEXT",
             **common(certs, login, cport)}
    return Server(load_config(props), log=MemoryLog(), store=MemoryStateStore(), cluster_id=CLUSTER_ID,
                      directory_id=uuid.uuid4())


async def test_forwarded_writes_are_authorized_as_the_client(certs):
    from .harness import SecureNode

    cport, bport, rogue_port = free_ports(3)
    ctl = controller(certs, cport)
    good = broker(certs, 11, bport, cport, "admin")
    rogue = broker(certs, 12, rogue_port, cport, "bob")
    async with anyio.create_task_group() as tg:
        await tg.start(ctl.run)
        await wait_for(lambda: ctl.voter.controller.controller.active, 15)
        await tg.start(good.run)
        await tg.start(rogue.run)
        await wait_for(lambda: good.broker.state == BrokerState.RUNNING, 20)

        helper = SecureNode(ctl, {"CLIENTS": bport}, certs)
        alice = helper.connection(tg, "CLIENTS", helper.sasl("alice", mechanism="SCRAM-SHA-512"))
        admin = helper.connection(tg, "CLIENTS", helper.sasl("admin", mechanism="SCRAM-SHA-512"))
        before = ctl.log.end_offset
        r = await alice.request(ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic("t-orders", 1, 1)]), 7, 15)
        assert [(t.name, t.error_code) for t in r.topics] == [("t-orders", Errors.TOPIC_AUTHORIZATION_FAILED)]
        r = await alice.request(CreateAclsRequest(creations=[AclCreation(2, "t-", PREFIXED, "User:alice", "*",
                                                                         CREATE, 3)]), 3, 15)
        assert [x.error_code for x in r.results] == [Errors.CLUSTER_AUTHORIZATION_FAILED]
        image = ctl.voter.controller.controller.committed_image
        assert image.topic_by_name("t-orders") is None and not image.acls
        assert all(type(m).__name__ == "NoOpRecord" for m in records_after(ctl, before))

        # the super user grants alice CREATE and DESCRIBE on t-*, through the broker (forwarded as admin)
        for op in (CREATE, DESCRIBE):
            r = await admin.request(CreateAclsRequest(creations=[AclCreation(2, "t-", PREFIXED, "User:alice", "*",
                                                                             op, 3)]), 3, 15)
            assert [x.error_code for x in r.results] == [0]
        r = await alice.request(ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic("t-orders", 1, 1),
                                                                ctq.CreatableTopic("x-other", 1, 1)]), 7, 15)
        assert sorted((t.name, t.error_code) for t in r.topics) == [
            ("t-orders", 0), ("x-other", Errors.TOPIC_AUTHORIZATION_FAILED)]
        await wait_for(lambda: good.broker.metadata.image.topic_by_name("t-orders") is not None, 10)
        # the broker's Metadata shows alice the topic she may describe
        md = await alice.request(MetadataRequest(topics=[MetadataRequestTopic(name="t-orders")]), 12, 10)
        assert [(t.name, t.error_code) for t in md.topics] == [("t-orders", 0)]

        # the broker that logged in as bob was never allowed to register
        assert 12 not in ctl.voter.controller.controller.committed_image.brokers
        assert rogue.broker.state != BrokerState.RUNNING
        tg.cancel_scope.cancel()


def records_after(node: Server, offset: int) -> list:
    from kraftwire.protocol.metadata import decode_record

    out = []
    for batch in node.log.read(offset, 1 << 30):
        if batch.control:
            continue
        for i, rec in enumerate(batch.records):
            if batch.base_offset + i >= offset and rec.value is not None:
                out.append(decode_record(rec.value).message)
    return out


async def test_scram_users_managed_through_a_broker(certs):
    """AlterUserScramCredentials sent to a broker is forwarded (authorized at the controller as the client);
    DescribeUserScramCredentials is answered from the broker's image, and the broker's own SASL logins follow
    the replayed credentials."""
    import hashlib

    from kraftwire.net.client import RequestFailed
    from kraftwire.protocol.messages import alter_user_scram_credentials_request as auq
    from kraftwire.protocol.messages import describe_user_scram_credentials_request as duq

    from .harness import SecureNode

    cport, bport = free_ports(2)
    ctl = controller(certs, cport)
    good = broker(certs, 11, bport, cport, "admin")
    salt = b"grace-salt-0123456789"
    salted = hashlib.pbkdf2_hmac("sha512", b"grace-pw", salt, 4096)
    upsert = auq.AlterUserScramCredentialsRequest(upsertions=[auq.ScramCredentialUpsertion("grace", 2, 4096, salt,
                                                                                           salted)])
    async with anyio.create_task_group() as tg:
        await tg.start(ctl.run)
        await wait_for(lambda: ctl.voter.controller.controller.active, 15)
        await tg.start(good.run)
        await wait_for(lambda: good.broker.state == BrokerState.RUNNING, 20)
        helper = SecureNode(ctl, {"CLIENTS": bport}, certs)
        admin = helper.connection(tg, "CLIENTS", helper.sasl("admin", mechanism="SCRAM-SHA-512"))
        alice = helper.connection(tg, "CLIENTS", helper.sasl("alice", mechanism="SCRAM-SHA-512"))

        before = ctl.log.end_offset
        r = await alice.request(upsert, 0, 15)
        assert [(x.user, x.error_code) for x in r.results] == [("grace", Errors.CLUSTER_AUTHORIZATION_FAILED)]
        r = await alice.request(duq.DescribeUserScramCredentialsRequest(users=None), 0, 15)
        assert r.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
        assert all(type(m).__name__ == "NoOpRecord" for m in records_after(ctl, before))

        r = await admin.request(upsert, 0, 15)
        assert [(x.user, x.error_code) for x in r.results] == [("grace", 0)]
        assert ("grace", 2) in ctl.voter.controller.controller.committed_image.scram
        await wait_for(lambda: ("grace", 2) in good.broker.metadata.image.scram, 10)
        r = await admin.request(duq.DescribeUserScramCredentialsRequest(users=[duq.UserName("grace")]), 0, 15)
        assert [(x.user, x.error_code, [(c.mechanism, c.iterations) for c in x.credential_infos])
                for x in r.results] == [("grace", 0, [(2, 4096)])]

        grace = helper.connection(tg, "CLIENTS", helper.sasl("grace", "grace-pw", "SCRAM-SHA-512"))
        r = await grace.request(MetadataRequest(topics=[]), 12, 10)
        assert [b.node_id for b in r.brokers] == [11]
        await grace.close()

        r = await admin.request(auq.AlterUserScramCredentialsRequest(deletions=[
            auq.ScramCredentialDeletion("grace", 2)]), 0, 15)
        assert [(x.user, x.error_code) for x in r.results] == [("grace", 0)]
        await wait_for(lambda: ("grace", 2) not in good.broker.metadata.image.scram, 10)
        grace = helper.connection(tg, "CLIENTS", helper.sasl("grace", "grace-pw", "SCRAM-SHA-512"))
        with pytest.raises(RequestFailed, match="SASL authentication"):
            await grace.request(MetadataRequest(topics=[]), 12, 10)
        tg.cancel_scope.cancel()
