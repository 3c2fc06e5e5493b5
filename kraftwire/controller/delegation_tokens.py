"""Delegation tokens in KRaft (KIP-48 tokens kept by the controller, KIP-900), as Kafka's
DelegationTokenControlManager keeps them.

A token is a DelegationTokenRecord (owner, requester, renewers, issue/max/expiry times, token id); its
HMAC is never written: it is HMAC-SHA512 of the token id under ``delegation.token.secret.key``, so any
node with the same key finds a token from its HMAC. Without a key token APIs answer
DELEGATION_TOKEN_AUTH_DISABLED; below metadata.version 3.6-IV2 they answer UNSUPPORTED_VERSION.
Renew and expire rewrite the record with a new expiry; expiring with a negative period removes the token
(RemoveDelegationTokenRecord), and ``sweep_records`` (run from the controller's tick every
``delegation.token.expiry.check.interval.ms``) removes every token past its expiry or maximum time.

The controller needs the caller's principal, which a bare request body does not carry:
``TokenRequest(body, principal)`` wraps a Create/Renew/Expire/DescribeDelegationToken body with it
(``User:alice``; a forwarded request's principal is the one in its Envelope).
"""

from __future__ import annotations

import base64
import hmac as hmac_mod
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from kraftwire.metadata.features import wrap
from kraftwire.metadata.image import DelegationToken, MetadataImage
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_delegation_token_response as cresp
from kraftwire.protocol.messages import describe_delegation_token_response as dresp
from kraftwire.protocol.messages.delegation_token_record import DelegationTokenRecord
from kraftwire.protocol.messages.expire_delegation_token_response import ExpireDelegationTokenResponse
from kraftwire.protocol.messages.remove_delegation_token_record import RemoveDelegationTokenRecord
from kraftwire.protocol.messages.renew_delegation_token_response import RenewDelegationTokenResponse
from kraftwire.protocol.metadata import MetadataRecord
from kraftwire.security.tokens import token_hmac

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

log = logging.getLogger("kraftwire.controller")

MV_DELEGATION_TOKENS = 13      # 3.6-IV2
USER_TYPE = "User"
Records = list[MetadataRecord]


@dataclass(frozen=True, slots=True)
class TokenRequest:
    """A delegation-token request body and the principal (``Type:name``) it runs as."""

    body: Any
    principal: str
    MAX_VERSION: ClassVar[int] = 3

    def error_response(self, version: int, code: int, message: str | None = None) -> Any:
        return self.body.error_response(version, code, message)


def find_by_hmac(image: MetadataImage, secret: str, mac: bytes) -> tuple[str, DelegationToken] | None:
    """The (token id, token) whose HMAC is ``mac``."""
    for token_id, token in image.delegation_tokens.items():
        if hmac_mod.compare_digest(token_hmac(secret, token_id), bytes(mac)):
            return token_id, token
    return None


def _split(principal: str) -> tuple[str, str]:
    kind, _, name = principal.partition(":")
    return kind, name


def _record(token_id: str, t: DelegationToken, expiry: int | None = None) -> MetadataRecord:
    return wrap(DelegationTokenRecord(owner=t.owner, requester=t.requester, renewers=list(t.renewers),
                                      issue_timestamp=t.issue_timestamp, max_timestamp=t.max_timestamp,
                                      expiration_timestamp=t.expiration_timestamp if expiry is None else expiry,
                                      token_id=token_id))


def _refusal(ctl: QuorumController) -> Errors | None:
    if not ctl.config.token_secret_key:
        return Errors.DELEGATION_TOKEN_AUTH_DISABLED
    if ctl.image.metadata_version < MV_DELEGATION_TOKENS:
        return Errors.UNSUPPORTED_VERSION
    return None


def handle(ctl: QuorumController, now: int, req: TokenRequest, version: int) -> tuple[Records, Any]:
    """The controller command for a ``TokenRequest``."""
    return _BY_BODY[type(req.body).__name__](ctl, now, req.body, req.principal)


def create(ctl: QuorumController, now: int, body: Any, principal: str) -> tuple[Records, Any]:
    owner = principal
    if body.owner_principal_name:
        owner = f"{body.owner_principal_type}:{body.owner_principal_name}"
    (otype, oname), (rtype, rname) = _split(owner), _split(principal)
    resp = cresp.CreateDelegationTokenResponse(principal_type=otype, principal_name=oname,
                                               token_requester_principal_type=rtype,
                                               token_requester_principal_name=rname, hmac=b"")
    refused = _refusal(ctl)
    if refused is not None:
        resp.error_code = int(refused)
        return [], resp
    cfg = ctl.config
    life = cfg.token_max_lifetime_ms if body.max_lifetime_ms <= 0 else min(cfg.token_max_lifetime_ms,
                                                                            body.max_lifetime_ms)
    max_ts = now + life
    expiry = min(max_ts, now + cfg.token_renew_ms)
    renewers = []
    for r in body.renewers:
        if r.principal_type != USER_TYPE:
            resp.error_code = int(Errors.INVALID_PRINCIPAL_TYPE)
            return [], resp
        renewers.append(f"{r.principal_type}:{r.principal_name}")
    token_id = base64.urlsafe_b64encode(ctl.new_uuid().bytes).decode().rstrip("=")
    token = DelegationToken(owner, principal, tuple(renewers), now, max_ts, expiry)
    resp.issue_timestamp_ms, resp.expiry_timestamp_ms, resp.max_timestamp_ms = now, expiry, max_ts
    resp.token_id, resp.hmac = token_id, token_hmac(cfg.token_secret_key or "", token_id)
    log.info("Created delegation token %s for owner %s (requested by %s)", token_id, owner, principal)
    return [_record(token_id, token)], resp


def _allowed(token: DelegationToken, principal: str) -> bool:
    return token.owner == principal or principal in token.renewers


def _token_named(ctl: QuorumController, hmac: bytes, resp: Any) -> Any:
    """(token id, token) the HMAC names; None, with ``resp``'s error set, when tokens are refused or none matches."""
    refused = _refusal(ctl)
    found = None if refused else find_by_hmac(ctl.image, ctl.config.token_secret_key or "", hmac)
    if refused is not None or found is None:
        resp.error_code = int(refused or Errors.DELEGATION_TOKEN_NOT_FOUND)
        return None
    return found


def renew(ctl: QuorumController, now: int, body: Any, principal: str) -> tuple[Records, Any]:
    resp = RenewDelegationTokenResponse()
    found = _token_named(ctl, body.hmac, resp)
    if found is None:
        return [], resp
    token_id, token = found
    if token.max_timestamp < now or token.expiration_timestamp < now:
        resp.error_code = int(Errors.DELEGATION_TOKEN_EXPIRED)
        return [], resp
    if not _allowed(token, principal):
        resp.error_code = int(Errors.DELEGATION_TOKEN_OWNER_MISMATCH)
        return [], resp
    period = ctl.config.token_renew_ms if body.renew_period_ms <= 0 else min(ctl.config.token_renew_ms,
                                                                            body.renew_period_ms)
    resp.expiry_timestamp_ms = min(token.max_timestamp, now + period)
    return [_record(token_id, token, resp.expiry_timestamp_ms)], resp


def expire(ctl: QuorumController, now: int, body: Any, principal: str) -> tuple[Records, Any]:
    resp = ExpireDelegationTokenResponse()
    found = _token_named(ctl, body.hmac, resp)
    if found is None:
        return [], resp
    token_id, token = found
    if not _allowed(token, principal):
        resp.error_code = int(Errors.DELEGATION_TOKEN_OWNER_MISMATCH)
        return [], resp
    if body.expiry_time_period_ms < 0:
        resp.expiry_timestamp_ms = now
        log.info("Delegation token %s of %s expired by %s", token_id, token.owner, principal)
        return [wrap(RemoveDelegationTokenRecord(token_id=token_id))], resp
    if token.max_timestamp < now or token.expiration_timestamp < now:
        resp.error_code = int(Errors.DELEGATION_TOKEN_EXPIRED)
        return [], resp
    resp.expiry_timestamp_ms = min(token.max_timestamp, now + body.expiry_time_period_ms)
    return [_record(token_id, token, resp.expiry_timestamp_ms)], resp


def describe_tokens(image: MetadataImage, secret: str | None, body: Any, principal: str) -> Any:
    """DescribeDelegationToken from an image: the tokens owned or renewable by the principals asked for (all
    when null) that ``principal`` owns, requested or may renew (Kafka also shows tokens to holders of DESCRIBE on the
    token resource; that ACL check belongs to the caller's authorizer)."""
    resp = dresp.DescribeDelegationTokenResponse(tokens=[])
    if not secret:
        resp.error_code = int(Errors.DELEGATION_TOKEN_AUTH_DISABLED)
        return resp
    owners = None if body.owners is None else {f"{o.principal_type}:{o.principal_name}" for o in body.owners}
    for token_id, t in sorted(image.delegation_tokens.items()):
        if owners is not None and t.owner not in owners and not owners.intersection(t.renewers):
            continue
        if not (_allowed(t, principal) or t.requester == principal):
            continue
        (otype, oname), (rtype, rname) = _split(t.owner), _split(t.requester)
        resp.tokens.append(dresp.DescribedDelegationToken(
            principal_type=otype, principal_name=oname, token_requester_principal_type=rtype,
            token_requester_principal_name=rname, issue_timestamp=t.issue_timestamp,
            expiry_timestamp=t.expiration_timestamp, max_timestamp=t.max_timestamp, token_id=token_id,
            hmac=token_hmac(secret, token_id),
            renewers=[dresp.DescribedDelegationTokenRenewer(*_split(r)) for r in t.renewers]))
    return resp


def describe(ctl: QuorumController, now: int, body: Any, principal: str) -> tuple[Records, Any]:
    return [], describe_tokens(ctl.image, ctl.config.token_secret_key, body, principal)


def sweep_records(ctl: QuorumController, now: int) -> Records:
    """RemoveDelegationTokenRecords for every token past its expiry or maximum time (Kafka's sweep)."""
    if _refusal(ctl) is not None:
        return []
    out: Records = []
    for token_id, t in ctl.image.delegation_tokens.items():
        if t.max_timestamp < now or t.expiration_timestamp < now:
            log.info("Delegation token %s of %s expired", token_id, t.owner)
            out.append(wrap(RemoveDelegationTokenRecord(token_id=token_id)))
    return out


_BY_BODY = {
    "CreateDelegationTokenRequest": create,
    "RenewDelegationTokenRequest": renew,
    "ExpireDelegationTokenRequest": expire,
    "DescribeDelegationTokenRequest": describe,
}
