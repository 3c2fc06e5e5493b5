"""The API registry: which Kafka APIs each plane of a node serves and how (answered here, from the image,
forwarded to the active controller, relayed to a voter) or why not, the versions it advertises, and the
ApiVersions answers built from that table. Pure data and functions: the server's dispatcher and the
simulator both read it (``ApiRegistry.controller()`` / ``ApiRegistry.broker()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kraftwire.broker.envelope import FORWARDED_APIS
from kraftwire.group import GROUP_APIS
from kraftwire.protocol.api import LISTENERS, ApiKey, request_class
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_response import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from kraftwire.protocol.requests import RefusedRequest
from kraftwire.security.rules import RULES
from kraftwire.security.sasl import SASL_APIS

K = ApiKey
Versions = dict[int, tuple[int, int]]   # API key -> (min, max) version advertised

# API key -> (min, max) this node answers. Produce is listed (and refused per request) because
# librdkafka enables its modern Fetch versions only when Produce is advertised.
RAFT_APIS: Versions = {K.VOTE: (0, 2), K.BEGIN_QUORUM_EPOCH: (0, 1), K.END_QUORUM_EPOCH: (0, 1), K.DESCRIBE_QUORUM: (0, 2),
             K.FETCH_SNAPSHOT: (0, 1)}
CLIENT_APIS: Versions = {
    K.PRODUCE: (3, 13),   # advertised, always refused for __cluster_metadata
    K.FETCH: (4, 18),   # consumers and replicas (v18: the fetcher's high watermark)
    K.LIST_OFFSETS: (1, 10),
    K.METADATA: (0, 13),
    K.API_VERSIONS: (0, 4),
    K.DESCRIBE_CLUSTER: (0, 2),   # v2: fenced brokers on request
}

# Controller APIs answered by the active controller (NOT_CONTROLLER elsewhere).
CONTROLLER_APIS: Versions = {
    K.CREATE_TOPICS: (2, 7),
    K.DELETE_TOPICS: (1, 6),
    K.DESCRIBE_ACLS: (1, 3),
    K.CREATE_ACLS: (1, 3),
    K.DELETE_ACLS: (1, 3),
    K.DESCRIBE_CONFIGS: (1, 4),
    K.ALTER_CONFIGS: (0, 2),
    K.CREATE_PARTITIONS: (0, 3),
    K.ELECT_LEADERS: (0, 2),
    K.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    K.ALTER_PARTITION_REASSIGNMENTS: (0, 1),   # v1: AllowReplicationFactorChange
    K.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    K.DESCRIBE_CLIENT_QUOTAS: (0, 1),   # answered from the local image, as SCRAM's is
    K.ALTER_CLIENT_QUOTAS: (0, 1),
    K.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),   # answered from the local image, not only by the active one
    K.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    K.ALTER_PARTITION: (0, 3),
    K.UPDATE_FEATURES: (0, 2),   # v2: no per-feature results
    K.BROKER_REGISTRATION: (0, 4),
    K.BROKER_HEARTBEAT: (0, 1),
    K.UNREGISTER_BROKER: (0, 0),
    K.ALLOCATE_PRODUCER_IDS: (0, 0),
    K.CONTROLLER_REGISTRATION: (0, 0),
    K.ASSIGN_REPLICAS_TO_DIRS: (0, 0),   # KIP-858
    K.CREATE_DELEGATION_TOKEN: (1, 3),
    K.RENEW_DELEGATION_TOKEN: (1, 2),
    K.EXPIRE_DELEGATION_TOKEN: (1, 2),
    K.DESCRIBE_DELEGATION_TOKEN: (1, 3),   # answered from the local image, as SCRAM's is
}

# Controller APIs any controller answers from its committed image (not only the active one).
CONTROLLER_LOCAL_APIS = (K.DESCRIBE_CONFIGS, K.LIST_PARTITION_REASSIGNMENTS, K.DESCRIBE_CLIENT_QUOTAS, K.DESCRIBE_USER_SCRAM_CREDENTIALS,
                         K.DESCRIBE_DELEGATION_TOKEN)

# KIP-853 voter changes (a voter serves them; the Raft leader answers).
VOTER_CHANGE_APIS: Versions = {K.ADD_RAFT_VOTER: (0, 0), K.REMOVE_RAFT_VOTER: (0, 0), K.UPDATE_RAFT_VOTER: (0, 0)}

# Envelope (KIP-590): brokers forward admin writes to the active controller inside it.
ENVELOPE_APIS: Versions = {K.ENVELOPE: (0, 0)}

# Client APIs a broker serves from its own metadata image, and admin writes it forwards.
BROKER_LOCAL_APIS: Versions = {k: CONTROLLER_APIS[k] for k in (K.DESCRIBE_ACLS, K.DESCRIBE_CONFIGS, K.DESCRIBE_CLIENT_QUOTAS,
                                                     K.DESCRIBE_USER_SCRAM_CREDENTIALS, K.DESCRIBE_DELEGATION_TOKEN)}
# Served by brokers only, from their image: ListConfigResources (KIP-1142), DescribeTopicPartitions (KIP-966's
# view of ELRs, Kafka 3.8+).
BROKER_ONLY_APIS: Versions = {K.LIST_CONFIG_RESOURCES: (0, 1), K.DESCRIBE_TOPIC_PARTITIONS: (0, 0)}
BROKER_FORWARDED_APIS: Versions = {k: CONTROLLER_APIS[k] for k in sorted(FORWARDED_APIS)}


def controller_plane_apis() -> dict[int, tuple[int, int]]:
    """What a kraftwire voter's controller plane advertises (``VoterRole.apis``)."""
    return supported({**CONTROLLER_APIS, **GROUP_APIS, **ENVELOPE_APIS, **SASL_APIS, **VOTER_CHANGE_APIS})


def broker_plane_apis() -> dict[int, tuple[int, int]]:
    """What a kraftwire broker advertises (``BrokerRole.apis``): no Raft APIs but DescribeQuorum (relayed)."""
    return supported({**BROKER_FORWARDED_APIS, **BROKER_LOCAL_APIS, **GROUP_APIS, **BROKER_ONLY_APIS,
                      K.DESCRIBE_QUORUM: RAFT_APIS[K.DESCRIBE_QUORUM], **SASL_APIS}, raft=False)


def supported(extra: dict[int, tuple[int, int]] | None = None, *, raft: bool = True) -> dict[int, tuple[int, int]]:
    """The ApiVersions table: client APIs, raft APIs (voters only) and ``extra``."""
    table = dict(CLIENT_APIS)
    if raft:
        table.update(RAFT_APIS)
    table.update(extra or {})
    for key, (lo, hi) in table.items():
        cls = request_class(key)
        assert cls.MIN_VERSION <= lo <= hi <= cls.MAX_VERSION, (key, lo, hi)
    return dict(sorted(table.items()))


def api_versions_response(table: dict[int, tuple[int, int]], error: int = 0) -> ApiVersionsResponse:
    """The ApiVersions body; with UNSUPPORTED_VERSION only ApiVersions itself is listed, as Kafka does."""
    if error == Errors.UNSUPPORTED_VERSION:
        lo, hi = table[K.API_VERSIONS]
        return ApiVersionsResponse(error_code=error, api_keys=[ApiVersion(K.API_VERSIONS, lo, hi)])
    return ApiVersionsResponse(error_code=error,
                               api_keys=[ApiVersion(k, lo, hi) for k, (lo, hi) in table.items()])


def answer_api_versions(table: dict[int, tuple[int, int]], key: int, version: int, where: str) -> ApiVersionsResponse | None:
    """The common head of every node's dispatch: ApiVersions, and refusal of what is not served.

    Returns the ApiVersions answer to send (for ApiVersions; UNSUPPORTED_VERSION in the v0 layout when the
    client asked for a version we lack), None when the request is served and should be dispatched, and
    raises RefusedRequest (the connection is closed, as Kafka does) for other unserved APIs/versions.
    """
    lo_hi = table.get(key)
    if lo_hi is None or not lo_hi[0] <= version <= lo_hi[1]:
        if key == K.API_VERSIONS:
            return api_versions_response(table, int(Errors.UNSUPPORTED_VERSION))
        raise RefusedRequest(f"API {key} v{version} is not served {where}")
    if key == K.API_VERSIONS:
        return api_versions_response(table)
    return None


Features = tuple[dict[str, tuple[int, int]], dict[str, int], int]   # (supported, finalized, epoch)


def with_features(resp: ApiVersionsResponse, version: int, supported: dict[str, tuple[int, int]],
                  finalized: dict[str, int], epoch: int) -> ApiVersionsResponse:
    """ApiVersions v3+ carries the node's supported feature ranges and the cluster's finalized levels (what
    ``kafka-features.sh describe`` prints); ``epoch`` is the committed metadata offset they were read at.
    Before v4, ranges starting at 0 are left out, as Kafka does."""
    if version < 3 or resp.error_code:
        return resp
    resp.supported_features = [SupportedFeatureKey(n, lo, hi) for n, (lo, hi) in sorted(supported.items())
                               if version >= 4 or lo > 0]
    resp.finalized_features_epoch = max(epoch, 0)
    resp.finalized_features = [FinalizedFeatureKey(n, level, level) for n, level in sorted(finalized.items()) if level]
    return resp


# -- refusals: why a plane does not serve an API Kafka 4.1 advertises on it ---------------------------------------
_TXN = "transactions need partition data and a transaction coordinator; kraftwire brokers host neither"
_DATA = "kraftwire brokers host no partition data (only the metadata log)"
_SHARE = "share groups (KIP-932) are not built"
_STREAMS = "streams groups (KIP-1071) are not built"
_VOTERS = "voter changes go to a controller (`--bootstrap-controller`); kraftwire brokers do not forward them"

#: Why kraftwire's controller does not serve an API Kafka 4.1's controller advertises.
CONTROLLER_REFUSED: dict[int, str] = {
}

#: Why a kraftwire broker does not serve an API Kafka 4.1's broker advertises.
BROKER_REFUSED: dict[int, str] = {
    21: _DATA, 23: _DATA, 34: _DATA, 35: _DATA, 61: _DATA,
    22: _TXN, 24: _TXN, 25: _TXN, 26: _TXN, 27: _TXN, 28: _TXN, 65: _TXN, 66: _TXN,
    42: "classic group deletion is not built in kraftwire's group coordinator",
    47: "offset deletion is not built in kraftwire's group coordinator",
    64: "ask a controller (`kafka-cluster.sh unregister --bootstrap-controller`); kraftwire brokers do not "
        "forward it",
    68: "the consumer group protocol (KIP-848) is not built; classic groups only",
    69: "the consumer group protocol (KIP-848) is not built; classic groups only",
    71: "client telemetry (KIP-714) is not collected; subscriptions are stored and described (CLIENT_METRICS)",
    72: "client telemetry (KIP-714) is not collected; subscriptions are stored and described (CLIENT_METRICS)",
    76: _SHARE, 77: _SHARE, 78: _SHARE, 79: _SHARE, 83: _SHARE, 84: _SHARE, 85: _SHARE, 86: _SHARE, 87: _SHARE,
    90: _SHARE, 91: _SHARE, 92: _SHARE,
    88: _STREAMS, 89: _STREAMS,
    80: _VOTERS, 81: _VOTERS,
}


# -- the registry --------------------------------------------------------------------------------------------------
class Plane(StrEnum):
    """A listener's plane, as Kafka divides ControllerApis and KafkaApis (a schema's ``listeners`` words)."""

    CONTROLLER = "controller"
    BROKER = "broker"


class How(StrEnum):
    """What a plane does with an API."""

    SERVED = "served"                  # answered by this node (the controller role, Raft, the server)
    FROM_IMAGE = "from image"          # answered from this node's committed metadata image
    FORWARDED = "forwarded"            # wrapped in an Envelope to the active controller
    RELAYED = "relayed"                # sent on to a voter (group coordinator, DescribeQuorum's leader)
    LISTENER = "listener"              # answered by the listener itself (SASL, before any principal exists)
    REFUSED = "refused"                # not advertised: the connection is closed; ``reason`` says why
    NOT_ADVERTISED = "not advertised"  # Kafka does not advertise it on this plane either


@dataclass(frozen=True, slots=True)
class ApiEntry:
    """One API on one plane: how it is handled, the versions advertised, its authorization rule
    (``security.rules.RULES``; None on an API the plane does not serve) and, when refused, why."""

    key: int
    how: How
    versions: tuple[int, int] | None = None
    rule: Any = None
    reason: str = ""


_IMAGE_ANSWERED = frozenset({K.METADATA, K.DESCRIBE_CLUSTER})


class ApiRegistry:
    """Which APIs one plane serves and how. ``versions`` is the ApiVersions table; ``entry(key)`` answers for
    any key, served or not (the accessor the coverage table and tests enumerate with ``entries()``)."""

    def __init__(self, plane: Plane, versions: dict[int, tuple[int, int]], refused: dict[int, str]) -> None:
        self.plane = plane
        self.versions = versions
        self.refused = refused

    @classmethod
    def controller(cls) -> ApiRegistry:
        return cls(Plane.CONTROLLER, controller_plane_apis(), CONTROLLER_REFUSED)

    @classmethod
    def broker(cls) -> ApiRegistry:
        return cls(Plane.BROKER, broker_plane_apis(), BROKER_REFUSED)

    def how(self, key: int) -> How:
        if key not in self.versions:
            return How.REFUSED if key in self.refused else How.NOT_ADVERTISED
        if key in SASL_APIS:
            return How.LISTENER
        if self.plane is Plane.CONTROLLER:
            return How.FROM_IMAGE if key in CONTROLLER_LOCAL_APIS else How.SERVED
        if key in BROKER_FORWARDED_APIS:
            return How.FORWARDED
        if key in BROKER_LOCAL_APIS or key in BROKER_ONLY_APIS or key in _IMAGE_ANSWERED:
            return How.FROM_IMAGE
        if key == K.DESCRIBE_QUORUM or key in GROUP_APIS:
            return How.RELAYED
        return How.SERVED

    def entry(self, key: int) -> ApiEntry:
        how = self.how(key)
        served = key in self.versions
        return ApiEntry(key, how, self.versions.get(key), RULES.get(key) if served else None,
                        self.refused.get(key, ""))

    def entries(self) -> list[ApiEntry]:
        """Every API kraftwire has a layout for whose schema names this plane's listener, and every API this
        plane serves or refuses with a reason, in key order."""
        keys = {k for k, where in LISTENERS.items() if self.plane.value in where}
        return [self.entry(k) for k in sorted(keys | set(self.versions) | set(self.refused))]
