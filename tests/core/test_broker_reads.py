"""The broker plane's pure answers (core/broker_reads.py): ListGroups gathered from every voter is cut to this
broker's hash share among the live brokers on the client's listener, so that admin tools asking every listed
broker see each group exactly once."""

from __future__ import annotations

import uuid

from kraftwire.broker.metadata_cache import LocalView
from kraftwire.core.broker_reads import BrokerReads, own_share
from kraftwire.metadata.image import BrokerRegistration, Endpoint, MetadataImage
from kraftwire.protocol.messages import list_groups_response as lgr

LISTENER = "EXTERNAL"


def _reads(node_id: int, image: MetadataImage) -> BrokerReads:
    local = LocalView(node_id=node_id, host=f"b{node_id}", port=9092, rack=None, serving=True,
                      raft_leader_known=True, raft_epoch=1, voters=(1,))
    return BrokerReads(node_id, "c", lambda: image, lambda listener: local, lambda: True)


def _gathered() -> lgr.ListGroupsResponse:
    return lgr.ListGroupsResponse(groups=[lgr.ListedGroup(group_id=f"group-{i}") for i in range(40)])


def test_each_group_is_listed_by_exactly_one_live_broker() -> None:
    brokers = {i: BrokerRegistration(i, 1, uuid.UUID(int=i), listeners=(Endpoint(LISTENER, f"b{i}", 9092, 0),),
                                     fenced=False) for i in (11, 12, 13)}
    brokers[14] = BrokerRegistration(14, 1, uuid.UUID(int=14), listeners=(Endpoint(LISTENER, "b14", 9092, 0),))
    image = MetadataImage(brokers=brokers)   # broker 14 is fenced: it gets no share
    shares = {b: {g.group_id for g in own_share(_reads(b, image), LISTENER)(_gathered()).groups}
              for b in (11, 12, 13)}
    everything = {g.group_id for g in _gathered().groups}
    assert set().union(*shares.values()) == everything
    assert sum(len(s) for s in shares.values()) == len(everything), "no group listed twice"
    assert all(shares.values()), "40 groups over 3 brokers: each lists some"
