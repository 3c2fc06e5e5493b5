"""KIP-590 Envelope pieces shared by the forwarding broker and the controller (pure functions).

* Principals travel as Kafka's ``DefaultKafkaPrincipalBuilder`` serializes them: a big-endian
  int16 version followed by ``DefaultPrincipalData`` in that version.
* The client address travels as raw IPv4/IPv6 bytes.
* ``RequestData`` is the client's request header and body; ``ResponseData`` the controller's
  response header and body for it, both without the 4-byte size prefix.
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Any

from kraftwire.protocol.api import (
    API_NAMES,
    ApiKey,
    request_header_version,
    response_class,
    response_header_version,
)
from kraftwire.protocol.errors import DecodeError
from kraftwire.protocol.framing import Request, encode_response
from kraftwire.protocol.messages.default_principal_data import DefaultPrincipalData
from kraftwire.protocol.messages.response_header import ResponseHeader

# Admin writes a broker forwards to the active controller (Kafka's "forwardable" APIs that
# kraftwire's controller implements).
FORWARDED_APIS: frozenset[ApiKey] = frozenset({
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.ALTER_CONFIGS,
    ApiKey.CREATE_PARTITIONS, ApiKey.ELECT_LEADERS, ApiKey.INCREMENTAL_ALTER_CONFIGS,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS, ApiKey.LIST_PARTITION_REASSIGNMENTS, ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.UPDATE_FEATURES, ApiKey.CREATE_DELEGATION_TOKEN,
    ApiKey.RENEW_DELEGATION_TOKEN, ApiKey.EXPIRE_DELEGATION_TOKEN,
})
# Every API a Kafka broker may wrap in an Envelope (``ApiKeys.forwardable`` in Kafka 3.7 to 4.1). A controller
# answers those it serves; the others get UNSUPPORTED_VERSION, on which a Kafka broker closes the client's
# connection (its ApiVersions, cut to what the controller serves, never offered them). Key -> name.
FORWARDABLE_APIS: dict[int, str] = {
    k: API_NAMES[k] for k in sorted({*FORWARDED_APIS, ApiKey.DESCRIBE_QUORUM, ApiKey.UNREGISTER_BROKER,
                                     ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER})
}
_VERSION = struct.Struct(">h")


class PrincipalError(ValueError):
    """Serialized principal bytes that cannot be read (PRINCIPAL_DESERIALIZATION_FAILURE)."""


def split_principal(principal: str) -> tuple[str, str]:
    """``"User:alice"`` → ("User", "alice"); the name may itself contain colons."""
    kind, sep, name = principal.partition(":")
    if not sep or not kind:
        raise PrincipalError(f"principal {principal!r} is not of the form Type:Name")
    return kind, name


def serialize_principal(principal: str, token_authenticated: bool = False) -> bytes:
    kind, name = split_principal(principal)
    version = DefaultPrincipalData.MAX_VERSION
    data = DefaultPrincipalData(type_=kind, name=name, token_authenticated=token_authenticated)
    return _VERSION.pack(version) + data.encode(version)


def deserialize_principal(data: bytes | None) -> str:
    """The ``Type:Name`` principal in ``data``; raises PrincipalError when it cannot be read."""
    if data is None or len(data) < 2:
        raise PrincipalError("no serialized principal")
    (version,) = _VERSION.unpack_from(data, 0)
    if not DefaultPrincipalData.MIN_VERSION <= version <= DefaultPrincipalData.MAX_VERSION:
        raise PrincipalError(f"unsupported principal data version {version}")
    try:
        p = DefaultPrincipalData.decode(data[2:], version)
    except DecodeError as e:
        raise PrincipalError(str(e)) from None
    if not p.type_:
        raise PrincipalError("principal without a type")
    return f"{p.type_}:{p.name}"


def host_bytes(host: str) -> bytes:
    """The client's address as raw bytes (empty if ``host`` is not an IP address)."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).packed
    except ValueError:
        return b""


def host_from_bytes(data: bytes) -> str:
    """Raw 4- or 16-byte address → text; raises ValueError for any other length."""
    if len(data) == 4:
        return str(ipaddress.IPv4Address(data))
    if len(data) == 16:
        addr = ipaddress.IPv6Address(data)
        return str(addr.ipv4_mapped or addr)
    raise ValueError(f"client address of {len(data)} bytes")


def request_bytes(request: Request) -> bytes:
    """The request's header and body as the client framed them (size prefix excluded)."""
    out = bytearray()
    key, version = request.api_key, request.api_version
    request.header.encode_into(out, request_header_version(key, version))
    request.body.encode_into(out, version)
    return bytes(out)


def response_bytes(body: Any, api_key: int, version: int, correlation_id: int,
                   header_version: int | None = None) -> bytes:
    """A response's header and body (size prefix excluded), as EnvelopeResponse carries it."""
    return encode_response(body, api_key, version, correlation_id, header_version)[4:]


def response_body(data: bytes, api_key: int, version: int, correlation_id: int) -> bytes:
    """Check a forwarded response (header + body) and return its body bytes.

    Raises DecodeError if the header is not for ``correlation_id`` or the body does not decode.
    """
    header, pos = ResponseHeader.decode_from(data, 0, response_header_version(api_key, version))
    if header.correlation_id != correlation_id:
        raise DecodeError(f"forwarded response has correlation id {header.correlation_id}, "
                          f"expected {correlation_id}")
    body = memoryview(data)[pos:].tobytes()
    response_class(api_key).decode(body, version)
    return body


class RawBody:
    """An already-encoded response body, written as is after the header the server frames."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def encode_into(self, out: bytearray, version: int) -> None:
        out += self.data


def client_timeout_ms(body: Any) -> int | None:
    """The time budget the client gave its request (``timeout_ms`` / ``timeout``), if any."""
    for attr in ("timeout_ms", "timeout"):
        value = getattr(body, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    return None
