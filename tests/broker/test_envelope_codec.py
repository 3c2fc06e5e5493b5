"""Envelope building blocks: principal serialization as Kafka frames it, addresses, request bytes."""

from __future__ import annotations

import struct

import pytest

from kraftwire.broker.envelope import (
    PrincipalError,
    RawBody,
    client_timeout_ms,
    deserialize_principal,
    host_bytes,
    host_from_bytes,
    request_bytes,
    response_body,
    response_bytes,
    serialize_principal,
)
from kraftwire.protocol.errors import DecodeError
from kraftwire.protocol.framing import decode_request, encode_request, encode_response
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import create_topics_response as ctr
from kraftwire.protocol.messages.create_acls_request import CreateAclsRequest


def test_principal_is_version_prefixed_default_principal_data():
    data = serialize_principal("User:alice")
    # int16 version 0, compact string "User" (len+1), compact string "alice", bool, no tagged fields
    assert data == struct.pack(">h", 0) + b"\x05User" + b"\x06alice" + b"\x00" + b"\x00"
    assert deserialize_principal(data) == "User:alice"


def test_principal_names_may_contain_colons():
    assert deserialize_principal(serialize_principal("User:CN=a:b,O=x")) == "User:CN=a:b,O=x"


@pytest.mark.parametrize("data", [None, b"", b"\x00", b"\x00\x07\x05User", b"\x00\x00\x05Us",
                                  b"\x00\x00\x01\x01\x00\x00", b"\x00\x00\x05User\x06alice\x00\x00junk"])
def test_unreadable_principals_are_refused(data):
    with pytest.raises(PrincipalError):
        deserialize_principal(data)


def test_principal_without_type_cannot_be_serialized():
    with pytest.raises(PrincipalError):
        serialize_principal("alice")


def test_addresses_round_trip_as_raw_bytes():
    assert host_bytes("127.0.0.1") == b"\x7f\x00\x00\x01"
    assert host_from_bytes(host_bytes("10.1.2.3")) == "10.1.2.3"
    assert host_from_bytes(host_bytes("::1")) == "::1"
    assert host_from_bytes(host_bytes("::ffff:10.0.0.9")) == "10.0.0.9"
    assert host_bytes("not-an-ip") == b""
    with pytest.raises(ValueError):
        host_from_bytes(b"\x01\x02\x03")


def test_request_bytes_are_the_clients_header_and_body():
    body = ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic(name="t", num_partitions=3, replication_factor=1)],
                                   timeout_ms=1234)
    frame = encode_request(body, 7, 99, "my-admin")[4:]
    request = decode_request(frame)
    assert request_bytes(request) == frame
    assert client_timeout_ms(body) == 1234
    assert client_timeout_ms(CreateAclsRequest()) is None


def test_forwarded_response_body_is_checked_and_passed_through():
    resp = ctr.CreateTopicsResponse(topics=[ctr.CreatableTopicResult(name="t", error_code=36)])
    data = response_bytes(resp, 19, 7, 99)
    assert data == encode_response(resp, 19, 7, 99)[4:]
    body = response_body(data, 19, 7, 99)
    out = bytearray()
    RawBody(body).encode_into(out, 7)
    assert bytes(out) == resp.encode(7)
    with pytest.raises(DecodeError):
        response_body(data, 19, 7, 100)        # someone else's correlation id
    with pytest.raises(DecodeError):
        response_body(data[:-3], 19, 7, 99)    # truncated body
