"""What the listener tests share: the fallback answer a test server gives to an API it does not handle, and a
blocking read of one size-prefixed frame from a plain socket."""

from __future__ import annotations

import socket
import struct

from kraftwire.net.server import Reply
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_response import ApiVersionsResponse


def fallback() -> Reply:
    return Reply(ApiVersionsResponse(error_code=int(Errors.UNSUPPORTED_VERSION)), 0)


def read_frame(sock: socket.socket) -> bytes:
    """One frame's body (without its 4-byte size); ConnectionError if the peer closes first."""

    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return out

    return exactly(struct.unpack(">i", exactly(4))[0])
