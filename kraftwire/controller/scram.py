"""SCRAM credential commands: AlterUserScramCredentials (KIP-554) and DescribeUserScramCredentials.

The client sends the salt and the salted password (``Hi(password, salt, i)``); the controller derives
StoredKey and ServerKey from it and writes ``UserScramCredentialRecord`` — the password and the salted
password are never stored. Deletions write ``RemoveUserScramCredentialRecord``. Validation and error
codes follow Kafka's ScramControlManager: one result per user, and any problem with one of a user's
changes fails all of that user's changes in the request.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import TYPE_CHECKING, Any

from kraftwire.metadata.features import wrap
from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_user_scram_credentials_response as aur
from kraftwire.protocol.messages import describe_user_scram_credentials_response as dur
from kraftwire.protocol.messages.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from kraftwire.protocol.messages.user_scram_credential_record import UserScramCredentialRecord
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

# ScramMechanism type → hash; Kafka's minimum iteration count is 4096 for both, its maximum 16384.
HASHES = {1: "sha256", 2: "sha512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
SCRAM_METADATA_VERSION = 11     # 3.5-IV2: the first metadata.version with SCRAM records

_TWICE = "A user credential cannot be altered twice in the same request"
_DESCRIBE_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "
_DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist: "

Problem = tuple[Errors, str]


def derive_keys(mechanism: int, salted_password: bytes) -> tuple[bytes, bytes]:
    """(StoredKey, ServerKey) of RFC 5802 from a salted password."""
    name = HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", name).digest()
    return hashlib.new(name, client_key).digest(), hmac.new(salted_password, b"Server Key", name).digest()


def _name_and_mechanism(name: str, mechanism: int) -> Problem | None:
    if not name:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in HASHES:
        return Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _check_deletion(image: MetadataImage, d: Any) -> Problem | None:
    problem = _name_and_mechanism(d.name, d.mechanism)
    if problem is None and (d.name, d.mechanism) not in image.scram:
        problem = Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
    return problem


def _check_upsertion(u: Any) -> Problem | None:
    problem = _name_and_mechanism(u.name, u.mechanism)
    if problem is not None:
        return problem
    if u.iterations < MIN_ITERATIONS:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if u.iterations > MAX_ITERATIONS:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    # Kafka stores whatever it is sent; an empty salt or salted password can never log in, so say so.
    if not u.salt:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Salt must not be empty"
    if not u.salted_password:
        return Errors.UNACCEPTABLE_CREDENTIAL, "Salted password must not be empty"
    return None


def alter_credentials(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[list[MetadataRecord], Any]:
    """AlterUserScramCredentials: deletions, then upsertions, atomically; one result per user."""
    image = ctl.image
    supported = image.metadata_version >= SCRAM_METADATA_VERSION
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    failed: dict[str, Problem] = {}

    def consider(item: Any, check: Any, into: dict[str, Any]) -> None:
        name = item.name
        if name in failed:
            return
        if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
            failed[name] = (Errors.DUPLICATE_RESOURCE, _TWICE)
            return
        problem = check(item) if supported else (Errors.UNSUPPORTED_VERSION,
                                                 "The current metadata.version does not support SCRAM")
        if problem is None:
            into[name] = item
        else:
            failed[name] = problem

    for d in req.deletions:
        consider(d, lambda d: _check_deletion(image, d), deletions)
    for u in req.upsertions:
        consider(u, _check_upsertion, upsertions)

    records: list[MetadataRecord] = []
    resp = aur.AlterUserScramCredentialsResponse()
    for name, d in deletions.items():
        records.append(wrap(RemoveUserScramCredentialRecord(name=name, mechanism=d.mechanism)))
        resp.results.append(aur.AlterUserScramCredentialsResult(name, 0, None))
    for name, u in upsertions.items():
        stored_key, server_key = derive_keys(u.mechanism, u.salted_password)
        records.append(wrap(UserScramCredentialRecord(name=name, mechanism=u.mechanism, salt=u.salt,
                                                      stored_key=stored_key, server_key=server_key,
                                                      iterations=u.iterations)))
        resp.results.append(aur.AlterUserScramCredentialsResult(name, 0, None))
    for name, (code, message) in failed.items():
        resp.results.append(aur.AlterUserScramCredentialsResult(name, int(code), message))
    return records, resp


def describe(image: MetadataImage, req: Any) -> Any:
    """DescribeUserScramCredentials from ``image``: mechanisms and iterations, never keys."""
    by_user: dict[str, list[dur.CredentialInfo]] = {}
    for (name, mechanism), cred in sorted(image.scram.items()):
        by_user.setdefault(name, []).append(dur.CredentialInfo(mechanism, cred.iterations))
    resp = dur.DescribeUserScramCredentialsResponse(error_code=0, error_message=None)
    if not req.users:
        for name, infos in by_user.items():
            resp.results.append(dur.DescribeUserScramCredentialsResult(name, 0, None, infos))
        return resp
    seen: dict[str, bool] = {}
    for u in req.users:
        seen[u.name] = u.name in seen
    for name, twice in seen.items():
        if twice:
            resp.results.append(dur.DescribeUserScramCredentialsResult(
                name, int(Errors.DUPLICATE_RESOURCE), _DESCRIBE_TWICE + name, []))
        elif name in by_user:
            resp.results.append(dur.DescribeUserScramCredentialsResult(name, 0, None, by_user[name]))
        else:
            resp.results.append(dur.DescribeUserScramCredentialsResult(
                name, int(Errors.RESOURCE_NOT_FOUND), _DESCRIBE_MISSING + name, []))
    return resp


def describe_credentials(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[list[MetadataRecord], Any]:
    """The controller-command form of ``describe`` (reads the latest image, writes nothing)."""
    return [], describe(ctl.image, req)
