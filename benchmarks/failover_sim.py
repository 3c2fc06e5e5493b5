"""Simulated leader-failover latency and split-vote rate, ours vs Kafka-3.7-style detection.

Kafka's default timeouts (RaftConfig()), 1-5 ms network latency, continuous appends. After the
first leader has been stable for a while it crashes for good (its process dies: connections to it close
and new ones are refused, as after ``kill -9``; ``--silent-host``: every request to it times out); we
measure the simulated time until a new leader exists. A *split vote* is a failover where two voters stood in the same epoch or the
first epoch after the crash produced no leader.

    python benchmarks/failover_sim.py [--seeds 300] [--voters 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, replace

from kraftwire.raft import RaftConfig
from kraftwire.sim.cluster import Simulation
from kraftwire.sim.config import SimConfig

MODES = {
    "kraftwire": RaftConfig(),                          # jittered fetch-timeout detection + pre-vote (KIP-996)
    "kraftwire-no-prevote": RaftConfig(pre_vote=False),  # jittered detection, direct candidacy
    "kraftwire-no-refused": RaftConfig(refused_standoff_ms=None),  # a crash noticed by the fetch timeout only
    "kafka37": RaftConfig(fetch_timeout_jitter=0.0, pre_vote=False, refused_standoff_ms=None),  # Kafka 3.x
    "kafka4x": RaftConfig(fetch_timeout_jitter=0.0, refused_standoff_ms=None),  # fixed fetch timeout + pre-vote
}


@dataclass
class Failover:
    latency_ms: int | None
    split: bool


def failover_once(seed: int, raft: RaftConfig, voters: int, crash_at: int = 5000,
                  give_up_ms: int = 60_000, refuse: bool = True) -> Failover:
    """``refuse``: the leader's process dies on a live host (connections to it close, new ones are refused,
    as after ``kill -9``); False: its host goes silent (every request times out)."""
    cfg = SimConfig(voters=voters, observers=0, faults=frozenset(), raft=raft, refuse_when_down=refuse,
                    duration_ms=crash_at + give_up_ms, fault_until_ms=crash_at + give_up_ms,
                    liveness_bound_ms=1)
    sim = Simulation(seed, cfg)
    sim.start()
    while sim.now < crash_at and sim.step():
        pass
    leaders = [n for n in sim.nodes.values() if n.core is not None and n.core.is_leader]
    if not leaders:
        return Failover(None, False)
    old = leaders[0]
    old_epoch = old.core.epoch
    sim.crash(old.node_id)
    t0 = sim.now
    stood: dict[int, set[int]] = {}
    while sim.step() and sim.now < t0 + give_up_ms:
        for n in sim.nodes.values():
            c = n.core
            if c is None:
                continue
            if c.state_name == "candidate":
                stood.setdefault(c.epoch, set()).add(n.node_id)
            if c.is_leader and c.epoch > old_epoch:
                split = any(len(ids) > 1 for ids in stood.values()) or c.epoch > old_epoch + 1
                return Failover(sim.now - t0, split)
    return Failover(None, True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--voters", type=int, nargs="+", default=[3, 5])
    ap.add_argument("--silent-host", action="store_true",
                    help="the leader's host goes silent (requests time out) instead of its process dying "
                         "(connections closed, then refused)")
    args = ap.parse_args()
    for voters in args.voters:
        for mode, raft in MODES.items():
            t = time.perf_counter()
            runs = [failover_once(seed, replace(raft), voters, refuse=not args.silent_host)
                    for seed in range(args.seeds)]
            lat = sorted(r.latency_ms for r in runs if r.latency_ms is not None)
            splits = sum(r.split for r in runs)
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan")
            print(f"voters={voters} mode={mode:9s} seeds={len(runs)} failover_ms median={statistics.median(lat):.0f} "
                  f"p99={p99} max={lat[-1]} split_votes={splits} ({100 * splits / len(runs):.1f}%) "
                  f"no_leader={len(runs) - len(lat)} wall={time.perf_counter() - t:.1f}s", flush=True)


if __name__ == "__main__":
    main()
