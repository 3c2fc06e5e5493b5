"""RaftDriver.submit and RaftDriver.handle_api (node/raft_driver.py): a request answered at once that
wrote nothing (a heartbeat, 5,000 a second at 10,000 brokers) wakes neither the timer nor the change
listeners; one after which more than its own answer came out does (issue #12: a timer wake-up per
heartbeat raised the active controller's CPU by half). ``handle_api`` gives the door's answer itself when
it came at once, else an awaitable; a ``Relay`` is carried out by the shell's ``relay`` and handed back."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from kraftwire.core import Relay, RelayKind, Respond
from kraftwire.node.raft_driver import RaftDriver
from kraftwire.protocol.requests import Reply

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


class _Node:
    """Just enough of a NodeCore: ``submit`` answers at once, with other outputs after it or not."""

    def __init__(self) -> None:
        self.raft = object()
        self.more: list[Any] = []

    def next_deadline(self) -> int | None:
        return 5_000

    def submit(self, now: int, rid: int, body: Any, version: int, origin: Any = None) -> list[Any]:
        return [Respond(rid, ("answer", body)), *self.more]


def _driver(node: _Node) -> tuple[RaftDriver, list[str]]:
    driver = RaftDriver(node, peers=None, request_timeout_ms=1000, leader_endpoints=[],  # type: ignore[arg-type]
                        clock=lambda: 1_000)
    seen: list[str] = []
    driver.on_change.append(lambda: seen.append("changed"))
    return driver, seen


async def test_an_answer_given_at_once_that_moves_nothing_wakes_nobody() -> None:
    node = _Node()
    driver, seen = _driver(node)
    changed, wake = driver.changed, driver._wake
    assert await driver.submit("hb", 1) == ("answer", "hb")
    assert await driver.submit("hb2", 1) == ("answer", "hb2")
    assert seen == [] and driver.changed is changed and not wake.is_set()


async def test_more_than_its_own_answer_wakes_the_timer_and_the_listeners() -> None:
    node = _Node()
    driver, seen = _driver(node)
    wake = driver._wake
    node.more = [Respond(-999, "an earlier request's answer, released by a commit")]
    assert await driver.submit("create", 1) == ("answer", "create")
    assert seen == ["changed"] and wake.is_set()


class _Later(_Node):
    """``submit`` answers nothing at once; the answer comes out of a later event (a commit)."""

    def __init__(self) -> None:
        super().__init__()
        self.rids: list[int] = []

    def submit(self, now: int, rid: int, body: Any, version: int, origin: Any = None) -> list[Any]:
        self.rids.append(rid)
        return []

    def commit(self, now: int) -> list[Any]:
        return [Respond(rid, ("committed", rid)) for rid in self.rids]


class _Door(_Later):
    """``handle_api`` answers broker 1 at once, relays broker 2, and leaves broker 3 for a commit."""

    def __init__(self) -> None:
        super().__init__()
        self.relayed: list[tuple[int, Any]] = []

    def handle_api(self, now: int, rid: int, request: Any, ctx: Any) -> list[Any]:
        if request == 1:
            return [Respond(rid, Reply("hb-answer", 1))]
        if request == 2:
            return [Relay(rid, RelayKind.FORWARD, request, ctx)]
        self.rids.append(rid)
        return []

    def handle_relayed(self, now: int, rid: int, reply: Any) -> list[Any]:
        self.relayed.append((rid, reply))
        return [Respond(rid, Reply(("completed", reply.body), 1))]

    def handle_relay_failed(self, now: int, rid: int) -> list[Any]:
        self.relayed.append((rid, None))
        return []


async def test_handle_api_answers_at_once_or_hands_back_what_to_await() -> None:
    node = _Door()
    driver, seen = _driver(node)
    assert driver.handle_api(1, None) == Reply("hb-answer", 1)   # a Reply, not a coroutine
    assert driver._waiting == {} and seen == []

    async def forward(relay: Relay) -> Reply:
        assert relay.kind is RelayKind.FORWARD
        return Reply("from the controller", 1)

    driver.relay = forward
    relayed = driver.handle_api(2, None)
    assert not isinstance(relayed, Reply)
    assert (await relayed).body == ("completed", "from the controller")
    assert [r for _, r in node.relayed] == [Reply("from the controller", 1)] and driver._waiting == {}

    async def broken(relay: Relay) -> Reply:
        raise RuntimeError("the peer client failed")

    driver.relay = broken
    with pytest.raises(RuntimeError):
        await driver.handle_api(2, None)   # the listener answers UNKNOWN_SERVER_ERROR; the core forgets it
    assert node.relayed[-1][1] is None and driver._waiting == {}

    later = driver.handle_api(3, None)
    async with anyio.create_task_group() as tg:
        got: list[Any] = []

        async def wait() -> None:
            got.append(await later)

        tg.start_soon(wait)
        await anyio.sleep(0.01)
        assert got == []
        driver.call(node.commit)
    assert got == [("committed", node.rids[0])] and driver._waiting == {}
