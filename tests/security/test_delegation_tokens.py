"""Delegation-token APIs on a live secured node (node/tokens.py, security/rules.py, controller/delegation_tokens.py):
tokens over SASL only, created/renewed/described/expired with the caller's principal, CREATE_TOKENS for a token
owned by someone else, and DELEGATION_TOKEN_AUTH_DISABLED without a secret key."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_delegation_token_request as cq
from kraftwire.protocol.messages import describe_delegation_token_request as dq
from kraftwire.protocol.messages.expire_delegation_token_request import ExpireDelegationTokenRequest
from kraftwire.protocol.messages.renew_delegation_token_request import RenewDelegationTokenRequest
from kraftwire.security.authorizer import CREATE_TOKENS, USER

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


async def test_without_a_secret_key_tokens_are_disabled(certs) -> None:
    async with secure_node(certs) as sn:
        async with anyio.create_task_group() as tg:
            alice = sn.connection(tg, "SASL_PLAINTEXT", sn.sasl("alice"))
            assert (await alice.request(create_req(), 3)).error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED
            described = await alice.request(dq.DescribeDelegationTokenRequest(owners=None), 3)
            assert described.error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED
            await alice.close()
            tg.cancel_scope.cancel()
