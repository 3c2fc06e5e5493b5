"""Kafka-protocol TCP listeners.

One task per connection takes size-prefixed frames, hands each decoded request to the node's
handler and writes the response before it takes the next request, so responses leave in request
order (Kafka mutes a connection the same way). Oversized or malformed frames close the connection;
an unsupported ApiVersions version gets Kafka's v0-layout UNSUPPORTED_VERSION reply.

Listeners without TLS run on asyncio directly (``net/framed.py``): the event loop cuts frames out of
what arrives in ``data_received`` and the connection's task only handles requests and writes the
answers, so a request costs no stream reads, no cancel scopes and no reader re-arming; a client that
pipelines is paused once a few requests wait. TLS listeners use anyio's streams (the handshake and
the certificate principal come from ``TLSStream``). On both, client requests pass a ``ClientGate``
(``net/gate.py``): at most a slice of them per loop iteration, while the voters' Raft requests go
first, so a backlog of client work never holds a follower's Fetch or a Vote past its timeout.

A failure while handling or encoding one request costs that request only: the client gets Kafka's
UNKNOWN_SERVER_ERROR for it (the request type's generated error response) and the failure is logged
once per API, version and exception type. Nothing a connection does ends the listener: a failed
accept (EMFILE when out of file descriptors) backs off and retries.

Listeners with a ``ListenerSecurity`` run TLS (SSL, SASL_SSL) and SASL (SASL_PLAINTEXT, SASL_SSL)
per connection before any other API: the SASL APIs are answered here, never by the handler, and
the connection's ``RequestContext.principal`` is set from the client certificate or SASL login.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import ByteStream, SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.tls import TLSAttribute, TLSStream

from kraftwire.net.framed import FramedConnection
from kraftwire.net.gate import ClientGate, is_priority
from kraftwire.net.limits import ConnectionLimits
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import DecodeError, Errors, KafkaProtocolError
from kraftwire.protocol.framing import (
    Request,
    UnsupportedRequestError,
    decode_request,
    encode_response,
    encode_response_pieces,
)
from kraftwire.protocol.requests import RefusedRequest, Reply, RequestContext
from kraftwire.security.principal import PrincipalError
from kraftwire.security.sasl import SASL_APIS, SaslAuthenticator, not_sasl_listener
from kraftwire.security.scram import SaslAuthenticationError
from kraftwire.security.settings import ListenerSecurity

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")


# accept() errors that mean "out of a resource for now": back off and accept again.
_ACCEPT_BACKOFF_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_ACCEPT_BACKOFF_S = (0.01, 1.0)

# The node's handler (its core's one door): the Reply when the answer is ready at once (written without
# an await; None: no answer, a Produce with acks=0), else an awaitable of it.
Handler = Callable[[Request, RequestContext], Reply | Awaitable[Reply | None] | None]
UnsupportedApiVersions = Callable[[], Reply]


@dataclass
class ListenerSpec:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"
    security: ListenerSecurity | None = None


class KafkaServer:
    """Serves the Kafka protocol on a set of listeners with one shared request handler."""

    def __init__(self, handler: Handler, api_versions_fallback: UnsupportedApiVersions, *,
                 max_request_bytes: int = 100 << 20, idle_timeout_s: float = 600.0,
                 failed_auth_delay_s: float = 0.1, limits: ConnectionLimits | None = None,
                 gate: ClientGate | None = None) -> None:
        self.handler = handler
        self.gate = gate or ClientGate()
        self.limits = limits or ConnectionLimits()
        self.failed_auth_delay_s = failed_auth_delay_s
        self.api_versions_fallback = api_versions_fallback
        self.max_request_bytes = max_request_bytes
        self.idle_timeout_s = idle_timeout_s
        self.bound: dict[str, tuple[str, int]] = {}
        self.connections = 0
        self.accept_failures = 0
        self.request_failures = 0
        self._failures_logged: set[tuple[int, int, str]] = set()

    def render(self) -> str:
        """The socket-server metrics (Prometheus text) for the node's /metrics endpoint."""
        return self.limits.render(self.accept_failures)

    async def serve(self, spec: ListenerSpec, task_status: Any = anyio.TASK_STATUS_IGNORED, *,
                    open_when: anyio.Event | None = None, waiting_for: str = "ready") -> None:
        """Listen until cancelled; reports the bound (host, port) through ``task_status``.

        With ``open_when`` the port is bound at once but connections are accepted only after the event
        is set, as a Kafka broker enables request processing only once it has caught up: until then
        they wait in the kernel's backlog, so clients see a slow connect, never stale answers."""
        listener = await anyio.create_tcp_listener(local_host=spec.host, local_port=spec.port,
                                                   reuse_port=False)
        sockname = listener.extra(SocketAttribute.local_address)
        self.bound[spec.name] = (sockname[0], sockname[1])
        task_status.started(self.bound[spec.name])
        async with listener:
            if open_when is not None and not open_when.is_set():
                log.info("bound %s://%s:%d; accepting connections once %s", spec.name, sockname[0],
                         sockname[1], waiting_for)
                await open_when.wait()
            log.info("listening on %s://%s:%d", spec.name, sockname[0], sockname[1])
            async with anyio.create_task_group() as tg:
                for one in listener.listeners:
                    tg.start_soon(self._accept_loop, one, spec, tg)

    async def _accept_loop(self, listener: Any, spec: ListenerSpec, tg: Any) -> None:
        """Accept connections forever; running out of descriptors backs off instead of failing."""
        if spec.security is None or spec.security.ssl_context is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:    # another anyio backend: the stream path below serves it
                loop = None
            if loop is not None:
                await self._accept_framed(loop, listener.extra(SocketAttribute.raw_socket), spec, tg)
                return
        delay = _ACCEPT_BACKOFF_S[0]
        while True:
            await self.limits.wait_for_room()
            try:
                stream = await listener.accept()
            except OSError as e:
                delay = await self._accept_failed(e, spec, delay)
                continue
            delay = _ACCEPT_BACKOFF_S[0]
            ip = str(stream.extra(SocketAttribute.remote_address, ("?", 0))[0])
            refused = self.limits.admit(ip)
            if refused is not None:
                if self.limits.rejected[refused] % 1000 == 1:   # the first refusal, then every 1000th
                    log.info("closing connection from %s on %s: %d open from that address (%s; %d refused "
                             "so far)", ip, spec.name, self.limits.by_ip[ip], refused, self.limits.rejected[refused])
                await anyio.aclose_forcefully(stream)
                continue
            tg.start_soon(self._connection, stream, spec, ip)

    async def _accept_failed(self, e: OSError, spec: ListenerSpec, delay: float) -> float:
        """Back off after a failed accept (out of descriptors); the next delay. Other errors raise."""
        self.accept_failures += 1
        if e.errno not in _ACCEPT_BACKOFF_ERRNOS:
            raise e
        if delay == _ACCEPT_BACKOFF_S[0]:
            log.warning("cannot accept connections on %s: %s; backing off (raise the open-files "
                        "limit, `ulimit -n`, or lower max.connections)", spec.name, e.strerror)
        await anyio.sleep(delay)
        return min(delay * 2, _ACCEPT_BACKOFF_S[1])

    async def _accept_framed(self, loop: asyncio.AbstractEventLoop, raw: socket.socket, spec: ListenerSpec,
                             tg: Any) -> None:
        """The accept loop of a listener without TLS: raw sockets handed to ``FramedConnection``."""
        delay = _ACCEPT_BACKOFF_S[0]
        while True:
            await self.limits.wait_for_room()
            try:
                sock, addr = await loop.sock_accept(raw)
            except asyncio.CancelledError:
                try:   # bpo-41317: a cancelled sock_accept leaves its reader registered
                    loop.remove_reader(raw)
                except (ValueError, NotImplementedError):
                    pass
                raise
            except OSError as e:
                delay = await self._accept_failed(e, spec, delay)
                continue
            delay = _ACCEPT_BACKOFF_S[0]
            ip = str(addr[0])
            refused = self.limits.admit(ip)
            if refused is not None:
                if self.limits.rejected[refused] % 1000 == 1:
                    log.info("closing connection from %s on %s: %d open from that address (%s; %d refused "
                             "so far)", ip, spec.name, self.limits.by_ip[ip], refused, self.limits.rejected[refused])
                sock.close()
                continue
            tg.start_soon(self._framed_connection, loop, sock, addr, spec, ip)

    async def adopt(self, sock: socket.socket, addr: Any, spec: ListenerSpec, ip: str, unread: bytes) -> None:
        """Serve a connection accepted elsewhere (a listener process handed it over, ``node/listener_pool.py``)
        whose first ``unread`` bytes were read already; its address was admitted by the limits."""
        await self._framed_connection(asyncio.get_running_loop(), sock, addr, spec, ip, unread)

    async def _framed_connection(self, loop: asyncio.AbstractEventLoop, sock: socket.socket, addr: Any,
                                 spec: ListenerSpec, ip: str, unread: bytes = b"") -> None:
        ctx = RequestContext(spec.name, spec.security_protocol, str(addr[0]), int(addr[1]))
        sec = spec.security
        auth = SaslAuthenticator(sec.sasl) if sec is not None and sec.sasl is not None else None
        conn = FramedConnection(self.max_request_bytes, self.idle_timeout_s, f"{addr[0]}:{addr[1]}")
        self.connections += 1
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.connect_accepted_socket(lambda: conn, sock)
            if unread:
                conn.data_received(unread)
            while True:
                frame = conn.next_frame()
                if frame is None:
                    frame = await conn.wait_frame()
                out, close = await self._respond(frame, ctx, auth, pieces=True)
                if type(out) is list:
                    await conn.write_pieces(out)
                elif out is not None:
                    conn.write(out)
                    if conn.write_paused:
                        await conn.drain()
                if close:
                    await anyio.sleep(self.failed_auth_delay_s)
                    return
        except (ConnectionError, OSError):
            return
        except Exception as e:   # last line of defence: a bug costs this connection, never the listener
            log.error("closing connection from %s:%s on %s after an internal error: %r", ctx.client_host,
                      ctx.client_port, ctx.listener, e, exc_info=log.isEnabledFor(logging.DEBUG))
            conn.abort()
        finally:
            conn.close()
            if conn.transport is None:
                sock.close()
            self.connections -= 1
            self.limits.release(ip)

    async def _respond(self, frame: bytes, ctx: RequestContext, auth: SaslAuthenticator | None, *,
                       pieces: bool = False) -> tuple[Any, bool]:
        """The bytes answering one frame (None: no answer) and whether the connection closes after
        them (a failed SASL authentication). Raises ConnectionError to close without an answer. With
        ``pieces`` an answer holding file slices comes as a list (``framing.encode_response_pieces``).
        Client requests pass the gate (bounded slices per loop iteration); the quorum's do not."""
        gate = self.gate
        if not is_priority(frame) and not gate.try_enter():
            await gate.enter()
        if auth is not None and auth.raw_tokens:
            return self._raw_sasl(auth, frame, ctx), False
        request = self._decode(frame, ctx)
        if isinstance(request, bytes):
            return request, False
        if request.api_key in SASL_APIS:
            return self._sasl(auth, request, ctx)
        if auth is not None and not auth.permits(request.api_key):
            log.info("closing connection from %s: API %d before SASL authentication completed",
                     ctx.client_host, request.api_key)
            raise ConnectionError("request before SASL authentication")
        try:   # the node's handler: its core's one door
            reply = self.handler(request, ctx)
            if reply is not None and type(reply) is not Reply:
                reply = await reply  # type: ignore[misc]
            return self._encoded(request, reply, pieces), False
        except Exception as e:
            return self._handler_failed(request, ctx, e), False

    async def _connection(self, stream: SocketStream, spec: ListenerSpec, ip: str) -> None:
        peer = stream.extra(SocketAttribute.remote_address, ("?", 0))
        ctx = RequestContext(spec.name, spec.security_protocol, str(peer[0]), int(peer[1]))
        sec = spec.security
        self.connections += 1
        try:
            conn: ByteStream = stream
            if sec is not None and sec.ssl_context is not None:
                tls = await self._tls(stream, sec, ctx)
                if tls is None:
                    return
                conn = tls
            auth = SaslAuthenticator(sec.sasl) if sec is not None and sec.sasl is not None else None
            async with conn:
                await self._serve_connection(conn, ctx, auth, peer)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError,
                ConnectionError, OSError):
            return
        except Exception as e:   # last line of defence: a bug costs this connection, never the listener
            log.error("closing connection from %s:%s on %s after an internal error: %r", ctx.client_host,
                      ctx.client_port, ctx.listener, e, exc_info=log.isEnabledFor(logging.DEBUG))
            await anyio.aclose_forcefully(stream)
        finally:
            self.connections -= 1
            self.limits.release(ip)

    async def _tls(self, stream: SocketStream, sec: ListenerSecurity, ctx: RequestContext) -> TLSStream | None:
        """The TLS handshake and the certificate principal; None (connection closed) when either fails."""
        try:
            with anyio.fail_after(sec.handshake_timeout_s):
                tls = await TLSStream.wrap(stream, server_side=True, ssl_context=sec.ssl_context,
                                           standard_compatible=False)
        except (TimeoutError, OSError, anyio.BrokenResourceError, anyio.EndOfStream) as e:
            log.info("TLS handshake with %s:%d on %s failed: %s", ctx.client_host, ctx.client_port, ctx.listener, e)
            await anyio.aclose_forcefully(stream)
            return None
        try:
            ctx.principal = sec.tls_principal(tls.extra(TLSAttribute.peer_certificate, None))
        except PrincipalError as e:
            log.warning("closing TLS connection from %s: %s", ctx.client_host, e)
            await anyio.aclose_forcefully(tls)
            return None
        return tls

    async def _serve_connection(self, conn: ByteStream, ctx: RequestContext, auth: SaslAuthenticator | None,
                                peer: Any) -> None:
        reader = BufferedByteReceiveStream(conn)
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
            out, close = await self._respond(frame, ctx, auth)
            if out is not None:
                await conn.send(out)
            if close:
                # Let the client read the error before the connection goes (Kafka's
                # connections.failed.authentication.delay.ms).
                await anyio.sleep(self.failed_auth_delay_s)
                return

    def _raw_sasl(self, auth: SaslAuthenticator, token: bytes, ctx: RequestContext) -> bytes:
        """A v0 (unframed) SASL token; a failure closes the connection, as Kafka does."""
        try:
            out = auth.raw(token)
        except SaslAuthenticationError as e:
            log.info("SASL %s authentication from %s failed: %s", auth.mechanism, ctx.client_host, e)
            raise ConnectionError(str(e)) from None
        if auth.principal is not None:
            ctx.principal, ctx.token_authenticated = auth.principal, auth.token_authenticated
            log.debug("authenticated %s from %s with %s", ctx.principal, ctx.client_host, auth.mechanism)
        return _SIZE.pack(len(out)) + out

    def _sasl(self, auth: SaslAuthenticator | None, request: Request, ctx: RequestContext) -> tuple[bytes, bool]:
        key, version = request.api_key, request.api_version
        close = False
        if auth is None:
            body = not_sasl_listener(key)
        else:
            step = auth.handshake(request.body, version) if key == ApiKey.SASL_HANDSHAKE else auth.authenticate(request.body, version)
            body, close = step.response, step.close
            if step.authenticated and auth.principal is not None:
                ctx.principal, ctx.token_authenticated = auth.principal, auth.token_authenticated
                log.debug("authenticated %s from %s with %s", ctx.principal, ctx.client_host, auth.mechanism)
            if close:
                log.info("SASL authentication from %s on %s failed: %s", ctx.client_host, ctx.listener,
                         auth.failure or "refused")
        return encode_response(body, key, version, request.correlation_id), close

    def _decode(self, frame: bytes, ctx: RequestContext) -> Request | bytes:
        """The decoded request, or the bytes of an immediate reply (ApiVersions fallback)."""
        try:
            return decode_request(frame)
        except UnsupportedRequestError as e:
            if e.api_key == ApiKey.API_VERSIONS:  # ApiVersions: answer in the v0 layout so the client can retry.
                reply = self.api_versions_fallback()
                return encode_response(reply.body, ApiKey.API_VERSIONS, 0, e.correlation_id, header_version=0)
            log.info("closing connection from %s: %s", ctx.client_host, e)
            raise ConnectionError(str(e)) from None
        except (DecodeError, KafkaProtocolError) as e:
            log.info("closing connection from %s: malformed request: %s", ctx.client_host, e)
            raise ConnectionError(str(e)) from None

    def answer_frame(self, frame: bytes, ctx: RequestContext) -> bytes | None | Awaitable[bytes | None]:
        """The encoded answer of one PLAINTEXT request frame a listener process relayed
        (``node/listener_pool.py``): bytes (or None: no answer) when the node core answered at once, else an
        awaitable of them. As ``_respond`` without the gate and SASL (a listener process serves no SASL
        listener); raises ConnectionError when the connection must close."""
        request = self._decode(frame, ctx)
        if isinstance(request, bytes):
            return request
        if request.api_key in SASL_APIS:
            return self._sasl(None, request, ctx)[0]
        try:
            reply = self.handler(request, ctx)
            if reply is not None and type(reply) is not Reply:
                return self._answer_later(request, ctx, reply)  # type: ignore[arg-type]
            return self._encoded(request, reply)
        except Exception as e:
            return self._handler_failed(request, ctx, e)

    async def _answer_later(self, request: Request, ctx: RequestContext,
                            pending: Awaitable[Reply | None]) -> bytes | None:
        try:
            return self._encoded(request, await pending)
        except Exception as e:
            return self._handler_failed(request, ctx, e)

    @staticmethod
    def _encoded(request: Request, reply: Reply | None, pieces: bool = False) -> Any:
        """The encoded answer (bytes, or with ``pieces`` a list: see ``_respond``; None: no answer)."""
        if reply is None:
            return None
        encode = encode_response_pieces if pieces else encode_response
        return encode(reply.body, request.api_key, reply.version, request.correlation_id, reply.header_version)

    def _handler_failed(self, request: Request, ctx: RequestContext, e: Exception) -> bytes:
        """The handler (or the encoding of its answer) failed: a refusal closes the connection (raised again),
        anything else is answered with the API's UNKNOWN_SERVER_ERROR."""
        if isinstance(e, RefusedRequest):
            log.info("closing connection from %s:%d on %s: %s", ctx.client_host, ctx.client_port,
                     ctx.listener, e)
            raise e
        self._log_failure(request, ctx, e)
        return self._failure_reply(request)

    def _log_failure(self, request: Request, ctx: RequestContext, e: Exception) -> None:
        """ERROR with the traceback the first time an API/version/exception fails, DEBUG afterwards."""
        self.request_failures += 1
        key = (request.api_key, request.api_version, type(e).__name__)
        first = key not in self._failures_logged and len(self._failures_logged) < 1024
        self._failures_logged.add(key)
        log.log(logging.ERROR if first else logging.DEBUG,
                "answered UNKNOWN_SERVER_ERROR to %s v%d from %s on %s: internal error %r%s",
                type(request.body).__name__, request.api_version, ctx.client_host, ctx.listener, e,
                "" if first else " (repeated)", exc_info=first)

    def _failure_reply(self, request: Request) -> bytes:
        """The request type's error response carrying UNKNOWN_SERVER_ERROR; the connection closes when
        even that cannot be encoded (the client then retries elsewhere, as after any lost connection)."""
        code = int(Errors.UNKNOWN_SERVER_ERROR)
        try:
            body = request.body.error_response(request.api_version, code, None)
            return encode_response(body, request.api_key, request.api_version, request.correlation_id)
        except Exception as e:
            raise ConnectionError(f"no error response for API {request.api_key}: {e!r}") from None
