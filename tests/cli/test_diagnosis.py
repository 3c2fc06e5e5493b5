"""doctor's feature and partition rules over the image of a real controller-written log (the demo log)."""

from __future__ import annotations

import dataclasses

import pytest

from kraftwire.analytics.scenario import demo_log
from kraftwire.cli.diagnosis import PROBLEM, Evidence, Probe, diagnose
from kraftwire.cli.metadata_shell import build_image
from kraftwire.storage.reader import read_metadata


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    demo_log(root).close()
    return build_image(read_metadata(root))


def _evidence(image) -> Evidence:
    return Evidence(now_ms=0, probes=[Probe("127.0.0.1:9093", node_id=1)], leader_id=1, leader_epoch=4,
                    image=image, image_offset=45)


def test_a_broker_with_a_lower_feature_ceiling_blocks_the_upgrade(image) -> None:
    def ceiling(reg, hi_mv):
        return dataclasses.replace(reg, features=tuple((n, lo, hi_mv if n == "metadata.version" else hi)
                                                       for n, lo, hi in reg.features))

    assert image.features["metadata.version"] == 21
    # 101 and 103 run a newer release (up to 27); 102 still tops out at 21
    changed = dataclasses.replace(image, brokers={i: ceiling(b, 21 if i == 102 else 27)
                                                  for i, b in image.brokers.items()})
    found = [f for f in diagnose(_evidence(changed)) if f.area == "features"]
    assert len(found) == 1 and found[0].severity == PROBLEM
    assert found[0].text.startswith("upgrade of metadata.version beyond 21 (3.9-IV0) is blocked by broker 102")
    assert "broker 102: max 21" in found[0].evidence
    ok = [f for f in diagnose(_evidence(image)) if f.area == "features"]
    assert [f.severity for f in ok] == ["ok"]


def test_a_node_that_cannot_serve_the_finalized_level(image) -> None:
    b = image.brokers[103]
    too_old = tuple((n, lo, 1 if n == "metadata.version" else hi) for n, lo, hi in b.features)
    changed = dataclasses.replace(image, brokers={**image.brokers, 103: dataclasses.replace(b, features=too_old)})
    texts = [f.text for f in diagnose(_evidence(changed)) if f.area == "features"]
    assert any(t.startswith("metadata.version is finalized at") and "do not support that level" in t for t in texts)


def test_offline_partitions_and_a_fenced_broker_after_the_controller_fences_it(image) -> None:
    from kraftwire.controller.cluster import fence_records
    from kraftwire.controller.controller import QuorumController

    ctl = QuorumController(image=image)
    for offset, rec in enumerate(fence_records(ctl, 101)):
        ctl.replay(offset, rec)
    found = diagnose(_evidence(ctl.image))
    healthy = [f.severity for f in diagnose(_evidence(image)) if f.area in ("brokers", "partitions")]
    assert healthy == ["ok", "ok"]
    [offline] = [f for f in found if f.area == "partitions" and "offline" in f.text]
    assert offline.text.startswith("1 partition is offline (no leader)")
    assert offline.evidence == ("audit-0: replicas [104, 101], isr [101] (104 not registered; 101 fenced)",)
    [fenced] = [f for f in found if f.area == "brokers"]
    assert fenced.text.startswith("broker 101 is fenced: it is not fetching the metadata log")
    assert fenced.evidence[0].startswith("image at offset 45: fenced=true")
