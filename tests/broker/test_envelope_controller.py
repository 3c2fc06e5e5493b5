"""The controller unwraps Envelopes: inner request run as the client, errors at the envelope level."""

from __future__ import annotations

import anyio
import pytest

from kraftwire.broker.envelope import host_bytes, serialize_principal
from kraftwire.net.client import Connection
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import decode_response, encode_request
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.protocol.messages.describe_acls_request import DescribeAclsRequest
from kraftwire.protocol.messages.envelope_request import EnvelopeRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest
from tests.node.harness import memory_cluster, wait_for

pytestmark = pytest.mark.anyio

ACL = AclCreation(resource_type=2, resource_name="orders", resource_pattern_type=3, principal="User:bob",
                  host="*", operation=3, permission_type=3)


def inner_bytes(body, version, corr=4242, client_id="admin-1"):
    return encode_request(body, version, corr, client_id)[4:]


def envelope(data, principal=None, host="10.9.8.7"):
    return EnvelopeRequest(request_data=data,
                           request_principal=serialize_principal("User:alice") if principal is None else principal,
                           client_host_address=host_bytes(host))


async def active(nodes):
    await wait_for(lambda: any(n.voter.controller.controller.active for n in nodes), 15)
    return next(n for n in nodes if n.voter.controller.controller.active)


async def test_inner_request_runs_with_the_clients_principal_and_answers_under_its_correlation_id():
    async with memory_cluster(3) as (nodes, ports):
        leader = await active(nodes)
        seen = []
        original = leader.door.handle

        def recording(now, rid, request, ctx):   # the Envelope, then its inner request, enter the door
            seen.append((request.api_key, ctx))
            return original(now, rid, request, ctx)

        leader.door.handle = recording
        port = ports[leader.cfg.node_id - 1]
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", port)
            resp = await conn.request(envelope(inner_bytes(CreateAclsRequest(creations=[ACL]), 3)), 0, 10)
            assert resp.error_code == 0
            corr, inner = decode_response(resp.response_data, 30, 3)
            assert corr == 4242
            assert [r.error_code for r in inner.results] == [0]
            listed = await conn.request(DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None,
                                                            pattern_type_filter=1, principal_filter=None,
                                                            host_filter=None, operation=1, permission_type=1), 3, 10)
            assert [(a.principal, a.operation) for r in listed.resources for a in r.acls] == [("User:bob", 3)]
            await conn.close()
            tg.cancel_scope.cancel()
        keys = [key for key, _ in seen]
        assert 30 in keys and keys.index(58) < keys.index(30)
        ctx = seen[keys.index(30)][1]
        assert ctx.principal == "User:alice" and ctx.client_host == "10.9.8.7"
        assert getattr(ctx, "forwarded", False) is True
        assert ctx.envelope_context.principal == "User:ANONYMOUS"
        assert ctx.listener == "CONTROLLER"


async def test_envelope_level_errors():
    async with memory_cluster(3) as (nodes, ports):
        leader = await active(nodes)
        standby = next(n for n in nodes if n is not leader)
        good = inner_bytes(CreateAclsRequest(creations=[ACL]), 3)
        async with anyio.create_task_group() as tg:
            lconn = Connection(tg, "127.0.0.1", ports[leader.cfg.node_id - 1])
            sconn = Connection(tg, "127.0.0.1", ports[standby.cfg.node_id - 1])
            r = await sconn.request(envelope(good), 0, 10)
            assert (r.error_code, r.response_data) == (Errors.NOT_CONTROLLER, None)
            for principal in (b"", b"\x00\x09garbage", None):
                env = envelope(good)
                env.request_principal = principal
                r = await lconn.request(env, 0, 10)
                assert r.error_code == Errors.PRINCIPAL_DESERIALIZATION_FAILURE
            r = await lconn.request(envelope(good, host="nope"), 0, 10)
            assert r.error_code == Errors.INVALID_REQUEST
            r = await lconn.request(envelope(good[:-4]), 0, 10)
            assert r.error_code == Errors.INVALID_REQUEST
            r = await lconn.request(envelope(inner_bytes(MetadataRequest(topics=None), 12)), 0, 10)
            assert r.error_code == Errors.INVALID_REQUEST  # Metadata is not forwardable
            nested = envelope(inner_bytes(envelope(good), 0))
            r = await lconn.request(nested, 0, 10)
            assert r.error_code == Errors.INVALID_REQUEST
            r = await lconn.request(envelope(inner_bytes(CreateAclsRequest(creations=[ACL]), 0)), 0, 10)
            assert r.error_code == Errors.UNSUPPORTED_VERSION  # v0 is below what the controller serves
            await lconn.close()
            await sconn.close()
            tg.cancel_scope.cancel()
        acls = leader.voter.controller.controller.committed_image.acls
        assert acls == {}, "no refused envelope may write"


# What a Kafka 3.9 broker would forward for each forwardable API (its newest version of it).
KAFKA_39_FORWARDED = {19: 7, 20: 6, 30: 3, 31: 3, 33: 2, 37: 3, 38: 3, 39: 2, 40: 2, 43: 2, 44: 1, 45: 0, 46: 0,
                      49: 1, 51: 0, 55: 2, 57: 1, 64: 0, 67: 0, 80: 0, 81: 0}


def error_codes(value) -> set[int]:
    """Every ``error_code`` anywhere in a decoded response."""
    if isinstance(value, list):
        return set().union(*(error_codes(v) for v in value)) if value else set()
    if not hasattr(value, "__dataclass_fields__") and not hasattr(value, "__slots__"):
        return set()
    out = set()
    for name in getattr(value, "__slots__", ()) or value.__dataclass_fields__:
        v = getattr(value, name, None)
        if name == "error_code" and isinstance(v, int):
            out.add(v)
        elif isinstance(v, list) or hasattr(v, "__slots__"):
            out |= error_codes(v)
    return out


def raw_inner(key: int, version: int, corr: int = 7) -> bytes:
    """A flexible request header (v2) for an API kraftwire has no codec for, and an empty body."""
    import struct

    return struct.pack(">hhih", key, version, corr, 5) + b"admin" + b"\x00" + b"\x00"


async def test_describe_quorum_inside_an_envelope_is_answered():
    """kafka-metadata-quorum.sh --bootstrap-server <Kafka broker> arrives as an Envelope around DescribeQuorum."""
    from kraftwire.protocol.messages.describe_quorum_request import (
        DescribeQuorumRequest,
        PartitionData,
        TopicData,
    )

    async with memory_cluster(3) as (nodes, ports):
        leader = await active(nodes)
        await wait_for(lambda: (leader.core.hw or 0) > 0)
        body = DescribeQuorumRequest(topics=[TopicData("__cluster_metadata", [PartitionData(0)])])
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", ports[leader.cfg.node_id - 1])
            for version in (0, 1, 2):
                r = await conn.request(envelope(inner_bytes(body, version)), 0, 10)
                assert r.error_code == 0, version
                corr, inner = decode_response(r.response_data, 55, version)
                part = inner.topics[0].partitions[0]
                assert (corr, inner.error_code, part.error_code) == (4242, 0, 0)
                assert part.leader_id == leader.cfg.node_id
                assert sorted(v.replica_id for v in part.current_voters) == [1, 2, 3]
            await conn.close()
            tg.cancel_scope.cancel()


async def test_every_forwardable_api_is_answered_or_refused_as_kafka_does():
    """Served APIs are answered (never UNKNOWN_SERVER_ERROR); the others get UNSUPPORTED_VERSION, on which a
    Kafka broker closes its client's connection instead of passing on an unknown error."""
    from kraftwire.broker.envelope import FORWARDABLE_APIS
    from kraftwire.protocol.api import is_known, request_class

    assert set(KAFKA_39_FORWARDED) == set(FORWARDABLE_APIS)
    async with memory_cluster(3) as (nodes, ports):
        leader = await active(nodes)
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", ports[leader.cfg.node_id - 1])
            for key, version in sorted(KAFKA_39_FORWARDED.items()):
                served = leader.voter.apis.get(key)
                if served and served[0] <= version <= served[1]:
                    data = inner_bytes(request_class(key)(), version)
                elif is_known(key) and request_class(key).MIN_VERSION <= version <= request_class(key).MAX_VERSION:
                    data = inner_bytes(request_class(key)(), version)
                else:
                    data = raw_inner(key, version)
                r = await conn.request(envelope(data), 0, 10)
                if served and served[0] <= version <= served[1]:
                    assert r.error_code == 0, (key, r.error_code)
                    _, inner = decode_response(r.response_data, key, version)
                    assert Errors.UNKNOWN_SERVER_ERROR not in error_codes(inner), (key, inner)
                else:
                    assert r.error_code == Errors.UNSUPPORTED_VERSION, (key, r.error_code)
            await conn.close()
            tg.cancel_scope.cancel()
