"""SASL/PLAIN (RFC 4616), sans-I/O: one client token ``[authzid] NUL username NUL password``.

Passwords are checked against a ``username -> password`` table, which the node takes from the
``user_<name>="<password>"`` options of the listener's PlainLoginModule JAAS entry, as Kafka does.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from kraftwire.security.scram import SaslAuthenticationError

PasswordLookup = Callable[[str], str | None]


class PlainServer:
    """One server-side PLAIN exchange."""

    mechanism_name = "PLAIN"

    def __init__(self, lookup: PasswordLookup) -> None:
        self.lookup = lookup
        self.complete = False
        self.username: str | None = None
        self._used = False

    @property
    def principal(self) -> str:
        if not self.complete or self.username is None:
            raise RuntimeError("PLAIN exchange not complete")
        return f"User:{self.username}"

    def evaluate(self, token: bytes) -> bytes:
        if self._used:
            raise SaslAuthenticationError("PLAIN takes exactly one client message")
        self._used = True
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: expected 3 tokens, got "
                                          f"{len(parts)}")
        try:
            authzid, username, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        if authzid and authzid != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that "
                                          "is different from username")
        expected = self.lookup(username)
        # Compare against something even for an unknown user, so timing says nothing about names.
        ok = hmac.compare_digest((expected or "\0unknown").encode(), password.encode())
        if expected is None or not ok:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        self.username = username
        self.complete = True
        return b""


def plain_token(username: str, password: str, authzid: str = "") -> bytes:
    """The client's single PLAIN message."""
    return f"{authzid}\0{username}\0{password}".encode()
