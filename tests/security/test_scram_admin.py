"""SCRAM users managed at runtime with real Admin clients (AlterUserScramCredentials /
DescribeUserScramCredentials): a user added through the API logs in with SCRAM, a replaced password
takes effect, a deleted credential stops new logins, and only the cluster's ALTER/DESCRIBE may do it."""

from __future__ import annotations

import anyio
import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.admin import KafkaAdminClient
from kafka.admin import ScramMechanism as KpMechanism
from kafka.admin import UserScramCredentialDeletion as KpDeletion
from kafka.admin import UserScramCredentialUpsertion as KpUpsertion

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_user_scram_credentials_request as auq
from kraftwire.protocol.messages import describe_user_scram_credentials_request as duq
from kraftwire.security.authorizer import READ

from .acl_helpers import grant
from .harness import USERS, secure_node
from .test_real_clients import ck_consume

pytestmark = pytest.mark.anyio


def ck_admin(port: int, ca: str, user: str = "admin", password: str = USERS["admin"]) -> AdminClient:
    return AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_SSL",
                        "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": password,
                        "ssl.ca.location": ca, "socket.timeout.ms": 8000})


def ck_alter(admin: AdminClient, alterations: list) -> dict[str, KafkaError | None]:
    out: dict[str, KafkaError | None] = {}
    for user, fut in admin.alter_user_scram_credentials(alterations).items():
        try:
            fut.result(timeout=15)
            out[user] = None
        except KafkaException as e:
            out[user] = e.args[0]
    return out


def ck_describe(admin: AdminClient) -> dict[str, list[tuple[str, int]]]:
    described = admin.describe_user_scram_credentials().result(timeout=15)
    return {u: sorted((i.mechanism.name, i.iterations) for i in d.scram_credential_infos)
            for u, d in described.items()}


async def ck_login(port: int, ca: str, user: str, password: str, mechanism: str) -> tuple[list[int], list]:
    """confluent-kafka logs in as ``user`` over SASL_SSL and reads one record of __cluster_metadata."""
    conf = {"security.protocol": "SASL_SSL", "sasl.mechanisms": mechanism, "sasl.username": user,
            "sasl.password": password, "ssl.ca.location": ca}
    return await anyio.to_thread.run_sync(lambda: ck_consume(port, 1, 8, **conf))


def auth_failed(errors: list) -> bool:
    return any(e.code() == KafkaError._AUTHENTICATION for e in errors)


async def test_confluent_admin_adds_describes_replaces_and_deletes_users(certs):
    async with secure_node(certs) as sn:
        port, ca = sn.port("SASL_SSL"), str(certs.ca)
        admin = ck_admin(port, ca)
        await grant(sn, "User:carol", READ)
        # carol does not exist yet
        got, errors = await ck_login(port, ca, "carol", "carol-1", "SCRAM-SHA-256")
        assert got == [] and auth_failed(errors), errors

        result = await anyio.to_thread.run_sync(lambda: ck_alter(admin, [
            UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
                                         b"carol-1"),
            UserScramCredentialUpsertion("dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                         b"dave-1", b"fixed-salt-16byt"),
        ]))
        assert [result[u] is None for u in ("carol", "dave")] == [True, True], result
        described = await anyio.to_thread.run_sync(lambda: ck_describe(admin))
        assert described["carol"] == [("SCRAM_SHA_256", 8192)]
        assert described["dave"] == [("SCRAM_SHA_512", 4096)]
        assert described["admin"] == [("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 4096)]
        assert sn.node.voter.controller.controller.committed_image.scram[("dave", 2)].salt == b"fixed-salt-16byt"

        got, errors = await ck_login(port, ca, "carol", "carol-1", "SCRAM-SHA-256")
        assert len(got) == 1, errors
        # only the mechanism that was set works
        got, errors = await ck_login(port, ca, "carol", "carol-1", "SCRAM-SHA-512")
        assert got == [] and auth_failed(errors), errors

        # a new password replaces the old one
        result = await anyio.to_thread.run_sync(lambda: ck_alter(admin, [UserScramCredentialUpsertion(
            "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-2")]))
        assert result == {"carol": None}
        got, errors = await ck_login(port, ca, "carol", "carol-1", "SCRAM-SHA-256")
        assert got == [] and auth_failed(errors), errors
        got, errors = await ck_login(port, ca, "carol", "carol-2", "SCRAM-SHA-256")
        assert len(got) == 1, errors

        # deletion stops new logins; deleting again is RESOURCE_NOT_FOUND; bad iterations are refused
        result = await anyio.to_thread.run_sync(lambda: ck_alter(admin, [
            UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256),
            UserScramCredentialUpsertion("erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"x"),
        ]))
        assert result["carol"] is None
        assert result["erin"].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
        assert "Too few iterations" in result["erin"].str()
        got, errors = await ck_login(port, ca, "carol", "carol-2", "SCRAM-SHA-256")
        assert got == [] and auth_failed(errors), errors
        result = await anyio.to_thread.run_sync(lambda: ck_alter(admin, [
            UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)]))
        assert result["carol"].code() == KafkaError.RESOURCE_NOT_FOUND
        described = await anyio.to_thread.run_sync(lambda: ck_describe(admin))
        assert "carol" not in described and "erin" not in described and "dave" in described


async def test_kafka_python_admin_and_authorization(certs):
    async with secure_node(certs) as sn:
        port = sn.port("SASL_PLAINTEXT")

        def admin_as(user: str) -> KafkaAdminClient:
            return KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}", security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=user,
                                    sasl_plain_password=USERS[user], request_timeout_ms=10000)

        def as_admin() -> tuple[dict, dict]:
            admin = admin_as("admin")
            try:
                altered = admin.alter_user_scram_credentials([
                    KpUpsertion("frank", KpMechanism.SCRAM_SHA_512, "frank-pw", iterations=16384),
                    KpDeletion("bob", KpMechanism.SCRAM_SHA_256),
                ])
                return altered, admin.describe_user_scram_credentials(["frank", "bob", "nobody"])
            finally:
                admin.close()

        altered, described = await anyio.to_thread.run_sync(as_admin)
        assert altered == {"frank": None, "bob": None}
        assert described["frank"]["error"] is None
        assert [(int(i["mechanism"]), i["iterations"]) for i in described["frank"]["credential_infos"]] == [
            (2, 16384)]
        assert [int(i["mechanism"]) for i in described["bob"]["credential_infos"]] == [2]
        assert described["nobody"]["error"]

        # frank can log in (SCRAM-SHA-512) with kraftwire's own client too
        async with anyio.create_task_group() as tg:
            conn = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("frank", "frank-pw", "SCRAM-SHA-512"))
            resp = await conn.request(duq.DescribeUserScramCredentialsRequest(users=None), 0, 10)
            # ...but frank may not describe or alter credentials: that needs DESCRIBE / ALTER on the cluster
            assert resp.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED and resp.results == []
            before = sn.end_offset
            resp = await conn.request(auq.AlterUserScramCredentialsRequest(
                deletions=[auq.ScramCredentialDeletion("admin", 2)],
                upsertions=[auq.ScramCredentialUpsertion("frank", 1, 4096, b"salt", b"x" * 32)]), 0, 10)
            assert {(r.user, r.error_code) for r in resp.results} == {
                ("admin", Errors.CLUSTER_AUTHORIZATION_FAILED), ("frank", Errors.CLUSTER_AUTHORIZATION_FAILED)}
            assert sn.end_offset == before
            await conn.close()
            tg.cancel_scope.cancel()
        assert ("admin", 2) in sn.node.voter.controller.controller.committed_image.scram
