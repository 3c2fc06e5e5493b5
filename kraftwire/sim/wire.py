"""How the simulated network carries messages: as the Kafka requests a listener hands its node core's door.

Every simulation that runs node cores sends Raft's requests as a server does (``RaftWire``): the Raft
core's ``SendRequest`` is translated by the server's own ``core/raft_wire.py`` to its generated Kafka
request at the version a kraftwire node advertises and enters the receiving node core through its one
door (``NodeCore.handle_api``, ``core/raft_apis.py``); the door's ``Respond`` is translated back for the
requester's Raft core as the server's driver does. So the door's Raft route and both halves of the
translation run in every seed.

With ``SimConfig(wire=True)`` (``kraftwire simulate --wire``) every such message is also encoded to a
frame and decoded again (``WireCodec``), and the controller simulation does the same for its agents'
broker and admin requests: a seed then checks the codecs too, under every fault, not only the cores.

What the door hands the Raft core is checked against the node that sent it (``SenderCheck``): a Vote's
candidate, a Begin/EndQuorumEpoch's leader, a Fetch's or FetchSnapshot's replica must be the sender.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraftwire.core import ApiDoor, DoorPlane, RaftApis
from kraftwire.core import raft_wire as wire
from kraftwire.core.api_registry import (
    CLIENT_APIS,
    CONTROLLER_APIS,
    RAFT_APIS,
    VOTER_CHANGE_APIS,
    ApiRegistry,
)
from kraftwire.protocol import framing
from kraftwire.protocol.requests import Reply
from kraftwire.raft import RaftCore
from kraftwire.raft import messages as m
from kraftwire.sim.door_sim import LISTENER, request_of

_VERSIONS = {**CONTROLLER_APIS, **CLIENT_APIS, **RAFT_APIS, **VOTER_CHANGE_APIS}


class WireError(AssertionError):
    """A message did not survive the round trip or the translation: a codec or mapping bug the simulation
    found."""


def version(api_key: int) -> int:
    """The version a kraftwire node speaks ``api_key`` at (the highest it advertises)."""
    return _VERSIONS[api_key][1]


def _frame_body(frame: bytes) -> bytes:
    return frame[4:]   # the size prefix


class WireCodec:
    """Round-trips messages through encode/decode at kraftwire's advertised versions (``--wire``)."""

    def __init__(self) -> None:
        self.round_trips = 0
        self._corr = 0

    def version(self, api_key: int) -> int:
        return version(api_key)

    def kafka_request(self, body: Any, version: int | None = None) -> Any:
        """A generated request body after encode → decode."""
        return self.round_trip(body, self.version(body.API_KEY) if version is None else version).body

    def round_trip(self, body: Any, version: int, client_id: str = "kraftwire") -> framing.Request:
        """The whole request (header and body) as a listener decodes ``body`` sent at ``version``."""
        self._corr += 1
        request = framing.decode_request(_frame_body(framing.encode_request(body, version, self._corr, client_id)))
        if request.header.correlation_id != self._corr or request.api_version != version:
            raise WireError(f"{type(body).__name__} v{version}: header did not survive the round trip")
        self.round_trips += 1
        return request

    def kafka_response(self, api_key: int, body: Any, version: int | None = None) -> Any:
        """A generated response body after encode → decode."""
        if version is None:
            version = self.version(api_key)
        self._corr += 1
        corr, back = framing.decode_response(_frame_body(framing.encode_response(body, api_key, version, self._corr)),
                                             api_key, version)
        if corr != self._corr:
            raise WireError(f"response to API {api_key} v{version}: correlation id did not survive")
        self.round_trips += 1
        return back


class RaftWire:
    """Raft's requests between simulated nodes as Kafka requests into the peer's door, and the door's
    answers back (``core/raft_wire.py`` both ways); through real bytes too when given a ``WireCodec``."""

    def __init__(self, node_ids: list[int], codec: WireCodec | None = None) -> None:
        self.nodes = [(i, f"node{i}", 9093, LISTENER) for i in node_ids]
        self.codec = codec
        self._corr = 0

    def raft_apis(self) -> SenderCheck:
        """A node core's Raft APIs, listing the voters as a server's do."""
        return SenderCheck(self.nodes)

    def request(self, src: int, msg: m.Request) -> framing.Request:
        """``msg`` from node ``src`` as the peer's listener decodes it: the whole request, for its door."""
        return self.kafka(wire.request_to_wire(msg, version(msg.API_KEY), [(LISTENER, f"node{src}", 9093)]),
                          f"node{src}")

    def kafka(self, body: Any, client_id: str) -> framing.Request:
        """A generated request body as a listener hands it to the door (through bytes with ``--wire``)."""
        v = version(body.API_KEY)
        if self.codec is not None:
            return self.codec.round_trip(body, v, client_id)
        self._corr += 1
        return request_of(body, v, self._corr, client_id)

    def reply(self, api_key: int, reply: Reply) -> Any:
        """The door's answer body as the requester decodes it (through bytes with ``--wire``)."""
        if self.codec is None:
            return reply.body
        return self.codec.kafka_response(api_key, reply.body, reply.version)

    def answer(self, api_key: int, reply: Reply) -> m.Response:
        """The door's answer to a Raft request as the requester's driver hands it to its Raft core."""
        return wire.response_from_wire(api_key, self.reply(api_key, reply))


class SenderCheck(RaftApis):
    """The production Raft APIs of a simulated node core, which also check that the Raft message the door
    hands the Raft core names the node that sent it (``sender``, set by the simulation for each delivery):
    a Vote's candidate, a Begin/EndQuorumEpoch's leader, a Fetch's or FetchSnapshot's replica. DescribeQuorum
    and the voter changes name none (source -1)."""

    sender: int | str | None = None   # a node id, or a client agent's name

    def attach(self, raft: RaftCore, clock: Callable[[], int]) -> None:
        super().attach(_CheckedCore(raft, self), clock)   # type: ignore[arg-type]


class _CheckedCore:
    """A Raft core as its ``SenderCheck`` sees it: requests checked against the sender, the rest as is."""

    def __init__(self, raft: RaftCore, apis: SenderCheck) -> None:
        self._raft = raft
        self._apis = apis

    def handle_request(self, now: int, request_id: int, source: int, msg: m.Request) -> list[m.Output]:
        sender = self._apis.sender
        if sender is not None and source not in (sender, -1):
            raise WireError(f"{type(msg).__name__} from node {sender} reached its Raft core as from node {source}")
        return self._raft.handle_request(now, request_id, source, msg)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raft, name)


def raft_door() -> ApiDoor:
    """A voter's door in a simulation without controllers: its controller plane (no authorizer), which
    answers Raft's APIs."""
    plane = DoorPlane(ApiRegistry.controller(), "on this simulated voter", lambda: ({}, {}, -1))
    return ApiDoor({LISTENER: plane})
