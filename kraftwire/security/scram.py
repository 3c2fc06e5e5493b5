"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them, sans-I/O.

``ScramServer`` checks a client against stored credentials (salt, StoredKey, ServerKey,
iterations: the fields of ``UserScramCredentialRecord``); ``ScramClient`` is the other side, used by
kraftwire's own outbound connections and by tests. Passwords are UTF-8 encoded without SASLprep,
as Kafka does. Channel binding is not offered (gs2 flag ``n`` or ``y``). A client-first message with the
``tokenauth=true`` extension logs in with a delegation token (user name = token id, password = the token's
HMAC in base64) through ``token_lookup``; the session's principal is then the token's owner and
``token_authenticated`` is set (such a session may not ask for more tokens).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from kraftwire.metadata.image import ScramCredential

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
_NONCE = re.compile(r"^[\x21-\x2b\x2d-\x7e]+$")


#: token id, mechanism -> (a SCRAM credential of the token's HMAC, the owner's principal), or None
TokenLookup = Callable[[str, "ScramMechanism"], "tuple[ScramCredential, str] | None"]


class SaslAuthenticationError(Exception):
    """The SASL exchange failed; the message is safe to show the client."""


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    type_id: int        # ScramMechanism.type() in Kafka / UserScramCredentialRecord.mechanism
    hash_name: str

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)

    def credential_from_salted(self, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
        client_key = self.hmac(salted, b"Client Key")
        return ScramCredential(salt=salt, stored_key=self.digest(client_key),
                               server_key=self.hmac(salted, b"Server Key"), iterations=iterations)

    def credential(self, password: str, salt: bytes | None = None,
                   iterations: int = MIN_ITERATIONS) -> ScramCredential:
        """Stored credentials for ``password`` (a fresh random salt unless given)."""
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"{self.name} iterations must be within {MIN_ITERATIONS}..{MAX_ITERATIONS}, "
                             f"got {iterations}")
        salt = os.urandom(32) if salt is None else salt
        return self.credential_from_salted(self.salted_password(password, salt, iterations), salt, iterations)


SHA256 = ScramMechanism("SCRAM-SHA-256", 1, "sha256")
SHA512 = ScramMechanism("SCRAM-SHA-512", 2, "sha512")
MECHANISMS: dict[str, ScramMechanism] = {m.name: m for m in (SHA256, SHA512)}
BY_TYPE: dict[int, ScramMechanism] = {m.type_id: m for m in (SHA256, SHA512)}

CredentialLookup = Callable[[str, ScramMechanism], ScramCredential | None]
_DECOY_KEY = os.urandom(32)


def _decoy(username: str, mechanism: ScramMechanism) -> ScramCredential:
    """A stable made-up credential for a name that has none (same salt on every attempt)."""
    seed = hmac.new(_DECOY_KEY, f"{mechanism.name}:{username}".encode(), "sha256").digest()
    return ScramCredential(salt=seed, stored_key=mechanism.digest(seed), server_key=mechanism.hmac(seed, b"k"),
                           iterations=MIN_ITERATIONS)


def escape_name(name: str) -> str:
    """RFC 5802 saslname: ``=`` and ``,`` become ``=3D`` and ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_name(text: str) -> str:
    if re.search(r"=(?!2C|3D)", text):
        raise ValueError(f"invalid escape in SCRAM name {text!r}")
    return text.replace("=2C", ",").replace("=3D", "=")


def _nonce() -> str:
    return base64.b64encode(os.urandom(24)).decode().rstrip("=").replace("+", "-").replace("/", "_")


def _attrs(text: str) -> list[tuple[str, str]]:
    """``k=v,k=v`` → pairs; values may contain ``=`` (base64)."""
    out = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"malformed SCRAM attribute {part!r}")
        out.append((key, value))
    return out


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode(), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"invalid base64 {text!r}") from None


class ScramServer:
    """One server-side SCRAM exchange: ``evaluate`` each client token; ``complete`` once done."""

    def __init__(self, mechanism: ScramMechanism, lookup: CredentialLookup, *, nonce: str | None = None,
                 token_lookup: TokenLookup | None = None) -> None:
        self.mechanism = mechanism
        self.lookup = lookup
        self.token_lookup = token_lookup
        self.token_authenticated = False
        self._owner: str | None = None
        self.complete = False
        self.username: str | None = None
        self._server_nonce = nonce or _nonce()
        self._state = "first"
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2 = ""
        self._nonce = ""
        self._decoy = False

    @property
    def principal(self) -> str:
        if not self.complete or self.username is None:
            raise RuntimeError("SCRAM exchange not complete")
        return self._owner if self._owner is not None else f"User:{self.username}"

    def _fail(self, why: str) -> SaslAuthenticationError:
        self._state = "failed"
        return SaslAuthenticationError(why)

    def _invalid_credentials(self) -> SaslAuthenticationError:
        return self._fail("Authentication failed during authentication due to invalid credentials with SASL "
                          f"mechanism {self.mechanism.name}")

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer to ``token``; raises SaslAuthenticationError when the exchange fails."""
        if self._state == "first":
            return self._client_first(token)
        if self._state == "final":
            return self._client_final(token)
        raise self._fail(f"unexpected SCRAM message in state {self._state}")

    def _client_first(self, token: bytes) -> bytes:
        try:
            text = token.decode()
            gs2, authzid, bare = self._split_first(text)
            attrs = _attrs(bare)
            if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
                raise ValueError("client-first-message must start with n= and r=")
            username = unescape_name(attrs[0][1])
            nonce = attrs[1][1]
            if not _NONCE.match(nonce):
                raise ValueError("invalid client nonce")
            extensions = dict(attrs[2:])
        except (UnicodeDecodeError, ValueError) as e:
            raise self._fail(f"Invalid SCRAM client first message: {e}") from None
        if "m" in extensions:
            raise self._fail("SCRAM mandatory extensions are not supported")
        token = extensions.get("tokenauth", "false").lower() == "true"
        if token and self.token_lookup is None:
            raise self._fail("delegation token authentication is not enabled (no delegation.token.secret.key)")
        if authzid and authzid != username:
            raise self._fail("Authentication failed: Client requested an authorization id that is different "
                             "from username")
        if token:
            assert self.token_lookup is not None
            found = self.token_lookup(username, self.mechanism)
            credential, self._owner = (None, None) if found is None else found
            self.token_authenticated = found is not None
        else:
            credential = self.lookup(username, self.mechanism)
        if credential is None:
            # Carry on with a decoy so an unknown name fails exactly like a wrong password.
            self._decoy = True
            credential = _decoy(username, self.mechanism)
        if credential.iterations < MIN_ITERATIONS:
            raise self._fail(f"Iterations {credential.iterations} is less than the minimum {MIN_ITERATIONS} "
                             f"for {self.mechanism.name}")
        self.username = username
        self._credential = credential
        self._gs2 = gs2
        self._client_first_bare = bare
        self._nonce = nonce + self._server_nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode()

    @staticmethod
    def _split_first(text: str) -> tuple[str, str, str]:
        flag, sep, rest = text.partition(",")
        if not sep or flag not in ("n", "y"):
            raise ValueError("channel binding is not supported (gs2 flag must be n or y)")
        authz, sep, bare = rest.partition(",")
        if not sep:
            raise ValueError("missing gs2 header")
        if authz and not authz.startswith("a="):
            raise ValueError(f"invalid authzid {authz!r}")
        return f"{flag},{authz},", unescape_name(authz[2:]) if authz else "", bare

    def _client_final(self, token: bytes) -> bytes:
        cred = self._credential
        assert cred is not None
        try:
            text = token.decode()
            without_proof, sep, proof_text = text.rpartition(",p=")
            if not sep:
                raise ValueError("no proof")
            attrs = _attrs(without_proof)
            if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
                raise ValueError("client-final-message must start with c= and r=")
            binding = _b64(attrs[0][1])
            proof = _b64(proof_text)
        except (UnicodeDecodeError, ValueError) as e:
            raise self._fail(f"Invalid SCRAM client final message: {e}") from None
        if binding != self._gs2.encode():
            raise self._fail("Invalid SCRAM client final message: channel binding does not match")
        # Kafka accepts a final nonce that *ends with* the combined nonce: older librdkafka clients (e.g.
        # Debian's kcat) send the client nonce twice. The proof still covers the message as sent.
        if not attrs[1][1].endswith(self._nonce):
            raise self._fail("Invalid SCRAM client final message: nonce does not match")
        mech = self.mechanism
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = mech.hmac(cred.stored_key, auth_message)
        if len(proof) != len(signature) or self._decoy:
            raise self._invalid_credentials()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(mech.digest(client_key), cred.stored_key):
            raise self._invalid_credentials()
        self._state = "done"
        self.complete = True
        server_signature = mech.hmac(cred.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


class ScramClient:
    """The client side: ``first()``, then ``final(server_first)``, then ``verify(server_final)``."""

    def __init__(self, mechanism: ScramMechanism, username: str, password: str, *, nonce: str | None = None,
                 token: bool = False) -> None:
        """``token``: log in with a delegation token (user name = token id, password = its HMAC in base64)."""
        self.mechanism = mechanism
        self.username = username
        self.password = password
        self._nonce = nonce or _nonce()
        self._bare = f"n={escape_name(username)},r={self._nonce}" + (",tokenauth=true" if token else "")
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        try:
            text = server_first.decode()
            attrs = dict(_attrs(text))
            nonce, salt, iterations = attrs["r"], _b64(attrs["s"]), int(attrs["i"])
        except (UnicodeDecodeError, ValueError, KeyError) as e:
            raise SaslAuthenticationError(f"invalid SCRAM server first message: {e}") from None
        if "e" in attrs:
            raise SaslAuthenticationError(f"SCRAM server error: {attrs['e']}")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslAuthenticationError("SCRAM server nonce does not extend the client nonce")
        if iterations < MIN_ITERATIONS:
            raise SaslAuthenticationError(f"SCRAM iterations {iterations} below {MIN_ITERATIONS}")
        mech = self.mechanism
        salted = mech.salted_password(self.password, salt, iterations)
        client_key = mech.hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = mech.hmac(mech.digest(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = mech.hmac(mech.hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode(errors="replace")
        if text.startswith("e="):
            raise SaslAuthenticationError(f"SCRAM server error: {text[2:]}")
        if not text.startswith("v=") or not hmac.compare_digest(_b64(text[2:]), self._server_signature):
            raise SaslAuthenticationError("SCRAM server signature does not match")
