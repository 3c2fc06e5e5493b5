"""Pre-vote (KIP-996) across implementations: one kraftwire voter and two Kafka voters.

With Kafka 4.x both sides send Vote v2 with PreVote=true and grant each other's pre-votes; with
Kafka 3.x (Vote v0-v1) kraftwire's pre-vote is answered UNSUPPORTED_VERSION by its own client and it
stands at once, as Kafka 4.x does. Either way a leader is elected, and again after the leader is
killed. Runs once per Kafka release in ../shared/kafka (slow, needs a JDK).
"""

from __future__ import annotations

import json

import pytest

from compat.kafka import CONTROLLER_PORT, KafkaNode, KraftwireNode, wait_for
from kraftwire.storage.meta_properties import random_uuid
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def quorum_status(kw: KraftwireNode, addr: str) -> dict | None:
    rc, out = kw.kraftwire("metadata-quorum", "--bootstrap-controller", addr, "describe", "--status", "--json",
                           timeout_s=30)
    if rc != 0:
        return None
    try:
        return json.loads(out[out.index("{"):])
    except ValueError:
        return None


def test_mixed_quorum_elects_with_pre_vote_or_falls_back(kafka_dist, tmp_path):
    release = "3.7-IV4" if not kafka_dist.at_least(3, 9) else "3.9-IV0"
    with Fleet(tmp_path) as fleet:
        hosts = fleet.hosts(3)
        voters = [(i + 1, h, CONTROLLER_PORT) for i, h in enumerate(hosts)]
        cluster = random_uuid()
        kw = KraftwireNode(tmp_path, 1, "controller", hosts[0], voters)
        fleet.add(kw)
        fleet.watch("kraftwire voter", kw.log_path)
        kafka = [fleet.add(KafkaNode(kafka_dist, tmp_path, i, "controller", hosts[i - 1], voters)) for i in (2, 3)]
        kw.format(cluster, release_version=release)
        for node in kafka:
            node.format(cluster, release_version=release)
        kw.start()
        for node in kafka:
            node.start()
        for node in kafka:
            node.wait_started()
        kw.wait_started()
        addrs = [f"{h}:{CONTROLLER_PORT}" for h in hosts]

        def leader(among: list[str]) -> dict | None:
            for a in among:
                s = quorum_status(kw, a)
                if s and s.get("LeaderId", -1) > 0:
                    return s
            return None

        first = wait_for(lambda: leader(addrs), 120, "a leader in the mixed quorum")
        victim = first["LeaderId"]
        (kw if victim == 1 else kafka[victim - 2]).kill()
        rest = [a for i, a in enumerate(addrs) if i + 1 != victim]
        second = wait_for(lambda: (s := leader(rest)) and s["LeaderEpoch"] > first["LeaderEpoch"]
                          and s["LeaderId"] != victim and s, 120, "a new leader after the kill")
        assert second["LeaderId"] != victim
        text = kw.log_text()
        if kafka_dist.at_least(4, 0) and victim != 1:
            # Kafka 4.x and kraftwire pre-voted each other: one side's Prospective asked the other.
            assert "pre-vote" in text or "ProspectiveState" in text, kw.log_tail()
