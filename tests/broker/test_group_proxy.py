"""Pure parts of group relaying: placement, FindCoordinator answers, error answers at every version."""

from __future__ import annotations

import pytest

from kraftwire.group import GROUP_APIS
from kraftwire.group.placement import find_coordinator, java_hash, owner_of
from kraftwire.group.responses import error_response
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import join_group_request as jgq
from kraftwire.protocol.messages import offset_commit_request as ocq
from kraftwire.protocol.messages import offset_fetch_request as ofq
from kraftwire.protocol.messages.describe_groups_request import DescribeGroupsRequest
from kraftwire.protocol.messages.find_coordinator_request import FindCoordinatorRequest
from kraftwire.protocol.messages.heartbeat_request import HeartbeatRequest
from kraftwire.protocol.messages.leave_group_request import LeaveGroupRequest
from kraftwire.protocol.messages.list_groups_request import ListGroupsRequest
from kraftwire.protocol.messages.sync_group_request import SyncGroupRequest

VOTERS = [(3, "c", 9003), (1, "a", 9001), (2, "b", 9002)]
UNAVAILABLE = int(Errors.COORDINATOR_NOT_AVAILABLE)


def roundtrip(msg, version):
    return type(msg).decode(msg.encode(version), version)


def test_java_hash_matches_java_string_hash_code():
    assert java_hash("") == 0
    assert java_hash("hello") == 99162322
    assert java_hash("polygenelubricants") == -2**31          # Integer.MIN_VALUE
    assert java_hash("\U0001F600") == 0xD83D * 31 + 0xDE00      # one surrogate pair, two UTF-16 units


def test_owner_is_the_same_whatever_the_voters_order():
    for name in ("a", "orders", "polygenelubricants", "grüße"):
        owner = owner_of(name, VOTERS)
        assert owner == owner_of(name, list(reversed(VOTERS)))
        assert owner == sorted(VOTERS)[(java_hash(name) & 0x7FFFFFFF) % 3]
    assert owner_of("polygenelubricants", VOTERS)[0] == 1        # MIN_VALUE & 0x7FFFFFFF == 0


@pytest.mark.parametrize("version", range(GROUP_APIS[10][0], GROUP_APIS[10][1] + 1))
def test_find_coordinator_every_version(version):
    keys = ["g1", "g2"] if version >= 4 else ["g1"]
    body = FindCoordinatorRequest(key=keys[0], key_type=0, coordinator_keys=keys)
    resp = roundtrip(find_coordinator(version, body, lambda k: (7, "h", 9092)), version)
    found = resp.coordinators if version >= 4 else [resp]
    assert [(c.node_id, c.host, c.port, c.error_code) for c in found] == [(7, "h", 9092, 0)] * len(keys)
    resp = roundtrip(find_coordinator(version, body, lambda k: None), version)
    assert all(c.error_code == UNAVAILABLE for c in (resp.coordinators if version >= 4 else [resp]))
    if version >= 1:
        resp = find_coordinator(version, FindCoordinatorRequest(key="t", key_type=1, coordinator_keys=["t"]),
                                lambda k: (7, "h", 9092))
        assert (resp.coordinators[0] if version >= 4 else resp).error_code == UNAVAILABLE


def requests(version):
    """One request per group API with two groups/partitions where the API can carry them."""
    return {
        8: ocq.OffsetCommitRequest(group_id="g", topics=[ocq.OffsetCommitRequestTopic(name="t", partitions=[
            ocq.OffsetCommitRequestPartition(partition_index=0), ocq.OffsetCommitRequestPartition(partition_index=1)])]),
        9: ofq.OffsetFetchRequest(group_id="g", topics=[ofq.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])],
                                  groups=[ofq.OffsetFetchRequestGroup(group_id="g"),
                                          ofq.OffsetFetchRequestGroup(group_id="h")]),
        11: jgq.JoinGroupRequest(group_id="g", member_id="m-1", protocol_type="consumer"),
        12: HeartbeatRequest(group_id="g", generation_id=1, member_id="m-1"),
        13: LeaveGroupRequest(group_id="g", member_id="m-1"),
        14: SyncGroupRequest(group_id="g", generation_id=1, member_id="m-1"),
        15: DescribeGroupsRequest(groups=["g", "h"]),
        16: ListGroupsRequest(),
    }


@pytest.mark.parametrize(("api_key", "version"), [(k, v) for k in (8, 9, 11, 12, 13, 14, 15, 16)
                                                  for v in range(GROUP_APIS[k][0], GROUP_APIS[k][1] + 1)])
def test_error_answers_encode_at_every_version_and_cover_everything_asked(api_key, version):
    body = requests(version)[api_key]
    resp = roundtrip(error_response(api_key, version, body), version)
    if api_key == 8:
        assert [p.error_code for p in resp.topics[0].partitions] == [UNAVAILABLE, UNAVAILABLE]
    elif api_key == 9 and version >= 8:
        assert [(g.group_id, g.error_code) for g in resp.groups] == [("g", UNAVAILABLE), ("h", UNAVAILABLE)]
    elif api_key == 9 and version >= 2:
        assert resp.error_code == UNAVAILABLE
    elif api_key == 9:
        assert [(p.committed_offset, p.error_code) for p in resp.topics[0].partitions] == [(-1, UNAVAILABLE)] * 2
    elif api_key == 15:
        assert [(g.group_id, g.error_code) for g in resp.groups] == [("g", UNAVAILABLE), ("h", UNAVAILABLE)]
    else:
        assert resp.error_code == UNAVAILABLE
    if api_key == 11:
        assert resp.member_id == "m-1"
