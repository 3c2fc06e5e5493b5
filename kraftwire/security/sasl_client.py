"""The client half of SASL over Kafka requests (SaslHandshake v1, then SaslAuthenticate).

``sasl_login(send, security, versions)`` runs the exchange through ``send(body, version)``, the
caller's request function, so any connection type can use it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kraftwire.protocol.messages.sasl_handshake_request import SaslHandshakeRequest
from kraftwire.security.plain import plain_token
from kraftwire.security.scram import MECHANISMS, SaslAuthenticationError, ScramClient
from kraftwire.security.settings import ClientSecurity

Send = Callable[[Any, int], Awaitable[Any]]


def _check(resp: Any, what: str) -> bytes:
    if resp.error_code:
        try:
            name: object = Errors(resp.error_code).name
        except ValueError:
            name = resp.error_code
        detail = getattr(resp, "error_message", None)
        raise SaslAuthenticationError(f"{what} failed: {name}" + (f": {detail}" if detail else ""))
    return getattr(resp, "auth_bytes", b"")


async def sasl_login(send: Send, security: ClientSecurity, versions: dict[int, tuple[int, int]]) -> None:
    """Authenticate as ``security.username``; raises SaslAuthenticationError when refused."""
    mech = security.mechanism or "PLAIN"
    hs = await send(SaslHandshakeRequest(mechanism=mech), 1)
    if hs.error_code == Errors.UNSUPPORTED_SASL_MECHANISM:
        raise SaslAuthenticationError(f"the server does not enable {mech} (it offers {', '.join(hs.mechanisms)})")
    _check(hs, "SaslHandshake")
    version = min(versions.get(36, (0, 1))[1], SaslAuthenticateRequest.MAX_VERSION)
    if mech == "PLAIN":
        _check(await send(SaslAuthenticateRequest(auth_bytes=plain_token(security.username, security.password)),
                          version), "SASL/PLAIN authentication")
        return
    client = ScramClient(MECHANISMS[mech], security.username, security.password)
    server_first = _check(await send(SaslAuthenticateRequest(auth_bytes=client.first()), version),
                          f"{mech} authentication")
    server_final = _check(await send(SaslAuthenticateRequest(auth_bytes=client.final(server_first)), version),
                          f"{mech} authentication")
    client.verify(server_final)
