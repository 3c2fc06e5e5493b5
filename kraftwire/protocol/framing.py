"""Kafka framing: a 4-byte big-endian size, then a request or response header, then the body."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kraftwire.protocol.api import (
    is_known,
    request_class,
    request_header_version,
    response_class,
    response_header_version,
)
from kraftwire.protocol.errors import DecodeError, UnsupportedVersionError
from kraftwire.protocol.messages.request_header import RequestHeader
from kraftwire.protocol.messages.response_header import ResponseHeader
from kraftwire.protocol.runtime import Chunked

SIZE = struct.Struct(">i")
_KEY_VERSION_CORR = struct.Struct(">hhi")


@dataclass(slots=True)
class Request:
    """A decoded request: its header and body."""

    header: RequestHeader
    body: Any

    @property
    def api_key(self) -> int:
        return self.header.request_api_key

    @property
    def api_version(self) -> int:
        return self.header.request_api_version

    @property
    def correlation_id(self) -> int:
        return self.header.correlation_id


class UnsupportedRequestError(UnsupportedVersionError):
    """An unknown API key or version; carries what could be read of the header for a reply."""

    def __init__(self, message: str, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """API key, version and correlation id: the first 8 bytes of every request header version."""
    if len(frame) < 8:
        raise DecodeError(f"request of {len(frame)} bytes is shorter than a header")
    return _KEY_VERSION_CORR.unpack_from(frame, 0)


# (api key, version) -> (request class, request header version), filled as requests arrive: a request's
# per-frame lookups (known key, class, version range, flexible header) done once per kind of request.
_REQUEST_KINDS: dict[tuple[int, int], tuple[Any, int]] = {}
# (api key, version) -> response header version
_RESPONSE_HEADERS: dict[tuple[int, int], int] = {}


def decode_request(frame: bytes) -> Request:
    """A request frame without its size prefix → header + body.

    Raises UnsupportedRequestError for unknown keys/versions (the caller decides the reply) and
    DecodeError for malformed bytes. Bytes after the body are ignored, as Kafka's request parser
    does: clients pad some requests (librdkafka 2.x: AlterUserScramCredentials v0, Metadata v12).
    """
    api_key, version, corr = peek_header(frame)
    kind = _REQUEST_KINDS.get((api_key, version))
    if kind is None:
        if not is_known(api_key):
            raise UnsupportedRequestError(f"unknown API key {api_key}", api_key, version, corr)
        cls = request_class(api_key)
        if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
            raise UnsupportedRequestError(f"{cls.__name__} v{version} is not supported", api_key, version, corr)
        kind = _REQUEST_KINDS[api_key, version] = (cls, request_header_version(api_key, version))
    cls, header_version = kind
    header, pos = RequestHeader.decode_from(frame, 0, header_version)
    body, _end = cls.decode_from(frame, pos, version)
    return Request(header, body)


def encode_request(body: Any, version: int, correlation_id: int, client_id: str | None = "kraftwire") -> bytes:
    """A size-prefixed request frame for ``body`` (a generated *Request instance)."""
    api_key = body.API_KEY
    out = Chunked(4)
    header = RequestHeader(api_key, version, correlation_id, client_id)
    header.encode_into(out, request_header_version(api_key, version))
    body.encode_into(out, version)
    SIZE.pack_into(out, 0, out.total() - 4)
    return out.result()


def encode_response(body: Any, api_key: int, version: int, correlation_id: int,
                    header_version: int | None = None) -> bytes:
    """A size-prefixed response frame."""
    return _encode_response(body, api_key, version, correlation_id, header_version).result()


def encode_response_pieces(body: Any, api_key: int, version: int, correlation_id: int,
                           header_version: int | None = None) -> bytes | list[Any]:
    """``encode_response``, except that a frame whose records are file slices (consumer Fetch answers
    served from segment files) comes back as its pieces in order: buffers and the slices themselves,
    which the caller sends (sendfile) or materializes. The pieces joined are ``encode_response``'s bytes."""
    out = _encode_response(body, api_key, version, correlation_id, header_version)
    return out.pieces() if out.has_files() else out.result()


def _encode_response(body: Any, api_key: int, version: int, correlation_id: int,
                     header_version: int | None) -> Chunked:
    out = Chunked(4)
    hv = header_version
    if hv is None:
        hv = _RESPONSE_HEADERS.get((api_key, version))
        if hv is None:
            hv = _RESPONSE_HEADERS[api_key, version] = response_header_version(api_key, version)
    ResponseHeader(correlation_id).encode_into(out, hv)
    body.encode_into(out, version)
    SIZE.pack_into(out, 0, out.total() - 4)
    return out


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[int, Any]:
    """A response frame (no size prefix) for a request we sent → (correlation id, body)."""
    header, pos = ResponseHeader.decode_from(frame, 0, response_header_version(api_key, version))
    cls = response_class(api_key)
    body, end = cls.decode_from(frame, pos, version)
    if end != len(frame):
        raise DecodeError(f"{cls.__name__} v{version}: {len(frame) - end} trailing bytes")
    return header.correlation_id, body
