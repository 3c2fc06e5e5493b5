"""Kafka-protocol TCP listeners on anyio.

One task per connection reads size-prefixed frames, hands each decoded request to the node's
handler and writes the response before reading the next request, so responses leave in request
order (Kafka mutes a connection the same way). Oversized or malformed frames close the connection;
an unsupported ApiVersions version gets Kafka's v0-layout UNSUPPORTED_VERSION reply.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from kraftwire.protocol.errors import DecodeError, KafkaProtocolError
from kraftwire.protocol.framing import Request, UnsupportedRequestError, decode_request, encode_response

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")
_ids = count(1)


@dataclass(slots=True)
class RequestContext:
    """Who sent a request and where: listener, security protocol, peer address, principal."""

    listener: str
    security_protocol: str
    client_host: str
    client_port: int
    principal: str = "User:ANONYMOUS"
    connection_id: int = field(default_factory=lambda: next(_ids))


@dataclass(slots=True)
class Reply:
    """A handler's answer: the response body and the version to encode it in."""

    body: Any
    version: int
    header_version: int | None = None


Handler = Callable[[Request, RequestContext], Awaitable[Reply | None]]
UnsupportedApiVersions = Callable[[], Reply]


@dataclass
class ListenerSpec:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


class KafkaServer:
    """Serves the Kafka protocol on a set of listeners with one shared request handler."""

    def __init__(self, handler: Handler, api_versions_fallback: UnsupportedApiVersions, *,
                 max_request_bytes: int = 100 << 20, idle_timeout_s: float = 600.0) -> None:
        self.handler = handler
        self.api_versions_fallback = api_versions_fallback
        self.max_request_bytes = max_request_bytes
        self.idle_timeout_s = idle_timeout_s
        self.bound: dict[str, tuple[str, int]] = {}
        self.connections = 0

    async def serve(self, spec: ListenerSpec, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen until cancelled; reports the bound (host, port) through ``task_status``."""
        listener = await anyio.create_tcp_listener(local_host=spec.host, local_port=spec.port,
                                                   reuse_port=False)
        sockname = listener.extra(SocketAttribute.local_address)
        self.bound[spec.name] = (sockname[0], sockname[1])
        log.info("listening on %s://%s:%d", spec.name, sockname[0], sockname[1])
        task_status.started(self.bound[spec.name])
        async with listener:
            await listener.serve(lambda stream: self._connection(stream, spec))

    async def _connection(self, stream: SocketStream, spec: ListenerSpec) -> None:
        peer = stream.extra(SocketAttribute.remote_address, ("?", 0))
        ctx = RequestContext(spec.name, spec.security_protocol, str(peer[0]), int(peer[1]))
        reader = BufferedByteReceiveStream(stream)
        self.connections += 1
        try:
            async with stream:
                while True:
                    with anyio.move_on_after(self.idle_timeout_s) as idle:
                        head = await reader.receive_exactly(4)
                    if idle.cancelled_caught:
                        log.debug("closing idle connection from %s:%s", *peer[:2])
                        return
                    (size,) = _SIZE.unpack(head)
                    if size < 0 or size > self.max_request_bytes:
                        log.warning("closing connection from %s:%s: request size %d outside 0..%d "
                                    "(socket.request.max.bytes)", peer[0], peer[1], size, self.max_request_bytes)
                        return
                    frame = await reader.receive_exactly(size)
                    reply = await self._dispatch(frame, ctx)
                    if reply is None:
                        continue
                    await stream.send(reply)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError,
                ConnectionError, OSError):
            return
        finally:
            self.connections -= 1

    async def _dispatch(self, frame: bytes, ctx: RequestContext) -> bytes | None:
        try:
            request = decode_request(frame)
        except UnsupportedRequestError as e:
            if e.api_key == 18:  # ApiVersions: answer in the v0 layout so the client can retry.
                reply = self.api_versions_fallback()
                return encode_response(reply.body, 18, 0, e.correlation_id, header_version=0)
            log.info("closing connection from %s: %s", ctx.client_host, e)
            raise ConnectionError(str(e)) from None
        except (DecodeError, KafkaProtocolError) as e:
            log.info("closing connection from %s: malformed request: %s", ctx.client_host, e)
            raise ConnectionError(str(e)) from None
        try:
            reply = await self.handler(request, ctx)
        except Exception:
            log.exception("handler failed for api key %d v%d", request.api_key, request.api_version)
            raise ConnectionError("handler failure") from None
        if reply is None:
            return None
        return encode_response(reply.body, request.api_key, reply.version, request.correlation_id,
                               reply.header_version)

