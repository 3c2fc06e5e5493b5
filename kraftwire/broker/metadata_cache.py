"""Metadata and DescribeCluster answers from a broker's metadata image (pure request → response).

What clients see, as Kafka brokers show it:

* brokers: the registered, unfenced brokers, each with its endpoint for the listener the request
  arrived on (brokers without that listener are left out), plus the answering broker itself so
  that ``__cluster_metadata`` — which every broker serves from its own replica — always has a
  reachable leader;
* controller id: in KRaft clients never talk to controllers, so like Kafka the "controller" given
  to clients is a live broker (this one when it is serving), which forwards admin writes;
* topics from the image with ids, partitions, leaders, leader epochs, replicas and ISR.

A broker that is not serving (fenced, catching up, lease lost) answers the topics that need fresh
metadata with the retriable LEADER_NOT_AVAILABLE, and DescribeCluster with REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from kraftwire.metadata.image import NO_LEADER, BrokerRegistration, MetadataImage, Topic
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import describe_topic_partitions_response as dtpr
from kraftwire.protocol.messages.describe_cluster_response import (
    DescribeClusterBroker,
    DescribeClusterResponse,
)
from kraftwire.protocol.messages.metadata_response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
ZERO_UUID = uuid.UUID(int=0)
BROKER_ENDPOINTS, CONTROLLER_ENDPOINTS = 1, 2


@dataclass(frozen=True, slots=True)
class LocalView:
    """What the answering broker knows about itself and its ``__cluster_metadata`` replica."""

    node_id: int
    host: str                 # its own advertised address on the request's listener
    port: int
    rack: str | None
    serving: bool             # unfenced and holding its lease
    raft_leader_known: bool
    raft_epoch: int
    voters: tuple[int, ...]


def endpoint(b: BrokerRegistration, listener: str) -> tuple[str, int] | None:
    for e in b.listeners:
        if e.name == listener:
            return e.host, e.port
    return None


def live_brokers(image: MetadataImage, listener: str, local: LocalView, *, fenced: bool = False
                 ) -> list[tuple[int, str, int, str | None]]:
    """(id, host, port, rack) of unfenced brokers reachable on ``listener``, plus the local broker; ``fenced``
    lists fenced brokers too."""
    out: dict[int, tuple[int, str, int, str | None]] = {}
    for b in image.brokers.values():
        if b.fenced and not fenced:
            continue
        ep = endpoint(b, listener)
        if ep is not None:
            out[b.id] = (b.id, ep[0], ep[1], b.rack)
    out.setdefault(local.node_id, (local.node_id, local.host, local.port, local.rack))
    return [out[k] for k in sorted(out)]


def client_controller_id(image: MetadataImage, local: LocalView) -> int:
    """The node clients should send admin requests to: this broker if serving, else a live one."""
    if local.serving:
        return local.node_id
    live = sorted(b.id for b in image.brokers.values() if not b.fenced)
    return live[0] if live else -1


def _partition_entries(topic: Topic, image: MetadataImage, listener: str, version: int
                       ) -> list[MetadataResponsePartition]:
    out = []
    for pid in sorted(topic.partitions):
        p = topic.partitions[pid]
        error = Errors.NONE
        leader = p.leader
        if leader == NO_LEADER:
            error = Errors.LEADER_NOT_AVAILABLE
        else:
            lb = image.brokers.get(leader)
            if lb is None or endpoint(lb, listener) is None:
                error = Errors.LISTENER_NOT_FOUND if version >= 6 else Errors.LEADER_NOT_AVAILABLE
        out.append(MetadataResponsePartition(
            error_code=int(error), partition_index=pid, leader_id=leader, leader_epoch=p.leader_epoch,
            replica_nodes=list(p.replicas), isr_nodes=list(p.isr), offline_replicas=[]))
    return out


def _metadata_topic(local: LocalView) -> MetadataResponseTopic:
    leader = local.node_id if local.raft_leader_known else -1
    replicas = sorted(set(local.voters) | {local.node_id})
    part = MetadataResponsePartition(
        error_code=0 if leader >= 0 else int(Errors.LEADER_NOT_AVAILABLE), partition_index=0,
        leader_id=leader, leader_epoch=local.raft_epoch, replica_nodes=replicas, isr_nodes=replicas)
    return MetadataResponseTopic(error_code=0, name=METADATA_TOPIC, topic_id=METADATA_TOPIC_ID,
                                 is_internal=True, partitions=[part])


def _topic_entry(topic: Topic, image: MetadataImage, listener: str, version: int, serving: bool
                 ) -> MetadataResponseTopic:
    if not serving:
        return MetadataResponseTopic(error_code=int(Errors.LEADER_NOT_AVAILABLE), name=topic.name,
                                     topic_id=topic.id, is_internal=topic.name in INTERNAL_TOPICS)
    return MetadataResponseTopic(error_code=0, name=topic.name, topic_id=topic.id,
                                 is_internal=topic.name in INTERNAL_TOPICS,
                                 partitions=_partition_entries(topic, image, listener, version))


def metadata_response(request: Any, version: int, *, image: MetadataImage, listener: str, local: LocalView,
                      cluster_id: str) -> MetadataResponse:
    """The Metadata answer: all topics for a null list (or an empty one in v0), else those asked for."""
    wanted = request.topics
    topics: list[MetadataResponseTopic] = []
    if wanted is None or (version == 0 and not wanted):
        topics.append(_metadata_topic(local))
        for t in sorted(image.topics.values(), key=lambda t: t.name):
            topics.append(_topic_entry(t, image, listener, version, local.serving))
    else:
        for w in wanted:
            name = w.name
            tid = getattr(w, "topic_id", None) or ZERO_UUID
            if name == METADATA_TOPIC or (name is None and tid == METADATA_TOPIC_ID):
                topics.append(_metadata_topic(local))
                continue
            topic = image.topic_by_name(name) if name is not None else image.topics.get(tid)
            if topic is None:
                code = Errors.UNKNOWN_TOPIC_ID if name is None else Errors.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(MetadataResponseTopic(error_code=int(code), name=name, topic_id=tid))
            else:
                topics.append(_topic_entry(topic, image, listener, version, local.serving))
    return MetadataResponse(
        brokers=[MetadataResponseBroker(i, h, p, r) for i, h, p, r in live_brokers(image, listener, local)],
        cluster_id=cluster_id, controller_id=client_controller_id(image, local), topics=topics)


def describe_cluster_response(request: Any, version: int, *, image: MetadataImage, listener: str,
                              local: LocalView, cluster_id: str) -> DescribeClusterResponse:
    endpoint_type = getattr(request, "endpoint_type", BROKER_ENDPOINTS) if version >= 1 else BROKER_ENDPOINTS
    resp = DescribeClusterResponse(cluster_id=cluster_id)
    if version >= 1:
        resp.endpoint_type = endpoint_type
    if endpoint_type == CONTROLLER_ENDPOINTS:
        resp.error_code = int(Errors.MISMATCHED_ENDPOINT_TYPE)
        resp.error_message = "this is a broker endpoint; ask a controller listener for controllers"
        return resp
    if endpoint_type != BROKER_ENDPOINTS:
        resp.error_code = int(Errors.UNSUPPORTED_ENDPOINT_TYPE)
        resp.error_message = f"unknown endpoint type {endpoint_type}"
        return resp
    if not local.serving:
        resp.error_code = int(Errors.REQUEST_TIMED_OUT)
        resp.error_message = f"broker {local.node_id} is fenced or catching up with the metadata log; retry"
        return resp
    resp.controller_id = client_controller_id(image, local)
    # v2 (KIP-1073): fenced brokers too when asked, each with IsFenced, as Kafka 4.x brokers answer
    with_fenced = version >= 2 and bool(getattr(request, "include_fenced_brokers", False))
    resp.brokers = [DescribeClusterBroker(i, h, p, r) for i, h, p, r
                    in live_brokers(image, listener, local, fenced=with_fenced)]
    if version >= 2:
        for b in resp.brokers:
            reg = image.brokers.get(b.broker_id)
            b.is_fenced = reg is not None and reg.fenced and b.broker_id != local.node_id
    return resp


#: Kafka's max.request.partition.size.limit default: the most partitions one DescribeTopicPartitions page holds.
MAX_PARTITIONS_PER_PAGE = 2000


def describe_topic_partitions_response(request: Any, *, image: MetadataImage, listener: str, local: LocalView
                                       ) -> Any:
    """DescribeTopicPartitions (KIP-966): topics by name (or every topic), in name order, a page of at most
    ``ResponsePartitionLimit`` partitions from ``Cursor`` on, with ELR and last-known ELR per partition, as Kafka
    4.x brokers answer it (Kafka's admin needs it to show ELRs; without it, it falls back to Metadata)."""
    all_topics = not request.topics
    names = sorted({m.name for m in image.topics.values()} | {METADATA_TOPIC}) if all_topics else \
        sorted({t.name for t in request.topics})
    limit = max(1, min(request.response_partition_limit, MAX_PARTITIONS_PER_PAGE))
    cursor = request.cursor
    resp = dtpr.DescribeTopicPartitionsResponse()
    if cursor is not None:
        if cursor.partition_index < 0 or (not all_topics and cursor.topic_name not in names):
            return request.error_response(0, Errors.INVALID_REQUEST, f"cursor {cursor.topic_name}-"
                                          f"{cursor.partition_index} is not among the requested topics' partitions")
        names = [n for n in names if n >= cursor.topic_name]
    left = limit
    for name in names:
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        if name == METADATA_TOPIC:
            md = _metadata_topic(local)
            parts = [dtpr.DescribeTopicPartitionsResponsePartition(
                error_code=p.error_code, partition_index=p.partition_index, leader_id=p.leader_id,
                leader_epoch=p.leader_epoch, replica_nodes=p.replica_nodes, isr_nodes=p.isr_nodes,
                eligible_leader_replicas=[], last_known_elr=[], offline_replicas=[]) for p in md.partitions]
            entry = dtpr.DescribeTopicPartitionsResponseTopic(name=name, topic_id=METADATA_TOPIC_ID, is_internal=True)
        else:
            topic = image.topic_by_name(name)
            if topic is None:
                if not all_topics:
                    resp.topics.append(dtpr.DescribeTopicPartitionsResponseTopic(
                        error_code=int(Errors.UNKNOWN_TOPIC_OR_PARTITION), name=name, partitions=[]))
                continue
            entry = dtpr.DescribeTopicPartitionsResponseTopic(name=name, topic_id=topic.id,
                                                              is_internal=name in INTERNAL_TOPICS)
            parts = []
            for pid in sorted(topic.partitions):
                p = topic.partitions[pid]
                lb = image.brokers.get(p.leader) if p.leader != NO_LEADER else None
                error = Errors.NONE if lb is not None and endpoint(lb, listener) is not None else (
                    Errors.LEADER_NOT_AVAILABLE if p.leader == NO_LEADER else Errors.LISTENER_NOT_FOUND)
                offline = [r for r in p.replicas if (b := image.brokers.get(r)) is None or b.fenced]
                parts.append(dtpr.DescribeTopicPartitionsResponsePartition(
                    error_code=int(error), partition_index=pid, leader_id=p.leader, leader_epoch=p.leader_epoch,
                    replica_nodes=list(p.replicas), isr_nodes=list(p.isr), eligible_leader_replicas=list(p.elr),
                    last_known_elr=list(p.last_known_elr), offline_replicas=offline))
        page = [x for x in parts if x.partition_index >= first]
        if len(page) > left:
            entry.partitions = page[:left]
            resp.topics.append(entry)
            resp.next_cursor = dtpr.Cursor(topic_name=name, partition_index=page[left].partition_index)
            return resp
        entry.partitions = page
        resp.topics.append(entry)
        left -= len(page)
        if left == 0:
            following = names[names.index(name) + 1:]
            if following:
                resp.next_cursor = dtpr.Cursor(topic_name=following[0], partition_index=0)
            return resp
    return resp
