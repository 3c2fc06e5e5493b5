"""Every request's generated ``error_response`` encodes at every version, with the error where Kafka puts it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from codegen.schema import Struct, load_all
from kraftwire.protocol.api import request_class, response_class
from kraftwire.protocol.messages import REQUESTS

SCHEMAS = {s.name: s for s in load_all(Path(__file__).resolve().parents[2] / "schemas")}
FILL = {"bool": True, "int8": 1, "int16": 1, "uint16": 1, "int32": 1, "int64": 1, "float64": 1.0,
        "string": "x", "bytes": b"x", "records": None}
CODE = 31  # CLUSTER_AUTHORIZATION_FAILED
MESSAGE = "denied"


def filled(cls: type, st: Struct, version: int) -> Any:
    """``cls`` with every field ``version`` carries set to a non-default value (arrays of one element)."""
    subs = {attr: sub for attr, _kind, sub in cls._SPEC}
    kwargs = {}
    for f in st.fields:
        if version not in f.versions:
            continue
        if f.is_struct:
            one = filled(subs[f.attr], f.struct, version)
        elif f.element_type == "uuid":
            one = uuid.UUID(int=7)
        else:
            one = FILL[f.element_type]
        kwargs[f.attr] = [one] if f.is_array else one
    return cls(**kwargs)


def error_codes(obj: Any) -> list[int]:
    found = []
    for attr in getattr(type(obj), "__slots__", ()):
        value = getattr(obj, attr)
        if attr == "error_code":
            found.append(value)
        for item in value if isinstance(value, list) else [value]:
            if hasattr(type(item), "_SPEC"):
                found += error_codes(item)
    return found


CASES = [(key, v) for key, name in sorted(REQUESTS.items())
         for v in range(request_class(key).MIN_VERSION, request_class(key).MAX_VERSION + 1)]


@pytest.mark.parametrize(("api_key", "version"), CASES, ids=[f"{REQUESTS[k]}-v{v}" for k, v in CASES])
def test_error_response_encodes_at_every_version(api_key: int, version: int) -> None:
    req_cls = request_class(api_key)
    req = filled(req_cls, SCHEMAS[req_cls.__name__].root, version)
    req = req_cls.decode(req.encode(version), version)  # the request as a server would see it
    resp = req.error_response(version, CODE, MESSAGE)
    assert type(resp) is response_class(api_key)
    back = type(resp).decode(resp.encode(version), version)
    assert back == resp
    assert CODE in error_codes(back), f"{REQUESTS[api_key]} v{version}: the error is nowhere in {back!r}"


def test_per_entry_responses_mirror_the_request() -> None:
    from kraftwire.protocol.messages.create_topics_request import CreatableTopic, CreateTopicsRequest

    resp = CreateTopicsRequest(topics=[CreatableTopic(name="a"), CreatableTopic(name="b")]).error_response(
        7, CODE, MESSAGE)
    assert [(t.name, t.error_code, t.error_message) for t in resp.topics] == [("a", CODE, MESSAGE),
                                                                           ("b", CODE, MESSAGE)]
    assert CreateTopicsRequest(topics=[CreatableTopic(name="a")]).error_response(0, CODE, MESSAGE).topics[0] \
        .error_message != MESSAGE  # v0 has no ErrorMessage


def test_version_switches_follow_kafka() -> None:
    from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
    from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
    from kraftwire.protocol.messages.offset_fetch_request import (
        OffsetFetchRequest,
        OffsetFetchRequestGroup,
        OffsetFetchRequestTopic,
    )
    from kraftwire.protocol.messages.produce_request import ProduceRequest

    fetch = FetchRequest(session_id=5, topics=[FetchTopic(topic="t", partitions=[FetchPartition(partition=2)])])
    old = fetch.error_response(12, CODE)
    assert (old.error_code, old.session_id) == (CODE, 5)
    assert [(p.partition_index, p.error_code, p.high_watermark) for p in old.responses[0].partitions] == [
        (2, CODE, -1)]
    assert fetch.error_response(13, CODE).responses == []  # 13+: the top-level code alone

    fc = FindCoordinatorRequest(key="g", coordinator_keys=["g1", "g2"])
    v3 = fc.error_response(3, CODE)
    assert (v3.error_code, v3.node_id, v3.host, v3.port, v3.coordinators) == (CODE, -1, "", -1, [])
    v4 = fc.error_response(4, CODE)
    assert v4.error_code == 0 and [(c.key, c.error_code, c.node_id) for c in v4.coordinators] == [
        ("g1", CODE, -1), ("g2", CODE, -1)]

    of = OffsetFetchRequest(group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])],
                            groups=[OffsetFetchRequestGroup(group_id="g")])
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in
            of.error_response(1, CODE).topics[0].partitions] == [(0, -1, CODE), (1, -1, CODE)]
    assert (of.error_response(2, CODE).error_code, of.error_response(2, CODE).topics) == (CODE, [])
    assert [(g.group_id, g.error_code) for g in of.error_response(8, CODE).groups] == [("g", CODE)]

    assert ProduceRequest(acks=0).error_response(9, CODE) is None  # Kafka sends nothing for acks=0
