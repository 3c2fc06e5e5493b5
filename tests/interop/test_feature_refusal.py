"""UpdateFeatures through Kafka's ``kafka-features.sh`` on a kraftwire quorum in which a voter has not registered
(KIP-919): refused with Kafka's words, then accepted once it registers. Per release: 3 kraftwire voters formatted
at 3.6-IV2, where controllers do not register yet; voter 3 is stopped, metadata.version goes to 3.7-IV0 (voters 1 and
2 register), the upgrade to the release's level is refused naming controller 3 until it is started again."""

from __future__ import annotations

import re

import pytest

from compat.interop import DEFAULT_RELEASE, Cluster, _finalized_mv
from compat.kafka import CONTROLLER_PORT, KraftwireNode, loopback_hosts, start_all, wait_for
from kraftwire.metadata.features import parse_release_version
from tests.interop.kafka import Fleet

pytestmark = [pytest.mark.kafka, pytest.mark.compat, pytest.mark.processes, pytest.mark.slow]

REFUSAL = "controller 3 has not registered, and may not support this feature"


def test_upgrade_refused_until_every_voter_registers(kafka_dist, tmp_path):
    c = Cluster(kafka_dist, tmp_path)
    hosts = loopback_hosts(3)
    quorum = [(i, hosts[i - 1], CONTROLLER_PORT) for i in (1, 2, 3)]
    for i in (1, 2, 3):
        c.nodes[i] = KraftwireNode(tmp_path, i, "controller", hosts[i - 1], quorum)
        c.nodes[i].format(c.cluster_id, release_version="3.6-IV2")
    target = parse_release_version(c.upgrade_level or DEFAULT_RELEASE)   # None: the format default (4.1)
    voter = ("--bootstrap-controller", c.nodes[1].controller_address)

    def upgrade(level: int) -> tuple[int, str]:
        return kafka_dist.run("kafka-features.sh", [*voter, "upgrade", "--feature", f"metadata.version={level}"],
                              timeout_s=90)

    with Fleet(tmp_path) as fleet:
        fleet.nodes = list(c.nodes.values())
        start_all(c.nodes.values(), 60)
        c.wait_leader(60)
        c.nodes[3].stop()
        rc, out = upgrade(15)   # 3.7-IV0: Kafka cannot check controllers before it, neither do we
        assert rc == 0, out[-300:]

        def refused_for_3() -> str | None:
            rc, out = upgrade(target)
            assert rc != 0, f"upgraded with voter 3 unregistered: {out[-300:]}"
            return out if REFUSAL in out else None  # until voters 1 and 2 have registered, one of them is named

        out = wait_for(refused_for_3, 90, "the refusal naming controller 3", interval_s=1.0)
        assert re.search(rf"Invalid update version {target} for feature metadata\.version\. {REFUSAL}", out), out
        assert _finalized_mv(c, *voter)[0] == 15

        c.nodes[3].start()
        c.nodes[3].wait_started()

        def upgraded() -> bool:
            rc, out = upgrade(target)
            assert rc == 0 or REFUSAL in out, out[-300:]
            return rc == 0

        wait_for(upgraded, 120, "the upgrade once voter 3 registered", interval_s=1.0)
        wait_for(lambda: _finalized_mv(c, *voter)[0] == target, 60, f"metadata.version {target} finalized")
