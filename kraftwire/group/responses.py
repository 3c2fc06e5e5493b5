"""Version-aware builders for the group APIs' response bodies.

Each builder fills only what the requested version can carry, so the result always encodes at that version
(fields a version lacks are left at their defaults; nullable-by-version fields are normalised as Kafka's
response classes do).
"""

from __future__ import annotations

from collections.abc import Iterable

from kraftwire.protocol.messages.find_coordinator_response import Coordinator, FindCoordinatorResponse
from kraftwire.protocol.messages.heartbeat_response import HeartbeatResponse
from kraftwire.protocol.messages.join_group_response import JoinGroupResponse, JoinGroupResponseMember
from kraftwire.protocol.messages.leave_group_response import LeaveGroupResponse, MemberResponse
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
