"""Brokers answer Metadata and DescribeCluster through their door in the controller simulation.

Every broker's node core gets the production ``ApiDoor`` with a broker plane (``BrokerReads`` over the
broker's own replayed image and its view of itself). A reader client asks a random broker that is up
for the metadata of every topic (``MetadataRequest`` at the advertised version, through
``NodeCore.handle_api``; with ``--wire`` the body crossed the wire first), or for the cluster
(``DescribeClusterRequest``, with or without fenced brokers), as a producer, consumer or admin client
refreshes its view, under faults and failovers. Right after a broker's image fenced another broker (a
crash, a controlled shutdown), the reader asks that broker again: a stale answer shows then.

Invariants, judged by the image the broker holds when it answers:

* a Metadata answer never names a fenced (or unregistered) broker as the leader of a partition of the
  image (``__cluster_metadata``, which a broker lists with its own replica, is not an image partition);
* the brokers a Metadata or DescribeCluster answer lists are the image's unfenced brokers with an
  endpoint on the listener, and the answering broker itself (DescribeCluster v2 asked for fenced
  brokers: every registered one, each with its fencing); a broker not serving answers DescribeCluster
  REQUEST_TIMED_OUT.

Deliberate bugs (``--bugs``): ``metadata_stale_image`` (the broker answers from a copy of its image
refreshed only every tenth read instead of its current one); ``reads_ignore_fencing`` (the image the
broker's reads use lost every broker's fencing, as a cache that skips fencing changes would).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kraftwire.broker.metadata_cache import LocalView
from kraftwire.core import ApiDoor, DoorPlane, Respond
from kraftwire.core.api_registry import ApiRegistry
from kraftwire.core.broker_lifecycle_role import BrokerLifecycleRole
from kraftwire.core.broker_reads import BrokerReads
from kraftwire.metadata.image import TOPIC_RESOURCE, MetadataImage
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import describe_configs_request as dcq
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.metadata_request import MetadataRequest
from kraftwire.sim.cluster import UNDO
from kraftwire.sim.invariants import Violation

READER = "reader"
AFTER_FENCE_MS = (30, 100, 300)   # a broker whose image fenced another is asked again within each
BROKER_LISTENER = "PLAINTEXT"


def broker_door(bid: int, role: BrokerLifecycleRole, cluster_id: str, voters: tuple[int, ...],
                bugs: frozenset[str]) -> ApiDoor:
    """The production door of one broker incarnation: its broker plane answering from its image."""
    image: Callable[[], MetadataImage] = lambda: role.metadata.image   # noqa: E731
    if "metadata_stale_image" in bugs:
        image = _refreshed_rarely(image)
    if "reads_ignore_fencing" in bugs:
        image = _fencing_forgotten(image)
    if "reads_ignore_configs" in bugs:
        image = _configs_forgotten(image)
    view = lambda listener: LocalView(bid, f"b{bid}", 9092, None, role.serving, True, 0, voters)   # noqa: E731
    reads = BrokerReads(bid, cluster_id, image, view, lambda: role.serving)
    plane = DoorPlane(ApiRegistry.broker(), "by this simulated broker", lambda: ({}, {}, 0), broker=reads)
    return ApiDoor({BROKER_LISTENER: plane})


def _refreshed_rarely(image: Callable[[], MetadataImage]) -> Callable[[], MetadataImage]:
    held: list[Any] = [None, 0]

    def stale() -> MetadataImage:
        if held[0] is None or held[1] % 10 == 0:
            held[0] = image()
        held[1] += 1
        return held[0]
    return stale


def _fencing_forgotten(image: Callable[[], MetadataImage]) -> Callable[[], MetadataImage]:
    held: list[Any] = [None, None]

    def unfenced() -> MetadataImage:
        current = image()
        if held[0] is not current:
            brokers = {i: replace(b, fenced=False) for i, b in current.brokers.items()}
            held[0], held[1] = current, replace(current, brokers=brokers)
        return held[1]
    return unfenced


def _configs_forgotten(image: Callable[[], MetadataImage]) -> Callable[[], MetadataImage]:
    held: list[Any] = [None, None]

    def without() -> MetadataImage:
        current = image()
        if held[0] is not current:
            held[0], held[1] = current, replace(current, configs={})
        return held[1]
    return without


DYNAMIC_TOPIC_CONFIG = 1   # Kafka's ConfigSource of a topic's own (dynamic) config


def check_config_answer(bid: int, image: MetadataImage, serving: bool, request: Any, outputs: list[Any]) -> int:
    """A broker's DescribeConfigs answer for a topic gives every config the image sets on it, with the image's
    value as the topic's own, and no other as the topic's own; the configs checked."""
    checked = 0
    for out in outputs:
        if type(out) is not Respond or out.body is None:
            continue
        for asked, result in zip(request.body.resources, out.body.body.results, strict=True):
            if asked.resource_type != TOPIC_RESOURCE:
                continue
            if not serving or image.topic_by_name(asked.resource_name) is None:
                if result.error_code == 0:
                    raise Violation(f"broker {bid} described topic {asked.resource_name} without error though it "
                                    f"{'does not serve' if not serving else 'is not in its image'}")
                continue
            own = image.configs.get((TOPIC_RESOURCE, asked.resource_name), {})
            answered = {c.name: c for c in result.configs}
            for key, value in own.items():
                c = answered.get(key)
                if c is None or c.value != value or c.config_source != DYNAMIC_TOPIC_CONFIG:
                    got = None if c is None else (c.value, c.config_source)
                    raise Violation(f"broker {bid}'s DescribeConfigs of {asked.resource_name}: {key} is {got}, its "
                                    f"image sets {value!r}")
            wrong = [c.name for c in result.configs if c.config_source == DYNAMIC_TOPIC_CONFIG and c.name not in own]
            if wrong:
                raise Violation(f"broker {bid}'s DescribeConfigs of {asked.resource_name} gives {wrong} as the "
                                "topic's own, which its image does not set")
            checked += len(result.configs)
    return checked


def expected_brokers(bid: int, image: MetadataImage, *, fenced: bool) -> set[int]:
    """Who a broker's answer must list (reference model): the image's unfenced brokers reachable on the
    listener (``fenced``: every registered one), and the answering broker itself."""
    return {b.id for b in image.brokers.values() if (fenced or not b.fenced)
            and any(e.name == BROKER_LISTENER for e in b.listeners)} | {bid}


def check_broker_list(bid: int, image: MetadataImage, serving: bool, request: Any, outputs: list[Any]) -> None:
    """A Metadata or DescribeCluster answer among ``outputs`` lists the brokers ``expected_brokers`` names."""
    for out in outputs:
        if type(out) is not Respond or out.body is None:
            continue
        body = out.body.body
        what = type(body).__name__.removesuffix("Response")
        fenced = False
        if what == "DescribeCluster":
            if not serving:
                if body.error_code != int(Errors.REQUEST_TIMED_OUT):
                    raise Violation(f"broker {bid} answered DescribeCluster while not serving "
                                    f"(error {body.error_code})")
                continue
            fenced = out.body.version >= 2 and request.body.include_fenced_brokers
            for b in body.brokers:
                reg = image.brokers.get(b.broker_id)
                if out.body.version >= 2 and b.is_fenced != (reg is not None and reg.fenced and b.broker_id != bid):
                    raise Violation(f"broker {bid}'s DescribeCluster answer says broker {b.broker_id} is "
                                    f"{'' if b.is_fenced else 'not '}fenced")
        elif what != "Metadata":
            continue
        listed = {b.broker_id if what == "DescribeCluster" else b.node_id for b in body.brokers}
        wanted = expected_brokers(bid, image, fenced=fenced)
        if listed != wanted:
            raise Violation(f"broker {bid}'s {what} answer lists brokers {sorted(listed)}, its image "
                            f"{sorted(wanted)} ({'with' if fenced else 'without'} fenced ones)")


def check_metadata_answer(bid: int, image: MetadataImage, outputs: list[Any]) -> int:
    """A broker's Metadata answers among ``outputs`` name no fenced leader in ``image``; the partitions seen."""
    seen = 0
    for out in outputs:
        if type(out) is not Respond or out.body is None or not hasattr(out.body.body, "topics"):
            continue
        for topic in out.body.body.topics:
            if image.topic_by_name(topic.name) is None:
                continue   # __cluster_metadata (the broker's own replica of it), or a topic it does not know
            for p in topic.partitions:
                seen += 1
                if p.leader_id < 0:
                    continue
                b = image.brokers.get(p.leader_id)
                if b is None or b.fenced:
                    state = "unregistered" if b is None else "fenced"
                    raise Violation(f"broker {bid}'s Metadata answer names {state} broker {p.leader_id} as the "
                                    f"leader of {topic.name}-{p.partition_index}")
    return seen


class MetadataReader:
    """The reader client: Metadata of every topic, or DescribeCluster, from a random broker that is up, now
    and then, and from a broker whose image has just fenced another."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.answers = 0
        self.partitions_seen = 0
        self.cluster_answers = 0     # DescribeCluster answers checked
        self.configs_checked = 0     # topic configs in DescribeConfigs answers checked
        self.after_fence = 0         # reads sent right after a broker's image fenced another
        self._fenced: dict[int, frozenset[int]] = {}

    def start(self) -> None:
        self.sim.wake_agent(self.sim.rng.randint(300, 600), READER)

    def wake(self) -> None:
        sim = self.sim
        sim.wake_agent(sim.now + sim.rng.randint(50, 200), READER)
        up = [bid for bid, a in sim.agents.items() if a.role is not None and sim.nodes[bid].core is not None]
        if up:
            self._ask(sim.rng.choice(up))

    def _ask(self, bid: int, metadata: bool = False) -> None:
        sim = self.sim
        role = sim.agents[bid].role
        if role is None or sim.nodes[bid].core is None:
            return
        draw = sim.rng.random()
        if metadata or draw < 0.5:
            sim.send_agent(READER, bid, MetadataRequest(topics=None))
        elif draw < 0.75:
            sim.send_agent(READER, bid, DescribeClusterRequest(include_fenced_brokers=sim.rng.random() < 0.5))
        else:   # a topic it learned from Metadata, more often one with configs of its own
            image = role.metadata.image
            configured = sorted(name for rtype, name in image.configs if rtype == TOPIC_RESOURCE)
            names = configured if configured and sim.rng.random() < 0.7 else sorted(image.topic_ids)
            if names:
                resource = dcq.DescribeConfigsResource(resource_type=TOPIC_RESOURCE, resource_name=sim.rng.choice(names),
                                                       configuration_keys=None)
                sim.send_agent(READER, bid, dcq.DescribeConfigsRequest(resources=[resource]))

    def after_commit(self, bid: int, image: MetadataImage) -> None:
        """Broker ``bid`` replayed committed records: if its image fenced a broker it did not before, ask it
        again within a few ms (twice)."""
        fenced = frozenset(b.id for b in image.brokers.values() if b.fenced)
        before = self._fenced.get(bid, frozenset())
        self._fenced[bid] = fenced
        if fenced - before:
            sim = self.sim
            for within in AFTER_FENCE_MS:
                self.after_fence += 1
                sim.schedule(sim.now + sim.rng.randint(0, within), UNDO, lambda: self._ask(bid, metadata=True))

    def on_response(self, response: Any) -> None:
        if response is not None:
            self.answers += 1

    def on_handled(self, bid: int, image: MetadataImage, serving: bool, request: Any, outputs: list[Any]) -> None:
        if request.api_key == ApiKey.METADATA:
            self.partitions_seen += check_metadata_answer(bid, image, outputs)
        elif request.api_key == ApiKey.DESCRIBE_CLUSTER:
            self.cluster_answers += 1
        elif request.api_key == ApiKey.DESCRIBE_CONFIGS:
            self.configs_checked += check_config_answer(bid, image, serving, request, outputs)
            return
        check_broker_list(bid, image, serving, request, outputs)
