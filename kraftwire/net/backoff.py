"""Reconnect backoff: how soon a client may open a new connection to an address that failed it.

Kafka's NetworkClient rule (``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms``): after the n-th
failed attempt in a row (n from 0) to reach an address, the next attempt waits
``initial * 2**n`` ms, capped at the maximum, times a random factor in ``[1 - jitter, 1 + jitter)``
(never above the maximum); a connection that comes up (TCP, TLS, ApiVersions, SASL all done)
resets the count. While an address waits, a ``Connection`` to it fails at once with
``RequestFailed`` instead of opening a socket, as Kafka's client treats a node that is not ready;
callers keep their own retry timers (Raft's ``controller.quorum.retry.backoff.ms``).

``ReconnectBackoff`` keeps one ``AddressBackoff`` per ``(host, port)``: a node's lanes, relays and
one-off connections to the same peer share it. Once an address has failed, one attempt at a time
probes it (``probe``): the others wait for its outcome instead of dialling too, so a peer that is
down sees one connection per backoff period whatever the number of lanes (Kafka's client has one
connection per node). Clock and random source are injected (tests).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable

import anyio

DEFAULT_INITIAL_MS = 50
DEFAULT_MAX_MS = 1000
JITTER = 0.2


class ExponentialBackoff:
    """``initial_ms * 2**attempts`` capped at ``max_ms``, jittered by ``±jitter`` (Kafka's ExponentialBackoff)."""

    def __init__(self, initial_ms: float, max_ms: float, *, jitter: float = JITTER,
                 random_unit: Callable[[], float] = random.random) -> None:
        self.max_ms = max_ms
        self.initial_ms = min(initial_ms, max_ms)
        self.jitter = jitter
        self._random = random_unit
        # the exponent at which the cap is reached (0: a constant backoff)
        self._max_exp = math.log2(max_ms / max(self.initial_ms, 1)) if max_ms > self.initial_ms else 0.0

    def backoff_ms(self, attempts: int) -> float:
        if self._max_exp == 0:
            return self.initial_ms
        term = self.initial_ms * 2 ** min(attempts, self._max_exp)
        factor = 1.0 + self.jitter * (2 * self._random() - 1) if self.jitter > 0 else 1.0
        return min(term * factor, self.max_ms)


class AddressBackoff:
    """One address's state: failures in a row and until when a new attempt must wait."""

    def __init__(self, policy: ExponentialBackoff, clock: Callable[[], float]) -> None:
        self._policy = policy
        self._clock = clock
        self.failures = 0
        self._until = 0.0
        self.probe: anyio.Event | None = None   # set while one connection probes an address that failed

    def delay_s(self) -> float:
        """Seconds before a new connection attempt is allowed (0: now)."""
        return max(0.0, self._until - self._clock())

    def failed(self) -> None:
        """A connection attempt failed (refused, timed out, or closed before it was ready)."""
        self._until = self._clock() + self._policy.backoff_ms(self.failures) / 1000
        self.failures += 1

    def succeeded(self) -> None:
        """A connection became ready: the next failure starts from the initial backoff again."""
        self.failures = 0
        self._until = 0.0


class ReconnectBackoff:
    """Per-address reconnect backoff of one client (a node's ``PeerClient``, a command's connections)."""

    def __init__(self, initial_ms: float = DEFAULT_INITIAL_MS, max_ms: float = DEFAULT_MAX_MS, *,
                 clock: Callable[[], float] = time.monotonic,
                 random_unit: Callable[[], float] = random.random) -> None:
        self.policy = ExponentialBackoff(initial_ms, max_ms, random_unit=random_unit)
        self._clock = clock
        self._by_address: dict[tuple[str, int], AddressBackoff] = {}

    @classmethod
    def from_config(cls, cfg: object) -> ReconnectBackoff:
        """From a node's ``reconnect.backoff.ms`` and ``reconnect.backoff.max.ms``."""
        get = cfg.__getitem__  # type: ignore[attr-defined]
        return cls(get("reconnect.backoff.ms"), get("reconnect.backoff.max.ms"))

    def for_address(self, host: str, port: int) -> AddressBackoff:
        key = (host, port)
        state = self._by_address.get(key)
        if state is None:
            state = self._by_address[key] = AddressBackoff(self.policy, self._clock)
        return state
