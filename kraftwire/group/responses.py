"""Version-aware builders for the group APIs' response bodies.

Each builder fills only what the requested version can carry, so the result always encodes at that version
(fields a version lacks are left at their defaults; nullable-by-version fields are normalised as Kafka's
response classes do).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import describe_groups_response as dgr
from kraftwire.protocol.messages import offset_commit_response as ocr
from kraftwire.protocol.messages import offset_fetch_response as ofr
from kraftwire.protocol.messages.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kraftwire.protocol.messages.heartbeat_response import HeartbeatResponse
from kraftwire.protocol.messages.join_group_response import JoinGroupResponse, JoinGroupResponseMember
from kraftwire.protocol.messages.leave_group_response import LeaveGroupResponse, MemberResponse
from kraftwire.protocol.messages.list_groups_response import ListGroupsResponse
from kraftwire.protocol.messages.sync_group_response import SyncGroupResponse


def join_response(version: int, error: int, member_id: str, *, generation: int = -1,
                  protocol_type: str | None = None, protocol_name: str | None = None, leader: str = "",
                  members: Iterable[tuple[str, str | None, bytes]] = (),
                  skip_assignment: bool = False) -> JoinGroupResponse:
    """A JoinGroup body; ``members`` is (member id, group.instance.id, metadata) for the leader only."""
    if version < 7:
        protocol_name = protocol_name or ""
        protocol_type = None
    elif protocol_name == "":
        protocol_name = None
    return JoinGroupResponse(
        error_code=int(error), generation_id=generation, protocol_type=protocol_type,
        protocol_name=protocol_name, leader=leader, skip_assignment=skip_assignment and version >= 9,
        member_id=member_id,
        members=[JoinGroupResponseMember(mid, iid if version >= 5 else None, meta) for mid, iid, meta in members],
    )


def sync_response(version: int, error: int, *, protocol_type: str | None = None,
                  protocol_name: str | None = None, assignment: bytes = b"") -> SyncGroupResponse:
    if version < 5:
        protocol_type = protocol_name = None
    return SyncGroupResponse(error_code=int(error), protocol_type=protocol_type, protocol_name=protocol_name,
                             assignment=assignment)


def heartbeat_response(version: int, error: int) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=int(error))


def leave_response(version: int, error: int, members: list[tuple[str, str | None, int]]) -> LeaveGroupResponse:
    """``members`` is (member id, group.instance.id, error) per leaving member.

    Before v3 there is one implicit member: its error becomes the top-level error.
    """
    if version >= 3:
        return LeaveGroupResponse(error_code=int(error),
                                  members=[MemberResponse(m, i, int(e)) for m, i, e in members])
    if error == 0 and members:
        error = members[0][2]
    return LeaveGroupResponse(error_code=int(error))


def find_coordinator_response(version: int, results: list[tuple[str, int, int, str, int]]
                              ) -> FindCoordinatorResponse:
    """``results`` is (key, error, node id, host, port) per key; before v4 exactly one key."""
    if version >= 4:
        return FindCoordinatorResponse(coordinators=[
            Coordinator(key=k, node_id=n, host=h, port=p, error_code=int(e), error_message=None)
            for k, e, n, h, p in results])
    _key, error, node, host, port = results[0]
    return FindCoordinatorResponse(error_code=int(error), error_message=None, node_id=node, host=host,
                                   port=port)


def error_response(api_key: int, version: int, body: Any, error: int = int(Errors.COORDINATOR_NOT_AVAILABLE)) -> Any:
    """The answer of group API ``api_key`` at ``version`` carrying ``error`` for everything asked."""
    if api_key == ApiKey.JOIN_GROUP:
        return join_response(version, error, body.member_id)
    if api_key == ApiKey.SYNC_GROUP:
        return sync_response(version, error)
    if api_key == ApiKey.HEARTBEAT:
        return heartbeat_response(version, error)
    if api_key == ApiKey.LEAVE_GROUP:
        return LeaveGroupResponse(error_code=error)
    if api_key == ApiKey.LIST_GROUPS:
        return ListGroupsResponse(error_code=error)
    if api_key == ApiKey.DESCRIBE_GROUPS:
        return dgr.DescribeGroupsResponse(groups=[dgr.DescribedGroup(error_code=error, group_id=g)
                                                  for g in body.groups])
    if api_key == ApiKey.OFFSET_COMMIT:
        return ocr.OffsetCommitResponse(topics=[ocr.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            ocr.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
            for p in t.partitions]) for t in body.topics])
    if api_key == ApiKey.OFFSET_FETCH:
        if version >= 8:
            return ofr.OffsetFetchResponse(groups=[ofr.OffsetFetchResponseGroup(group_id=g.group_id, error_code=error)
                                                   for g in body.groups])
        if version >= 2:
            return ofr.OffsetFetchResponse(error_code=error)
        return ofr.OffsetFetchResponse(topics=[ofr.OffsetFetchResponseTopic(name=t.name, partitions=[
            ofr.OffsetFetchResponsePartition(partition_index=i, committed_offset=-1, error_code=error)
            for i in t.partition_indexes]) for t in body.topics or []])
    return body.error_response(version, error, None)   # the generated answer carrying ``error`` everywhere
