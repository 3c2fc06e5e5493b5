"""Where a consumer group is coordinated, as every node computes it (pure): Java's String hash of the group
id picks a voter (``owner_of``, as Kafka picks a ``__consumer_offsets`` partition) or, on a broker, one of
the live brokers for ListGroups' share; ``find_coordinator`` builds a FindCoordinator answer from where a
group lives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraftwire.group.responses import find_coordinator_response
from kraftwire.protocol.errors import Errors

Voter = tuple[int, str, int]
KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE = 0, 1, 2   # FindCoordinator's KeyType
UNAVAILABLE = int(Errors.COORDINATOR_NOT_AVAILABLE)


def java_hash(text: str) -> int:
    """Java's String.hashCode (UTF-16 code units), as Kafka uses for group placement."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def owner_of(group_id: str, voters: list[Voter]) -> Voter:
    """The (node id, host, port) coordinating ``group_id``."""
    ordered = sorted(voters)
    return ordered[_slot(group_id, len(ordered))]


def hash_pick(group_id: str, node_ids: list[int]) -> int:
    """The node of ``node_ids`` (in that order) a group's hash picks."""
    return node_ids[_slot(group_id, len(node_ids))]


def _slot(group_id: str, n: int) -> int:
    return (java_hash(group_id) & 0x7FFFFFFF) % n


def find_coordinator(version: int, body: Any, locate: Callable[[str], Voter | None]) -> Any:
    """A FindCoordinator answer: groups where ``locate`` says (None: COORDINATOR_NOT_AVAILABLE);
    kraftwire has no transaction or share coordinators."""
    keys = body.coordinator_keys if version >= 4 else [body.key]
    results: list[tuple[str, int, int, str, int]] = []
    for key in keys:
        if body.key_type == KEY_TYPE_GROUP:
            node = locate(key)
            results.append((key, UNAVAILABLE, -1, "", -1) if node is None else (key, 0, *node))
        elif body.key_type == KEY_TYPE_SHARE and version < 6:
            results.append((key, int(Errors.INVALID_REQUEST), -1, "", -1))
        elif body.key_type in (KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE):
            results.append((key, UNAVAILABLE, -1, "", -1))
        else:
            results.append((key, int(Errors.INVALID_REQUEST), -1, "", -1))
    return find_coordinator_response(version, results)
