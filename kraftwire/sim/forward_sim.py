"""Envelope forwarding in the controller simulation (KIP-590), across controller failovers.

A client's admin write reaching a voter that is not the active controller comes out of that voter's
door as ``Relay`` FORWARD. For alice's and the ACL admin's requests the simulation plays that voter's
shell as ``node/forwarding.py`` does: it wraps the request whole (header and body, ``request_bytes``)
with the client's serialized principal and address in an ``EnvelopeRequest`` and sends it, over the
simulated network, to the voter it believes is the active controller, under the broker principal;
NOT_CONTROLLER or no answer means ask again (the leader it knows, else another voter) until the
client's ``timeout_ms`` is over (then REQUEST_TIMED_OUT). The receiving voter's door unwraps the
Envelope itself (``core/envelope.py``): NOT_CONTROLLER unless active, else the inner request through the
same door with a ``ForwardedContext`` carrying the client's principal, its answer wrapped
(``response_bytes``) in the ``EnvelopeResponse`` whenever it comes.

Invariant (``check_writes``, ``check_end``): a forwarded write is applied at most once (of the writes a
client request made, whatever the retries and failovers, at most one is committed) and under the
forwarded principal: every write a client's request made names that client's principal, and is marked
forwarded exactly when it came in an Envelope.

Envelopes and their answers cross the simulated network like every other message (lost to a partition
or a dropped packet), and while the faults last one answer in five is lost to a broken forwarding
connection, which the forwarder notices at once: a forwarded write the controller applied may have its
answer lost and be sent again in a new Envelope (``node/forwarding.py`` sends it again after a broken
connection). The
controller must not apply it twice: its writes are idempotent by content (a topic's name, an ACL's
binding), as Kafka's are.

Deliberate bugs: ``--bugs envelope_loses_principal`` (the forwarder puts its own principal in the Envelope
instead of the client's); ``--bugs create_acls_rewrites_existing`` (the controller's CreateAcls writes a
record for an ACL it already holds — Kafka's ``AclControlManager.createAcls`` skips those — so a CreateAcls
sent again after its answer was lost is applied twice).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kraftwire.broker.envelope import (
    host_bytes,
    request_bytes,
    response_body,
    serialize_principal,
)
from kraftwire.controller import QuorumController
from kraftwire.core import Relay
from kraftwire.core.outputs import Audit
from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.api import ApiKey, response_class
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request, RequestHeader, decode_request
from kraftwire.protocol.messages.envelope_request import EnvelopeRequest
from kraftwire.protocol.messages.envelope_response import EnvelopeResponse
from kraftwire.protocol.requests import Reply, RequestContext
from kraftwire.sim.cluster import UNDO
from kraftwire.sim.door_sim import ACL_ADMIN, ACL_EXTRA, ALICE, BROKER_PRINCIPAL, LISTENER, principal_of
from kraftwire.sim.invariants import Violation

FORWARDED_CLIENTS = (ALICE, ACL_ADMIN, ACL_EXTRA)
_FIRST_ID = 1 << 40   # connection ids of envelopes and their inner requests (clients use small ones)
REWRITES_ACLS = "create_acls_rewrites_existing"
BROKEN_P = 0.2   # while faults last: an Envelope's answer is lost to a broken forwarding connection


class ControllerRewritingAcls(QuorumController):
    """The deliberate bug ``create_acls_rewrites_existing``: while it handles a CreateAcls the controller's
    latest image shows no ACLs, so ``controller/acls.create_acls`` writes a record for an ACL it already
    holds."""

    _blind = False

    @property
    def image(self) -> MetadataImage:
        image: MetadataImage = QuorumController.image.fget(self)   # type: ignore[attr-defined]
        return replace(image, acls={}) if self._blind else image

    def handle(self, now: int, request: Any, api_version: int | None = None) -> Any:
        self._blind = type(request).__name__ == "CreateAclsRequest"
        try:
            return super().handle(now, request, api_version)
        finally:
            self._blind = False


def controller_class(bugs: frozenset[str]) -> type[QuorumController]:
    """The production controller, or the one with the deliberate bug ``create_acls_rewrites_existing``."""
    return ControllerRewritingAcls if REWRITES_ACLS in bugs else QuorumController


@dataclass(slots=True)
class _Forward:
    """One client request a voter's shell is forwarding: where it came in, its current attempt."""

    voter: int
    incarnation: int
    relay_id: int
    request: Request
    context: RequestContext
    deadline: int
    attempt: int = 0
    target: int = 0


def unwrapped(request: Request) -> tuple[Request, bool]:
    """The client's request a request that entered a door carries (an Envelope's inner one: forwarded)."""
    if request.api_key == ApiKey.ENVELOPE:
        return decode_request(request.body.request_data), True
    return request, False


class Forwarder:
    """The voters' forwarding and Envelope shells for the simulation (see the module docs)."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self._ids = _FIRST_ID
        self._forwards: dict[int, _Forward] = {}
        self._envelopes: dict[int, tuple[int, int]] = {}           # envelope conn -> (forward id, attempt)
        # (client, correlation id) -> the writes it made: (epoch, first offset) of each appended batch
        self.writes: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.sent = self.applied = self.retried = 0
        self.resent_after_write = 0   # Envelopes sent again for a request that had written already
        self.broken = 0               # answers lost to a broken forwarding connection

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def wants(self, relay: Relay) -> bool:
        return relay.request.header.client_id in FORWARDED_CLIENTS

    # -- the forwarding voter ------------------------------------------------------------------
    def start(self, node: Any, relay: Relay) -> None:
        sim = self.sim
        timeout = getattr(relay.request.body, "timeout_ms", 0) or sim.ccfg.agent_request_timeout_ms
        fid = self._next_id()
        self._forwards[fid] = _Forward(node.node_id, node.incarnation, relay.request_id, relay.request,
                                       relay.context, sim.now + timeout, target=node.node_id)
        self._send(fid)

    def _send(self, fid: int) -> None:
        sim, fwd = self.sim, self._forwards[fid]
        node = sim.nodes[fwd.voter]
        if node.core is None or node.incarnation != fwd.incarnation:
            del self._forwards[fid]
            return
        if sim.now >= fwd.deadline:
            self._finish(fid, fwd.request.body.error_response(fwd.request.api_version, int(Errors.REQUEST_TIMED_OUT),
                                                              "no active controller answered in time"))
            return
        fwd.attempt += 1
        if fwd.attempt > 1 and (fwd.request.header.client_id, fwd.request.correlation_id) in self.writes:
            self.resent_after_write += 1
        fwd.target = sim.retarget(fwd.target)
        principal = fwd.context.principal
        if "envelope_loses_principal" in sim.cfg.bugs:
            principal = BROKER_PRINCIPAL
        body = EnvelopeRequest(request_data=request_bytes(fwd.request), request_principal=serialize_principal(principal),
                               client_host_address=host_bytes(fwd.context.client_host))
        if sim.codec is not None:
            body = sim.codec.kafka_request(body, 0)
        envelope = Request(RequestHeader(ApiKey.ENVELOPE, 0, fid, f"voter-{fwd.voter}"), body)
        self.sent += 1
        attempt, target = fwd.attempt, fwd.target
        sim.schedule(sim.now + sim.ccfg.agent_request_timeout_ms // 2, UNDO,
                     lambda: self._retry(fid, attempt))
        if not sim._lost(fwd.voter, target):
            sim.schedule(sim.now + sim._latency(fwd.voter, target), UNDO,
                         lambda: self._deliver(target, fid, attempt, envelope))

    def _retry(self, fid: int, attempt: int) -> None:
        fwd = self._forwards.get(fid)
        if fwd is not None and fwd.attempt == attempt:
            self.retried += 1
            self._send(fid)

    def _answered(self, fid: int, attempt: int, resp: EnvelopeResponse) -> None:
        fwd = self._forwards.get(fid)
        if fwd is None or fwd.attempt != attempt:
            return
        if resp.error_code == int(Errors.NOT_CONTROLLER):
            self.sim.schedule(self.sim.now + 20, UNDO, lambda: self._retry(fid, attempt))
            return
        request = fwd.request
        if resp.error_code != 0:
            raise Violation(f"Envelope refused with {Errors(resp.error_code).name}")
        key, version = request.api_key, request.api_version
        data = response_body(resp.response_data or b"", key, version, request.correlation_id)
        self._finish(fid, response_class(key).decode(data, version))

    def _finish(self, fid: int, body: Any) -> None:
        fwd = self._forwards.pop(fid)
        node = self.sim.nodes[fwd.voter]
        if node.incarnation == fwd.incarnation:
            version = fwd.request.api_version
            self.sim._run_core(node, lambda c: c.handle_relayed(self.sim.now, fwd.relay_id, Reply(body, version)))

    # -- the receiving voter -------------------------------------------------------------------
    def _deliver(self, target: int, fid: int, attempt: int, envelope: Request) -> None:
        node = self.sim.nodes[target]
        if node.core is None:
            return
        conn = self._next_id()
        self._envelopes[conn] = (fid, attempt)
        ctx = RequestContext(LISTENER, "PLAINTEXT", "10.0.2.1", 40001, BROKER_PRINCIPAL)
        self.sim._handle_api(node, conn, envelope, ctx)

    def on_respond(self, node: Any, request_id: int, reply: Reply | None) -> bool:
        """A ``Respond`` of an Envelope (True), else False (a client's)."""
        sim = self.sim
        sent = self._envelopes.pop(request_id, None)
        if sent is None:
            return False
        if reply is None:
            return True
        fid, attempt = sent
        resp = reply.body
        if sim.codec is not None:
            resp = sim.codec.kafka_response(ApiKey.ENVELOPE, resp, 0)
        fwd = self._forwards.get(fid)
        back = node.node_id if fwd is None else fwd.voter
        if sim.faults and not sim.healed and sim.rng.random() < BROKEN_P:
            # The forwarding connection broke before the answer arrived: the forwarder sends again soon.
            self.broken += 1
            sim.schedule(sim.now + sim._latency(node.node_id, back), UNDO, lambda: self._retry(fid, attempt))
        elif not sim._lost(node.node_id, back):
            sim.schedule(sim.now + sim._latency(node.node_id, back), UNDO,
                         lambda: self._answered(fid, attempt, resp))
        return True

    # -- the invariant -------------------------------------------------------------------------
    def check_writes(self, node_id: int, request: Request, forwarded: bool, outputs: list[Any]) -> None:
        """Every write a client's request (``unwrapped``: an Envelope's inner one, ``forwarded``) made names the
        client's principal, is marked forwarded exactly when it came in an Envelope, and a client request is
        applied (committed) at most once cluster-wide."""
        client = request.header.client_id or ""
        if client not in FORWARDED_CLIENTS:
            return
        for out in outputs:
            if type(out) is not Audit:
                continue
            entry = out.entry
            if entry.principal != principal_of(client) or entry.forwarded != forwarded:
                raise Violation(f"node {node_id}: {client}'s {entry.api} (correlation id {request.correlation_id}) "
                                f"written as {entry.principal} (forwarded={entry.forwarded}), not as "
                                f"{principal_of(client)} (forwarded={forwarded})")
            self.writes.setdefault((client, request.correlation_id), []).append((entry.epoch, entry.first_offset))
            if forwarded:
                self.applied += 1
            self._check_once((client, request.correlation_id), self.sim.checker.committed)

    def _check_once(self, key: tuple[str, int], committed: list[Any]) -> None:
        """Of a client request's writes, at most one is committed (a write a failed-over leader appended but
        never committed is lost, and the forwarder's retry may write it again)."""
        kept = [(epoch, first) for epoch, first in self.writes[key]
                if first < len(committed) and committed[first][0] == epoch]
        if len(kept) > 1:
            raise Violation(f"{key[0]}'s request (correlation id {key[1]}) applied {len(kept)} times: "
                            f"committed at (epoch, offset) {kept}")

    def check_end(self, committed: list[Any]) -> None:
        for key in self.writes:
            self._check_once(key, committed)
