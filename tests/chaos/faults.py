"""Nemeses for the chaos lab: each injects one kind of fault in cycles until its deadline.

Victims are the current leader two times out of three (the interesting case), else a random voter.
Every cycle undoes its own fault, so the quorum is whole again between cycles: a restarted node is
waited for until it serves on its listener (``wait_serving``) and a node whose log was damaged until it
fetched back what it dropped (``wait_caught_up``, at most 30 s), so no cycle stacks a second fault on a
node still starting or re-joining (docs/reliability.md: the 22-77 s gaps of 3-voter kill -9 runs, and an
epoch-corruption run that damaged all three voters within seconds).
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from kraftwire.protocol.errors import CorruptRecordError
from kraftwire.protocol.records import iter_batches

from .lab import ChaosCluster, leader_of

_CRC_FROM = 21    # baseOffset 8, length 4, partitionLeaderEpoch 4, magic 1, crc 4: the CRC covers the rest


async def _victim(c: ChaosCluster, rng: random.Random) -> int:
    st = await leader_of(c, 1.0)
    c.note(f"leader seen: {st['LeaderId']} epoch {st['LeaderEpoch']}" if st is not None else "no leader seen")
    if st is not None and rng.random() < 2 / 3:
        return st["LeaderId"]
    return rng.randint(1, c.n)


async def kill9(c: ChaosCluster, rng: random.Random) -> None:
    """kill -9 a voter, leave it down 0.5–3 s, restart it."""
    v = await _victim(c, rng)
    c.kill(v, signal.SIGKILL)
    await anyio.sleep(rng.uniform(0.5, 3.0))
    c.start(v)
    await c.wait_serving(v)


async def sigstop(c: ChaosCluster, rng: random.Random) -> None:
    """SIGSTOP a voter for 1–4 s (a GC pause, a stuck disk), then SIGCONT."""
    v = await _victim(c, rng)
    c.check_alive()
    c.note(f"SIGSTOP node {v}")
    c.procs[v].send_signal(signal.SIGSTOP)
    await anyio.sleep(rng.uniform(1.0, 4.0))
    c.procs[v].send_signal(signal.SIGCONT)
    c.note(f"SIGCONT node {v}")


async def partition(c: ChaosCluster, rng: random.Random) -> None:
    """Isolate a voter (both ways), or split the voters into a minority and a majority, for 2–5 s."""
    v = await _victim(c, rng)
    if c.n >= 5 and rng.random() < 0.5:
        others = [n for n in range(1, c.n + 1) if n != v]
        side = [v, rng.choice(others)]
        c.note(f"split off {side}")
        c.net.split(side)
    else:
        c.note(f"isolate node {v}")
        c.net.isolate(v)
    await anyio.sleep(rng.uniform(2.0, 5.0))
    c.net.heal()
    c.note("heal")


async def one_way(c: ChaosCluster, rng: random.Random) -> None:
    """A voter's outgoing packets vanish while it still hears everyone, for 2–5 s."""
    v = await _victim(c, rng)
    c.note(f"one-way isolate node {v}")
    c.net.isolate(v, one_way=True)
    await anyio.sleep(rng.uniform(2.0, 5.0))
    c.net.heal()
    c.note("heal")


async def flapping(c: ChaosCluster, rng: random.Random) -> None:
    """A voter's links go down and up every 0.2–1 s for 4 s."""
    v = await _victim(c, rng)
    end = time.monotonic() + 4.0
    c.note(f"flapping node {v}")
    while time.monotonic() < end:
        c.net.isolate(v)
        await anyio.sleep(rng.uniform(0.2, 1.0))
        c.net.heal()
        await anyio.sleep(rng.uniform(0.2, 1.0))


async def disk_full(c: ChaosCluster, rng: random.Random) -> None:
    """Fill a voter's data disk for 2–4 s; a node that stopped on it is restarted once space is back."""
    v = await _victim(c, rng)
    c.note(f"fill disk of node {v}")
    c.disks[v].fill()
    await anyio.sleep(rng.uniform(2.0, 4.0))
    c.disks[v].free()
    c.note(f"free disk of node {v}")
    proc = c.procs[v]
    if proc.poll() is not None:
        c.expected_down.add(v)           # stopping on ENOSPC is the documented behaviour, not a death
        c.start(v)
        await c.wait_serving(v)


def _last_batch(data_dir: Path) -> tuple[Path, bytearray, int, int] | None:
    """The newest segment's bytes and its last whole batch's (position, size), if it has one."""
    segs = sorted((data_dir / "__cluster_metadata-0").glob("*.log"))
    for seg in reversed(segs):
        buf = bytearray(seg.read_bytes())
        last = None
        try:
            for _, pos, size in iter_batches(buf, verify_crc=False):
                last = (pos, size)
        except CorruptRecordError:
            pass
        if last is not None:
            return seg, buf, *last
    return None


def corrupt_tail(data_dir: Path, rng: random.Random) -> str:
    """Flip bytes of the newest batch where its CRC covers them (attributes onwards); what was done."""
    found = _last_batch(data_dir)
    if found is None:
        return "nothing to corrupt"
    seg, buf, pos, size = found
    for _ in range(4):
        buf[rng.randrange(pos + _CRC_FROM, pos + size)] ^= 1 << rng.randrange(8)
    seg.write_bytes(bytes(buf))
    return f"flipped 4 bits in the batch at position {pos} of {seg.name}"


def corrupt_epoch(data_dir: Path, rng: random.Random) -> str:
    """Raise the newest batch's partitionLeaderEpoch, a header field the batch CRC does not cover."""
    found = _last_batch(data_dir)
    if found is None:
        return "nothing to corrupt"
    seg, buf, pos, _ = found
    buf[pos + 13] ^= 1 << rng.randrange(8)    # bits 16-23 of the epoch: a jump by thousands
    seg.write_bytes(bytes(buf))
    return f"raised the leader epoch of the batch at position {pos} of {seg.name}"


async def corruption(c: ChaosCluster, rng: random.Random) -> None:
    """kill -9 a voter, flip bits inside its newest batch (CRC-covered), restart it."""
    v = await _victim(c, rng)
    c.kill(v, signal.SIGKILL)
    c.note(corrupt_tail(c.data_dir(v), rng))
    c.start(v)
    await c.wait_serving(v)
    await c.wait_caught_up(v)     # the fault is undone once the node fetched back what it dropped
    await anyio.sleep(rng.uniform(1.0, 3.0))


async def epoch_corruption(c: ChaosCluster, rng: random.Random) -> None:
    """kill -9 a voter, damage its newest batch's leader epoch (outside the CRC), restart it."""
    v = await _victim(c, rng)
    c.kill(v, signal.SIGKILL)
    c.note(corrupt_epoch(c.data_dir(v), rng))
    c.start(v)
    await c.wait_serving(v)
    await c.wait_caught_up(v)     # the fault is undone once the node fetched back what it dropped
    await anyio.sleep(rng.uniform(1.0, 3.0))


NEMESES: dict[str, Callable[[ChaosCluster, random.Random], Awaitable[None]]] = {
    "kill9": kill9, "sigstop": sigstop, "partition": partition, "one-way": one_way, "flapping": flapping,
    "disk-full": disk_full, "corruption": corruption, "epoch-corruption": epoch_corruption,
}


# Faults left out of the sample, long and mixed runs until a result is explained. Empty: the one
# unexplained epoch-corruption result (every acknowledged write "lost") was a quorum with all three
# voters damaged within seconds, which the checker then reported as lost writes (docs/reliability.md).
KNOWN_BROKEN: set[str] = set()


async def mixed(c: ChaosCluster, rng: random.Random) -> None:
    """One of the faults above, chosen at random (not the known-broken ones)."""
    await NEMESES[rng.choice(sorted(set(NEMESES) - KNOWN_BROKEN))](c, rng)


NEMESES["mixed"] = mixed
