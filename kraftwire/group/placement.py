"""Where a consumer group is coordinated, as every node computes it (pure): Java's String hash of the group
id picks a voter (``owner_of``, as Kafka picks a ``__consumer_offsets`` partition) or, on a broker, one of
the live brokers for ListGroups' share; ``find_coordinator`` builds a FindCoordinator answer from where a
group lives. ``coordinating_voter`` is the voter a node sends a group to, and ``CoordinatorLookup`` a
broker's belief of it with the offsets quorum (asked with FindCoordinator, dropped when an answer says the
coordinator moved): the decisions of the shell's ``GroupRouter``, which the simulator makes the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraftwire.group.responses import find_coordinator_response
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors

Voter = tuple[int, str, int]
KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE = 0, 1, 2   # FindCoordinator's KeyType
UNAVAILABLE = int(Errors.COORDINATOR_NOT_AVAILABLE)
NOT_COORDINATOR = int(Errors.NOT_COORDINATOR)
#: answers after which a broker looks the coordinating voter up again (raft placement)
MOVED = frozenset((UNAVAILABLE, NOT_COORDINATOR, int(Errors.COORDINATOR_LOAD_IN_PROGRESS)))


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


def coordinating_voter(group_id: str, voters: list[Voter], *, replicated: bool, leader_id: int | None) -> Voter | None:
    """The voter coordinating ``group_id``: with the offsets quorum (``replicated``) the one ``leader_id`` names
    (None while it is unknown or not a voter), else the group's hash owner."""
    if not replicated:
        return owner_of(group_id, voters)
    return next((v for v in voters if v[0] == leader_id), None)


def errors_in(message: Any) -> set[int]:
    """Every ``error_code`` in a response, nested entries (topics, partitions, groups) included."""
    found: set[int] = set()
    stack = [message]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        for name in getattr(item, "__slots__", ()):
            value = getattr(item, name, None)
            if name == "error_code" and isinstance(value, int):
                found.add(value)
            elif isinstance(value, list) and value and hasattr(value[0], "__slots__"):
                stack.append(value)
    return found


class CoordinatorLookup:
    """A broker's belief of the voter coordinating every group (offsets quorum placement): found by asking
    the voters in turn with FindCoordinator (``probes``, ``found``), kept until a relayed answer says the
    coordinator moved (``answered``) or it cannot be reached (``unreachable``)."""

    def __init__(self) -> None:
        self.coordinator_id: int | None = None
        self._next_probe = 0

    def probes(self, voter_ids: list[int]) -> list[int]:
        """The voters to ask, in turn (starting with the one that answered last time)."""
        n = len(voter_ids)
        return [voter_ids[(self._next_probe + i) % n] for i in range(n)]

    def found(self, voter_ids: list[int], asked: int, answer: Any) -> bool:
        """Voter ``asked`` answered FindCoordinator with ``answer``: True (and remembered) if it names a voter."""
        if answer.error_code != 0 or answer.node_id not in voter_ids:
            return False
        self._next_probe = voter_ids.index(asked)
        self.coordinator_id = answer.node_id
        return True

    def none_found(self) -> None:
        """No voter named a coordinator: start the next lookup one voter further."""
        self._next_probe += 1

    def answered(self, node_id: int, api_key: int, response: Any) -> None:
        """Voter ``node_id`` answered a relayed request: an error saying the coordinator moved drops it."""
        if node_id == self.coordinator_id and api_key != ApiKey.LIST_GROUPS and errors_in(response) & MOVED:
            self.coordinator_id = None

    def unreachable(self, node_id: int) -> None:
        if node_id == self.coordinator_id:
            self.coordinator_id = None
