"""The one door: every Kafka request a node's listeners decode enters the node core here
(``NodeCore.handle_api(now, connection, request, context)``), and what it does is a function of the
node's state returning outputs.

A listener belongs to one plane (``api_registry.Plane``, as Kafka splits ControllerApis and KafkaApis);
``ApiDoor`` holds each listener's ``DoorPlane``. For one request the door:

1. answers ApiVersions from the plane's registry (with the feature levels its image finalized) and
   refuses an API or version the plane does not serve (``RefusedRequest``: the shell closes the
   connection, as Kafka does);
2. runs the authorization gate (``security/gate.RequestGate.check``, the ACLs of the plane's image): a
   denied request is answered at once; one a rule narrows goes on narrowed, and its answer is completed
   by the rule's ``finish`` whenever it comes;
3. hands it on as the registry says (``ApiRegistry.how``):

   - a controller API on the controller plane (BrokerHeartbeat, BrokerRegistration, admin writes) is
     submitted to the controller role: ``Respond`` at once when it writes nothing (most heartbeats),
     else once its records commit. A client's admin write reaching a voter that is not the active
     controller is relayed to it (``Relay`` FORWARD, in an Envelope), as a broker does. An
     IncrementalAlterConfigs naming BROKER_LOGGER resources sends those to the shell (``Relay`` LOGGERS:
     this process's log levels) after the controller answered the others (on the broker plane: after the
     active controller answered the forwarded rest), answered in the request's order;
   - an Envelope on the controller plane is unwrapped (``core/envelope.py``, KIP-590): NOT_CONTROLLER
     unless this voter is the active controller, else the inner request goes through the door again as
     its client (the forwarded principal and address: authorized as the client), and its answer,
     whenever it comes, goes out wrapped in the EnvelopeResponse;
   - an API the controller plane answers ``from image`` is answered from the committed image; Metadata,
     DescribeCluster and FindCoordinator from the voter's own state (``core/voter_reads.py``: the voters
     at their addresses on the client's listener, the Raft leader, the group's coordinating voter); its
     other group requests go on as ``Relay`` GROUP (the shell's ``GroupShell`` submits them to the
     coordinating group role, here or on another voter);
   - an API the broker plane ``forwarded`` is relayed (``Relay`` FORWARD); the delegation-token
     writes are refused first on a connection that may not ask for tokens;
   - an API the broker plane answers ``from image`` (Metadata, DescribeCluster, the Describe* reads)
     is answered from the broker's image (``core/broker_reads.py``); what it ``relays`` goes on as
     ``Relay`` GROUP (to the coordinating voter), but FindCoordinator (the broker itself) and its share
     of ListGroups are computed here;
   - on every plane Produce is refused at once (``core/produce.py``);
   - the Raft APIs — Vote, BeginQuorumEpoch, EndQuorumEpoch, FetchSnapshot, a replica's Fetch and
     DescribeQuorum — are answered by the replica's Raft core (``core/raft_apis.py``: the wire request
     becomes its message, its ``SendResponse`` the door's ``Respond``; a vote's answer leaves only once
     its quorum-state write is durable, a parked Fetch is answered when Raft wakes it); DescribeQuorum at
     a metadata replica that does not lead goes on as ``Relay`` DESCRIBE_QUORUM (the shell asks the
     leader; no answer: this replica's own view);
   - a consumer Fetch and a ListOffsets (on every plane) come out as ``Read``: the shell reads the
     committed log through its view (zero-copy for Fetch) and hands back what it found
     (``NodeCore.handle_read``); a ListOffsets is answered with it, a Fetch with less than its MinBytes is
     ``Park``ed until the replica's high watermark, epoch or leader moves, or its MaxWaitMs is over, and
     read again;
   - the KIP-853 voter changes (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter) are the Raft core's too
     (``core/raft_apis.py``): answered once the new voter set commits, or with their error.

Every API a plane advertises has a route (``DoorPlane.check``, run when a server builds its planes): no
request is left to shell code the simulation does not run.

``Respond(connection, reply)`` carries a ``protocol.requests.Reply`` (body, version); the shell writes
it. A ``Relay`` is I/O the shell performs: it hands the answer back with ``NodeCore.handle_relayed`` (or
``handle_relay_failed``), and the door completes it and emits its ``Respond``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kraftwire.broker.envelope import FORWARDED_APIS, RawBody
from kraftwire.controller import configs as config_cmds
from kraftwire.controller import quotas as quota_cmds
from kraftwire.controller import reassignment as reassignment_cmds
from kraftwire.controller import scram as scram_cmds
from kraftwire.controller.configs import BROKER_LOGGER
from kraftwire.controller.delegation_tokens import TokenRequest, describe_tokens
from kraftwire.core.api_registry import (
    CONTROLLER_APIS,
    ApiRegistry,
    Features,
    How,
    Plane,
    answer_api_versions,
    with_features,
)
from kraftwire.core.broker_reads import (
    BrokerReads,
    answer_from_image,
    coordinator_answer,
    list_groups_refused,
    own_share,
)
from kraftwire.core.controller_role import ControllerRole
from kraftwire.core.envelope import Wrap, unwrap, wrapper
from kraftwire.core.outputs import Respond
from kraftwire.core.produce import refuse_produce
from kraftwire.core.raft_apis import DOOR_RAFT_APIS, Asked, RaftApis, replica_of
from kraftwire.core.voter_reads import ANSWERED as VOTER_ANSWERED
from kraftwire.core.voter_reads import VoterReads
from kraftwire.core.voter_reads import answer as voter_answer
from kraftwire.group import GROUP_APIS
from kraftwire.protocol.api import ApiKey, response_class
from kraftwire.protocol.framing import Request
from kraftwire.protocol.messages.envelope_response import EnvelopeResponse
from kraftwire.protocol.messages.incremental_alter_configs_response import IncrementalAlterConfigsResponse
from kraftwire.protocol.requests import RefusedRequest, Reply, RequestContext
from kraftwire.protocol.runtime import replace
from kraftwire.security.gate import RequestGate
from kraftwire.security.token_requests import TOKEN_WRITES, not_allowed, requests_allowed
from kraftwire.storage.audit import Origin

K = ApiKey
Finish = Callable[[Any], Any]
LoggerDescriber = Callable[[str, int], Any]
Part = Callable[[Any, Callable[[Any], None]], None]   # hand a part of a request on; its answer to the callback


class Route(StrEnum):
    """Where the door sends a request of a served API (``DoorPlane.route``)."""

    API_VERSIONS = "api versions"   # answered from the registry
    CONTROLLER = "controller"       # submitted to the controller role
    FROM_IMAGE = "from image"       # answered from the plane's image (the controller's committed one)
    FORWARD = "forward"             # relayed to the active controller
    READ = "read"                   # a consumer Fetch or ListOffsets read by the shell (a replica's Fetch is Raft's)
    RAFT = "raft"                   # answered by the replica's Raft core (core/raft_apis.py)
    ENVELOPE = "envelope"           # unwrapped on the controller plane, the inner request through the door
    REFUSE_PRODUCE = "refuse produce"   # every Produce (only the quorum writes the metadata log)
    RELAY = "relay"                 # sent on to a voter (the group coordinator)


class RelayKind(StrEnum):
    """What the shell does with a relayed request."""

    FORWARD = "forward"   # in an Envelope to the active controller (KIP-590)
    GROUP = "group"       # to the voter coordinating the group (every voter for ListGroups)
    DESCRIBE_QUORUM = "describe quorum"   # to the quorum leader, following NOT_LEADER_OR_FOLLOWER hints
    LOGGERS = "loggers"   # BROKER_LOGGER resources of an IncrementalAlterConfigs: this process's log levels


@dataclass(frozen=True, slots=True)
class Relay:
    """A request the shell carries on (``kind``); its answer comes back with ``NodeCore.handle_relayed``."""

    request_id: int
    kind: RelayKind
    request: Request
    context: RequestContext


@dataclass(frozen=True, slots=True)
class Read:
    """A consumer Fetch for the shell to read: committed batches below the high watermark, through its
    zero-copy view; it hands back the answer and its record bytes with ``NodeCore.handle_read``."""

    request_id: int
    request: Request
    context: RequestContext


@dataclass(frozen=True, slots=True)
class Park:
    """A consumer Fetch whose read found less than its MinBytes waits: the core emits its ``Read`` again once
    the replica's high watermark, epoch or leader moved, or at ``until_ms`` (its MaxWaitMs)."""

    request_id: int
    until_ms: int


Mark = tuple[Any, ...]   # what a parked read waits to change (the replica's HW, epoch and leader)


class _Reading:
    """A consumer Fetch between its ``Read``s: the mark its last read saw, when it must be answered."""

    __slots__ = ("call", "deadline", "mark", "parked")

    def __init__(self, call: _Call, deadline: int, mark: Mark) -> None:
        self.call = call
        self.deadline = deadline
        self.mark = mark
        self.parked = False


@dataclass(slots=True)
class DoorPlane:
    """One plane of the door: its registry, where refusals say it is (``where``), the feature levels
    ApiVersions reports, the authorization gate (None: no authorizer) and who answers its APIs
    (``controller`` on the controller plane, ``describe_logger`` answering BROKER_LOGGER resources from the
    process's log levels, ``voter`` the voter's own answers; ``broker`` on the broker plane, the state its
    image answers read)."""

    registry: ApiRegistry
    where: str
    features: Callable[[], Features]
    gate: RequestGate | None = None
    controller: ControllerRole | None = None
    describe_logger: LoggerDescriber | None = None
    broker: BrokerReads | None = None
    voter: VoterReads | None = None

    def check(self, advertised: Iterable[int], answered_elsewhere: Iterable[int] = ()) -> None:
        """Raise if an ``advertised`` API (other than ``answered_elsewhere``: the listener's SASL) has no route."""
        missing = sorted(k for k in set(advertised) - set(answered_elsewhere) if self.route(k) is None)
        if missing:
            raise ValueError(f"advertised APIs the door does not route {self.where}: {missing}")

    def route(self, key: int) -> Route | None:
        """Where a served ``key`` goes, as the plane's registry says (None: nowhere, ``check`` refuses it)."""
        registry = self.registry
        if key == K.API_VERSIONS:
            return Route.API_VERSIONS
        if key == K.FETCH or key == K.LIST_OFFSETS:
            return Route.READ
        if key == K.PRODUCE:
            return Route.REFUSE_PRODUCE
        if key in DOOR_RAFT_APIS:
            return Route.RAFT
        if registry.plane is Plane.CONTROLLER:
            if self.controller is not None and key == K.ENVELOPE:
                return Route.ENVELOPE
            if self.voter is not None and key in VOTER_ANSWERED:
                return Route.FROM_IMAGE
            if self.voter is not None and key in GROUP_APIS:
                return Route.RELAY
            if self.controller is not None and key in CONTROLLER_APIS:
                return Route.FROM_IMAGE if registry.how(key) is How.FROM_IMAGE else Route.CONTROLLER
        elif registry.how(key) is How.FORWARDED:
            return Route.FORWARD
        elif self.broker is not None and registry.how(key) is How.FROM_IMAGE:
            return Route.FROM_IMAGE
        elif self.broker is not None and registry.how(key) is How.RELAYED:
            return Route.RELAY
        return None


class _Call:
    """A request in the door: ``finish`` completes its answer (an authorization rule's filter)."""

    __slots__ = ("request_id", "request", "context", "finish", "fallback", "then")

    def __init__(self, request_id: int, request: Request, context: RequestContext, finish: Finish | None) -> None:
        self.request_id = request_id
        self.request = request
        self.context = context
        self.finish = finish
        self.fallback: Callable[[], Reply] | None = None   # the answer when a relay brought none
        self.then: Callable[[Reply | None], None] | None = None   # a relay's answer is one step of the request's


def origin_of(request: Request, ctx: RequestContext) -> Origin:
    """Who sent a controller request (the Envelope's principal and client address when forwarded), for
    the audit file."""
    return Origin(principal=ctx.principal, client_id=request.header.client_id or "",
                  client_host=ctx.client_host, listener=ctx.listener,
                  forwarded=bool(getattr(ctx, "forwarded", False)))


class ApiDoor:
    """The planes of a node's listeners (by listener name) and the requests relayed to the shell."""

    def __init__(self, planes: dict[str, DoorPlane]) -> None:
        self.planes = planes
        self._emit: Callable[[Any], None] = _unattached
        self._mark: Callable[[], Mark] = tuple
        self._relayed: dict[int, _Call] = {}
        self._reading: dict[int, _Reading] = {}
        self._raft = RaftApis()
        self._wraps: dict[int, Wrap] = {}   # Envelopes whose inner request is in the door: its answer's wrapping

    def attach(self, emit: Callable[[Any], None], mark: Callable[[], Mark], raft: RaftApis) -> None:
        """Bind the door to its node core's outputs, to what parked reads wait on and to the replica's Raft
        APIs (``NodeCore`` does this)."""
        self._emit = emit
        self._mark = mark
        self._raft = raft

    # -- the door ---------------------------------------------------------------------------------
    def handle(self, now: int, request_id: int, request: Request, context: RequestContext) -> None:
        plane = self.planes.get(context.listener)
        if plane is None:
            raise KeyError(f"no plane serves listener {context.listener!r}")
        key, version = request.api_key, request.api_version
        versions = answer_api_versions(plane.registry.versions, key, version, plane.where)   # refusal raises
        if versions is not None:   # ApiVersions
            with_features(versions, version, *plane.features())
            self._emit(self._out(request_id, Reply(versions, version if versions.error_code == 0 else 0)))
            return
        finish: Finish | None = None
        if plane.gate is not None:
            outcome = plane.gate.check(request, context)
            if outcome is not None:
                if outcome.deny is not None:
                    self._emit(self._out(request_id, Reply(outcome.deny, version)))
                    return
                if outcome.body is not None and outcome.body is not request.body:
                    request = Request(request.header, outcome.body)
                finish = outcome.finish
        call = _Call(request_id, request, context, finish)
        route = plane.route(key)
        role = plane.controller
        if route is Route.CONTROLLER and role is not None:
            if key == K.INCREMENTAL_ALTER_CONFIGS and any(_is_logger(r) for r in request.body.resources):
                self._alter_loggers(call, self._submit_part(role, call))
            else:
                self._controller_write(role, call)
        elif route is Route.FROM_IMAGE and plane.voter is not None and key in VOTER_ANSWERED:
            self._answer(call, voter_answer(plane.voter, request, context))
        elif route is Route.FROM_IMAGE and role is not None:
            self._from_committed_image(plane, role, call)
        elif route is Route.FROM_IMAGE and plane.broker is not None:
            self._answer(call, answer_from_image(plane.broker, request, context))
        elif route is Route.RAFT:
            self._raft_api(call)
        elif route is Route.READ and key == K.LIST_OFFSETS:
            self._read(call, now)   # answered with what the read found
        elif route is Route.READ:
            if replica_of(request) >= 0:   # a replica's Fetch is Raft's (an observer answers NOT_LEADER_OR_FOLLOWER)
                self._raft_api(call)
            else:
                self._read(call, now + max(0, request.body.max_wait_ms))
        elif route is Route.ENVELOPE and role is not None:
            self._envelope(now, plane, role, call)
        elif route is Route.REFUSE_PRODUCE:
            self._answer(call, refuse_produce(request.body, version))
        elif route is Route.RELAY and plane.broker is not None:
            self._broker_relay(plane.broker, call)
        elif route is Route.RELAY and plane.voter is not None:
            self._relay(call, RelayKind.GROUP)   # to the coordinating voter, this one's group role or another
        elif route is Route.FORWARD:
            if key in TOKEN_WRITES and not requests_allowed(context, forwarded=False):
                self._answer(call, not_allowed(request))
            elif key == K.INCREMENTAL_ALTER_CONFIGS and any(_is_logger(r) for r in request.body.resources):
                self._alter_loggers(call, self._forward_part(call))
            else:
                self._relay(call, RelayKind.FORWARD)
        else:   # an API with no route (``check`` keeps a server from advertising one)
            raise RefusedRequest(f"API {key} has no route {plane.where}")

    def relayed(self, request_id: int, reply: Reply | None) -> None:
        """The shell's answer to the ``Relay`` of ``request_id`` (None: nothing to send)."""
        call = self._relayed.pop(request_id, None)
        if call is not None and call.then is not None:
            call.then(reply)
        elif call is not None:
            self._answer(call, reply if reply is not None or call.fallback is None else call.fallback())

    def relay_failed(self, request_id: int) -> None:
        """The shell could not answer the ``Relay`` or ``Read`` of ``request_id`` (it failed the request
        itself, or the connection is gone)."""
        self._relayed.pop(request_id, None)
        self._reading.pop(request_id, None)
        self._wraps.pop(request_id, None)

    # -- Raft's APIs (core/raft_apis.py) ---------------------------------------------------------------
    def _raft_api(self, call: _Call) -> None:
        """A Raft request for the replica's Raft core, answered through ``_respond`` whenever Raft answers
        (DescribeQuorum the leader's: relayed where it is not)."""
        raft = self._raft
        asked = raft.ask(call.request_id, call.request, lambda reply: self._respond(call, reply))
        if asked is Asked.LEADER:
            call.fallback = lambda: raft.own_view(call.request)
            self._relay(call, RelayKind.DESCRIBE_QUORUM)
        elif asked is not Asked.RAFT:   # not the quorum's partition: refused at once
            self._answer(call, asked)

    # -- consumer Fetch: Read, Park --------------------------------------------------------------------
    def read_done(self, now: int, request_id: int, body: Any, size: int) -> None:
        """What the shell's ``Read`` found (``size`` record bytes): the answer once it holds MinBytes, carries
        an error or the wait is over; else ``Park`` (read again at once if the mark moved meanwhile)."""
        reading = self._reading.get(request_id)
        if reading is None:
            return
        request = reading.call.request
        if (request.api_key != K.FETCH or size >= max(1, request.body.min_bytes) or now >= reading.deadline
                or any(p.error_code for t in body.responses for p in t.partitions)):
            del self._reading[request_id]
            self._answer(reading.call, Reply(body, request.api_version))
        elif self._mark() != reading.mark:
            self._read_again(reading)
        else:
            reading.parked = True
            self._emit(Park(request_id, reading.deadline))

    def wake(self, now: int) -> None:
        """After an event: parked reads whose mark moved, or whose wait is over, are read again."""
        if not self._reading:
            return
        mark = self._mark()
        for reading in list(self._reading.values()):
            if reading.parked and (reading.mark != mark or now >= reading.deadline):
                self._read_again(reading)

    def next_deadline(self) -> int | None:
        """When the first parked read's wait is over."""
        due = [r.deadline for r in self._reading.values() if r.parked]
        return min(due) if due else None

    # -- handlers ---------------------------------------------------------------------------------
    def _controller_write(self, role: ControllerRole, call: _Call) -> None:
        """A controller API for the controller role; a client's admin write on an inactive voter goes on to
        the active controller."""
        request, ctx = call.request, call.context
        key, version = request.api_key, request.api_version
        forwarded = bool(getattr(ctx, "forwarded", False))
        body = request.body
        if key in TOKEN_WRITES:
            if not requests_allowed(ctx, forwarded=forwarded):
                self._answer(call, not_allowed(request))
                return
            body = TokenRequest(body, ctx.principal)
        if key in FORWARDED_APIS and not forwarded and not role.controller.active:
            self._relay(call, RelayKind.FORWARD)
            return
        role.submit(body, version, lambda resp: self._answer(call, Reply(resp, version)), origin_of(request, ctx))

    def _alter_loggers(self, call: _Call, others: Part) -> None:
        """An IncrementalAlterConfigs naming BROKER_LOGGER resources: those change this process's log levels (the
        shell does, ``Relay`` LOGGERS; they never reach the metadata log, as in Kafka, whose nodes handle them
        before forwarding the rest), the other resources go first to ``others`` (the controller role, or from a
        broker to the active controller); the answer gives each resource's result in the request's order, as
        Kafka reassembles it."""
        request, ctx = call.request, call.context
        body = request.body
        loggers = Request(request.header, replace(body, resources=[r for r in body.resources if _is_logger(r)]))
        rest = replace(body, resources=[r for r in body.resources if not _is_logger(r)])

        def then(answered: Any) -> None:
            if answered is None:   # the forwarded part brought no answer: neither does the request
                self._answer(call, None)
                return
            self._relay(_Call(call.request_id, loggers, ctx, call.finish), RelayKind.LOGGERS,
                        lambda logged: _in_request_order(body, answered, logged))

        if rest.resources:
            others(rest, then)
        else:
            then(IncrementalAlterConfigsResponse(responses=[]))

    def _submit_part(self, role: ControllerRole, call: _Call) -> Part:
        """Part of ``call``'s request for the controller role."""
        request = call.request
        return lambda body, then: role.submit(body, request.api_version, then, origin_of(request, call.context))

    def _forward_part(self, call: _Call) -> Part:
        """Part of ``call``'s request relayed to the active controller (``Relay`` FORWARD)."""
        def forward(body: Any, then: Callable[[Any], None]) -> None:
            part = _Call(call.request_id, Request(call.request.header, body), call.context, None)
            part.then = lambda reply: then(None if reply is None else _decoded(reply, call.request.api_key))
            self._relay(part, RelayKind.FORWARD)
        return forward

    def _from_committed_image(self, plane: DoorPlane, role: ControllerRole, call: _Call) -> None:
        """DescribeConfigs / ListPartitionReassignments / DescribeClientQuotas / DescribeUserScramCredentials /
        DescribeDelegationToken, answered by any controller from its committed image."""
        request, ctx = call.request, call.context
        key, version, body = request.api_key, request.api_version, request.body
        ctl = role.controller
        image = ctl.committed_image
        if key == K.DESCRIBE_CONFIGS:
            resp = config_cmds.describe(image, body, version, ctl.config.static_broker_configs, plane.describe_logger)
        elif key == K.LIST_PARTITION_REASSIGNMENTS:
            resp = reassignment_cmds.describe(image, body)
        elif key == K.DESCRIBE_CLIENT_QUOTAS:
            resp = quota_cmds.describe(image, body, version)
        elif key == K.DESCRIBE_DELEGATION_TOKEN:
            if not requests_allowed(ctx, forwarded=bool(getattr(ctx, "forwarded", False))):
                self._answer(call, not_allowed(request))
                return
            resp = describe_tokens(image, ctl.config.token_secret_key, body, ctx.principal)
        else:
            resp = scram_cmds.describe(image, body)
        self._answer(call, Reply(resp, version))

    def _envelope(self, now: int, plane: DoorPlane, role: ControllerRole, call: _Call) -> None:
        """KIP-590 on the controller plane: the inner request goes through the door again as its client (the
        forwarded principal and address), and its answer, whenever it comes, is wrapped in the EnvelopeResponse."""
        request = call.request
        version = request.api_version
        unwrapped = unwrap(request.body, call.context, active=role.controller.active, served=plane.registry.versions)
        if isinstance(unwrapped, EnvelopeResponse):
            self._answer(call, Reply(unwrapped, version))
            return
        inner, inner_ctx = unwrapped
        rid = call.request_id
        self._wraps[rid] = wrapper(inner, version)
        try:
            self.handle(now, rid, inner, inner_ctx)
        except BaseException:
            self._wraps.pop(rid, None)
            raise

    def _broker_relay(self, reads: BrokerReads, call: _Call) -> None:
        """What a broker sends on to a voter: group requests to the coordinator (FindCoordinator it answers
        itself, and ListGroups it completes with its own share)."""
        request = call.request
        key = request.api_key
        if key == K.FIND_COORDINATOR:
            self._answer(call, coordinator_answer(reads, request, call.context))
        elif key == K.LIST_GROUPS:
            refused = list_groups_refused(reads, request)
            if refused is not None:
                self._answer(call, refused)
            else:
                self._relay(call, RelayKind.GROUP, own_share(reads, call.context.listener))
        else:
            self._relay(call, RelayKind.GROUP)

    def _read(self, call: _Call, deadline: int) -> None:
        reading = _Reading(call, deadline, self._mark())
        self._reading[call.request_id] = reading
        self._emit(Read(call.request_id, call.request, call.context))

    def _read_again(self, reading: _Reading) -> None:
        reading.parked = False
        reading.mark = self._mark()
        self._emit(Read(reading.call.request_id, reading.call.request, reading.call.context))

    # -- internals --------------------------------------------------------------------------------
    def _relay(self, call: _Call, kind: RelayKind, complete: Finish | None = None) -> None:
        """Hand ``call`` to the shell; ``complete`` (pure) completes the answer it hands back, before the
        authorization rule's ``finish``."""
        if complete is not None:
            finish = call.finish
            call.finish = complete if finish is None else (lambda body: finish(complete(body)))
        self._relayed[call.request_id] = call
        self._emit(Relay(call.request_id, kind, call.request, call.context))

    def _answer(self, call: _Call, reply: Reply | None) -> None:
        self._emit(self._respond(call, reply))

    def _respond(self, call: _Call, reply: Reply | None) -> Respond:
        if reply is not None and call.finish is not None:
            reply.body = call.finish(reply.body)
        return self._out(call.request_id, reply)

    def _out(self, request_id: int, reply: Reply | None) -> Respond:
        """The ``Respond`` of ``request_id``: an Envelope's inner answer goes out wrapped in its EnvelopeResponse."""
        wrap = self._wraps.pop(request_id, None)
        return Respond(request_id, reply if wrap is None else wrap(reply))


def _decoded(reply: Reply, api_key: int) -> Any:
    """A relayed answer's body as a message (the forwarding shell passes the controller's bytes on as they came)."""
    body = reply.body
    return response_class(api_key).decode(body.data, reply.version) if isinstance(body, RawBody) else body


def _in_request_order(body: Any, *parts: Any) -> Any:
    """The first of ``parts`` (IncrementalAlterConfigs answers to parts of ``body``) holding every part's
    results in the order ``body`` names the resources."""
    results: dict[tuple[int, str], list[Any]] = {}
    for part in parts:
        for r in part.responses:
            results.setdefault((r.resource_type, r.resource_name), []).append(r)
    ordered = []
    for res in body.resources:
        found = results.get((res.resource_type, res.resource_name))
        if found:
            ordered.append(found.pop(0))
    ordered += [r for left in results.values() for r in left]
    whole = parts[0]
    whole.responses = ordered
    return whole


def _is_logger(resource: Any) -> bool:
    return bool(resource.resource_type == BROKER_LOGGER)


def _unattached(out: Any) -> None:
    raise RuntimeError("ApiDoor used before its node core attached it")
