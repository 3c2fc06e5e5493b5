"""Optional: every message of a simulation crosses the Kafka wire format, as between real nodes.

With ``SimConfig(wire=True)`` (``kraftwire simulate --wire``) each Raft request and response the
simulated network carries is converted by the server's own ``node/wire.py`` to its generated Kafka
message, encoded to a frame at the version a kraftwire node advertises, decoded again and converted
back; the controller simulation does the same for its agents' broker and admin requests. A seed
then checks the codecs and the Raft ↔ wire mapping under every fault, not only the cores.
"""

from __future__ import annotations

from typing import Any

from kraftwire.core.api_registry import CLIENT_APIS, CONTROLLER_APIS, RAFT_APIS
from kraftwire.node import wire
from kraftwire.protocol import framing
from kraftwire.raft import messages as m

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

    def raft_request(self, src: int, msg: m.Request) -> tuple[int, m.Request]:
        """``msg`` as the peer decodes it: (api key, the core message it hands its core)."""
        api_key = msg.API_KEY
        version = self.version(api_key)
        body = wire.request_to_wire(msg, version, [("CONTROLLER", f"node{src}", 9093)])
        decoded = self.kafka_request(body, version)
        source, back = wire.request_from_wire(api_key, decoded, version)
        if source not in (src, -1):
            raise WireError(f"{type(msg).__name__} from {src} decoded as from {source}")
        return api_key, back

    def raft_response(self, api_key: int, msg: m.Response) -> m.Response:
        """``msg`` as the requester decodes the answer."""
        version = self.version(api_key)
        body = wire.response_to_wire(api_key, msg, version, self.nodes)
        return wire.response_from_wire(api_key, self.kafka_response(api_key, body, version))

    def kafka_request(self, body: Any, version: int | None = None) -> Any:
        """A generated request body after encode → decode."""
        if version is None:
            version = self.version(body.API_KEY)
        self._corr += 1
        request = framing.decode_request(_frame_body(framing.encode_request(body, version, self._corr)))
        if request.header.correlation_id != self._corr or request.api_version != version:
            raise WireError(f"{type(body).__name__} v{version}: header did not survive the round trip")
        self.round_trips += 1
        return request.body

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
