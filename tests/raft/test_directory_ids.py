"""KIP-853 directory ids: the replica's meta.properties directory.id travels in Vote, Fetch and
FetchSnapshot where the version has the field, and the leader reports it in DescribeQuorum."""

from __future__ import annotations

import random
import uuid

from raft_helpers import CFG, CID, elect, fetch, make, requests, stand

from kraftwire.core import raft_wire as wire
from kraftwire.protocol.messages import describe_quorum_response as dq_resp
from kraftwire.protocol.messages import fetch_request as f_req
from kraftwire.protocol.messages import vote_request as v_req
from kraftwire.raft import MemoryLog, MemoryStateStore, RaftCore
from kraftwire.raft import messages as m

D1, D2 = uuid.UUID(int=0x11), uuid.UUID(int=0x22)


def test_requests_carry_the_directory_id():
    core = RaftCore(1, (1, 2, 3), CFG, MemoryLog(), MemoryStateStore(), random.Random(1), CID, 0, directory_id=D1)
    out = stand(core, 5000)
    assert {r.msg.candidate_directory_id for r in requests(out, m.VoteRequest)} == {D1}
    follower = RaftCore(2, (1, 2, 3), CFG, MemoryLog(), MemoryStateStore(), random.Random(1), CID, 0,
                        directory_id=D2)
    out = follower.handle_request(0, 1, 1, m.BeginQuorumEpochRequest(CID, 1, 1)) + follower.tick(1)
    (f,) = requests(out, m.FetchRequest)
    assert f.msg.replica_directory_id == D2


def test_leader_reports_replica_directory_ids_in_describe_quorum():
    core, *_ = make()
    now = elect(core)
    core.directory_id = D1
    req = m.FetchRequest(CID, 2, 0, 1, 1, core.epoch, replica_directory_id=D2)
    core.handle_request(now, 1, 2, req)
    fetch(core, now, 2, 101, 0, 0)                       # an observer without one
    p = core.describe_quorum(now).partition
    dirs = {r.replica_id: r.replica_directory_id for r in p.current_voters + p.observers}
    assert dirs == {1: D1, 2: D2, 3: None, 101: None}


def test_wire_versions_with_and_without_directory_ids():
    vote = m.VoteRequest(CID, 3, 1, 2, 10, candidate_directory_id=D1)
    for version, expected in ((0, None), (1, D1), (2, D1)):
        body = v_req.VoteRequest.decode(wire.request_to_wire(vote, version).encode(version), version)
        assert wire.request_from_wire(52, body, version)[1].candidate_directory_id == expected
    fetch_req = m.FetchRequest(CID, 2, 0, 5, 1, 3, replica_directory_id=D2)
    for version, expected in ((16, None), (17, D2)):
        body = f_req.FetchRequest.decode(wire.request_to_wire(fetch_req, version).encode(version), version)
        assert wire.request_from_wire(1, body, version)[1].replica_directory_id == expected
    resp = m.DescribeQuorumResponse(0, m.DescribeQuorumPartition(
        0, 1, 3, 5, (m.ReplicaStateField(1, 5, 0, 0, D1),), ()))
    body = wire.response_to_wire(55, resp, 2, [])
    again = dq_resp.DescribeQuorumResponse.decode(body.encode(2), 2)
    assert again.topics[0].partitions[0].current_voters[0].replica_directory_id == D1


def test_fetch_high_watermark_crosses_the_wire_from_v18():
    from kraftwire.core.raft_wire import request_from_wire, request_to_wire
    from kraftwire.raft import messages as rm

    msg = rm.FetchRequest(CID, 2, 500, 10, 3, 4, high_watermark=7)
    for version, want in ((18, 7), (17, rm.UNKNOWN_HIGH_WATERMARK)):
        body = request_to_wire(msg, version)
        back = f_req.FetchRequest.decode(body.encode(version), version)
        assert request_from_wire(1, back, version)[1].high_watermark == want
