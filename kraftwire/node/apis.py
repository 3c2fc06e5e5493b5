"""Which Kafka APIs a kraftwire node serves, and the ApiVersions answers built from that table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kraftwire.net.server import RefusedRequest, Reply
from kraftwire.protocol.api import request_class
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.api_versions_response import (
    ApiVersion,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)

# API key -> (min, max) this node answers. Produce is listed (and refused per request) because
# librdkafka enables its modern Fetch versions only when Produce is advertised.
RAFT_APIS = {52: (0, 2), 53: (0, 1), 54: (0, 1), 55: (0, 2), 59: (0, 1)}
CLIENT_APIS = {
    0: (3, 13),   # Produce: advertised, always refused for __cluster_metadata
    1: (4, 18),   # Fetch: consumers and replicas (v18: the fetcher's high watermark)
    2: (1, 10),   # ListOffsets
    3: (0, 13),   # Metadata
    18: (0, 4),   # ApiVersions
    60: (0, 2),   # DescribeCluster (v2: fenced brokers on request)
}

# Controller APIs answered by the active controller (NOT_CONTROLLER elsewhere).
CONTROLLER_APIS = {
    19: (2, 7),   # CreateTopics
    20: (1, 6),   # DeleteTopics
    29: (1, 3),   # DescribeAcls
    30: (1, 3),   # CreateAcls
    31: (1, 3),   # DeleteAcls
    32: (1, 4),   # DescribeConfigs
    33: (0, 2),   # AlterConfigs
    37: (0, 3),   # CreatePartitions
    43: (0, 2),   # ElectLeaders
    44: (0, 1),   # IncrementalAlterConfigs
    45: (0, 1),   # AlterPartitionReassignments (v1: AllowReplicationFactorChange)
    46: (0, 0),   # ListPartitionReassignments
    48: (0, 1),   # DescribeClientQuotas (answered from the local image, as 50 is)
    49: (0, 1),   # AlterClientQuotas
    50: (0, 0),   # DescribeUserScramCredentials (answered from the local image, not only by the active one)
    51: (0, 0),   # AlterUserScramCredentials
    56: (0, 3),   # AlterPartition
    57: (0, 2),   # UpdateFeatures (v2: no per-feature results)
    62: (0, 4),   # BrokerRegistration
    63: (0, 1),   # BrokerHeartbeat
    64: (0, 0),   # UnregisterBroker
    67: (0, 0),   # AllocateProducerIds
    70: (0, 0),   # ControllerRegistration
    73: (0, 0),   # AssignReplicasToDirs (KIP-858)
}

# Controller APIs any controller answers from its committed image (not only the active one).
CONTROLLER_LOCAL_APIS = (32, 46, 48, 50)

# Envelope (KIP-590): brokers forward admin writes to the active controller inside it.
ENVELOPE_APIS = {58: (0, 0)}

# Client APIs a broker serves from its own metadata image, and admin writes it forwards.
# DescribeAcls, DescribeConfigs, DescribeClientQuotas, DescribeUserScramCredentials
BROKER_LOCAL_APIS = {k: CONTROLLER_APIS[k] for k in (29, 32, 48, 50)}
# Served by brokers only, from their image: ListConfigResources (KIP-1142), DescribeTopicPartitions (KIP-966's
# view of ELRs, Kafka 3.8+).
BROKER_ONLY_APIS = {74: (0, 1), 75: (0, 0)}
BROKER_FORWARDED_APIS = {k: CONTROLLER_APIS[k] for k in (19, 20, 30, 31, 33, 37, 43, 44, 45, 46, 49, 51, 57)}


def controller_plane_apis() -> dict[int, tuple[int, int]]:
    """What a kraftwire voter's controller plane advertises (``VoterRole.apis``)."""
    from kraftwire.group import GROUP_APIS
    from kraftwire.node.voter_changes import VOTER_CHANGE_APIS
    from kraftwire.security.sasl import SASL_APIS

    return supported({**CONTROLLER_APIS, **GROUP_APIS, **ENVELOPE_APIS, **SASL_APIS, **VOTER_CHANGE_APIS})


def broker_plane_apis() -> dict[int, tuple[int, int]]:
    """What a kraftwire broker advertises (``BrokerRole.apis``): no Raft APIs but DescribeQuorum (relayed)."""
    from kraftwire.group import GROUP_APIS
    from kraftwire.security.sasl import SASL_APIS

    return supported({**BROKER_FORWARDED_APIS, **BROKER_LOCAL_APIS, **GROUP_APIS, 55: RAFT_APIS[55],
                      **BROKER_ONLY_APIS, **SASL_APIS}, raft=False)


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
    """The ApiVersions body; with UNSUPPORTED_VERSION only key 18 is listed, as Kafka does."""
    if error == Errors.UNSUPPORTED_VERSION:
        lo, hi = table[18]
        return ApiVersionsResponse(error_code=error, api_keys=[ApiVersion(18, lo, hi)])
    return ApiVersionsResponse(error_code=error,
                               api_keys=[ApiVersion(k, lo, hi) for k, (lo, hi) in table.items()])


def answer_api_versions(table: dict[int, tuple[int, int]], key: int, version: int, where: str) -> ApiVersionsResponse | None:
    """The common head of every node's dispatch: ApiVersions, and refusal of what is not served.

    Returns the ApiVersions answer to send (for key 18; UNSUPPORTED_VERSION in the v0 layout when the
    client asked for a version we lack), None when the request is served and should be dispatched, and
    raises RefusedRequest (the connection is closed, as Kafka does) for other unserved APIs/versions.
    """
    lo_hi = table.get(key)
    if lo_hi is None or not lo_hi[0] <= version <= lo_hi[1]:
        if key == 18:
            return api_versions_response(table, int(Errors.UNSUPPORTED_VERSION))
        raise RefusedRequest(f"API {key} v{version} is not served {where}")
    if key == 18:
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
        missing = sorted(set(self.table) - set(self.handlers) - {18} - set(answered_elsewhere))
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
