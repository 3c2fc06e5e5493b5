"""Per-connection SASL authentication on a SASL_PLAINTEXT / SASL_SSL listener, sans-I/O.

A connection starts unauthenticated. It may send ApiVersions (answered normally) and then one
SaslHandshake naming a mechanism. With SaslHandshake v1 the tokens travel in SaslAuthenticate
requests; with v0 they follow as raw size-prefixed frames (the pre-KIP-152 framing). When the
mechanism's server completes, the connection's principal is set and every API becomes available.
Any other request first, an unknown mechanism, or a failed exchange ends the connection (after an
error response where the protocol has one), as Kafka's SaslServerAuthenticator does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.sasl_authenticate_response import SaslAuthenticateResponse
from kraftwire.protocol.messages.sasl_handshake_response import SaslHandshakeResponse
from kraftwire.security.plain import PasswordLookup, PlainServer
from kraftwire.security.scram import (
    MECHANISMS,
    CredentialLookup,
    SaslAuthenticationError,
    ScramServer,
    TokenLookup,
)

SASL_APIS: dict[int, tuple[int, int]] = {ApiKey.SASL_HANDSHAKE: (0, 1), ApiKey.SASL_AUTHENTICATE: (0, 2)}
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


class MechanismServer(Protocol):
    complete: bool

    @property
    def principal(self) -> str: ...

    def evaluate(self, token: bytes) -> bytes: ...


@dataclass(frozen=True)
class SaslSettings:
    """What a SASL listener accepts: enabled mechanisms and where credentials come from."""

    mechanisms: tuple[str, ...]
    plain_users: PasswordLookup
    scram: CredentialLookup
    tokens: TokenLookup | None = None   # delegation tokens over SCRAM (tokenauth=true); None: refused

    def server(self, mechanism: str) -> MechanismServer:
        if mechanism == "PLAIN":
            return PlainServer(self.plain_users)
        return ScramServer(MECHANISMS[mechanism], self.scram, token_lookup=self.tokens)


@dataclass(slots=True)
class Step:
    """What the connection does with one request: send ``response`` (if any), maybe close after it."""

    response: Any = None
    close: bool = False
    authenticated: bool = False


class SaslAuthenticator:
    """The SASL state of one connection: ``handshake`` → ``authenticate``/``raw`` → ``done``."""

    def __init__(self, settings: SaslSettings) -> None:
        self.settings = settings
        self.state = "handshake"
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.token_authenticated = False
        self.failure: str | None = None
        self._server: MechanismServer | None = None

    @property
    def raw_tokens(self) -> bool:
        """True when the next frame is a bare SASL token (after a v0 SaslHandshake)."""
        return self.state == "raw"

    def permits(self, api_key: int) -> bool:
        """Whether a request with ``api_key`` may be handled normally in the current state."""
        return self.state == "done" or (self.state == "handshake" and api_key == ApiKey.API_VERSIONS)

    def handshake(self, body: Any, version: int) -> Step:
        if self.state != "handshake":
            return self._reject(f"unexpected SaslHandshake in state {self.state}")
        enabled = list(self.settings.mechanisms)
        if body.mechanism not in enabled:
            self.state = "failed"
            self.failure = f"unsupported SASL mechanism {body.mechanism!r} (enabled: {', '.join(enabled)})"
            return Step(SaslHandshakeResponse(error_code=int(Errors.UNSUPPORTED_SASL_MECHANISM),
                                              mechanisms=enabled), close=True)
        self.mechanism = body.mechanism
        self._server = self.settings.server(body.mechanism)
        self.state = "authenticate" if version >= 1 else "raw"
        return Step(SaslHandshakeResponse(error_code=0, mechanisms=enabled))

    def authenticate(self, body: Any, version: int) -> Step:
        if self.state != "authenticate":
            message = ("SaslAuthenticate request received after successful authentication"
                       if self.state == "done" else f"unexpected SaslAuthenticate in state {self.state}")
            return Step(SaslAuthenticateResponse(error_code=int(Errors.ILLEGAL_SASL_STATE), error_message=message),
                        close=self.state != "done")
        try:
            out = self._evaluate(body.auth_bytes)
        except SaslAuthenticationError as e:
            return Step(SaslAuthenticateResponse(error_code=int(Errors.SASL_AUTHENTICATION_FAILED),
                                                 error_message=str(e)), close=True)
        return Step(SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=out,
                                             session_lifetime_ms=0), authenticated=self.state == "done")

    def raw(self, token: bytes) -> bytes:
        """One v0 raw token; raises SaslAuthenticationError (the caller then closes the connection)."""
        return self._evaluate(token)

    def _evaluate(self, token: bytes) -> bytes:
        server = self._server
        assert server is not None
        try:
            out = server.evaluate(token)
        except SaslAuthenticationError as e:
            self.state = "failed"
            self.failure = str(e)
            raise
        if server.complete:
            self.principal = server.principal
            self.token_authenticated = bool(getattr(server, "token_authenticated", False))
            self.state = "done"
        return out

    def _reject(self, why: str) -> Step:
        if self.state == "done":
            return Step(SaslHandshakeResponse(error_code=int(Errors.ILLEGAL_SASL_STATE), mechanisms=[]))
        self.state = "failed"
        self.failure = why
        return Step(SaslHandshakeResponse(error_code=int(Errors.ILLEGAL_SASL_STATE), mechanisms=[]), close=True)


def not_sasl_listener(api_key: int) -> Any:
    """The answer to SaslHandshake / SaslAuthenticate on a listener without SASL (ILLEGAL_SASL_STATE)."""
    if api_key == ApiKey.SASL_HANDSHAKE:
        return SaslHandshakeResponse(error_code=int(Errors.ILLEGAL_SASL_STATE), mechanisms=[])
    return SaslAuthenticateResponse(error_code=int(Errors.ILLEGAL_SASL_STATE),
                                    error_message="SASL is not enabled on this listener")


Factory = Callable[[], SaslAuthenticator]
