"""Rack-aware replica placement for new partitions.

Brokers are ordered so that consecutive entries alternate between racks (rack A's first broker,
rack B's first, rack C's first, rack A's second, ...). Partition ``p``'s leader is entry
``(start + p) mod n``; its followers are taken walking forward from there, first choosing brokers
on racks the partition does not use yet, so each partition spans min(RF, #racks) racks and
leadership is spread evenly. Brokers without a rack form their own group.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import zip_longest

from kraftwire.metadata.image import BrokerRegistration


class PlacementError(Exception):
    """The replication factor cannot be met by the usable brokers."""


def rack_alternating(brokers: Sequence[BrokerRegistration]) -> list[tuple[int, str | None]]:
    by_rack: dict[str | None, list[int]] = {}
    for b in sorted(brokers, key=lambda b: b.id):
        by_rack.setdefault(b.rack or None, []).append(b.id)
    racks = sorted(by_rack, key=lambda r: (r is None, r or ""))
    out: list[tuple[int, str | None]] = []
    for row in zip_longest(*(by_rack[r] for r in racks)):
        for rack, bid in zip(racks, row, strict=True):
            if bid is not None:
                out.append((bid, rack))
    return out


def place(
    brokers: Sequence[BrokerRegistration], num_partitions: int, replication_factor: int,
    start: int = 0, first_partition: int = 0,
) -> list[list[int]]:
    """Replica lists for ``num_partitions`` partitions of ``replication_factor`` replicas each."""
    if not brokers:
        raise PlacementError("all brokers are currently fenced or shutting down")
    if replication_factor > len(brokers):
        raise PlacementError(
            f"the target replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are usable")
    order = rack_alternating(brokers)
    n = len(order)
    nracks = len({r for _, r in order})
    out: list[list[int]] = []
    for i in range(num_partitions):
        p = first_partition + i
        lead = (start + p) % n
        # Shift followers by the "round" so that the same pairs don't always share partitions.
        shift = 1 + (p // n) % max(1, n - 1)
        replicas = [order[lead][0]]
        used_racks = {order[lead][1]}
        j = lead
        k = 0
        while len(replicas) < replication_factor:
            j = (lead + shift + k) % n
            k += 1
            bid, rack = order[j]
            if bid in replicas:
                if k > 2 * n:
                    break
                continue
            if rack in used_racks and len(used_racks) < nracks and k <= n:
                continue
            replicas.append(bid)
            used_racks.add(rack)
        if len(replicas) < replication_factor:  # fall back: any unused brokers in order
            for bid, _ in order:
                if bid not in replicas:
                    replicas.append(bid)
                    if len(replicas) == replication_factor:
                        break
        out.append(replicas)
    return out
