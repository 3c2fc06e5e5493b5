"""Bad input: every malformation ends in one typed protocol error, never another exception or a big allocation."""

from __future__ import annotations

import struct
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.protocol import framing, metadata
from kraftwire.protocol.errors import DecodeError, KafkaProtocolError, UnsupportedVersionError
from kraftwire.protocol.messages import message_class
from kraftwire.protocol.messages.envelope_request import EnvelopeRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest
from kraftwire.protocol.messages.metadata_response import MetadataResponse
from kraftwire.protocol.messages.vote_request import VoteRequest

from .schema_strategies import filled, schema_versions

PAIRS = schema_versions()
FUZZ = settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def decode_or_protocol_error(cls, data: bytes, version: int) -> object | None:
    """Decode; a KafkaProtocolError is fine (returns None), any other exception fails the test."""
    try:
        return cls.decode(data, version)
    except KafkaProtocolError:
        return None


def test_every_strict_prefix_of_every_message_is_a_decode_error() -> None:
    for name, version in PAIRS:
        cls = message_class(name)
        wire = filled(name, version).encode(version)
        for cut in range(len(wire)):
            with pytest.raises(DecodeError):
                cls.decode(wire[:cut], version)


def test_trailing_bytes_are_a_decode_error() -> None:
    for name, version in PAIRS:
        wire = filled(name, version).encode(version)
        with pytest.raises(DecodeError, match="trailing"):
            message_class(name).decode(wire + b"\x00", version)


@FUZZ
@given(st.sampled_from(PAIRS), st.binary(max_size=64))
def test_garbage_never_raises_anything_but_a_protocol_error(pair, data) -> None:
    name, version = pair
    decode_or_protocol_error(message_class(name), data, version)


@FUZZ
@given(st.sampled_from([p for p in PAIRS if filled(*p).encode(p[1])]), st.data())
def test_corrupted_messages_never_raise_anything_but_a_protocol_error(pair, data) -> None:
    name, version = pair
    wire = bytearray(filled(name, version).encode(version))
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(wire) - 1))
        wire[pos] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, wire[pos] ^ 0x01]))
    msg = decode_or_protocol_error(message_class(name), bytes(wire), version)
    if msg is not None:  # whatever decodes must encode again
        msg.encode(version)


# -- crafted lengths -----------------------------------------------------------------------------

def _fails_fast_and_small(cls, data: bytes, version: int) -> DecodeError:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(DecodeError) as info:
            cls.decode(data, version)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - start < 0.5
    assert peak < 64 * 1024, f"decoding {len(data)} bytes allocated {peak} bytes"
    return info.value


def test_a_20_byte_frame_declaring_2_pow_31_array_elements_fails_fast() -> None:
    # MetadataResponse v0: brokers is an int32-counted array
    body = struct.pack(">i", 2**31 - 1) + bytes(16)
    assert len(body) == 20
    err = _fails_fast_and_small(MetadataResponse, body, 0)
    assert "Brokers" in str(err)
    # v12: the same as a compact (unsigned varint) count, 2**31 elements
    body = struct.pack(">i", 0) + bytes([0x81, 0x80, 0x80, 0x80, 0x08]) + bytes(11)
    assert len(body) == 20
    _fails_fast_and_small(MetadataResponse, body, 12)


def test_fixed_width_arrays_are_bounded_by_the_frame_too() -> None:
    # AlterPartitionResponse v0 isr: []int32; declare 2**30 of them in a tiny body
    from kraftwire.protocol.messages.alter_partition_response import AlterPartitionResponse

    body = bytes(6) + bytes([2])  # throttle, error, one topic
    body += bytes([6]) + b"alpha" + bytes([2])  # topic name, one partition
    body += bytes(4 + 2 + 4 + 4) + bytes([0x81, 0x80, 0x80, 0x80, 0x04])  # ... isr count 2**30
    _fails_fast_and_small(AlterPartitionResponse, body, 0)


def test_oversized_string_and_bytes_lengths() -> None:
    # EnvelopeRequest v0 RequestData: compact bytes declaring 1 GiB
    body = bytes([0x81, 0x80, 0x80, 0x80, 0x04]) + b"tiny"
    err = _fails_fast_and_small(EnvelopeRequest, body, 0)
    assert "RequestData" in str(err)
    # MetadataRequest v0 topic name: int16 length 32767 with 3 bytes present
    body = struct.pack(">ih", 1, 32767) + b"abc"
    _fails_fast_and_small(MetadataRequest, body, 0)


@pytest.mark.parametrize("length", [-2, -100, -32768])
def test_negative_string_lengths(length) -> None:
    body = struct.pack(">ih", 1, length)
    with pytest.raises(DecodeError, match="invalid length"):
        MetadataRequest.decode(body, 0)


def test_null_for_a_non_nullable_field() -> None:
    # v0 topic names are not nullable: -1 is as bad as -2
    with pytest.raises(DecodeError, match="invalid length -1"):
        MetadataRequest.decode(struct.pack(">ih", 1, -1), 0)
    # the Topics array itself is nullable from v1 (-1 = all topics), but -2 is never valid
    assert MetadataRequest.decode(struct.pack(">i", -1), 1).topics is None
    with pytest.raises(DecodeError, match="invalid length -2"):
        MetadataRequest.decode(struct.pack(">i", -2), 1)


@pytest.mark.parametrize("varint", [b"\x80\x80\x80\x80\x80\x01", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                                    b"\x80\x80\x80"])
def test_invalid_unsigned_varints(varint) -> None:
    # VoteRequest v0 starts with a compact nullable string: its length is an unsigned varint
    with pytest.raises(DecodeError, match="varint"):
        VoteRequest.decode(varint + bytes(8), 0) if len(varint) > 3 else VoteRequest.decode(varint, 0)


def test_invalid_varint_in_a_tagged_field_section() -> None:
    good = VoteRequest().encode(0)  # ... empty topics, then the tag count
    with pytest.raises(DecodeError, match="varint"):
        VoteRequest.decode(good[:-1] + b"\x80\x80\x80\x80\x80\x01", 0)
    # a tag whose declared size runs past the end
    with pytest.raises(DecodeError):
        VoteRequest.decode(good[:-1] + b"\x01\x05\x7f", 0)


@pytest.mark.parametrize("version", [-1, 3, 99, 32767])
def test_unknown_versions(version) -> None:
    with pytest.raises(UnsupportedVersionError):
        VoteRequest.decode(b"", version)
    with pytest.raises(UnsupportedVersionError):
        VoteRequest().encode(version)


# -- frames ---------------------------------------------------------------------------------------

def test_unknown_api_key_in_a_request_frame() -> None:
    frame = struct.pack(">hhi", 9999, 0, 42) + b"\xff\xff"
    with pytest.raises(framing.UnsupportedRequestError) as info:
        framing.decode_request(frame)
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (9999, 0, 42)


def test_unsupported_version_in_a_request_frame() -> None:
    frame = struct.pack(">hhi", 52, 77, 43) + b"\xff\xff"
    with pytest.raises(framing.UnsupportedRequestError) as info:
        framing.decode_request(frame)
    assert info.value.correlation_id == 43 and isinstance(info.value, UnsupportedVersionError)


@pytest.mark.parametrize("frame", [b"", b"\x00\x12", b"\x00\x12\x00\x04\x00\x00\x00"])
def test_frames_shorter_than_a_header(frame) -> None:
    with pytest.raises(DecodeError):
        framing.decode_request(frame)


def test_request_frame_with_truncated_body_and_with_trailing_bytes() -> None:
    frame = framing.encode_request(filled("VoteRequest", 1), 1, correlation_id=5)[4:]
    assert framing.decode_request(frame).body == filled("VoteRequest", 1)
    for cut in range(8, len(frame)):
        with pytest.raises(DecodeError):
            framing.decode_request(frame[:cut])
    # Kafka's request parser ignores bytes after the body; so do we.
    assert framing.decode_request(frame + b"\x01\x02\x03").body == filled("VoteRequest", 1)


@FUZZ
@given(st.binary(min_size=0, max_size=48), st.sampled_from([0, 1, 3, 18, 52, 55, 9999]),
       st.integers(-1, 20))
def test_request_frames_of_garbage(tail, key, version) -> None:
    frame = struct.pack(">hhi", key, version, 7) + tail
    try:
        framing.decode_request(frame)
    except KafkaProtocolError:
        pass


@FUZZ
@given(st.binary(max_size=48), st.sampled_from([1, 3, 18, 52, 55]), st.integers(0, 4))
def test_response_frames_of_garbage(frame, key, version) -> None:
    try:
        framing.decode_response(frame, key, version)
    except KafkaProtocolError:
        pass


# -- metadata record frames ------------------------------------------------------------------------

def test_metadata_record_frames() -> None:
    from kraftwire.protocol.messages.topic_record import TopicRecord

    good = metadata.encode_record(TopicRecord(name="alpha"))
    assert metadata.decode_record(good).message.name == "alpha"
    for bad, why in [(b"", "varint"), (b"\x02" + good[1:], "frame version"), (b"\x01\x7f\x00", "unknown"),
                     (good[:2] + b"\x63" + good[3:], "not supported"), (good + b"\x00", "trailing"),
                     (b"\x01" + b"\xff" * 6, "varint"), (b"\x01\x80\x02\x00", "unknown metadata record type 256"),
                     (b"\x82\x00\x00\x00", "frame version 2")]:
        with pytest.raises(DecodeError, match=why):
            metadata.decode_record(bad)
    for cut in range(len(good)):
        with pytest.raises(DecodeError):
            metadata.decode_record(good[:cut])


@FUZZ
@given(st.binary(max_size=40))
def test_metadata_record_garbage(data) -> None:
    try:
        metadata.decode_record(b"\x01" + data)
    except KafkaProtocolError:
        pass


def test_librdkafka_padding_of_alter_user_scram_credentials_is_accepted() -> None:
    from kraftwire.protocol.messages import alter_user_scram_credentials_request as auq

    body = auq.AlterUserScramCredentialsRequest(deletions=[auq.ScramCredentialDeletion("carol", 1)])
    frame = framing.encode_request(body, 0, correlation_id=6, client_id="rdkafka")[4:]
    assert framing.decode_request(frame + b"\x00").body == body      # what librdkafka 2.x sends


def test_confluent_kafka_metadata_v12_with_three_trailing_bytes_is_answered() -> None:
    """confluent-kafka 2.16's all-topics Metadata v12 carries 3 bytes after the body (issue #12 item 5)."""
    from kraftwire.protocol.messages.metadata_request import MetadataRequest

    body = MetadataRequest(topics=None, allow_auto_topic_creation=True)
    frame = framing.encode_request(body, 12, correlation_id=9, client_id="rdkafka")[4:]
    request = framing.decode_request(frame + b"\x00\x00\x00")
    assert (request.api_key, request.api_version, request.correlation_id) == (3, 12, 9)
    assert request.body.topics is None
