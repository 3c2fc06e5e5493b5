"""What a voter's controller plane answers from its own state (the door's ``from image`` route there, beside
the controller role's image reads): Metadata and DescribeCluster, listing the voters at their addresses on
the client's listener and ``__cluster_metadata`` led by the Raft leader, and FindCoordinator, naming the
voter that coordinates each group at its address on that listener, so clients stay on the listener they
came in on. Pure: the voter's replica view, its voters and who coordinates a group are handed in
(``VoterReads``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kraftwire.core.reads import BrokerInfo, PartitionView, metadata_response
from kraftwire.group.placement import Voter, find_coordinator
from kraftwire.metadata.image import ControllerRegistration, MetadataImage
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.framing import Request
from kraftwire.protocol.messages.describe_cluster_response import (
    DescribeClusterBroker,
    DescribeClusterResponse,
)
from kraftwire.protocol.requests import Reply, RequestContext

Address = tuple[str, int]
ANSWERED = frozenset({ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER, ApiKey.FIND_COORDINATOR})


class VoterView(PartitionView, Protocol):
    """The voter's replica as clients are told it: ``PartitionView`` and the active controller (-1 unless
    this node knows the current epoch's leader first-hand)."""

    @property
    def controller_id(self) -> int: ...


@dataclass(slots=True)
class VoterReads:
    """A voter's state its answers read: this node's advertised addresses by listener, the voters in force
    (id → controller-listener address), the committed image (the voters' ControllerRegistrations), the
    replica's view, and the voter coordinating a group (None: unknown now)."""

    node_id: int
    cluster_id: str
    advertised: Mapping[str, Address]
    voters: Callable[[], Mapping[int, Address]]
    image: Callable[[], MetadataImage]
    view: Callable[[], VoterView]
    coordinator: Callable[[str], Voter | None]


def listener_endpoint(reg: ControllerRegistration | None, listener: str | None) -> Address | None:
    """The registered address of a controller on ``listener`` (None when unknown)."""
    if reg is None or listener is None:
        return None
    for ep in reg.listeners:
        if ep.name == listener:
            return ep.host, ep.port
    return None


def voters_on(reads: VoterReads, listener: str | None) -> list[BrokerInfo]:
    """The voters at their addresses on ``listener`` (this node's advertised one, the others' from their
    ControllerRegistration), or at their controller-listener address when that listener is unknown."""
    own = None if listener is None else reads.advertised.get(listener)
    regs = reads.image().controllers
    out = []
    for i, (host, port) in reads.voters().items():
        addr = own if own and i == reads.node_id else listener_endpoint(regs.get(i), listener)
        out.append(BrokerInfo(i, *(addr or (host, port))))
    return out


def answer(reads: VoterReads, request: Request, ctx: RequestContext) -> Reply:
    """The voter's Metadata, DescribeCluster or FindCoordinator answer."""
    key, body, version = request.api_key, request.body, request.api_version
    brokers = voters_on(reads, ctx.listener)
    view = reads.view()
    resp: Any
    if key == ApiKey.METADATA:
        resp = metadata_response(body, version, view=view, brokers=brokers, voters=list(reads.voters()),
                                 cluster_id=reads.cluster_id, controller_id=view.controller_id)
    elif key == ApiKey.DESCRIBE_CLUSTER:
        resp = DescribeClusterResponse(cluster_id=reads.cluster_id, controller_id=view.controller_id,
                                       brokers=[DescribeClusterBroker(b.node_id, b.host, b.port, b.rack)
                                                for b in brokers])
        if version >= 1:
            resp.endpoint_type = getattr(body, "endpoint_type", 1)
    else:
        addrs = {b.node_id: (b.host, b.port) for b in brokers}

        def locate(group: str) -> Voter | None:
            owner = reads.coordinator(group)
            if owner is None or owner[0] not in addrs:
                return owner
            return owner[0], *addrs[owner[0]]

        resp = find_coordinator(version, body, locate)
    return Reply(resp, version)
