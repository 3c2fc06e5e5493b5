"""What a broker's plane answers from its own metadata image (the door's ``from image`` route on the broker
plane, ``core/api_door.py``): Metadata, DescribeCluster, DescribeTopicPartitions, and DescribeAcls /
DescribeConfigs / DescribeClientQuotas / DescribeUserScramCredentials / DescribeDelegationToken /
ListConfigResources; and the group answers a broker gives itself: FindCoordinator (itself, for every
group: it relays them to the owning voter) and its share of ListGroups. Pure: the image, this broker's
view of itself and the process's log levels are handed in (``BrokerReads``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kraftwire.broker.metadata_cache import (
    LocalView,
    describe_cluster_response,
    describe_topic_partitions_response,
    live_brokers,
    metadata_response,
)
from kraftwire.controller import acls as acl_cmds
from kraftwire.controller import configs as config_cmds
from kraftwire.controller import quotas as quota_cmds
from kraftwire.controller import scram as scram_cmds
from kraftwire.controller.delegation_tokens import describe_tokens
from kraftwire.controller.result import CommandError
from kraftwire.group.placement import find_coordinator, hash_pick
from kraftwire.group.responses import error_response as group_error_response
from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.requests import Reply, RequestContext
from kraftwire.security.token_requests import not_allowed, requests_allowed

K = ApiKey


@dataclass(slots=True)
class BrokerReads:
    """A broker's state its image answers read: the replayed image, this broker as clients see it on a
    listener (``local_view``), whether it serves (unfenced, caught up), the delegation-token secret and
    the process's BROKER_LOGGER answer."""

    node_id: int
    cluster_id: str
    image: Callable[[], MetadataImage]
    local_view: Callable[[str], LocalView]
    serving: Callable[[], bool]
    token_secret: str | None = None
    describe_logger: Callable[[str, int], Any] | None = None


def answer_from_image(reads: BrokerReads, request: Request, ctx: RequestContext) -> Reply:
    """The broker's answer to an API it serves from its image (a retriable error for the Describe* APIs while
    it is fenced or catching up; Metadata then lists only itself, as ``metadata_response`` says)."""
    key, body, version = request.api_key, request.body, request.api_version
    image = reads.image()
    if key == K.METADATA:
        return Reply(metadata_response(body, version, image=image, listener=ctx.listener,
                                       local=reads.local_view(ctx.listener), cluster_id=reads.cluster_id), version)
    if key == K.DESCRIBE_CLUSTER:
        return Reply(describe_cluster_response(body, version, image=image, listener=ctx.listener,
                                               local=reads.local_view(ctx.listener), cluster_id=reads.cluster_id),
                     version)
    if key == K.DESCRIBE_TOPIC_PARTITIONS:
        return Reply(describe_topic_partitions_response(body, image=image, listener=ctx.listener,
                                                        local=reads.local_view(ctx.listener)), version)
    if not reads.serving():
        return Reply(body.error_response(version, Errors.REQUEST_TIMED_OUT,
                                         f"broker {reads.node_id} is fenced or catching up; retry"), version)
    try:
        if key == K.DESCRIBE_ACLS:
            resp = acl_cmds.describe(image, body)
        elif key == K.DESCRIBE_CONFIGS:
            resp = config_cmds.describe(image, body, version, {}, reads.describe_logger)
        elif key == K.DESCRIBE_CLIENT_QUOTAS:
            resp = quota_cmds.describe(image, body, version)
        elif key == K.LIST_CONFIG_RESOURCES:
            resp = config_cmds.list_config_resources(image, body, version)
        elif key == K.DESCRIBE_DELEGATION_TOKEN:
            if not requests_allowed(ctx, forwarded=False):
                return not_allowed(request)
            resp = describe_tokens(image, reads.token_secret, body, ctx.principal)
        else:
            resp = scram_cmds.describe(image, body)
    except CommandError as e:
        resp = body.error_response(version, e.code, e.message)
    return Reply(resp, version)


def coordinator_answer(reads: BrokerReads, request: Request, ctx: RequestContext) -> Reply:
    """FindCoordinator on a broker: this broker coordinates every group for its clients (it relays their
    requests to the owning voter); none while it is not serving, so that clients look for another broker."""
    def locate(_group: str) -> tuple[int, str, int] | None:
        if not reads.serving():
            return None
        local = reads.local_view(ctx.listener)
        return reads.node_id, local.host, local.port

    version = request.api_version
    return Reply(find_coordinator(version, request.body, locate), version)


def list_groups_refused(reads: BrokerReads, request: Request) -> Reply | None:
    """ListGroups' answer while the broker is not serving (None: it serves, ask the voters)."""
    if reads.serving():
        return None
    version = request.api_version
    return Reply(group_error_response(K.LIST_GROUPS, version, request.body), version)


def own_share(reads: BrokerReads, listener: str) -> Callable[[Any], Any]:
    """Completes a ListGroups answer gathered from every voter: this broker lists the groups whose hash picks
    it among the brokers its Metadata lists on ``listener``; admin tools ask every listed broker, so each
    group is listed once."""
    def complete(resp: Any) -> Any:
        ids = [b[0] for b in live_brokers(reads.image(), listener, reads.local_view(listener))]
        resp.groups = [g for g in resp.groups if ids and hash_pick(g.group_id, ids) == reads.node_id]
        return resp

    return complete
