"""SCRAM (RFC 5802/7677), PLAIN, JAAS parsing and the per-connection SASL state machine."""

from __future__ import annotations

import base64

import pytest

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kraftwire.protocol.messages.sasl_handshake_request import SaslHandshakeRequest
from kraftwire.security.jaas import JaasError, parse_jaas
from kraftwire.security.plain import PlainServer, plain_token
from kraftwire.security.sasl import SaslAuthenticator, SaslSettings
from kraftwire.security.scram import (
    SHA256,
    SHA512,
    SaslAuthenticationError,
    ScramClient,
    ScramServer,
    escape_name,
    unescape_name,
)

# RFC 7677 section 3 example.
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CNONCE, SNONCE = "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


def lookup_for(users):
    creds = {(u, m.type_id): m.credential(p, iterations=4096) for u, p in users.items() for m in (SHA256, SHA512)}
    return lambda user, mech: creds.get((user, mech.type_id))


def test_rfc7677_vector_server_and_client():
    cred = SHA256.credential("pencil", SALT, 4096)
    server = ScramServer(SHA256, lambda u, m: cred if u == "user" else None, nonce=SNONCE)
    client = ScramClient(SHA256, "user", "pencil", nonce=CNONCE)
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = server.evaluate(client.first())
    assert server_first == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = client.final(server_first)
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    server_final = server.evaluate(final)
    assert server_final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    client.verify(server_final)
    assert server.complete and server.principal == "User:user"


@pytest.mark.parametrize("mech", [SHA256, SHA512])
def test_scram_round_trip_and_wrong_password(mech):
    lookup = lookup_for({"alice": "alice-secret"})
    server = ScramServer(mech, lookup)
    client = ScramClient(mech, "alice", "alice-secret")
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.principal == "User:alice"

    server = ScramServer(mech, lookup)
    bad = ScramClient(mech, "alice", "wrong")
    final = bad.final(server.evaluate(bad.first()))
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        server.evaluate(final)
    assert not server.complete
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(final)  # a failed exchange stays failed


def test_scram_rejects_unknown_users_and_malformed_messages():
    lookup = lookup_for({"alice": "pw"})
    # an unknown name gets a normal-looking challenge (stable salt) and fails only at the proof
    first_a = ScramServer(SHA256, lookup).evaluate(ScramClient(SHA256, "mallory", "pw", nonce="n1").first())
    server = ScramServer(SHA256, lookup)
    mallory = ScramClient(SHA256, "mallory", "pw", nonce="n1")
    first_b = server.evaluate(mallory.first())
    assert first_a.split(b",")[1:] == first_b.split(b",")[1:]
    with pytest.raises(SaslAuthenticationError, match="invalid credentials"):
        server.evaluate(mallory.final(first_b))
    for token in (b"", b"\xff\xfe", b"p=tls-unique,,n=alice,r=abc", b"n,,r=abc,n=alice", b"n,,n=alice,r=a,b",
                  b"n,,n=al=ice,r=abc", b"n,,n=alice,r=abc,m=ext", b"n,,n=alice,r=abc,tokenauth=true",
                  b"n,a=bob,n=alice,r=abc"):
        with pytest.raises(SaslAuthenticationError):
            ScramServer(SHA256, lookup).evaluate(token)


def test_scram_final_message_checks_binding_nonce_and_proof():
    lookup = lookup_for({"alice": "pw"})
    client = ScramClient(SHA256, "alice", "pw")
    good = None
    for mutate in (lambda f: f.replace(b"c=biws", b"c=eSws"), lambda f: f.replace(b",r=", b",r=x"),
                   lambda f: f[: f.index(b",p=")] + b",p=AAAA", lambda f: f[: f.index(b",p=")], lambda f: f):
        server = ScramServer(SHA256, lookup)
        final = client.final(server.evaluate(client.first()))
        good = mutate(final)
        if good == final:
            server.evaluate(good)
            assert server.complete
        else:
            with pytest.raises(SaslAuthenticationError):
                server.evaluate(good)


def test_names_with_comma_and_equals_are_escaped():
    assert escape_name("a,b=c") == "a=2Cb=3Dc"
    assert unescape_name("a=2Cb=3Dc") == "a,b=c"
    lookup = lookup_for({"a,b=c": "pw"})
    server = ScramServer(SHA512, lookup)
    client = ScramClient(SHA512, "a,b=c", "pw")
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.principal == "User:a,b=c"


def test_credential_iterations_are_bounded():
    with pytest.raises(ValueError):
        SHA256.credential("pw", iterations=1000)
    with pytest.raises(ValueError):
        SHA256.credential("pw", iterations=20000)


def test_plain():
    users = {"alice": "alice-secret"}.get
    s = PlainServer(users)
    assert s.evaluate(plain_token("alice", "alice-secret")) == b"" and s.principal == "User:alice"
    for token in (plain_token("alice", "nope"), plain_token("bob", "alice-secret"), b"alice\0secret",
                  plain_token("alice", "alice-secret", authzid="root"), plain_token("", "x"), plain_token("a", ""),
                  b"\0\xff\0x"):
        s = PlainServer(users)
        with pytest.raises(SaslAuthenticationError):
            s.evaluate(token)
        assert not s.complete


def test_jaas_parsing():
    e = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
                   'password="admin-secret" user_admin="admin-secret" user_alice=\'a;b "c"\';')
    assert e.flag == "required" and e.username == "admin" and e.password == "admin-secret"
    assert e.plain_users() == {"admin": "admin-secret", "alice": 'a;b "c"'}
    assert parse_jaas('M required password="x\\"y";').password == 'x"y'
    for bad in ("", "M required", 'M maybe a="b";', 'M required a="b"', 'M required a="b"; N required;',
                'M required a=;', 'M required a="unterminated;'):
        with pytest.raises(JaasError):
            parse_jaas(bad)


def _settings():
    return SaslSettings(("PLAIN", "SCRAM-SHA-256"), {"alice": "pw"}.get, lookup_for({"bob": "pw"}))


def test_authenticator_v1_plain_flow():
    auth = SaslAuthenticator(_settings())
    assert auth.permits(18) and not auth.permits(3)
    step = auth.handshake(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert step.response.error_code == 0 and step.response.mechanisms == ["PLAIN", "SCRAM-SHA-256"]
    assert not auth.permits(18)
    step = auth.authenticate(SaslAuthenticateRequest(auth_bytes=plain_token("alice", "pw")), 2)
    assert step.authenticated and step.response.error_code == 0 and auth.principal == "User:alice"
    assert auth.permits(3)
    again = auth.authenticate(SaslAuthenticateRequest(auth_bytes=b""), 2)
    assert again.response.error_code == Errors.ILLEGAL_SASL_STATE and not again.close
    assert auth.handshake(SaslHandshakeRequest(mechanism="PLAIN"), 1).response.error_code == Errors.ILLEGAL_SASL_STATE


def test_authenticator_failures_close_the_connection():
    auth = SaslAuthenticator(_settings())
    step = auth.handshake(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
    assert step.close and step.response.error_code == Errors.UNSUPPORTED_SASL_MECHANISM
    auth = SaslAuthenticator(_settings())
    auth.handshake(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    step = auth.authenticate(SaslAuthenticateRequest(auth_bytes=plain_token("alice", "bad")), 1)
    assert step.close and step.response.error_code == Errors.SASL_AUTHENTICATION_FAILED
    assert "Invalid username or password" in step.response.error_message
    assert auth.principal is None and not auth.permits(3)
    auth = SaslAuthenticator(_settings())
    assert auth.authenticate(SaslAuthenticateRequest(auth_bytes=b"x"), 1).close


def test_authenticator_v0_raw_scram():
    auth = SaslAuthenticator(_settings())
    auth.handshake(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 0)
    assert auth.raw_tokens
    client = ScramClient(SHA256, "bob", "pw")
    client.verify(auth.raw(client.final(auth.raw(client.first()))))
    assert auth.principal == "User:bob" and not auth.raw_tokens


def test_final_nonce_may_repeat_the_client_nonce_as_older_librdkafka_sends_it():
    lookup = lookup_for({"alice": "pw"})
    server = ScramServer(SHA256, lookup)
    client_first_bare = "n=alice,r=abcdef"
    server_first = server.evaluate(f"n,,{client_first_bare}".encode()).decode()
    combined = dict(p.split("=", 1) for p in server_first.split(","))["r"]
    without_proof = f"c=biws,r=abcdef{combined}"
    cred = lookup("alice", SHA256)
    salted = SHA256.salted_password("pw", cred.salt, cred.iterations)
    client_key = SHA256.hmac(salted, b"Client Key")
    signature = SHA256.hmac(SHA256.digest(client_key), f"{client_first_bare},{server_first},{without_proof}".encode())
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    assert server.evaluate(f"{without_proof},p={proof}".encode()).startswith(b"v=")
    assert server.complete
