"""Property tests: every schema × every valid version round-trips through the generated codecs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.protocol.errors import UnsupportedVersionError
from kraftwire.protocol.messages import message_class

from .schema_strategies import filled, message_strategy, schema_versions, schemas

PAIRS = schema_versions()
IDS = [f"{n}-v{v}" for n, v in PAIRS]


def _check_round_trip(name: str, version: int, examples: int) -> None:
    cls = message_class(name)

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(message_strategy(name, version))
    def check(msg) -> None:
        wire = msg.encode(version)
        back = cls.decode(wire, version)
        assert back == msg  # encode -> decode gives the same values
        assert back.encode(version) == wire  # decode -> encode gives the same bytes

    check()


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
def test_round_trip(name: str, version: int) -> None:
    _check_round_trip(name, version, examples=4)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
def test_round_trip_thorough(name: str, version: int) -> None:
    _check_round_trip(name, version, examples=150)


def test_every_version_of_every_schema_is_covered() -> None:
    assert len(PAIRS) == sum(len(s.versions) for s in schemas().values())
    for s in schemas().values():
        cls = message_class(s.name)
        assert (cls.MIN_VERSION, cls.MAX_VERSION) == (s.valid.lo, s.valid.hi)


def test_defaults_round_trip_in_every_version() -> None:
    for name, version in PAIRS:
        cls = message_class(name)
        wire = cls().encode(version)
        assert cls.decode(wire, version) == cls()


def _absent_non_ignorable():
    """(schema, version, attr) where a non-ignorable root field does not exist in that version."""
    for s in schemas().values():
        for f in s.root.fields:
            if f.ignorable or f.is_struct or f.is_array or f.type not in ("int32", "int64", "int16", "string"):
                continue
            for v in s.versions:
                if v not in f.versions:
                    yield s.name, v, f
                    break


ABSENT = list(_absent_non_ignorable())
assert ABSENT, "some schema should have a non-ignorable field newer than its first version"


@pytest.mark.parametrize(("name", "version", "f"), ABSENT, ids=[f"{n}-v{v}-{f.name}" for n, v, f in ABSENT])
def test_non_default_value_a_version_cannot_carry_is_refused(name, version, f) -> None:
    msg = message_class(name)()
    default = getattr(msg, f.attr)
    if f.type == "string":
        setattr(msg, f.attr, (default or "") + "x")
    else:
        setattr(msg, f.attr, default + 1)
    with pytest.raises(UnsupportedVersionError):
        msg.encode(version)


@settings(max_examples=30, deadline=None, database=None)
@given(st.data())
def test_unknown_tagged_fields_survive_a_round_trip(data) -> None:
    msg = data.draw(message_strategy("FetchResponse", 16))
    msg.unknown_tagged_fields = [(7, b"\x01\x02"), (90, b"")]
    back = message_class("FetchResponse").decode(msg.encode(16), 16)
    assert back.unknown_tagged_fields == [(7, b"\x01\x02"), (90, b"")]


def test_fully_populated_messages_round_trip_in_every_version() -> None:
    for name, version in PAIRS:
        msg = filled(name, version)
        wire = msg.encode(version)
        back = message_class(name).decode(wire, version)
        assert back == msg, (name, version)
        assert back.encode(version) == wire, (name, version)


def test_big_record_sets_are_spliced_in_exactly() -> None:
    """Records blobs >= BIG_BLOB bypass the encode buffer; the bytes and frame sizes must not change."""
    from kraftwire.protocol.framing import decode_response, encode_response
    from kraftwire.protocol.runtime import BIG_BLOB

    msg = filled("FetchResponse", 16)
    big = bytes(range(256)) * (BIG_BLOB // 256 + 3)
    blobs = [big, big[:BIG_BLOB], big[: BIG_BLOB - 1], None]
    for topic in msg.responses:
        for part in topic.partitions:
            part.records = blobs.pop()
            blobs.insert(0, part.records)
    plain = bytearray()
    msg.encode_into(plain, 16)  # a plain bytearray takes every blob inline
    wire = msg.encode(16)
    assert wire == bytes(plain)
    back = message_class("FetchResponse").decode(wire, 16)
    assert back == msg and back.encode(16) == wire  # memoryview records re-encode identically
    frame = encode_response(msg, 1, 16, correlation_id=3)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert decode_response(frame[4:], 1, 16) == (3, msg)
