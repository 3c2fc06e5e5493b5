"""Raft timing configuration, named after Kafka's ``controller.quorum.*`` settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Defaults are Kafka 3.9's.

    ``fetch_timeout_jitter`` is ours: a follower's fetch timeout is drawn uniformly from
    ``[fetch_timeout_ms * (1 - jitter), fetch_timeout_ms]`` on every successful fetch, so followers
    of a dead leader notice at different moments (0.0 reproduces Kafka's fixed timeout).

    ``fetch_snapshot_max_bytes`` is ours too: Kafka asks for a whole snapshot per FetchSnapshot
    (MaxBytes left at its 2^31-1 default); we ask for chunks of at most this size, so a large snapshot
    never needs one huge response buffer on either side.

    ``defer_flush``: the core does not fsync its log on the hot paths; it emits ``PersistLog`` and the
    shell runs the fsync off its event loop. A leader counts its own log toward the high watermark when
    ``handle_persisted`` reports the fsync done; its sends do not wait (Raft needs a majority's durable
    copies, not the leader's first). A follower or observer sends its next Fetch (which claims its log
    end) only once the fsync is reported.

    ``defer_state``: the core does not write ``quorum-state`` itself; it emits ``PersistState`` and the
    shell writes it off its event loop, sending nothing the core emitted after it until it is durable
    (a granted vote, a new epoch: Raft's rule that they are durable before anyone hears of them).

    ``refused_standoff_ms`` is ours: a follower whose leader *refuses the connection* (nothing listens at
    its address: the process is gone; the shell reports it with ``handle_request_failed(refused=True)``)
    stops waiting for its fetch timeout. It grants pre-votes at once (as after the leader's
    EndQuorumEpoch) and stands after a random delay in ``[0, refused_standoff_ms]``, so two followers
    that saw the same crash do not stand together. Its pre-vote is all it risks: a voter that still
    fetches from a live leader rejects it, and a lost pre-vote changes no epoch (KIP-996). A timeout or a
    closed connection is no evidence and changes nothing. None reproduces Kafka (the fetch timeout only).

    ``pre_vote`` is Kafka 4.x's KIP-996 election: a replica whose timer fires first asks the voters
    whether they would vote for it (Vote with PreVote=true, no epoch bump) and stands only with a
    majority. False reproduces Kafka 3.9 (used by the failover comparison).
    """

    election_timeout_ms: int = 1000          # controller.quorum.election.timeout.ms
    fetch_timeout_ms: int = 2000             # controller.quorum.fetch.timeout.ms
    election_backoff_max_ms: int = 1000      # controller.quorum.election.backoff.max.ms
    request_timeout_ms: int = 2000           # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20               # controller.quorum.retry.backoff.ms
    append_linger_ms: int = 25               # controller.quorum.append.linger.ms
    fetch_max_wait_ms: int = 500             # Kafka's hard-coded KRaft fetch MaxWaitMs
    fetch_max_bytes: int = 8 * 1024 * 1024   # Kafka's KRaft fetch max bytes
    fetch_snapshot_max_bytes: int = 8 * 1024 * 1024  # FetchSnapshot MaxBytes (Kafka sends 2^31-1)
    max_batch_records: int = 1000            # records per leader batch before draining early
    election_backoff_base_ms: int = 100      # Kafka's RETRY_BACKOFF_BASE_MS for election backoff
    check_quorum_factor: float = 1.5         # Kafka's CHECK_QUORUM_TIMEOUT_FACTOR
    fetch_timeout_jitter: float = 0.5
    refused_standoff_ms: int | None = 500   # ours: see above; None = wait for the fetch timeout (Kafka)
    pre_vote: bool = True                    # KIP-996 (Kafka 4.x); False = Kafka 3.9's direct candidacy
    defer_flush: bool = False                # log fsyncs are PersistLog outputs (server, simulator)
    defer_state: bool = False                # quorum-state writes are PersistState outputs (server, simulator)

    def __post_init__(self) -> None:
        if not 0.0 <= self.fetch_timeout_jitter < 1.0:
            raise ValueError("fetch_timeout_jitter must be in [0, 1)")
