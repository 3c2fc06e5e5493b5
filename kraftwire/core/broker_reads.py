"""What a broker's plane answers from its own metadata image (the door's ``from image`` route on the broker
plane, ``core/api_door.py``): Metadata, DescribeCluster, DescribeTopicPartitions, and DescribeAcls /
DescribeConfigs / DescribeClientQuotas / DescribeUserScramCredentials / DescribeDelegationToken /
ListConfigResources. Pure: the image, this broker's view of itself and the process's log levels are
handed in (``BrokerReads``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kraftwire.broker.metadata_cache import (
    LocalView,
    describe_cluster_response,
    describe_topic_partitions_response,
    metadata_response,
)
from kraftwire.controller import acls as acl_cmds
from kraftwire.controller import configs as config_cmds
from kraftwire.controller import quotas as quota_cmds
from kraftwire.controller import scram as scram_cmds
from kraftwire.controller.delegation_tokens import describe_tokens
from kraftwire.controller.result import CommandError
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
