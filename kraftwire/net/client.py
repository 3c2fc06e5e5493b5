"""Outbound Kafka-protocol connections: multiplexed requests with timeouts and version negotiation.

``Connection`` speaks to one address: it connects lazily, asks ApiVersions once, then sends
requests tagged with correlation ids while one reader task matches responses to waiters. Any
transport error fails every waiter and drops the connection; the next request reconnects, unless
the address is in reconnect backoff (``kraftwire.net.backoff``: after failed attempts it fails at
once instead of opening a socket). Connections given the same ``AddressBackoff`` share it (a node's
``PeerClient`` does so per peer); one without gets its own with Kafka's defaults.

A ``ClientSecurity`` adds TLS and a SASL login (after ApiVersions, before any other request);
without one the connection is PLAINTEXT. A node's own connections to its peers take the node's
inter-node security explicitly (``kraftwire.net.peers``).
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from itertools import count
from typing import Any

import anyio
from anyio.abc import ByteStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from kraftwire.net.backoff import AddressBackoff, ReconnectBackoff
from kraftwire.protocol.api import request_class
from kraftwire.protocol.errors import Errors, KafkaProtocolError
from kraftwire.protocol.framing import decode_response, encode_request
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.security.sasl_client import sasl_login
from kraftwire.security.scram import SaslAuthenticationError
from kraftwire.security.settings import ClientSecurity

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")


class RequestFailed(Exception):
    """The request got no response: connection failure, timeout, or an undecodable reply."""


@dataclass
class _Pending:
    api_key: int
    version: int
    done: anyio.Event
    result: Any = None
    error: BaseException | None = None


class Connection:
    """One multiplexed client connection to ``host:port``; its reader task runs in ``task_group``."""

    def __init__(self, task_group: TaskGroup, host: str, port: int, *, client_id: str = "kraftwire", connect_timeout_s: float = 2.0,
                 max_response_bytes: int = 100 << 20, negotiate: bool = True,
                 security: ClientSecurity | None = None, backoff: AddressBackoff | None = None) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.max_response_bytes = max_response_bytes
        self.negotiate = negotiate
        self.security = security
        self._stream: ByteStream | None = None
        self._pending: dict[int, _Pending] = {}
        self._corr = count(1)
        self._connect_lock = anyio.Lock()
        self._send_lock = anyio.Lock()
        self._tg = task_group
        self.versions: dict[int, tuple[int, int]] = {}
        self.backoff = backoff if backoff is not None else ReconnectBackoff().for_address(host, port)

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def version_for(self, api_key: int, ours: tuple[int, int] | None = None) -> int:
        """The highest version both sides support (ours defaults to the schema's range)."""
        cls = request_class(api_key)
        lo, hi = ours or (cls.MIN_VERSION, cls.MAX_VERSION)
        if api_key in self.versions:
            tlo, thi = self.versions[api_key]
            if max(lo, tlo) > min(hi, thi):
                raise KafkaProtocolError(f"no common version for API {api_key}: ours {lo}-{hi}, theirs {tlo}-{thi}")
            return min(hi, thi)
        return hi

    async def _ensure(self) -> ByteStream:
        if self._stream is not None:
            return self._stream
        async with self._connect_lock:
            if self._stream is not None:
                return self._stream
            state = self.backoff
            while state.probe is not None:   # another connection is probing this address: its outcome decides
                await state.probe.wait()
            wait = state.delay_s()
            if wait > 0:
                raise RequestFailed(f"{self.host}:{self.port} is in reconnect backoff for {wait * 1000:.0f} ms "
                                    f"after {state.failures} failed connection attempt(s)")
            probe = state.probe = anyio.Event() if state.failures else None
            try:
                stream = await self._open()
            except BaseException:
                state.failed()
                raise
            else:
                state.succeeded()
            finally:
                if probe is not None:
                    state.probe = None
                    probe.set()
            return stream

    async def _open(self) -> ByteStream:
        """Connect, exchange ApiVersions and log in (SASL); closes what it opened on any failure."""
        sec = self.security
        tls = sec is not None and sec.ssl_context is not None
        with anyio.fail_after(self.connect_timeout_s):
            if tls:
                assert sec is not None
                stream: ByteStream = await anyio.connect_tcp(self.host, self.port, ssl_context=sec.ssl_context,
                                                             tls_hostname=self.host, tls_standard_compatible=False)
            else:
                stream = await anyio.connect_tcp(self.host, self.port)
        self._stream = stream
        self._tg.start_soon(self._reader, stream)
        try:
            if self.negotiate or (sec is not None and sec.uses_sasl):
                resp = await self._send(stream, ApiVersionsRequest(client_software_name="kraftwire",
                                                                   client_software_version="0.1.0"), 3, 5.0)
                if resp.error_code == Errors.UNSUPPORTED_VERSION:
                    resp = await self._send(stream, ApiVersionsRequest(), 0, 5.0)
                self.versions = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            if sec is not None and sec.uses_sasl:
                await sasl_login(lambda body, v: self._send(stream, body, v, 10.0), sec, self.versions)
        except SaslAuthenticationError as e:
            await self.close()
            raise RequestFailed(f"SASL authentication to {self.host}:{self.port} failed: {e}") from e
        except BaseException:
            await self.close()
            raise
        return stream

    async def connect(self) -> ByteStream:
        """Connect and exchange ApiVersions now (``versions`` is then the peer's); raises RequestFailed."""
        try:
            return await self._ensure()
        except (OSError, TimeoutError, anyio.BrokenResourceError, anyio.EndOfStream, KafkaProtocolError,
                RequestFailed) as e:
            raise RequestFailed(f"connect to {self.host}:{self.port} failed: {e}") from e

    async def request(self, body: Any, version: int | None = None, timeout_s: float = 30.0) -> Any:
        """Send ``body`` and wait for its response body; raises RequestFailed."""
        stream = await self.connect()
        if version is None:
            version = self.version_for(body.API_KEY)
        return await self._send(stream, body, version, timeout_s)

    async def _send(self, stream: ByteStream, body: Any, version: int, timeout_s: float) -> Any:
        corr = next(self._corr) & 0x7FFFFFFF
        pending = _Pending(body.API_KEY, version, anyio.Event())
        self._pending[corr] = pending
        try:
            frame = encode_request(body, version, corr, self.client_id)
            async with self._send_lock:
                await stream.send(frame)
            with anyio.move_on_after(timeout_s) as scope:
                await pending.done.wait()
            if scope.cancelled_caught:
                raise RequestFailed(f"request {corr} to {self.host}:{self.port} timed out after {timeout_s}s")
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as e:
            await self.close()
            raise RequestFailed(f"send to {self.host}:{self.port} failed: {e}") from e
        finally:
            self._pending.pop(corr, None)
        if pending.error is not None:
            raise RequestFailed(str(pending.error)) from pending.error
        return pending.result

    async def _reader(self, stream: ByteStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        error: BaseException = RequestFailed(f"connection to {self.host}:{self.port} closed")
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.receive_exactly(4))
                if size < 4 or size > self.max_response_bytes:
                    raise KafkaProtocolError(f"response size {size} out of range")
                frame = await reader.receive_exactly(size)
                (corr,) = _SIZE.unpack_from(frame, 0)
                pending = self._pending.get(corr)
                if pending is None:
                    continue  # a response to a request that already timed out
                try:
                    _, pending.result = decode_response(frame, pending.api_key, pending.version)
                except KafkaProtocolError as e:
                    pending.error = e
                pending.done.set()
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError,
                OSError, KafkaProtocolError) as e:
            error = e
        finally:
            self._fail_all(error)
            if self._stream is stream:
                self._stream = None
            await stream.aclose()

    def _fail_all(self, error: BaseException) -> None:
        for pending in list(self._pending.values()):
            if not pending.done.is_set():
                pending.error = error
                pending.done.set()

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()
        self._fail_all(RequestFailed("connection closed"))

