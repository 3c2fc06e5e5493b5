"""Partition reassignment in the controller simulation: a mover client and a simulated data plane, and the
invariants a move must keep.

* The mover sends AlterPartitionReassignments for a partition of a created topic: a random target among the
  brokers (some of them down, fenced or mid-restart), another target for a moving partition, or a
  cancellation. It stops at the heal.
* kraftwire brokers host no data, so a data-plane stand-in plays Kafka's partition leaders: it sends the
  leader's AlterPartition adding a replica of a moving partition to the ISR once that replica's broker is up
  and unfenced (a follower that caught up), with the epochs of the active controller's committed image.

Checked on every image every controller and broker holds: the ISR, the adding and the removing replicas are
subsets of the replicas and the leader is a replica. Checked on every committed change of a partition (the
checker replays the committed log): a move ends only by completing — every remaining replica is in the ISR,
so no partition is left with fewer replicas in sync than its target — or by a cancellation back to the
original replicas; replicas never change outside a move, except by reordering them or by a move that was
complete at once. At the end, after the heal, no partition is still moving.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kraftwire.controller.reassignment import original_replicas, reassigning
from kraftwire.metadata.image import ImageLoader, MetadataImage, Partition
from kraftwire.protocol.errors import DecodeError, Errors
from kraftwire.protocol.messages import alter_partition_reassignments_request as arq
from kraftwire.protocol.messages import alter_partition_request as apq
from kraftwire.protocol.metadata import decode_record
from kraftwire.sim.invariants import Violation

if TYPE_CHECKING:
    from kraftwire.sim.controller_sim import ControllerSimulation

MOVER, CATCH_UP = "mover", "catch-up"
_MOVER_OK = {int(Errors.NONE), int(Errors.INVALID_REPLICA_ASSIGNMENT), int(Errors.NO_REASSIGNMENT_IN_PROGRESS)}


def check_partition(nid: int, which: str, name: str, pid: int, p: Partition) -> None:
    """The shape every partition has in every image."""
    replicas = set(p.replicas)
    for what, members in (("ISR", p.isr), ("adding replicas", p.adding_replicas),
                          ("removing replicas", p.removing_replicas)):
        if not set(members) <= replicas:
            raise Violation(f"node {nid} {which} image: {name}-{pid} {what} {list(members)} not within "
                            f"replicas {list(p.replicas)}")
    if p.leader >= 0 and p.leader not in replicas:
        raise Violation(f"node {nid} {which} image: {name}-{pid} leader {p.leader} is not a replica {list(p.replicas)}")


class MoveChecker:
    """Replays the committed log and checks how each partition change moves replicas."""

    def __init__(self) -> None:
        self.loader = ImageLoader()
        self.loader.on_partition = self._changed
        self.replayed = 0
        self.started = self.completed = self.cancelled = 0
        self._names: dict[uuid.UUID, str] = {}

    def follow(self, committed: list[tuple[int, bytes | None]]) -> None:
        while self.replayed < len(committed):
            value = committed[self.replayed][1]
            self.replayed += 1
            if value is None:
                continue
            try:
                record = decode_record(value)
            except DecodeError:
                continue   # a control record (leader change, snapshot markers) of a control batch
            self.loader.replay(record.message)

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    def _changed(self, tid: uuid.UUID, pid: int, old: Partition | None, new: Partition | None) -> None:
        if old is None or new is None:
            return
        where = f"committed change of partition {pid} of topic {tid}"
        if not reassigning(old) and reassigning(new):
            self.started += 1
        if reassigning(old) and not reassigning(new):
            if list(new.replicas) == original_replicas(old):
                self.cancelled += 1
            elif set(new.replicas) <= set(new.isr):
                self.completed += 1
            else:
                raise Violation(f"{where}: a move ended with replicas {list(new.replicas)} but ISR {list(new.isr)} "
                                f"(was replicas {list(old.replicas)}, adding {list(old.adding_replicas)}, "
                                f"removing {list(old.removing_replicas)}, ISR {list(old.isr)})")
        elif (not reassigning(old) and not reassigning(new) and set(new.replicas) != set(old.replicas)
              and not set(new.replicas) <= set(new.isr)):
            raise Violation(f"{where}: replicas {list(old.replicas)} became {list(new.replicas)} outside a move "
                            f"with ISR {list(new.isr)}")


class ReassignWorkload:
    """The mover and the data-plane stand-in of one controller simulation."""

    def __init__(self, sim: ControllerSimulation) -> None:
        self.sim = sim
        self.target = 1
        self.inflight: dict[str, int | None] = {MOVER: None, CATCH_UP: None}
        self.requests = self.expansions = 0

    def start(self) -> None:
        sim = self.sim
        self.target = sim.rng.choice(sim.voter_ids)
        sim.wake_agent(sim.rng.randint(400, 800), MOVER)
        sim.wake_agent(sim.rng.randint(400, 800), CATCH_UP)

    def wake(self, key: str) -> None:
        sim = self.sim
        if key == MOVER:
            if sim.healed:
                return
            sim.wake_agent(sim.now + sim.rng.randint(80, 250), MOVER)
        else:
            sim.wake_agent(sim.now + sim.rng.randint(100, 300), CATCH_UP)
        if self.inflight[key] is not None:
            return
        request = self._move() if key == MOVER else self._catch_up()
        if request is not None:
            self.inflight[key] = sim.send_agent(key, self.target, request)

    def _committed(self) -> MetadataImage | None:
        active = [s for s in self.sim.shells.values() if s.ctl.active and self.sim.nodes[s.node.node_id].core]
        return active[0].ctl.committed_image if active else None

    def _move(self) -> Any:
        """A move of a partition of a created topic, or (half the time when it is moving) its cancellation."""
        sim, image = self.sim, self._committed()
        if image is None:
            return None
        names = sorted(n for n in sim.checker.acked_topics if n in image.topic_ids)
        moving = [(t.name, pid) for t in image.topics.values() for pid, p in sorted(t.partitions.items())
                  if reassigning(p)]
        if moving and sim.rng.random() < 0.5:
            name, pid = sim.rng.choice(sorted(moving))
            cancel = sim.rng.random() < 0.5
        elif names:
            name = sim.rng.choice(names)
            pid = sim.rng.choice(sorted(image.topic_by_name(name).partitions))   # type: ignore[union-attr]
            cancel = sim.rng.random() < 0.1
        else:
            return None
        replicas = None if cancel else sim.rng.sample(sorted(sim.observer_ids),
                                                      sim.rng.randint(1, min(3, len(sim.observer_ids))))
        self.requests += 1
        return arq.AlterPartitionReassignmentsRequest(topics=[arq.ReassignableTopic(
            name, [arq.ReassignablePartition(partition_index=pid, replicas=replicas)])])

    def _catch_up(self) -> Any:
        """The leader's AlterPartition for one moving partition whose missing replica is up and unfenced."""
        sim, image = self.sim, self._committed()
        if image is None:
            return None
        moving = [(t, pid, p) for t in image.topics.values() for pid, p in sorted(t.partitions.items())
                  if reassigning(p) and p.leader >= 0]
        sim.rng.shuffle(moving)
        for topic, pid, p in moving:
            leader = image.brokers.get(p.leader)
            if leader is None or sim.nodes[p.leader].core is None:
                continue
            ready = [r for r in p.replicas if r not in p.isr and (b := image.brokers.get(r)) is not None
                     and b.active and sim.nodes[r].core is not None]
            if not ready:
                continue
            isr = [*p.isr, sim.rng.choice(ready)]
            pd = apq.PartitionData(partition_index=pid, leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                                   new_isr_with_epochs=[apq.BrokerState(r, image.brokers[r].epoch) for r in isr])
            self.expansions += 1
            return apq.AlterPartitionRequest(broker_id=p.leader, broker_epoch=leader.epoch, topics=[
                apq.TopicData(topic_name=topic.name, topic_id=topic.id, partitions=[pd])])
        return None

    def on_response(self, key: str, seq: int, response: Any) -> None:
        if self.inflight.get(key) != seq:
            return
        self.inflight[key] = None
        if response is None:
            self.target = self.sim.retarget(self.target)
            return
        if key == MOVER:
            codes = [response.error_code] + [p.error_code for t in response.responses for p in t.partitions]
        else:
            codes = [response.error_code]
        if int(Errors.NOT_CONTROLLER) in codes:
            self.target = self.sim.retarget(self.target)
            return
        if key == MOVER and not set(codes) <= _MOVER_OK:
            raise Violation(f"AlterPartitionReassignments: unexpected errors {[Errors(c).name for c in codes]}")

    def check_settled(self, image: MetadataImage) -> None:
        """After the heal every broker is back and unfenced: every move has completed or been cancelled."""
        for t in image.topics.values():
            for pid, p in t.partitions.items():
                if reassigning(p):
                    raise Violation(f"liveness: {t.name}-{pid} still moving after the heal (replicas "
                                    f"{list(p.replicas)}, adding {list(p.adding_replicas)}, ISR {list(p.isr)})")
