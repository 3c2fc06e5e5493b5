"""The controller's side of KIP-590, pure: unwrap an Envelope into its inner request and the client's
context, and wrap the inner request's answer back into the ``EnvelopeResponse``.

The door (``core/api_door.py``) sends the inner request through itself again with a ``ForwardedContext``:
the client's principal and address from the envelope, the listener and security protocol of the
connection the envelope came in on (as Kafka does), and ``envelope_context`` pointing at the forwarding
broker's own context. Anything that authorizes by ``RequestContext`` therefore sees the client, and can
tell a forwarded request by ``getattr(ctx, "forwarded", False)``.

Envelope-level errors: NOT_CONTROLLER when this node is not the active controller,
PRINCIPAL_DESERIALIZATION_FAILURE for an unreadable principal, INVALID_REQUEST for a bad client
address, an unparsable inner request or one Kafka never forwards, UNSUPPORTED_VERSION for a forwardable
API or version this node does not serve (a Kafka broker then closes its client's connection).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import ClassVar

from kraftwire.broker.envelope import (
    FORWARDABLE_APIS,
    PrincipalError,
    deserialize_principal,
    host_from_bytes,
    response_bytes,
)
from kraftwire.protocol.errors import DecodeError, Errors, KafkaProtocolError
from kraftwire.protocol.framing import Request, UnsupportedRequestError, decode_request
from kraftwire.protocol.messages.envelope_request import EnvelopeRequest
from kraftwire.protocol.messages.envelope_response import EnvelopeResponse
from kraftwire.protocol.requests import Reply, RequestContext

log = logging.getLogger(__name__)

Wrap = Callable[[Reply | None], Reply]


@dataclass(slots=True)
class ForwardedContext(RequestContext):
    """The context of a request that arrived inside an Envelope."""

    forwarded: ClassVar[bool] = True
    envelope_context: RequestContext | None = None


def forwarded_context(outer: RequestContext, principal: str, client_host: str) -> ForwardedContext:
    """The inner request's context: the client's principal and address, the envelope's listener."""
    values = {f.name: getattr(outer, f.name) for f in fields(RequestContext) if f.name != "connection_id"}
    values.update(principal=principal, client_host=client_host, client_port=-1)
    return ForwardedContext(**values, connection_id=outer.connection_id, envelope_context=outer)


def _fail(code: Errors, why: str) -> EnvelopeResponse:
    log.warning("refusing an Envelope: %s", why)
    return EnvelopeResponse(response_data=None, error_code=int(code))


def unwrap(body: EnvelopeRequest, ctx: RequestContext, *, active: bool,
           served: Mapping[int, tuple[int, int]]) -> tuple[Request, ForwardedContext] | EnvelopeResponse:
    """The inner request and its client's context, or the EnvelopeResponse refusing the envelope."""
    if not active:
        return EnvelopeResponse(response_data=None, error_code=int(Errors.NOT_CONTROLLER))
    try:
        principal = deserialize_principal(body.request_principal)
    except PrincipalError as e:
        return _fail(Errors.PRINCIPAL_DESERIALIZATION_FAILURE, f"principal from {ctx.principal}: {e}")
    try:
        host = host_from_bytes(body.client_host_address)
    except ValueError as e:
        return _fail(Errors.INVALID_REQUEST, str(e))
    try:
        inner = decode_request(body.request_data)
    except UnsupportedRequestError as e:
        return _fail(Errors.UNSUPPORTED_VERSION if e.api_key in FORWARDABLE_APIS else Errors.INVALID_REQUEST, str(e))
    except (DecodeError, KafkaProtocolError) as e:
        return _fail(Errors.INVALID_REQUEST, f"unparsable forwarded request: {e}")
    key, version = inner.api_key, inner.api_version
    if key not in FORWARDABLE_APIS:
        return _fail(Errors.INVALID_REQUEST, f"API {key} cannot be forwarded")
    lo_hi = served.get(key)
    if lo_hi is None or not lo_hi[0] <= version <= lo_hi[1]:
        return _fail(Errors.UNSUPPORTED_VERSION, f"{FORWARDABLE_APIS[key]} v{version} is not served here")
    return inner, forwarded_context(ctx, principal, host)


def wrapper(inner: Request, envelope_version: int) -> Wrap:
    """Wraps the inner request's answer (its header and body, as bytes) in the EnvelopeResponse."""
    key = inner.api_key

    def wrap(reply: Reply | None) -> Reply:
        if reply is None:
            resp = _fail(Errors.UNKNOWN_SERVER_ERROR, f"no response to forwarded {FORWARDABLE_APIS[key]}")
        else:
            data = response_bytes(reply.body, key, reply.version, inner.correlation_id, reply.header_version)
            resp = EnvelopeResponse(response_data=data, error_code=0)
        return Reply(resp, envelope_version)

    return wrap
