"""Brokers answer Metadata through their door in the controller simulation.

Every broker's node core gets the production ``ApiDoor`` with a broker plane (``BrokerReads`` over the
broker's own replayed image and its view of itself). A reader client asks a random broker that is up
for the metadata of every topic (``MetadataRequest`` at the advertised version, through
``NodeCore.handle_api``; with ``--wire`` the body crossed the wire first), as a producer or consumer
refreshes its metadata, under faults and failovers.

Invariant: a broker's Metadata answer never names a fenced (or unregistered) broker as the leader of
a partition of the image, judged by the image that broker holds when it answers (``__cluster_metadata``,
which a broker lists with its own replica, is not an image partition).

Deliberate bug (``--bugs metadata_stale_image``): the broker answers from a copy of its image refreshed
only every tenth answer instead of its current one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraftwire.broker.metadata_cache import LocalView
from kraftwire.core import ApiDoor, DoorPlane, Respond
from kraftwire.core.api_registry import ApiRegistry
from kraftwire.core.broker_lifecycle_role import BrokerLifecycleRole
from kraftwire.core.broker_reads import BrokerReads
from kraftwire.metadata.image import MetadataImage
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.messages.metadata_request import MetadataRequest
from kraftwire.sim.invariants import Violation

READER = "reader"
BROKER_LISTENER = "PLAINTEXT"


def broker_door(bid: int, role: BrokerLifecycleRole, cluster_id: str, voters: tuple[int, ...],
                bugs: frozenset[str]) -> ApiDoor:
    """The production door of one broker incarnation: its broker plane answering from its image."""
    image: Callable[[], MetadataImage] = lambda: role.metadata.image   # noqa: E731
    if "metadata_stale_image" in bugs:
        image = _refreshed_rarely(image)
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
    """The reader client: Metadata of every topic from a random broker that is up, now and then."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.answers = 0
        self.partitions_seen = 0

    def start(self) -> None:
        self.sim.wake_agent(self.sim.rng.randint(300, 600), READER)

    def wake(self) -> None:
        sim = self.sim
        sim.wake_agent(sim.now + sim.rng.randint(50, 200), READER)
        up = [bid for bid, a in sim.agents.items() if a.role is not None and sim.nodes[bid].core is not None]
        if up:
            sim.send_agent(READER, sim.rng.choice(up), MetadataRequest(topics=None))

    def on_response(self, response: Any) -> None:
        if response is not None:
            self.answers += 1

    def on_handled(self, bid: int, image: MetadataImage, request_key: int, outputs: list[Any]) -> None:
        if request_key == ApiKey.METADATA:
            self.partitions_seen += check_metadata_answer(bid, image, outputs)
