"""Simulation settings and results."""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftwire.raft import RaftConfig

ALL_FAULTS = ("crash", "crash_unflushed", "torn_write", "wipe", "partition", "asymmetric",
              "drop", "delay", "duplicate", "reorder", "slow")
# Not in "all": ``isolate`` cuts one node off for 5-15 election timeouts. When it is the only fault,
# every leader that was never cut off stays leader (pre-vote, KIP-996) and the checker says so.
EXTRA_FAULTS = ("isolate",)

# Kafka's defaults divided by 5: the protocol is scale-free in time, and shorter timeouts mean
# fewer simulated events per failover, so hundreds of seeds run in CI time.
FAST_RAFT = RaftConfig(election_timeout_ms=200, fetch_timeout_ms=400, election_backoff_max_ms=200,
                       request_timeout_ms=400, retry_backoff_ms=20, append_linger_ms=5, fetch_max_wait_ms=100,
                       fetch_max_bytes=200, fetch_snapshot_max_bytes=64, defer_flush=True,
                       defer_state=True)


@dataclass(frozen=True, slots=True)
class SimConfig:
    """One simulated cluster run.

    Faults are injected during ``[0, fault_until_ms)`` (default: 60% of ``duration_ms``); then every
    fault heals (partitions removed, crashed nodes restarted, network clean) and the cluster must
    elect a leader and commit an append issued after the heal within ``liveness_bound_ms``.

    Every node snapshots its state machine after a number of committed records drawn from
    ``snapshot_records`` (None: never) and then cleans its log below the snapshot with probability
    ``snapshot_clean_p``. With ``controller`` the workload is a quorum controller on every voter driven
    by scripted brokers and an admin client (see ``kraftwire.sim.controller_sim``), bootstrapped at
    ``metadata_version``.

    A fresh quorum with machines missing: ``never_started`` voters never run, the others start within
    ``start_spread_ms``; with ``first_leader_within_ms`` the checker also demands a leader by then.
    """

    voters: int = 3
    observers: int = 1
    fsync_latency_ms: tuple[int, int] = (0, 6)   # a leader's PersistLog completes after this long
    faults: frozenset[str] = frozenset(ALL_FAULTS)
    duration_ms: int = 6000
    fault_until_ms: int | None = None
    liveness_bound_ms: int | None = None
    raft: RaftConfig = FAST_RAFT
    bugs: frozenset[str] = frozenset()
    append_interval_ms: tuple[int, int] = (10, 60)
    latency_ms: tuple[int, int] = (1, 5)
    fault_interval_ms: int = 250
    cluster_id: str = "sim-cluster"
    snapshot_records: tuple[int, int] | None = (10, 60)
    snapshot_clean_p: float = 0.75
    controller: bool = False   # run the quorum controller with scripted broker/admin agents on top
    old_vote_nodes: frozenset[int] = frozenset()   # nodes at Vote v1 (Kafka 3.9): no pre-vote, answer none
    metadata_version: int = 0  # with ``controller``: the level the cluster bootstraps at (0 = latest)
    wire: bool = False         # every message crosses the Kafka wire format (kraftwire.sim.wire)
    reconfig: bool = False     # KIP-853: an admin adds and removes voters meanwhile (kraftwire.sim.reconfig_sim)
    recovery: bool = False     # KIP-853 quorum loses all voters but one for good mid-run; recover-as-single-voter
                               # makes the survivor the quorum and voters are added back (kraftwire.sim.recovery_sim)
    groups: bool = False       # consumer groups through the doors on the offsets quorum (kraftwire.sim.groups_sim)
    never_started: int = 0     # voters (drawn per seed) that never run: a fresh quorum with machines missing
    start_spread_ms: int = 0   # each node starts at a time drawn in [0, start_spread_ms] (0: all at once)
    refuse_when_down: bool = False  # a crashed node's process is gone, its host up: connections to it close and a
    #                                 request reaching it is refused, one latency later (False: a host that went
    #                                 silent; requests to it time out)
    first_leader_within_ms: int | None = None   # liveness: a leader must exist this long after the start

    @property
    def stable_leader_check(self) -> bool:
        """Only isolations happen: a leader never cut off must never be deposed."""
        return bool(self.faults) and set(self.faults) <= set(EXTRA_FAULTS)

    @property
    def heal_at(self) -> int:
        return self.fault_until_ms if self.fault_until_ms is not None else self.duration_ms * 6 // 10

    @property
    def liveness_deadline(self) -> int:
        r = self.raft
        bound = self.liveness_bound_ms
        if bound is None:
            # Restart delay + a rejoin + a few election rounds (timeout, backoff) + commit round trips.
            bound = 1000 + 2 * r.fetch_timeout_ms + 6 * (2 * r.election_timeout_ms + r.election_backoff_max_ms)
        return self.heal_at + bound


@dataclass(slots=True)
class SeedResult:
    seed: int
    violations: list[str] = field(default_factory=list)
    events: int = 0
    committed: int = 0
    elections: int = 0
    max_epoch: int = 0
    snapshots: int = 0
    snapshot_loads: int = 0
    snapshot_downloads: int = 0
    voter_changes: int = 0     # with ``reconfig``: AddRaftVoter/RemoveRaftVoter answered NONE
    recovery: dict[str, int] = field(default_factory=dict)   # with ``recovery``: what the recovery kept and lost
    first_leader_ms: int | None = None   # when the first leader was seen (simulated ms from the start)
    repro: str = ""

    @property
    def ok(self) -> bool:
        return not self.violations
