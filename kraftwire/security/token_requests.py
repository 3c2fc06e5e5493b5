"""Which connections may use the delegation-token APIs (Kafka's ``allowTokenRequests``).

Tokens are only handed out over authenticated connections: a session that logged in with a token, a
PLAINTEXT connection, or SSL without a client certificate (the anonymous principal), gets DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, on brokers and on
controllers alike; a controller accepts a request forwarded in an Envelope whatever its own listener is (the
broker checked the client's connection), as Kafka's ControllerApis does.
"""

from __future__ import annotations

from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.requests import Reply, RequestContext

TOKEN_WRITES = (ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN)
ANONYMOUS = "User:ANONYMOUS"


def requests_allowed(ctx: RequestContext, *, forwarded: bool) -> bool:
    if ctx.token_authenticated:
        return False
    if forwarded:
        return True
    if ctx.security_protocol == "PLAINTEXT":
        return False
    return not (ctx.security_protocol == "SSL" and ctx.principal == ANONYMOUS)


def not_allowed(request: Request) -> Reply:
    v = request.api_version
    return Reply(request.body.error_response(v, Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
                                             "delegation tokens need an authenticated (SASL or mutual TLS) "
                                             "connection"), v)
