"""Delegation tokens on the controller (controller/delegation_tokens.py), against Kafka's
DelegationTokenControlManager: create/renew/expire/describe with their errors, the HMAC under the secret key,
records that survive a snapshot, and the expiry sweep of the controller's tick."""

from __future__ import annotations

import hashlib
import hmac

from kraftwire.controller.delegation_tokens import TokenRequest, describe_tokens
from kraftwire.metadata.snapshot import image_to_records
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_delegation_token_request as cq
from kraftwire.protocol.messages import describe_delegation_token_request as dq
from kraftwire.protocol.messages.delegation_token_record import DelegationTokenRecord
from kraftwire.protocol.messages.expire_delegation_token_request import ExpireDelegationTokenRequest
from kraftwire.protocol.messages.remove_delegation_token_record import RemoveDelegationTokenRecord
from kraftwire.protocol.messages.renew_delegation_token_request import RenewDelegationTokenRequest

from .harness import Harness

SECRET = "s3cr3t"
DAY, WEEK = 24 * 3600 * 1000, 7 * 24 * 3600 * 1000
ALICE, BOB, CAROL = "User:alice", "User:bob", "User:carol"


def cluster(**cfg) -> Harness:
    h = Harness(token_secret_key=SECRET, **cfg)
    h.now = 1_000_000
    return h


def create(h: Harness, principal: str = ALICE, renewers=(), max_life: int = -1, owner: str | None = None):
    body = cq.CreateDelegationTokenRequest(
        renewers=[cq.CreatableRenewers(*r.split(":", 1)) for r in renewers], max_lifetime_ms=max_life,
        owner_principal_type=owner.split(":", 1)[0] if owner else None,
        owner_principal_name=owner.split(":", 1)[1] if owner else None)
    return h.run(TokenRequest(body, principal))


def test_create_writes_a_record_and_answers_the_hmac_of_the_id() -> None:
    h = cluster()
    r = create(h, renewers=[BOB])
    assert r.error_code == 0
    assert (r.principal_type, r.principal_name) == ("User", "alice")
    assert (r.token_requester_principal_type, r.token_requester_principal_name) == ("User", "alice")
    assert r.issue_timestamp_ms == h.now and r.expiry_timestamp_ms == h.now + DAY
    assert r.max_timestamp_ms == h.now + WEEK
    assert r.hmac == hmac.new(SECRET.encode(), r.token_id.encode(), hashlib.sha512).digest()
    rec = [x.message for x in h.last.records]
    assert len(rec) == 1 and type(rec[0]) is DelegationTokenRecord
    assert (rec[0].owner, rec[0].requester, rec[0].renewers) == (ALICE, ALICE, [BOB])
    token = h.image.delegation_tokens[r.token_id]
    assert token.expiration_timestamp == r.expiry_timestamp_ms


def test_create_for_another_owner_and_a_shorter_life() -> None:
    h = cluster()
    r = create(h, principal=ALICE, owner=CAROL, max_life=3600_000)
    assert (r.principal_name, r.token_requester_principal_name) == ("carol", "alice")
    assert r.max_timestamp_ms == r.expiry_timestamp_ms == h.now + 3600_000


def test_refusals_are_kafkas() -> None:
    off = Harness()   # no delegation.token.secret.key
    assert create(off).error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED and off.last.records == []
    old = Harness(mv=12, token_secret_key=SECRET)   # 3.6-IV0: before 3.6-IV2
    assert create(old).error_code == Errors.UNSUPPORTED_VERSION
    h = cluster()
    assert create(h, renewers=["Group:ops"]).error_code == Errors.INVALID_PRINCIPAL_TYPE
    assert h.last.records == []
    unknown = h.run(TokenRequest(RenewDelegationTokenRequest(hmac=b"x" * 64, renew_period_ms=1), ALICE))
    assert unknown.error_code == Errors.DELEGATION_TOKEN_NOT_FOUND


def test_renew_by_owner_or_renewer_only_up_to_the_maximum() -> None:
    h = cluster()
    tok = create(h, renewers=[BOB])
    h.now += DAY // 2
    r = h.run(TokenRequest(RenewDelegationTokenRequest(hmac=tok.hmac, renew_period_ms=-1), BOB))
    assert r.error_code == 0 and r.expiry_timestamp_ms == h.now + DAY
    assert h.image.delegation_tokens[tok.token_id].expiration_timestamp == h.now + DAY
    stranger = h.run(TokenRequest(RenewDelegationTokenRequest(hmac=tok.hmac, renew_period_ms=1000), CAROL))
    assert stranger.error_code == Errors.DELEGATION_TOKEN_OWNER_MISMATCH
    while h.now + DAY <= tok.max_timestamp_ms:   # renewed twice a day, it lives up to its maximum only
        h.now += DAY // 2
        assert h.run(TokenRequest(RenewDelegationTokenRequest(hmac=tok.hmac, renew_period_ms=-1), ALICE)).error_code == 0
    assert h.image.delegation_tokens[tok.token_id].expiration_timestamp == tok.max_timestamp_ms
    h.now = tok.max_timestamp_ms + 1
    late = h.run(TokenRequest(RenewDelegationTokenRequest(hmac=tok.hmac, renew_period_ms=-1), ALICE))
    assert late.error_code == Errors.DELEGATION_TOKEN_EXPIRED


def test_expire_now_removes_the_token_and_later_shortens_it() -> None:
    h = cluster()
    tok = create(h)
    r = h.run(TokenRequest(ExpireDelegationTokenRequest(hmac=tok.hmac, expiry_time_period_ms=60_000), ALICE))
    assert r.error_code == 0 and r.expiry_timestamp_ms == h.now + 60_000
    r = h.run(TokenRequest(ExpireDelegationTokenRequest(hmac=tok.hmac, expiry_time_period_ms=-1), ALICE))
    assert r.error_code == 0 and r.expiry_timestamp_ms == h.now
    assert [type(x.message) for x in h.last.records] == [RemoveDelegationTokenRecord]
    assert tok.token_id not in h.image.delegation_tokens


def test_describe_shows_what_the_caller_owns_requested_or_renews() -> None:
    h = cluster()
    a = create(h, principal=ALICE, renewers=[BOB])
    c = create(h, principal=CAROL)
    everyone = dq.DescribeDelegationTokenRequest(owners=None)
    seen = {p: [t.token_id for t in h.run(TokenRequest(everyone, p)).tokens] for p in (ALICE, BOB, CAROL)}
    assert seen == {ALICE: [a.token_id], BOB: [a.token_id], CAROL: [c.token_id]}
    mine = describe_tokens(h.image, SECRET, dq.DescribeDelegationTokenRequest(
        owners=[dq.DescribeDelegationTokenOwner("User", "carol")]), ALICE)
    assert mine.tokens == []
    as_renewer = describe_tokens(h.image, SECRET, dq.DescribeDelegationTokenRequest(
        owners=[dq.DescribeDelegationTokenOwner("User", "bob")]), BOB)   # owners match owners or renewers
    assert [t.token_id for t in as_renewer.tokens] == [a.token_id]
    nobody = describe_tokens(h.image, SECRET, dq.DescribeDelegationTokenRequest(owners=[]), ALICE)
    assert nobody.tokens == []   # an empty owner list lists nothing, as in Kafka
    one = h.run(TokenRequest(everyone, BOB)).tokens[0]
    assert one.hmac == a.hmac and [(x.principal_type, x.principal_name) for x in one.renewers] == [("User", "bob")]
    assert describe_tokens(h.image, None, everyone, ALICE).error_code == Errors.DELEGATION_TOKEN_AUTH_DISABLED


def test_tick_sweeps_expired_tokens_and_a_snapshot_keeps_live_ones() -> None:
    h = cluster(token_expiry_check_interval_ms=60_000)
    old = create(h, max_life=10_000)
    young = create(h)
    assert h.tick(h.now + 60_001) and old.token_id not in h.image.delegation_tokens
    assert young.token_id in h.image.delegation_tokens
    again = h.tick(h.now + 1)   # the next sweep is a check interval away
    assert not any(type(r.message) is RemoveDelegationTokenRecord for r in again)
    snap = [r.message for r in image_to_records(h.image)]
    kept = [m for m in snap if type(m) is DelegationTokenRecord]
    assert [m.token_id for m in kept] == [young.token_id]
