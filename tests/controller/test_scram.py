"""AlterUserScramCredentials / DescribeUserScramCredentials on the sans-I/O controller."""

from __future__ import annotations

import hashlib

from kraftwire.metadata.image import ScramCredential
from kraftwire.metadata.snapshot import image_to_records
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_user_scram_credentials_request as auq
from kraftwire.protocol.messages import describe_user_scram_credentials_request as duq
from kraftwire.protocol.messages.remove_user_scram_credential_record import RemoveUserScramCredentialRecord
from kraftwire.protocol.messages.user_scram_credential_record import UserScramCredentialRecord
from kraftwire.security.scram import SHA256, SHA512, ScramClient, ScramServer

from .harness import Harness

SHA256_ID, SHA512_ID = 1, 2


def _upsert(name: str, password: str = "secret", mech: int = SHA256_ID, iterations: int = 4096,
            salt: bytes = b"0123456789abcdef") -> auq.ScramCredentialUpsertion:
    hash_name = "sha256" if mech != SHA512_ID else "sha512"
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, max(1, iterations))
    return auq.ScramCredentialUpsertion(name, mech, iterations, salt, salted)


def _alter(h: Harness, deletions=(), upsertions=()) -> dict[str, tuple[int, str | None]]:
    resp = h.run(auq.AlterUserScramCredentialsRequest(
        deletions=[auq.ScramCredentialDeletion(n, m) for n, m in deletions], upsertions=list(upsertions)))
    out = {r.user: (r.error_code, r.error_message) for r in resp.results}
    assert len(out) == len(resp.results), "one result per user"
    return out


def _describe(h: Harness, users=None):
    req = duq.DescribeUserScramCredentialsRequest(
        users=None if users is None else [duq.UserName(u) for u in users])
    return h.run(req)


def _login(cred: ScramCredential, mech, user: str, password: str) -> bool:
    """A full SCRAM exchange of our client against our server over ``cred``."""
    from kraftwire.security.scram import SaslAuthenticationError

    server = ScramServer(mech, lambda name, m: cred if name == user else None)
    client = ScramClient(mech, user, password)
    try:
        first = server.evaluate(client.first())
        final = server.evaluate(client.final(first))
        client.verify(final)
    except SaslAuthenticationError:
        return False
    return True


def test_upsert_writes_derived_keys_that_authenticate() -> None:
    h = Harness()
    assert _alter(h, upsertions=[_upsert("alice", "pw-a"), _upsert("alice2", "pw-b", SHA512_ID, 8192)]) == {
        "alice": (0, None), "alice2": (0, None)}
    recs = [r.message for _, r in h.log if type(r.message) is UserScramCredentialRecord]
    assert {(r.name, r.mechanism, r.iterations) for r in recs} == {("alice", 1, 4096), ("alice2", 2, 8192)}
    for r in recs:
        assert r.salt == b"0123456789abcdef" and len(r.stored_key) in (32, 64)
        assert b"pw-" not in r.stored_key + r.server_key
    a = h.image.scram[("alice", 1)]
    assert a == SHA256.credential("pw-a", b"0123456789abcdef", 4096)
    assert _login(a, SHA256, "alice", "pw-a")
    assert not _login(a, SHA256, "alice", "wrong")
    assert _login(h.image.scram[("alice2", 2)], SHA512, "alice2", "pw-b")


def test_describe_all_named_unknown_and_duplicates() -> None:
    h = Harness()
    _alter(h, upsertions=[_upsert("bob", iterations=5000), _upsert("carol", mech=SHA512_ID)])
    _alter(h, upsertions=[_upsert("bob", mech=SHA512_ID, iterations=6000)])
    for everyone in (None, []):
        resp = _describe(h, everyone)
        assert resp.error_code == 0
        got = {r.user: sorted((c.mechanism, c.iterations) for c in r.credential_infos) for r in resp.results}
        assert got == {"bob": [(1, 5000), (2, 6000)], "carol": [(2, 4096)]}
    resp = _describe(h, ["carol", "nobody", "bob", "bob"])
    by = {r.user: r for r in resp.results}
    assert len(resp.results) == 3
    assert by["carol"].error_code == 0 and [(c.mechanism, c.iterations) for c in by["carol"].credential_infos] == [
        (2, 4096)]
    assert by["nobody"].error_code == Errors.RESOURCE_NOT_FOUND
    assert by["nobody"].error_message == "Attempt to describe a user credential that does not exist: nobody"
    assert by["bob"].error_code == Errors.DUPLICATE_RESOURCE and by["bob"].credential_infos == []
    assert h.last.records == []


def test_delete_and_replace() -> None:
    h = Harness()
    _alter(h, upsertions=[_upsert("dan", "one")])
    _alter(h, upsertions=[_upsert("dan", mech=SHA512_ID)])
    assert _alter(h, deletions=[("dan", SHA256_ID)]) == {"dan": (0, None)}
    assert [type(r.message) for r in h.last.records] == [RemoveUserScramCredentialRecord]
    assert set(h.image.scram) == {("dan", 2)}
    # replacing a credential changes the stored keys
    old = h.image.scram[("dan", 2)]
    assert _alter(h, upsertions=[_upsert("dan", "two", SHA512_ID, 4096, b"another-salt")]) == {"dan": (0, None)}
    assert h.image.scram[("dan", 2)] != old
    assert _login(h.image.scram[("dan", 2)], SHA512, "dan", "two")
    assert _alter(h, deletions=[("dan", SHA256_ID)]) == {
        "dan": (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")}
    assert h.last.records == []


def test_validation_errors_fail_only_that_user() -> None:
    h = Harness()
    _alter(h, upsertions=[_upsert("keep")])
    got = _alter(h, deletions=[("", SHA256_ID), ("x", 9), ("gone", SHA256_ID)], upsertions=[
        _upsert("few", iterations=4095), _upsert("many", iterations=16385), _upsert("dup"), _upsert("dup"),
        _upsert("gone"),
        _upsert("ok", iterations=16384), _upsert("badmech", mech=3), _upsert("ok2", mech=0),
        auq.ScramCredentialUpsertion("nosalt", 1, 4096, b"", b"x" * 32),
        auq.ScramCredentialUpsertion("nopw", 1, 4096, b"salt", b""),
    ])
    assert got == {
        "": (Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "x": (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "dup": (Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"),
        "gone": (Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "few": (Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "ok": (0, None),
        "badmech": (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "ok2": (Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "nosalt": (Errors.UNACCEPTABLE_CREDENTIAL, "Salt must not be empty"),
        "nopw": (Errors.UNACCEPTABLE_CREDENTIAL, "Salted password must not be empty"),
    }
    assert [(r.message.name, r.message.iterations) for r in h.last.records] == [("ok", 16384)]
    # a user named three times is a duplicate however the repeats are spread
    got = _alter(h, deletions=[("keep", SHA256_ID)], upsertions=[_upsert("keep", mech=SHA512_ID),
                                                                 _upsert("keep")])
    assert got == {"keep": (Errors.DUPLICATE_RESOURCE,
                            "A user credential cannot be altered twice in the same request")}
    assert ("keep", 1) in h.image.scram and h.last.records == []


def test_old_metadata_version_refuses_scram() -> None:
    h = Harness(mv=10)
    assert _alter(h, upsertions=[_upsert("eve")]) == {
        "eve": (Errors.UNSUPPORTED_VERSION, "The current metadata.version does not support SCRAM")}
    assert h.last.records == []


def test_credentials_survive_snapshot_and_standby_replay() -> None:
    h = Harness()
    _alter(h, upsertions=[_upsert("frank", "pw", SHA512_ID, 10000)])
    recs = image_to_records(h.image)
    assert any(type(r.message) is UserScramCredentialRecord and r.message.name == "frank" for r in recs)
    from kraftwire.controller import QuorumController

    standby = QuorumController(h.config)
    standby.replay_batch(h.log)
    assert standby.image.scram == h.image.scram
    assert _describe(h, ["frank"]).results[0].credential_infos[0].iterations == 10000


def test_not_controller_when_standby() -> None:
    from kraftwire.controller import QuorumController

    ctl = QuorumController()
    resp = ctl.handle(0, auq.AlterUserScramCredentialsRequest(upsertions=[_upsert("g")])).response
    assert [(r.user, r.error_code) for r in resp.results] == [("g", Errors.NOT_CONTROLLER)]
