"""Who sent a request and what a handler answers: the types the listener, the authorization gate and the
API registry share (they live below all three, so none of them imports another's layer to name them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

_ids = count(1)


@dataclass(slots=True)
class RequestContext:
    """Who sent a request and where: listener, security protocol, peer address, principal."""

    listener: str
    security_protocol: str
    client_host: str
    client_port: int
    principal: str = "User:ANONYMOUS"
    connection_id: int = field(default_factory=lambda: next(_ids))
    token_authenticated: bool = False   # logged in with a delegation token (SCRAM tokenauth)


@dataclass(slots=True)
class Reply:
    """A handler's answer: the response body and the version to encode it in."""

    body: Any
    version: int
    header_version: int | None = None


class RefusedRequest(ConnectionError):
    """A request this node does not serve at all (API or version not advertised): the connection is
    closed, as Kafka does, with one line at INFO."""
