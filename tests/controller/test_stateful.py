"""Random command sequences against the controller, checking cluster invariants after each step."""

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kraftwire.metadata import EMPTY_IMAGE, image_to_records
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages import delete_topics_request as dtq
from kraftwire.protocol.messages.unregister_broker_request import UnregisterBrokerRequest

from .harness import Harness

BROKERS = st.integers(1, 5)


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(session_timeout_ms=1000)
        self.epochs: dict[int, set[int]] = {}
        self.part_epochs: dict[tuple, int] = {}
        self.gen = 0

    @rule(bid=BROKERS, new_incarnation=st.booleans())
    def register(self, bid: int, new_incarnation: bool) -> None:
        self.gen += new_incarnation
        self.h.run(self.h.registration(bid, rack="ab"[bid % 2], gen=self.gen if new_incarnation else 0))

    @rule(bid=BROKERS, lag=st.integers(0, 3), fence=st.booleans(), shut=st.booleans())
    def heartbeat(self, bid: int, lag: int, fence: bool, shut: bool) -> None:
        if bid in self.h.image.brokers:
            self.h.heartbeat(bid, offset=len(self.h.log) - 1 - lag, want_fence=fence and lag == 3,
                             want_shut_down=shut and lag == 2)

    @rule(ms=st.integers(0, 1500))
    def advance(self, ms: int) -> None:
        self.h.tick(self.h.now + ms)

    @rule(name=st.sampled_from("abcde"), parts=st.integers(1, 4), rf=st.integers(1, 3))
    def create(self, name: str, parts: int, rf: int) -> None:
        self.h.run(ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic(name, parts, rf)]))

    @rule(name=st.sampled_from("abcde"))
    def delete(self, name: str) -> None:
        self.h.run(dtq.DeleteTopicsRequest(topic_names=[name]), version=5)

    @rule(bid=BROKERS)
    def unregister(self, bid: int) -> None:
        self.h.run(UnregisterBrokerRequest(broker_id=bid))

    @rule(data=st.data())
    def shrink_or_expand(self, data) -> None:
        img = self.h.image
        if not img.topics:
            return
        t = data.draw(st.sampled_from(sorted(img.topics.values(), key=lambda t: t.name)))
        pid = data.draw(st.sampled_from(sorted(t.partitions)))
        p = t.partitions[pid]
        if p.leader < 0:
            return
        others = data.draw(st.lists(st.sampled_from(p.replicas), unique=True))
        isr = [p.leader] + [r for r in others if r != p.leader]
        self.h.alter_partition(p.leader, t.name, pid, isr)

    @invariant()
    def invariants(self) -> None:
        img = self.h.image
        for b in img.brokers.values():
            self.epochs.setdefault(b.id, set()).add(b.epoch)
        for tid, t in img.topics.items():
            for pid, p in t.partitions.items():
                assert set(p.isr) <= set(p.replicas) and p.isr
                if p.leader != -1:
                    assert p.leader in p.isr
                    b = img.brokers.get(p.leader)
                    assert b is not None and not b.fenced, (p, b)
                key = (tid, pid)
                assert p.partition_epoch >= self.part_epochs.get(key, 0)
                self.part_epochs[key] = p.partition_epoch
        # committed == latest after each step (the harness commits), and snapshots round-trip
        assert self.h.ctl.committed_image == img
        assert EMPTY_IMAGE.replay_all(image_to_records(img)) == img

    def teardown(self) -> None:
        # one epoch per registration: every epoch is the offset of a RegisterBrokerRecord for that broker
        regs = {(r.message.broker_id, r.message.broker_epoch) for _, r in self.h.log
                if type(r.message).__name__ == "RegisterBrokerRecord"}
        for bid, epochs in self.epochs.items():
            for e in epochs:
                assert (bid, e) in regs
                off, rec = self.h.log[e]
                assert type(rec.message).__name__ == "RegisterBrokerRecord" and rec.message.broker_id == bid


ControllerMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                               suppress_health_check=[HealthCheck.too_slow])
TestController = ControllerMachine.TestCase
