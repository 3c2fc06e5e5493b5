"""Which Kafka APIs a kraftwire node serves, and the ApiVersions answers built from that table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kraftwire.broker.envelope import FORWARDED_APIS
from kraftwire.net.server import RefusedRequest, Reply
from kraftwire.protocol.api import ApiKey, request_class
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_response import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)

K = ApiKey

# API key -> (min, max) this node answers. Produce is listed (and refused per request) because
# librdkafka enables its modern Fetch versions only when Produce is advertised.
RAFT_APIS = {K.VOTE: (0, 2), K.BEGIN_QUORUM_EPOCH: (0, 1), K.END_QUORUM_EPOCH: (0, 1), K.DESCRIBE_QUORUM: (0, 2),
             K.FETCH_SNAPSHOT: (0, 1)}
CLIENT_APIS = {
    K.PRODUCE: (3, 13),   # advertised, always refused for __cluster_metadata
    K.FETCH: (4, 18),   # consumers and replicas (v18: the fetcher's high watermark)
    K.LIST_OFFSETS: (1, 10),
    K.METADATA: (0, 13),
    K.API_VERSIONS: (0, 4),
    K.DESCRIBE_CLUSTER: (0, 2),   # v2: fenced brokers on request
}

# Controller APIs answered by the active controller (NOT_CONTROLLER elsewhere).
CONTROLLER_APIS = {
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
VOTER_CHANGE_APIS = {K.ADD_RAFT_VOTER: (0, 0), K.REMOVE_RAFT_VOTER: (0, 0), K.UPDATE_RAFT_VOTER: (0, 0)}

# Envelope (KIP-590): brokers forward admin writes to the active controller inside it.
ENVELOPE_APIS = {K.ENVELOPE: (0, 0)}

# Client APIs a broker serves from its own metadata image, and admin writes it forwards.
BROKER_LOCAL_APIS = {k: CONTROLLER_APIS[k] for k in (K.DESCRIBE_ACLS, K.DESCRIBE_CONFIGS, K.DESCRIBE_CLIENT_QUOTAS,
                                                     K.DESCRIBE_USER_SCRAM_CREDENTIALS, K.DESCRIBE_DELEGATION_TOKEN)}
# Served by brokers only, from their image: ListConfigResources (KIP-1142), DescribeTopicPartitions (KIP-966's
# view of ELRs, Kafka 3.8+).
BROKER_ONLY_APIS = {K.LIST_CONFIG_RESOURCES: (0, 1), K.DESCRIBE_TOPIC_PARTITIONS: (0, 0)}
BROKER_FORWARDED_APIS = {k: CONTROLLER_APIS[k] for k in sorted(FORWARDED_APIS)}


def controller_plane_apis() -> dict[int, tuple[int, int]]:
    """What a kraftwire voter's controller plane advertises (``VoterRole.apis``)."""
    from kraftwire.group import GROUP_APIS
    from kraftwire.security.sasl import SASL_APIS

    return supported({**CONTROLLER_APIS, **GROUP_APIS, **ENVELOPE_APIS, **SASL_APIS, **VOTER_CHANGE_APIS})


def broker_plane_apis() -> dict[int, tuple[int, int]]:
    """What a kraftwire broker advertises (``BrokerRole.apis``): no Raft APIs but DescribeQuorum (relayed)."""
    from kraftwire.group import GROUP_APIS
    from kraftwire.security.sasl import SASL_APIS

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


Handler = Callable[[Any, Any], Awaitable[Reply | None]]   # (Request, RequestContext) -> Reply
FastHandler = Callable[[Any, Any], Reply | Awaitable[Reply]]   # see ``Dispatcher.on_fast``
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


class Dispatcher:
    """A node's one API key → handler table. ApiVersions is answered from ``table`` (the versions the
    node advertises), an API or version outside it is refused, and every advertised API must have a
    handler (``check``), so what a node says it serves and what it handles cannot drift apart."""

    def __init__(self, table: dict[int, tuple[int, int]], where: str,
                 features: Callable[[], Features] | None = None) -> None:
        self.table = table
        self.where = where
        self.features = features   # what ApiVersions v3+ reports: see ``with_features``
        self.handlers: dict[int, Handler] = {}
        self.fast: dict[int, FastHandler] = {}   # see ``fast_handler``

    def on(self, keys: int | Iterable[int], handler: Handler) -> None:
        for key in [keys] if isinstance(keys, int) else keys:
            if key in self.handlers:
                raise ValueError(f"API {key} has two handlers")
            self.handlers[key] = handler

    def on_fast(self, key: int, handler: FastHandler) -> None:
        """A synchronous form of ``key``'s handler for the listener's fast path: it returns the Reply when the
        answer is ready at once, else an awaitable of it; it must answer exactly as the async handler does."""
        if key not in self.handlers:
            raise ValueError(f"API {key} has no handler to speed up")
        self.fast[key] = handler

    def fast_handler(self, key: int, version: int) -> FastHandler | None:
        """The fast form of ``key``'s handler when the request would reach it (an advertised API and
        version, not ApiVersions), else None: the request then takes ``dispatch``."""
        handler = self.fast.get(key)
        if handler is None:
            return None
        lo_hi = self.table.get(key)
        return handler if lo_hi is not None and lo_hi[0] <= version <= lo_hi[1] else None

    def check(self, answered_elsewhere: Iterable[int] = ()) -> None:
        """Raise if an advertised API (other than ApiVersions and ``answered_elsewhere``) has no handler."""
        missing = sorted(set(self.table) - set(self.handlers) - {K.API_VERSIONS} - set(answered_elsewhere))
        if missing:
            raise ValueError(f"advertised APIs without a handler {self.where}: {missing}")

    async def dispatch(self, request: Any, ctx: Any) -> Reply | None:
        key, version = request.api_key, request.api_version
        versions = answer_api_versions(self.table, key, version, self.where)
        if versions is not None:
            if self.features is not None:
                with_features(versions, version, *self.features())
            return Reply(versions, version if versions.error_code == 0 else 0)
        handler = self.handlers.get(key)
        if handler is None:
            raise RefusedRequest(f"API {key} has no handler {self.where}")
        return await handler(request, ctx)
