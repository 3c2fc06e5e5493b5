"""Delegation-token APIs on a live secured node (security/token_requests.py, security/rules.py, controller/delegation_tokens.py):
tokens over SASL only, created/renewed/described/expired with the caller's principal, CREATE_TOKENS for a token
owned by someone else, and DELEGATION_TOKEN_AUTH_DISABLED without a secret key."""

from __future__ import annotations

import base64

import anyio
import pytest

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_delegation_token_request as cq
from kraftwire.protocol.messages import describe_delegation_token_request as dq
from kraftwire.protocol.messages.expire_delegation_token_request import ExpireDelegationTokenRequest
from kraftwire.protocol.messages.renew_delegation_token_request import RenewDelegationTokenRequest
from kraftwire.protocol.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kraftwire.protocol.messages.sasl_handshake_request import SaslHandshakeRequest
from kraftwire.security.authorizer import CREATE_TOKENS, USER
from kraftwire.security.scram import MECHANISMS, ScramClient

from .acl_helpers import grant
from .harness import secure_node

pytestmark = pytest.mark.anyio


def create_req(renewers=(), owner: str | None = None) -> cq.CreateDelegationTokenRequest:
    return cq.CreateDelegationTokenRequest(
        renewers=[cq.CreatableRenewers("User", r) for r in renewers], max_lifetime_ms=-1,
        owner_principal_type="User" if owner else None, owner_principal_name=owner)


async def test_token_lifecycle_over_sasl(certs) -> None:
    async with secure_node(certs, **{"delegation.token.secret.key": "k3y"}) as sn:
        async with anyio.create_task_group() as tg:
            alice = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("alice"))
            bob = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("bob"))
            plain = sn.connection(tg, "CONTROLLER")
            refused = await plain.request(create_req(), 3)
            assert refused.error_code == Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED

            tok = await alice.request(create_req(renewers=["bob"]), 3)
            assert tok.error_code == 0 and tok.principal_name == "alice" and len(tok.hmac) == 64
            seen = await bob.request(dq.DescribeDelegationTokenRequest(owners=None), 3)
            assert [t.token_id for t in seen.tokens] == [tok.token_id]
            renewed = await bob.request(RenewDelegationTokenRequest(hmac=tok.hmac, renew_period_ms=60_000), 2)
            assert renewed.error_code == 0 and renewed.expiry_timestamp_ms < tok.expiry_timestamp_ms

            for_bob = await alice.request(create_req(owner="bob"), 3)
            assert for_bob.error_code == Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED
            await grant(sn, "User:alice", CREATE_TOKENS, USER, "User:bob")
            for_bob = await alice.request(create_req(owner="bob"), 3)
            assert for_bob.error_code == 0 and (for_bob.principal_name, for_bob.token_requester_principal_name) == (
                "bob", "alice")

            gone = await alice.request(ExpireDelegationTokenRequest(hmac=tok.hmac, expiry_time_period_ms=-1), 2)
            assert gone.error_code == 0
            left = await alice.request(dq.DescribeDelegationTokenRequest(owners=None), 3)
            assert [t.token_id for t in left.tokens] == [for_bob.token_id]   # she requested it
            again = await bob.request(RenewDelegationTokenRequest(hmac=tok.hmac, renew_period_ms=1), 2)
            assert again.error_code == Errors.DELEGATION_TOKEN_NOT_FOUND
            for c in (alice, bob, plain):
                await c.close()
            tg.cancel_scope.cancel()


async def _token_login(sn, tg, token_id: str, mac: bytes, mechanism: str = "SCRAM-SHA-256"):
    """A SASL_PLAINTEXT connection logged in with a delegation token (SCRAM, tokenauth=true)."""
    conn = sn.connection(tg, "SASL_PLAINTEXT")
    hs = await conn.request(SaslHandshakeRequest(mechanism=mechanism), 1)
    assert hs.error_code == 0, hs
    client = ScramClient(MECHANISMS[mechanism], token_id, base64.b64encode(mac).decode(), token=True)
    first = await conn.request(SaslAuthenticateRequest(auth_bytes=client.first()), 2)
    if first.error_code:
        return conn, first
    final = await conn.request(SaslAuthenticateRequest(auth_bytes=client.final(first.auth_bytes)), 2)
    if final.error_code == 0:
        client.verify(final.auth_bytes)
    return conn, final


async def test_a_client_logs_in_with_a_token(certs) -> None:
    async with secure_node(certs, **{"delegation.token.secret.key": "k3y"}) as sn:
        async with anyio.create_task_group() as tg:
            alice = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("alice"))
            tok = await alice.request(create_req(), 3)
            assert tok.error_code == 0
            conn, answer = await _token_login(sn, tg, tok.token_id, tok.hmac, "SCRAM-SHA-512")
            assert answer.error_code == 0, answer
            # the session is alice's: it sees her token, and may not ask for tokens with a token
            seen = await conn.request(dq.DescribeDelegationTokenRequest(owners=None), 3)
            assert seen.error_code == Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
            refused = await conn.request(create_req(), 3)
            assert refused.error_code == Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
            await conn.close()
            wrong, answer = await _token_login(sn, tg, tok.token_id, b"\0" * 64)
            assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
            await wrong.close()
            gone = await alice.request(ExpireDelegationTokenRequest(hmac=tok.hmac, expiry_time_period_ms=-1), 2)
            assert gone.error_code == 0
            late, answer = await _token_login(sn, tg, tok.token_id, tok.hmac)
            assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED   # an expired token logs nobody in
            await late.close()
            await alice.close()
            tg.cancel_scope.cancel()


async def test_without_a_secret_key_tokens_are_disabled(certs) -> None:
    async with secure_node(certs) as sn:
        async with anyio.create_task_group() as tg:
            alice = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("alice"))
            assert (await alice.request(create_req(), 3)).error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED
            described = await alice.request(dq.DescribeDelegationTokenRequest(owners=None), 3)
            assert described.error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED
            await alice.close()
            tg.cancel_scope.cancel()


def test_token_login_runs_as_the_owner() -> None:
    from kraftwire.metadata.image import DelegationToken, MetadataImage
    from kraftwire.security.scram import ScramServer
    from kraftwire.security.tokens import TokenCredentials, token_hmac

    image = MetadataImage(delegation_tokens={"tok1": DelegationToken("User:alice", "User:alice", (), 0,
                                                                     2**62, 2**62)})
    creds = TokenCredentials(lambda: image, "k3y")
    mech = MECHANISMS["SCRAM-SHA-256"]
    server = ScramServer(mech, lambda u, m: None, token_lookup=creds)
    client = ScramClient(mech, "tok1", base64.b64encode(token_hmac("k3y", "tok1")).decode(), token=True)
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.complete and server.principal == "User:alice" and server.token_authenticated
    plain = ScramServer(mech, lambda u, m: None)   # no secret key: tokenauth refused
    with pytest.raises(Exception, match="not enabled"):
        plain.evaluate(ScramClient(mech, "tok1", "x", token=True).first())
