"""The generated tuple decoders (``VALUE_DECODERS``) of the hot metadata records agree with the object
decoders on every version: same values in ``_SPEC`` order, same unknown tags, same end, same errors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwire.protocol.errors import DecodeError
from kraftwire.protocol.messages import message_class

from .schema_strategies import filled, message_strategy, schemas

HOT = ("PartitionRecord", "PartitionChangeRecord", "TopicRecord")
CASES = [(name, v) for name in HOT for v in schemas()[name].versions]


def _both(cls, buf: bytes, version: int):
    """(object decoder's outcome, tuple decoder's outcome): a value tuple and end, or 'error'."""
    mod = __import__(cls.__module__, fromlist=["_"])
    try:
        obj, end = cls.decode_from(buf, 0, version)
        a = (tuple(getattr(obj, attr) for attr, _, _ in cls._SPEC) + (obj.unknown_tagged_fields,), end)
    except DecodeError:
        a = "error"
    try:
        b = mod.VALUE_DECODERS[version](buf, 0, len(buf))
    except Exception:   # the callers wrap these into DecodeError (metadata.fast)
        b = "error"
    return a, b


def test_every_hot_version_has_a_tuple_decoder() -> None:
    for name in HOT:
        mod = __import__(message_class(name).__module__, fromlist=["_"])
        assert set(mod.VALUE_DECODERS) == set(schemas()[name].versions), name


@pytest.mark.parametrize(("name", "version"), CASES)
def test_filled_messages_decode_alike(name: str, version: int) -> None:
    msg = filled(name, version)
    buf = msg.encode(version)
    a, b = _both(type(msg), buf, version)
    assert a != "error"
    assert a == b
    assert a[0][-1], "filled flexible messages carry an unknown tagged field"


@pytest.mark.parametrize(("name", "version"), CASES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_messages_and_their_truncations_decode_alike(name: str, version: int, data) -> None:
    msg = data.draw(message_strategy(name, version))
    buf = msg.encode(version)
    a, b = _both(type(msg), buf, version)
    assert a == b and a[1] == len(buf)
    cut = data.draw(st.integers(0, len(buf) - 1))
    a, b = _both(type(msg), buf[:cut], version)
    assert (a == "error") == (b == "error")
    if a != "error":
        assert a == b
