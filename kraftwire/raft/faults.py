"""Deliberate bugs for mutation tests, injected into a ``RaftCore`` as one object.

The simulator's invariants are only worth something if they catch real mistakes; each flag here makes
the core misbehave in one known way so a test can show the simulation notices. Production code
never builds anything but ``NO_FAULTS``; the simulator builds one from ``--bugs`` names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class RaftFaults:
    """Which deliberate bugs are switched on (all off by default)."""

    double_vote: bool = False             # grant a second candidate in an epoch we already voted in
    observer_counts_for_hw: bool = False  # count observers' fetch offsets toward the high watermark
    no_own_epoch_hw_rule: bool = False    # commit before an entry of the leader's own epoch
    no_truncate_on_diverge: bool = False  # ignore a Fetch answer's diverging epoch
    snapshot_not_loaded: bool = False     # drop a downloaded snapshot instead of loading it
    prevote_lost_stands: bool = False     # stand as a candidate after losing the pre-vote
    two_changes_in_flight: bool = False   # KIP-853: start a voter change before the previous one committed
    hw_old_majority: bool = False         # KIP-853: commit on a majority of the first voter set, not the one in force
    rejoin_ignores_history: bool = False  # a voter without history votes once a majority answered, whatever their epochs
    rejoin_waits_for_all: bool = False    # a fresh voter waits for every other voter, not a majority, to answer
    recovery_truncates_unproven: bool = False   # recover-as-single-voter drops the records it cannot prove committed
    recovery_claims_log_end: bool = False       # recover-as-single-voter reports the whole log as committed

    @classmethod
    def named(cls, names: Iterable[str]) -> RaftFaults:
        """The faults with these names on; an unknown name is a ``ValueError``."""
        wanted = set(names)
        unknown = wanted - KNOWN_FAULTS
        if unknown:
            raise ValueError(f"unknown test bug flags: {sorted(unknown)}")
        return cls(**{name: True for name in wanted})

    @property
    def names(self) -> frozenset[str]:
        return frozenset(f.name for f in fields(self) if getattr(self, f.name))


KNOWN_FAULTS = frozenset(f.name for f in fields(RaftFaults))
NO_FAULTS = RaftFaults()
