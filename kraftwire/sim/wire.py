"""Optional: every message of a simulation crosses the Kafka wire format, as between real nodes.

With ``SimConfig(wire=True)`` (``kraftwire simulate --wire``) each Raft request the simulated network
carries is converted by the server's own ``core/raft_wire.py`` to its generated Kafka message, encoded
to a frame at the version a kraftwire node advertises and decoded again, and enters the receiving node
core through its one door (``NodeCore.handle_api``, ``core/raft_apis.py``), as on a server; the door's
``Respond`` is encoded, decoded and converted back for the requester's Raft core. The controller
simulation does the same for its agents' broker and admin requests. A seed then checks the codecs, the
Raft ↔ wire mapping and the door's Raft path under every fault, not only the cores.
"""

from __future__ import annotations

from typing import Any

from kraftwire.core import ApiDoor, DoorPlane, RaftApis
from kraftwire.core import raft_wire as wire
from kraftwire.core.api_registry import CLIENT_APIS, CONTROLLER_APIS, RAFT_APIS, ApiRegistry
from kraftwire.protocol import framing
from kraftwire.protocol.requests import Reply
from kraftwire.raft import messages as m
from kraftwire.sim.door_sim import LISTENER

_VERSIONS = {**CONTROLLER_APIS, **CLIENT_APIS, **RAFT_APIS}


class WireError(AssertionError):
    """A message did not survive the round trip: a codec or mapping bug the simulation found."""


def _frame_body(frame: bytes) -> bytes:
    return frame[4:]   # the size prefix


class WireCodec:
    """Round-trips messages through encode/decode at kraftwire's advertised versions."""

    def __init__(self, node_ids: list[int]) -> None:
        self.nodes = [(i, f"node{i}", 9093, "CONTROLLER") for i in node_ids]
        self.round_trips = 0
        self._corr = 0

    def version(self, api_key: int) -> int:
        return _VERSIONS[api_key][1]

    def raft_apis(self) -> RaftApis:
        """A node core's Raft APIs, listing the voters as a server's do."""
        return RaftApis(self.nodes)

    def raft_frame(self, src: int, msg: m.Request) -> framing.Request:
        """``msg`` as the peer's listener decodes it: the whole request (header and body), for its door."""
        api_key = msg.API_KEY
        version = self.version(api_key)
        return self._round_trip(wire.request_to_wire(msg, version, [("CONTROLLER", f"node{src}", 9093)]), version,
                                f"node{src}")

    def raft_reply(self, api_key: int, reply: Reply) -> m.Response:
        """The door's answer to a Raft request as the requester's driver decodes it."""
        return wire.response_from_wire(api_key, self.kafka_response(api_key, reply.body, reply.version))

    def kafka_request(self, body: Any, version: int | None = None) -> Any:
        """A generated request body after encode → decode."""
        return self._round_trip(body, self.version(body.API_KEY) if version is None else version).body

    def _round_trip(self, body: Any, version: int, client_id: str = "kraftwire") -> framing.Request:
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


def raft_door() -> ApiDoor:
    """A voter's door in a simulation without controllers: its controller plane (no authorizer), which
    answers Raft's APIs."""
    plane = DoorPlane(ApiRegistry.controller(), "on this simulated voter", lambda: ({}, {}, -1))
    return ApiDoor({LISTENER: plane})
