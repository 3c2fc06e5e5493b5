"""Forwarding admin writes to the active controller in Envelope requests (KIP-590, as shipped).

A client's CreateTopics (and the other ``FORWARDED_APIS``) reaching a broker is wrapped whole —
its header and body — with the client's serialized principal and address, and sent to the
active controller. NOT_CONTROLLER, or no answer, means: find the controller again and retry,
until the client's own time budget (``timeout_ms`` in the request, else ``request.timeout.ms``)
runs out, when the client gets REQUEST_TIMED_OUT. An envelope refused with
CLUSTER_AUTHORIZATION_FAILED is a broker misconfiguration the client cannot fix: it gets
UNKNOWN_SERVER_ERROR. Otherwise the controller's inner response body is passed back unchanged
under the client's correlation id.
"""

from __future__ import annotations

import logging

import anyio

from kraftwire.broker.envelope import (
    FORWARDED_APIS,
    PrincipalError,
    RawBody,
    client_timeout_ms,
    host_bytes,
    request_bytes,
    response_body,
    serialize_principal,
)
from kraftwire.net.client import RequestFailed
from kraftwire.net.peers import PeerClient
from kraftwire.node.metrics import ForwardingMetrics
from kraftwire.protocol.api import API_NAMES
from kraftwire.protocol.errors import DecodeError, Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.messages.envelope_request import EnvelopeRequest
from kraftwire.protocol.requests import Reply, RequestContext

log = logging.getLogger(__name__)


class ForwardingManager:
    """Sends forwardable requests to the active controller and relays the answers."""

    def __init__(self, peers: PeerClient, metrics: ForwardingMetrics | None = None, *,
                 default_timeout_ms: int = 30000, retry_backoff_ms: int = 50) -> None:
        self.peers = peers
        self.metrics = metrics or ForwardingMetrics()
        self.default_timeout_ms = default_timeout_ms
        self.retry_backoff_s = retry_backoff_ms / 1000

    async def forward(self, request: Request, ctx: RequestContext) -> Reply:
        assert request.api_key in FORWARDED_APIS, request.api_key
        started = self.metrics.started()
        try:
            return await self._forward(request, ctx)
        finally:
            self.metrics.finished(started)

    async def _forward(self, request: Request, ctx: RequestContext) -> Reply:
        key, version, body = request.api_key, request.api_version, request.body
        try:
            principal = serialize_principal(ctx.principal)
        except PrincipalError as e:
            log.error("cannot forward %s: %s", API_NAMES[key], e)
            return self._error(request, Errors.UNKNOWN_SERVER_ERROR, "the broker cannot forward this request")
        envelope = EnvelopeRequest(request_data=request_bytes(request), request_principal=principal,
                                   client_host_address=host_bytes(ctx.client_host))
        budget_s = (client_timeout_ms(body) or self.default_timeout_ms) / 1000
        deadline = anyio.current_time() + budget_s
        attempt = 0
        while True:
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                self.metrics.timeouts += 1
                return self._error(request, Errors.REQUEST_TIMED_OUT,
                                   "no active controller answered within the request's timeout")
            if attempt:
                await anyio.sleep(min(remaining, self.retry_backoff_s * min(attempt, 10)))
                remaining = deadline - anyio.current_time()
                if remaining <= 0:
                    continue
            attempt += 1
            node = self.peers.candidate()
            self.metrics.envelope_sent()
            try:
                resp = await self.peers.send(node, envelope, remaining, lane="forwarding")
            except RequestFailed as e:
                log.debug("forwarding %s to controller %d failed: %s", API_NAMES[key], node, e)
                self.peers.failed(node)
                continue
            code = resp.error_code
            if code == Errors.NOT_CONTROLLER:
                self.peers.failed(node)
                continue
            if code == Errors.CLUSTER_AUTHORIZATION_FAILED:
                self.metrics.auth_failures += 1
                log.error("controller %d refused this broker's Envelope (CLUSTER_AUTHORIZATION_FAILED): "
                          "the broker's principal needs CLUSTER_ACTION on the cluster", node)
                return self._error(request, Errors.UNKNOWN_SERVER_ERROR, None)
            if code == Errors.UNSUPPORTED_VERSION:
                return self._error(request, Errors.UNSUPPORTED_VERSION, None)
            if code != Errors.NONE:
                log.warning("controller %d refused an Envelope with %s", node, getattr(Errors.of(code), "name", code))
                return self._error(request, Errors.UNKNOWN_SERVER_ERROR, None)
            self.peers.succeeded(node)
            try:
                data = response_body(resp.response_data or b"", key, version, request.correlation_id)
            except DecodeError as e:
                log.error("controller %d sent an unreadable forwarded response: %s", node, e)
                return self._error(request, Errors.UNKNOWN_SERVER_ERROR, None)
            return Reply(RawBody(data), version)

    @staticmethod
    def _error(request: Request, code: Errors, message: str | None) -> Reply:
        return Reply(request.body.error_response(request.api_version, code, message), request.api_version)

