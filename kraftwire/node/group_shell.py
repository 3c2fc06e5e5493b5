"""Async shell around the sans-I/O GroupCoordinator: parks pending joins/syncs, runs its timers.

Every group has one coordinator node, the same whichever node is asked: the voter at
``hash(group id) % voters`` (Kafka picks a __consumer_offsets partition the same way). FindCoordinator
answers that node; a group request that reaches another node anyway is proxied to the owner.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from kraftwire.group import Completion, Done, GroupCoordinator
from kraftwire.group.responses import find_coordinator_response
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors

FIND_COORDINATOR, LIST_GROUPS = 10, 16


def java_hash(text: str) -> int:
    """Java's String.hashCode (UTF-16 code units), as Kafka uses for group placement."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def owner_of(group_id: str, voters: list[tuple[int, str, int]]) -> tuple[int, str, int]:
    """The (node id, host, port) coordinating ``group_id``."""
    ordered = sorted(voters)
    return ordered[(java_hash(group_id) & 0x7FFFFFFF) % len(ordered)]


def group_key(api_key: int, version: int, body: Any) -> str | None:
    """The group a request addresses (the first one for multi-group requests), None if none."""
    if hasattr(body, "group_id") and not (api_key == 9 and version >= 8):
        return body.group_id
    groups = getattr(body, "groups", None)
    if groups:
        first = groups[0]
        return first if isinstance(first, str) else first.group_id
    return None


class GroupShell:
    """Serves group APIs: immediate answers return at once, parked ones when their completion arrives."""

    def __init__(self, coordinator: GroupCoordinator, clock: Callable[[], int],
                 voters: list[tuple[int, str, int]] | None = None) -> None:
        self.coordinator = coordinator
        self.clock = clock
        self.voters = voters or [(coordinator.node_id, coordinator.config.host, coordinator.config.port)]
        self._proxies: dict[int, Connection] = {}
        self._tg: Any = None
        self._parked: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self._wake = anyio.Event()

    async def handle(self, api_key: int, version: int, body: Any, client_id: str, client_host: str) -> Any:
        if api_key == FIND_COORDINATOR and body.key_type == 0:
            keys = body.coordinator_keys if version >= 4 else [body.key]
            return find_coordinator_response(version, [(k, Errors.NONE, *owner_of(k, self.voters)) for k in keys])
        group = group_key(api_key, version, body) if api_key != LIST_GROUPS else None
        if group is not None:
            owner = owner_of(group, self.voters)
            if owner[0] != self.coordinator.node_id:
                return await self._proxy(owner, body, version)
        result = self.coordinator.handle(self.clock(), api_key, version, body, client_id, client_host)
        if isinstance(result, Done):
            self._complete(result.completions)
            self._wake.set()
            return result.response
        event = anyio.Event()
        box: list[Any] = []
        self._parked[result.key] = (event, box)
        self._complete(result.completions)
        self._wake.set()
        try:
            await event.wait()
        finally:
            self._parked.pop(result.key, None)
        return box[0]

    def _complete(self, completions: tuple[Completion, ...] | list[Completion]) -> None:
        for c in completions:
            parked = self._parked.pop(c.key, None)
            if parked is not None:  # the client may have gone away; then the answer is dropped
                parked[1].append(c.response)
                parked[0].set()

    async def _proxy(self, owner: tuple[int, str, int], body: Any, version: int) -> Any:
        conn = self._proxies.get(owner[0])
        if conn is None:
            conn = self._proxies[owner[0]] = Connection(self._tg, owner[1], owner[2], client_id="kraftwire-group-proxy")
        try:
            return await conn.request(body, version, 330.0)
        except RequestFailed:
            from kraftwire.protocol.api import response_class

            cls = response_class(body.API_KEY)
            return cls(error_code=int(Errors.COORDINATOR_NOT_AVAILABLE)) if "error_code" in cls.__slots__ else cls()

    async def run_timer(self) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await self._timer()

    async def _timer(self) -> None:
        self._complete(self.coordinator.tick(self.clock()))
        while True:
            deadline = self.coordinator.next_deadline()
            delay = 1.0 if deadline is None else max(0.0, (deadline - self.clock()) / 1000)
            self._wake = anyio.Event()
            with anyio.move_on_after(min(delay, 1.0)):
                await self._wake.wait()
            self._complete(self.coordinator.tick(self.clock()))
