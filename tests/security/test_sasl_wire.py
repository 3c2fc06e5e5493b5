"""SASL framing on the wire: v0 handshakes followed by raw tokens, SASL APIs on a listener without SASL, and
bad input during authentication (the connection closes; the node carries on)."""

from __future__ import annotations

import struct

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import decode_response, encode_request
from kraftwire.protocol.messages.metadata_request import MetadataRequest
from kraftwire.protocol.messages.sasl_authenticate_request import SaslAuthenticateRequest
from kraftwire.protocol.messages.sasl_handshake_request import SaslHandshakeRequest
from kraftwire.security.plain import plain_token
from kraftwire.security.scram import SHA256, ScramClient

from .harness import USERS, secure_node

pytestmark = pytest.mark.anyio
SIZE = struct.Struct(">i")


class Wire:
    def __init__(self, stream):
        self.stream = stream
        self.reader = BufferedByteReceiveStream(stream)

    async def send(self, body, version: int, corr: int = 1) -> None:
        await self.stream.send(encode_request(body, version, corr, "wire-test"))

    async def frame(self) -> bytes:
        with anyio.fail_after(5):
            (size,) = SIZE.unpack(await self.reader.receive_exactly(4))
            return await self.reader.receive_exactly(size)

    async def call(self, body, version: int, corr: int = 1):
        await self.send(body, version, corr)
        return decode_response(await self.frame(), body.API_KEY, version)[1]

    async def raw(self, token: bytes) -> bytes:
        await self.stream.send(SIZE.pack(len(token)) + token)
        return await self.frame()

    async def closed(self) -> bool:
        with anyio.fail_after(5):
            try:
                await self.reader.receive_exactly(1)
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, ConnectionError):
                return True
        return False


async def open_wire(port: int) -> Wire:
    return Wire(await anyio.connect_tcp("127.0.0.1", port))


async def test_v0_handshake_then_raw_tokens(certs):
    async with secure_node(certs) as sn:
        w = await open_wire(sn.port("SASL_PLAINTEXT"))
        hs = await w.call(SaslHandshakeRequest(mechanism="PLAIN"), 0)
        assert hs.error_code == 0 and "SCRAM-SHA-256" in hs.mechanisms
        assert await w.raw(plain_token("admin", USERS["admin"])) == b""
        md = await w.call(MetadataRequest(topics=None), 1, corr=2)
        assert [t.name for t in md.topics] == ["__cluster_metadata"]   # admin is a super user
        await w.stream.aclose()

        w = await open_wire(sn.port("SASL_PLAINTEXT"))
        await w.call(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 0)
        client = ScramClient(SHA256, "bob", USERS["bob"])
        client.verify(await w.raw(client.final(await w.raw(client.first()))))
        md = await w.call(MetadataRequest(topics=None), 1, corr=2)
        assert md.topics == []                                          # bob has no ACLs
        await w.stream.aclose()

        w = await open_wire(sn.port("SASL_PLAINTEXT"))
        await w.call(SaslHandshakeRequest(mechanism="PLAIN"), 0)
        await w.stream.send(SIZE.pack(len(b"\0admin\0nope")) + b"\0admin\0nope")
        assert await w.closed()


async def test_sasl_apis_on_a_listener_without_sasl_and_after_login(certs):
    async with secure_node(certs) as sn:
        w = await open_wire(sn.port("CONTROLLER"))
        assert (await w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)).error_code == Errors.ILLEGAL_SASL_STATE
        r = await w.call(SaslAuthenticateRequest(auth_bytes=b"x"), 2, corr=2)
        assert r.error_code == Errors.ILLEGAL_SASL_STATE
        await w.stream.aclose()

        w = await open_wire(sn.port("SASL_PLAINTEXT"))
        await w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        ok = await w.call(SaslAuthenticateRequest(auth_bytes=plain_token("alice", USERS["alice"])), 1, corr=2)
        assert ok.error_code == 0 and ok.session_lifetime_ms == 0
        again = await w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1, corr=3)
        assert again.error_code == Errors.ILLEGAL_SASL_STATE
        assert (await w.call(MetadataRequest(topics=None), 4, corr=4)).topics == []   # still logged in
        await w.stream.aclose()


async def test_bad_input_during_authentication(certs):
    async with secure_node(certs) as sn:
        port = sn.port("SASL_PLAINTEXT")
        for junk in (SIZE.pack(-5), SIZE.pack(200 << 20), SIZE.pack(3) + b"abc", b"\x00\x00\x00\x08" + b"\xff" * 8):
            w = await open_wire(port)
            await w.stream.send(junk)
            assert await w.closed()
        # unknown mechanism: the error lists what is enabled, then the connection closes
        w = await open_wire(port)
        hs = await w.call(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
        assert hs.error_code == Errors.UNSUPPORTED_SASL_MECHANISM and "PLAIN" in hs.mechanisms
        assert await w.closed()
        # a client that speaks TLS to the plaintext SASL listener is dropped too
        w = await open_wire(port)
        await w.stream.send(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64)
        assert await w.closed()
        # and the node still serves a proper login
        w = await open_wire(port)
        await w.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        ok = await w.call(SaslAuthenticateRequest(auth_bytes=plain_token("alice", USERS["alice"])), 2, corr=2)
        assert ok.error_code == 0
        await w.stream.aclose()
