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
    await wait_for(lambda: any(n.controller.controller.active for n in nodes), 15)
    return next(n for n in nodes if n.controller.controller.active)


async def test_inner_request_runs_with_the_clients_principal_and_answers_under_its_correlation_id():
    async with memory_cluster(3) as (nodes, ports):
        leader = await active(nodes)
        seen = []
        original = leader.handle

        async def recording(request, ctx):
            seen.append((request.api_key, ctx))
            return await original(request, ctx)

        leader.handle = recording
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
        key, ctx = seen[0]
        assert key == 30
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
        acls = leader.controller.controller.committed_image.acls
        assert acls == {}, "no refused envelope may write"
