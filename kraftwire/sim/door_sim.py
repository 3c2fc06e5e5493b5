"""The controller simulation's requests through the one door (``NodeCore.handle_api``), with an authorizer.

Every voter's node core gets the production ``ApiDoor`` with a controller plane whose authorization
gate (``security/gate.RequestGate`` over an ``AclAuthorizer``) reads the ACLs of the controller's
committed image. The scripted brokers, the admin and the other clients send real ``Request`` objects
(header + body, at the version a kraftwire node advertises; with ``--wire`` the body crossed the wire
first) with a ``RequestContext`` naming their principal. Brokers and the admin clients are super users;
``alice`` is not: an ACL admin grants and denies her topic creation step by step (``CreateAcls``) while
she keeps creating topics. A second ACL admin (``acl-admin-2``) keeps creating ACLs for ``User:bob`` at
voters drawn anew, some of them again: forwarded writes whose answers may be lost (``forward_sim``).

Invariant: no write is authorized that the ACLs in the image at that point deny. Whenever a controller
writes records for one of alice's CreateTopics (the door's ``Audit`` output names her), each topic she
asked for must be allowed by the ACLs of that controller's committed image (the one the gate read),
evaluated here by a small reference model of Kafka's rules, not by the authorizer under test.

Deliberate bugs (mutation tests, ``--bugs``): ``gate_ignores_deny`` (the authorizer never sees DENY
ACLs); ``DOOR_BUGS`` also names ``forward_sim``'s and ``metadata_sim``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraftwire.core import ApiDoor, DoorPlane
from kraftwire.core.api_registry import ApiRegistry
from kraftwire.core.controller_role import ControllerRole
from kraftwire.core.outputs import Audit
from kraftwire.metadata.features import SUPPORTED_FEATURES
from kraftwire.metadata.image import AclEntry, MetadataImage
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request, RequestHeader
from kraftwire.protocol.messages import create_acls_request as caq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.requests import RequestContext
from kraftwire.security.authorizer import ALL, ALLOW, CREATE, DENY, LITERAL, PREFIXED, TOPIC, AclAuthorizer
from kraftwire.security.gate import RequestGate
from kraftwire.sim.invariants import Violation

LISTENER = "CONTROLLER"
BROKER_PRINCIPAL = "User:broker"
ADMIN_PRINCIPAL = "User:admin"
ALICE_PRINCIPAL = "User:alice"
BOB_PRINCIPAL = "User:bob"
SUPER_USERS = (BROKER_PRINCIPAL, ADMIN_PRINCIPAL)
ALICE, ACL_ADMIN, ACL_EXTRA = "alice", "acl-admin", "acl-admin-2"
DOOR_BUGS = frozenset({"gate_ignores_deny", "envelope_loses_principal", "create_acls_rewrites_existing",
                       "metadata_stale_image", "reads_ignore_fencing", "reads_ignore_configs"})

# What the ACL admin writes, one CreateAcls at a time: (name, pattern, principal, permission).
ACL_SCRIPT = (
    ("a-", PREFIXED, ALICE_PRINCIPAL, ALLOW),
    ("a-d", PREFIXED, ALICE_PRINCIPAL, DENY),
    ("b-1", LITERAL, ALICE_PRINCIPAL, ALLOW),
    ("a-1", LITERAL, "User:*", DENY),
    ("b-", PREFIXED, "User:*", ALLOW),
    ("b-x", PREFIXED, ALICE_PRINCIPAL, DENY),
)
ALICE_PREFIXES = ("a-", "a-d", "b-", "b-x", "c-")


def principal_of(agent: Any) -> str:
    """The principal an agent's requests carry: brokers (int ids) and the admin clients are super users."""
    if isinstance(agent, int):
        return BROKER_PRINCIPAL
    return ALICE_PRINCIPAL if agent == ALICE else ADMIN_PRINCIPAL


def request_of(body: Any, version: int, correlation_id: int, client_id: str) -> Request:
    return Request(RequestHeader(body.API_KEY, version, correlation_id, client_id), body)


def context_of(agent: Any) -> RequestContext:
    host = f"10.0.0.{agent}" if isinstance(agent, int) else "10.0.1.1"
    return RequestContext(LISTENER, "PLAINTEXT", host, 40000, principal_of(agent))


def controller_door(role: ControllerRole, bugs: frozenset[str]) -> ApiDoor:
    """The production door of one voter: its controller plane, authorized by its committed image's ACLs."""
    image: Callable[[], MetadataImage] = lambda: role.controller.committed_image   # noqa: E731
    acls: Callable[[], dict[Any, AclEntry]] = lambda: image().acls                # noqa: E731
    if "gate_ignores_deny" in bugs:
        acls = _without_denies(acls)
    gate = RequestGate(AclAuthorizer(acls, super_users=SUPER_USERS), image)
    plane = DoorPlane(ApiRegistry.controller(), "on this simulated controller",
                      lambda: (SUPPORTED_FEATURES, image().features, role.controller.committed_offset),
                      gate=gate, controller=role)
    return ApiDoor({LISTENER: plane})


def _without_denies(acls: Callable[[], dict[Any, AclEntry]]) -> Callable[[], dict[Any, AclEntry]]:
    cache: list[Any] = [None, {}]

    def allowed_only() -> dict[Any, AclEntry]:
        current = acls()
        if cache[0] is not current:
            cache[0], cache[1] = current, {k: e for k, e in current.items() if e.permission_type != DENY}
        return cache[1]
    return allowed_only


def may_create(image: MetadataImage, principal: str, topic: str) -> bool:
    """Reference model of Kafka's rule for TOPIC CREATE by a non-super user (no CLUSTER ACLs in this
    simulation): an applicable DENY wins, else an applicable ALLOW grants, else denied."""
    verdicts = set()
    for e in image.acls.values():
        if e.resource_type != TOPIC or e.operation not in (CREATE, ALL) or e.principal not in (principal, "User:*"):
            continue
        if e.host != "*":
            continue
        name_ok = (e.resource_name == topic or e.resource_name == "*") if e.pattern_type == LITERAL else \
            (e.pattern_type == PREFIXED and topic.startswith(e.resource_name))
        if name_ok:
            verdicts.add(e.permission_type)
    return DENY not in verdicts and ALLOW in verdicts


def check_authorized_writes(node_id: int, image: MetadataImage, request: Request, outputs: list[Any]) -> None:
    """After the door handled ``request`` on node ``node_id``: a write it made for alice (an ``Audit`` naming
    her) must be one the ACLs of ``image`` (what the gate read) allow."""
    for out in outputs:
        if type(out) is not Audit or out.entry.principal != ALICE_PRINCIPAL:
            continue
        if request.api_key != ApiKey.CREATE_TOPICS:
            raise Violation(f"node {node_id}: alice wrote with API {request.api_key}, which she never sends")
        denied = [t.name for t in request.body.topics if not may_create(image, ALICE_PRINCIPAL, t.name)]
        if denied:
            raise Violation(f"node {node_id}: CreateTopics {denied} by {ALICE_PRINCIPAL} wrote records "
                            f"(offsets {out.entry.first_offset}..{out.entry.last_offset}) though the ACLs of "
                            "its committed image deny it")


class AclWorkload:
    """The ACL admin (``CreateAcls``, one script step at a time, retried until answered) and alice
    (``CreateTopics`` of fresh names under the prefixes the script grants and denies)."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.step = 0
        self.admin_target = 0
        self.alice_target = 0
        self.admin_inflight: int | None = None
        self.alice_inflight: int | None = None
        self.alice_next = 0
        self.created = 0       # alice's topics acknowledged
        self.refused = 0       # alice's topics refused TOPIC_AUTHORIZATION_FAILED
        self.acls_acked = 0
        self.extra_next = 0    # the ACL admin's ACLs for bob after the script
        self.extra_acked = 0
        self.extra_inflight: int | None = None

    def start(self) -> None:
        sim = self.sim
        self.admin_target = self.alice_target = sim.rng.choice(sim.voter_ids)
        sim.wake_agent(sim.rng.randint(100, 400), ACL_ADMIN)
        sim.wake_agent(sim.rng.randint(100, 400), ALICE)
        sim.wake_agent(sim.rng.randint(100, 400), ACL_EXTRA)

    def wake(self, key: str) -> None:
        sim = self.sim
        if key == ACL_EXTRA:
            self._extra_acl()
            return
        if key == ACL_ADMIN:
            if self.step >= len(ACL_SCRIPT):
                return
            sim.wake_agent(sim.now + sim.rng.randint(200, 700), ACL_ADMIN)
            if self.admin_inflight is None:
                name, pattern, principal, permission = ACL_SCRIPT[self.step]
                acl = caq.AclCreation(resource_type=TOPIC, resource_name=name, resource_pattern_type=pattern,
                                      principal=principal, host="*", operation=CREATE, permission_type=permission)
                self.admin_inflight = sim.send_agent(ACL_ADMIN, self.admin_target,
                                                     caq.CreateAclsRequest(creations=[acl]))
            return
        sim.wake_agent(sim.now + sim.rng.randint(40, 150), ALICE)
        if self.alice_inflight is None and not sim.healed:
            prefix = sim.rng.choice(ALICE_PREFIXES)
            self.alice_next += 1
            name = f"{prefix}{self.alice_next if sim.rng.random() < 0.8 else 1}"
            topic = ctq.CreatableTopic(name=name, num_partitions=1, replication_factor=1)
            self.alice_inflight = sim.send_agent(ALICE, self.alice_target,
                                                 ctq.CreateTopicsRequest(topics=[topic], timeout_ms=sim.ccfg.agent_request_timeout_ms))

    def _extra_acl(self) -> None:
        """The second ACL admin, until the heal: ACLs for another principal (none of alice's business), each
        asked of a voter drawn anew (an admin client asks any node it knows), so most are forwarded; some name
        an ACL written before, which the controller must not write again."""
        sim = self.sim
        if sim.healed:
            return
        sim.wake_agent(sim.now + sim.rng.randint(60, 200), ACL_EXTRA)
        if self.extra_inflight is not None:
            return
        self.extra_next += 1
        name = f"n-{self.extra_next if sim.rng.random() < 0.7 else sim.rng.randint(1, self.extra_next)}"
        acl = caq.AclCreation(resource_type=TOPIC, resource_name=name, resource_pattern_type=LITERAL,
                              principal=BOB_PRINCIPAL, host="*", operation=CREATE, permission_type=ALLOW)
        self.extra_inflight = sim.send_agent(ACL_EXTRA, sim.rng.choice(sim.voter_ids),
                                             caq.CreateAclsRequest(creations=[acl]))

    def on_response(self, key: str, seq: int, response: Any) -> None:
        sim = self.sim
        if key == ACL_EXTRA:
            if seq == self.extra_inflight:
                self.extra_inflight = None
                code = None if response is None else response.results[0].error_code
                if code == 0:
                    self.extra_acked += 1
                elif code not in (None, int(Errors.NOT_CONTROLLER), int(Errors.REQUEST_TIMED_OUT)):
                    raise Violation(f"bob's CreateAcls: unexpected error {Errors(code).name}")
            return
        if key == ACL_ADMIN:
            if seq != self.admin_inflight:
                return
            self.admin_inflight = None
            code = None if response is None else response.results[0].error_code
            if code == 0:
                self.step += 1
                self.acls_acked += 1
            elif code is None or code == int(Errors.NOT_CONTROLLER):
                self.admin_target = sim.retarget(self.admin_target)
            else:
                raise Violation(f"CreateAcls step {self.step}: unexpected error {Errors(code).name}")
            return
        if seq != self.alice_inflight:
            return
        self.alice_inflight = None
        code = None if response is None else response.topics[0].error_code
        if code is None or code == int(Errors.NOT_CONTROLLER):
            self.alice_target = sim.retarget(self.alice_target)
        elif code == 0:
            self.created += 1
        elif code == int(Errors.TOPIC_AUTHORIZATION_FAILED):
            self.refused += 1
        elif code not in (int(Errors.TOPIC_ALREADY_EXISTS), int(Errors.INVALID_REPLICATION_FACTOR)):
            raise Violation(f"alice's CreateTopics: unexpected error {Errors(code).name}")

    def check_end(self) -> None:
        if self.step < len(ACL_SCRIPT):
            raise Violation(f"liveness: the ACL admin's CreateAcls stopped at step {self.step} of {len(ACL_SCRIPT)}")
