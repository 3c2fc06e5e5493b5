"""Fetch answers whose records are file slices: sent with sendfile on plaintext listeners and read with
pread under TLS, both byte for byte the generated encoder's frame, in request order; a slice whose file
is deleted meanwhile is still served, one whose file shrank resets the connection instead of a short frame."""

from __future__ import annotations

import asyncio
import os
import ssl
import struct
import uuid

import anyio
import pytest

from kraftwire.net.server import KafkaServer, ListenerSpec, Reply
from kraftwire.protocol import framing
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.messages.api_versions_response import ApiVersionsResponse
from kraftwire.protocol.messages.fetch_request import FetchPartition, FetchRequest, FetchTopic
from kraftwire.protocol.messages.fetch_response import FetchableTopicResponse, FetchResponse, PartitionData
from kraftwire.security.settings import ListenerSecurity
from kraftwire.storage.file_slice import FileSlice
from tests.net.listener_helpers import fallback

pytestmark = pytest.mark.anyio
FETCH_VERSIONS = (4, 11, 12, 16)


def _fetch_response(version: int, records) -> FetchResponse:
    part = PartitionData(partition_index=0, high_watermark=10, last_stable_offset=10, log_start_offset=0,
                         aborted_transactions=None, records=records)
    topic = FetchableTopicResponse(topic="t" if version < 13 else "",
                                   topic_id=uuid.UUID(int=1) if version >= 13 else uuid.UUID(int=0), partitions=[part])
    return FetchResponse(responses=[topic], session_id=0)


def _fetch_request(corr: int, version: int) -> bytes:
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                       topics=[FetchTopic(topic="t", topic_id=uuid.UUID(int=1),
                                          partitions=[FetchPartition(partition=0, fetch_offset=0)])])
    return framing.encode_request(req, version, correlation_id=corr)


class Files:
    """A data file and the slices handed out over it (fresh descriptors each time, as FileLog does)."""

    def __init__(self, path, size: int) -> None:
        self.path = path
        self.content = os.urandom(size)
        path.write_bytes(b"head" + self.content)
        self.fd = os.open(path, os.O_RDONLY)   # the segment's own descriptor, open while the log is

    def slice(self) -> FileSlice:
        cut = len(self.content) // 3
        return FileSlice([(os.dup(self.fd), 4, cut), (os.dup(self.fd), 4 + cut, len(self.content) - cut)])


def _handler(files: Files, before_reply=None):
    async def handle(request, ctx):
        if request.api_key != 1:
            return Reply(ApiVersionsResponse(), request.api_version)
        records = files.slice()
        if before_reply is not None:
            before_reply()
        return Reply(_fetch_response(request.api_version, records), request.api_version)
    return handle


async def _read_frames(stream, count: int) -> list[bytes]:
    data, frames = b"", []
    with anyio.fail_after(20):
        while len(frames) < count:
            while len(data) >= 4 and len(data) >= 4 + struct.unpack_from(">i", data)[0]:
                size = struct.unpack_from(">i", data)[0]
                frames.append(data[:4 + size])
                data = data[4 + size:]
            if len(frames) < count:
                data += await stream.receive()
    return frames


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def _serve_and_check(files: Files, spec: ListenerSpec, connect, before_reply=None) -> None:
    server = KafkaServer(_handler(files, before_reply), fallback)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, spec)
        fds = _fds()
        async with await connect(port) as s:
            reqs, expected = [], []
            for corr, version in enumerate(FETCH_VERSIONS * 2):
                reqs.append(_fetch_request(corr, version))
                expected.append(framing.encode_response(_fetch_response(version, files.content), 1, version, corr))
                reqs.append(framing.encode_request(ApiVersionsRequest(), 0, correlation_id=1000 + corr))
                expected.append(framing.encode_response(ApiVersionsResponse(), 18, 0, 1000 + corr))
            await s.send(b"".join(reqs))        # pipelined: slices and plain answers leave in order
            assert await _read_frames(s, len(expected)) == expected
        with anyio.fail_after(10):
            while server.connections:
                await anyio.sleep(0.01)
        assert _fds() == fds, "every slice's descriptors are closed once sent"
        tg.cancel_scope.cancel()
    os.close(files.fd)


async def test_plaintext_sends_slices_with_sendfile_byte_identical(tmp_path, monkeypatch):
    files = Files(tmp_path / "seg", 3 << 20)
    calls = []
    loop_class = type(asyncio.get_running_loop())
    loop_sendfile = loop_class.sendfile

    async def counting(self, transport, file, offset=0, count=None, **kw):
        calls.append(count)
        return await loop_sendfile(self, transport, file, offset, count, **kw)

    monkeypatch.setattr(loop_class, "sendfile", counting)
    await _serve_and_check(files, ListenerSpec("PLAINTEXT", "127.0.0.1", 0),
                           lambda port: anyio.connect_tcp("127.0.0.1", port))
    assert len(calls) == 2 * 2 * len(FETCH_VERSIONS) and sum(calls) == 2 * len(FETCH_VERSIONS) * len(files.content)


async def test_a_deleted_file_is_still_served(tmp_path):
    files = Files(tmp_path / "seg", 1 << 20)
    await _serve_and_check(files, ListenerSpec("PLAINTEXT", "127.0.0.1", 0),
                           lambda port: anyio.connect_tcp("127.0.0.1", port),
                           before_reply=lambda: files.path.unlink(missing_ok=True))


async def test_tls_reads_slices_and_sends_the_same_bytes(tmp_path):
    from tests.security.certs import make_certs

    certs = make_certs(tmp_path / "certs")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(certs.server_keystore)
    client_ctx = ssl.create_default_context(cafile=str(certs.ca))
    files = Files(tmp_path / "seg", 1 << 20)
    await _serve_and_check(files, ListenerSpec("SSL", "127.0.0.1", 0, "SSL", ListenerSecurity("SSL", server_ctx)),
                           lambda port: anyio.connect_tcp("localhost", port, tls=True, ssl_context=client_ctx,
                                                          tls_standard_compatible=False))


async def test_a_file_that_shrank_resets_the_connection_instead_of_a_short_frame(tmp_path, caplog):
    files = Files(tmp_path / "seg", 1 << 20)
    server = KafkaServer(_handler(files, before_reply=lambda: os.truncate(files.path, 1000)), fallback)
    async with anyio.create_task_group() as tg:
        _, port = await tg.start(server.serve, ListenerSpec("PLAINTEXT", "127.0.0.1", 0))
        async with await anyio.connect_tcp("127.0.0.1", port) as s:
            await s.send(_fetch_request(1, 12))
            got = b""
            with anyio.fail_after(10):
                try:
                    while chunk := await s.receive():
                        got += chunk
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    pass
            assert len(got) < 4 + struct.unpack_from(">i", got)[0], "the frame announced more than was sent"
        assert "shrank under a Fetch answer" in caplog.text
        with anyio.fail_after(10):
            while server.connections:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    os.close(files.fd)
