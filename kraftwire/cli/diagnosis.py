"""``kraftwire doctor``'s reasoning: evidence gathered from a quorum → findings in plain words.

Pure: ``doctor.py`` gathers (DescribeQuorum, DescribeCluster and ApiVersions from every controller it
can reach, and the metadata image read as metadata-shell reads it live); ``diagnose`` turns that into
findings, each with the evidence it rests on. Nothing here opens a socket or reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kraftwire.metadata.features import METADATA_VERSION, metadata_version_name
from kraftwire.metadata.image import NO_LEADER, MetadataImage

OK, PROBLEM, NOTE = "ok", "problem", "note"
FETCH_STALE_MS = 5_000     # an observer not fetching for this long is not following the log


@dataclass(slots=True)
class Probe:
    """One controller address as the doctor saw it."""

    address: str
    node_id: int | None = None
    error: str | None = None                       # why it could not be asked (None: it answered)
    leader_id: int = -1                            # its answer to DescribeQuorum (or the error's hint)
    leader_epoch: int = -1
    quorum_error: str | None = None
    supported: dict[str, tuple[int, int]] = field(default_factory=dict)   # ApiVersions SupportedFeatures
    finalized: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Replica:
    """A DescribeQuorum replica row (voter or observer)."""

    node_id: int
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass(slots=True)
class Evidence:
    now_ms: int
    probes: list[Probe]
    leader_id: int = -1                            # from the leader's DescribeQuorum answer, if any
    leader_epoch: int = -1
    high_watermark: int = -1
    voters: list[Replica] = field(default_factory=list)
    observers: list[Replica] = field(default_factory=list)
    image: MetadataImage | None = None
    image_error: str | None = None
    image_offset: int = -1


@dataclass(frozen=True, slots=True)
class Finding:
    severity: str
    area: str
    text: str
    evidence: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"severity": self.severity, "area": self.area, "text": self.text, "evidence": list(self.evidence)}


def _ago(now: int, ts: int) -> str:
    return "never" if ts < 0 else f"{max(0, now - ts) / 1000:.1f} s ago"


def _ids(ids: Any) -> str:
    return ", ".join(str(i) for i in ids) or "none"


def diagnose(ev: Evidence) -> list[Finding]:
    """Every finding, quorum first; an empty area gets one ``ok`` line."""
    out = quorum_findings(ev)
    if ev.image is None:
        out.append(Finding(NOTE, "image", f"the metadata image could not be read ({ev.image_error}); broker, "
                                          "feature and partition checks use what the controllers said"))
    else:
        out += broker_findings(ev)
    out += feature_findings(ev)
    if ev.image is not None:
        out += partition_findings(ev)
    return out


# -- quorum ------------------------------------------------------------------------------------------------
def quorum_findings(ev: Evidence) -> list[Finding]:
    reached = [p for p in ev.probes if p.error is None]
    down = [p for p in ev.probes if p.error is not None]
    facts = tuple(f"{_label(p)}: unreachable ({p.error})" for p in down) + tuple(
        f"{_label(p)}: answers; epoch {p.leader_epoch}, leader {p.leader_id if p.leader_id >= 0 else 'unknown'}"
        + (f" ({p.quorum_error})" if p.quorum_error else "") for p in reached)
    if not reached:
        return [Finding(PROBLEM, "quorum", "no controller answered: every address is unreachable, so nothing "
                                           "else can be checked; are the controllers running and is the address "
                                           "their controller listener?", facts)]
    if ev.leader_id < 0:
        voters = sorted({p.node_id for p in ev.probes if p.node_id is not None})
        epochs = sorted({p.leader_epoch for p in reached if p.leader_epoch >= 0})
        total = max(len(voters), len(ev.probes))
        need = total // 2 + 1
        believed = sorted({p.leader_id for p in reached if p.leader_id >= 0})
        here = {p.node_id for p in reached}
        lost = [b for b in believed if b in here]
        gone = [b for b in believed if b not in here]
        text = (f"no leader answers: {len(reached)} of {total} known voters answer and none of them leads "
                f"(epochs seen: {_ids(epochs)}"
                + (f"; node {_ids(lost)} led the last epoch but lost its majority" if lost else "")
                + (f"; still following {_ids(gone)}, which does not answer" if gone else "")
                + f"); a leader needs the votes of {need} of {total}")
        if len(reached) < need:
            text += (f", and only {len(reached)} are reachable: start the unreachable voters or fix the network "
                     "between them")
        else:
            text += (": a majority is reachable, so an election should finish within "
                     "controller.quorum.election.timeout.ms; if the epoch keeps rising, the voters cannot reach "
                     "each other on their controller listeners (check controller.quorum.bootstrap.servers/voters "
                     "and firewalls); votes cast are kept in each voter's quorum-state file, not reported over "
                     "the wire")
        return [Finding(PROBLEM, "quorum", text, facts)]
    out = [Finding(OK, "quorum", f"node {ev.leader_id} leads in epoch {ev.leader_epoch}, high watermark "
                                 f"{ev.high_watermark}; voters {_ids(sorted(v.node_id for v in ev.voters))}", facts)]
    leader = next((v for v in ev.voters if v.node_id == ev.leader_id), None)
    for v in ev.voters:
        if v.node_id == ev.leader_id or leader is None:
            continue
        lag = leader.log_end_offset - v.log_end_offset
        stale = v.last_fetch_ms < 0 or ev.now_ms - v.last_fetch_ms > FETCH_STALE_MS
        if stale or lag > 0 and ev.now_ms - max(v.last_caught_up_ms, 0) > FETCH_STALE_MS:
            probe = next((p for p in down if p.node_id == v.node_id), None)
            why = f"unreachable from here ({probe.error})" if probe else "reachable from here"
            fetched = ("has not fetched from the current leader at all" if v.last_fetch_ms < 0 else
                       f"last fetched {_ago(ev.now_ms, v.last_fetch_ms)}, last caught up "
                       f"{_ago(ev.now_ms, v.last_caught_up_ms)}")
            out.append(Finding(PROBLEM, "quorum",
                               f"voter {v.node_id} is not keeping up: lag {lag} records, {fetched}; it is {why}. "
                               "The quorum survives while a majority keeps up",
                               (f"leader log end offset {leader.log_end_offset}, voter {v.node_id}'s "
                                f"{v.log_end_offset}",)))
    return out


def _label(p: Probe) -> str:
    return f"node {p.node_id} ({p.address})" if p.node_id is not None else p.address


# -- brokers -----------------------------------------------------------------------------------------------
def broker_findings(ev: Evidence) -> list[Finding]:
    image = ev.image
    assert image is not None
    rows = {r.node_id: r for r in [*ev.voters, *ev.observers]}
    leader = next((v for v in ev.voters if v.node_id == ev.leader_id), None)
    out: list[Finding] = []
    for b in sorted(image.brokers.values(), key=lambda b: b.id):
        if not b.fenced and not b.in_controlled_shutdown:
            continue
        row = rows.get(b.id)
        facts = [f"image at offset {ev.image_offset}: fenced={str(b.fenced).lower()}, "
                 f"inControlledShutdown={str(b.in_controlled_shutdown).lower()}, epoch {b.epoch}"]
        if row is None and ev.leader_id < 0:
            why = ("there is no leader to say whether it fetches the metadata log; brokers cannot heartbeat "
                   "without an active controller")
        elif row is None:
            why = ("it is not fetching the metadata log (the leader does not list it as an observer): it is down "
                   "or cannot reach the controllers")
        else:
            lag = (leader.log_end_offset if leader else ev.high_watermark) - row.log_end_offset
            facts.append(f"DescribeQuorum: log end offset {row.log_end_offset} (lag {lag}), last fetch "
                         f"{_ago(ev.now_ms, row.last_fetch_ms)}, last caught up {_ago(ev.now_ms, row.last_caught_up_ms)}")
            if row.last_fetch_ms < 0 or ev.now_ms - row.last_fetch_ms > FETCH_STALE_MS:
                when = ("has not fetched from the current leader at all" if row.last_fetch_ms < 0 else
                        f"stopped fetching the metadata log {_ago(ev.now_ms, row.last_fetch_ms)}")
                why = (f"it {when}: it is down, paused or cut off from the controllers, and its heartbeats "
                       "stopped with it")
            elif lag > 0 and ev.now_ms - max(row.last_caught_up_ms, 0) > FETCH_STALE_MS:
                why = (f"it fetches but is {lag} records behind (last caught up "
                       f"{_ago(ev.now_ms, row.last_caught_up_ms)}): a broker is unfenced only once it has caught "
                       "up with its registration; check its disk and CPU")
            else:
                why = ("it fetches and is caught up, so its heartbeats are the problem: they fail or ask to stay "
                       "fenced (check the broker's log for heartbeat errors)")
        if b.in_controlled_shutdown:
            text = (f"broker {b.id} is in controlled shutdown (its leaderships are being moved away before it "
                    "stops)" + ("" if not b.fenced else " and fenced"))
            if row is not None and ev.now_ms - max(row.last_fetch_ms, 0) > FETCH_STALE_MS:
                text += f"; {why}"
        else:
            text = f"broker {b.id} is fenced: {why}"
        out.append(Finding(PROBLEM, "brokers", text, tuple(facts)))
    if not out:
        many = len(image.brokers) > 1
        text = (f"broker{'s' if many else ''} {_ids(sorted(image.brokers))} {'are' if many else 'is'} registered "
                "and unfenced" if image.brokers
                else "no broker is registered (a controller-only quorum so far)")
        out.append(Finding(OK, "brokers", text))
    return out


# -- features ----------------------------------------------------------------------------------------------
def _node_ranges(ev: Evidence) -> dict[str, dict[str, tuple[int, int]]]:
    """Supported feature ranges per node label: registrations in the image, ApiVersions of the probes."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    if ev.image is not None:
        for b in ev.image.brokers.values():
            out[f"broker {b.id}"] = {n: (lo, hi) for n, lo, hi in b.features}
        for c in ev.image.controllers.values():
            out[f"controller {c.id}"] = {n: (lo, hi) for n, lo, hi in c.features}
    for p in ev.probes:
        if p.error is None and p.supported:
            key = f"controller {p.node_id}" if p.node_id is not None else f"controller at {p.address}"
            out.setdefault(key, dict(p.supported))
    return out


def _finalized(ev: Evidence) -> dict[str, int]:
    if ev.image is not None:
        return dict(ev.image.features)
    for p in ev.probes:
        if p.finalized:
            return dict(p.finalized)
    return {}


def _level(name: str, level: int) -> str:
    return f"{level} ({metadata_version_name(level)})" if name == METADATA_VERSION else str(level)


def feature_findings(ev: Evidence) -> list[Finding]:
    ranges = _node_ranges(ev)
    finalized = _finalized(ev)
    out: list[Finding] = []
    names = sorted({n for r in ranges.values() for n in r} | set(finalized), key=lambda n: n != METADATA_VERSION)
    for name in names:
        level = finalized.get(name, 0)
        highs = {node: r.get(name, (0, 0))[1] for node, r in ranges.items()}
        if not highs:
            continue
        outside = [f"{node} supports {lo}-{hi}" for node, r in ranges.items()
                   for lo, hi in [r.get(name, (0, 0))] if not lo <= level <= hi and level > 0]
        if outside:
            out.append(Finding(PROBLEM, "features", f"{name} is finalized at {_level(name, level)} but some nodes "
                                                    "do not support that level: they cannot serve this cluster",
                               tuple(outside)))
        top, floor = max(highs.values()), min(highs.values())
        if floor < top:
            low = sorted(node for node, hi in highs.items() if hi == floor)
            out.append(Finding(PROBLEM, "features",
                               f"upgrade of {name} beyond {_level(name, floor)} is blocked by {', '.join(low)} "
                               f"(highest supported {floor}, others up to {top}); upgrade "
                               f"{'it' if len(low) == 1 else 'them'} first (finalized now: {_level(name, level)})",
                               tuple(f"{node}: max {hi}" for node, hi in sorted(highs.items()))))
    if not out:
        summary = ", ".join(f"{n}={_level(n, v)}" for n, v in sorted(finalized.items()))
        out.append(Finding(OK, "features", f"every node supports the finalized levels ({summary or 'none'}) and "
                                           "the same highest levels: nothing blocks an upgrade"))
    return out


# -- partitions --------------------------------------------------------------------------------------------
def partition_findings(ev: Evidence, static: dict[str, str] | None = None) -> list[Finding]:
    from kraftwire.controller.elr import topic_min_isr

    image = ev.image
    assert image is not None
    offline: list[str] = []
    under: list[str] = []
    for t in sorted(image.topics.values(), key=lambda t: t.name):
        for pid, p in sorted(t.partitions.items()):
            min_isr = topic_min_isr(image, t.name, len(p.replicas), static or {})
            state = "; ".join(_replica_state(image, r) for r in p.replicas)
            line = (f"{t.name}-{pid}: replicas {list(p.replicas)}, isr {list(p.isr)}"
                    + (f", elr {list(p.elr)}" if p.elr else "") + f" ({state})")
            if p.leader == NO_LEADER:
                offline.append(line)
            elif len(p.isr) < min_isr:
                under.append(f"{line}; min.insync.replicas {min_isr}")
    out: list[Finding] = []
    if offline:
        out.append(Finding(PROBLEM, "partitions", f"{len(offline)} partition{'s are' if len(offline) > 1 else ' is'}"
                                                  " offline (no leader): no eligible replica is an unfenced broker",
                           tuple(offline)))
    if under:
        out.append(Finding(PROBLEM, "partitions", f"{len(under)} partition{'s are' if len(under) > 1 else ' is'} "
                                                  "under min ISR: producers with acks=all get NOT_ENOUGH_REPLICAS",
                           tuple(under)))
    if not out:
        count = sum(len(t.partitions) for t in image.topics.values())
        out.append(Finding(OK, "partitions", f"all {count} partitions have a leader and at least min ISR in sync"
                           if count else "no partitions yet"))
    return out


def _replica_state(image: MetadataImage, r: int) -> str:
    b = image.brokers.get(r)
    if b is None:
        return f"{r} not registered"
    if b.fenced:
        return f"{r} fenced"
    if b.in_controlled_shutdown:
        return f"{r} shutting down"
    return f"{r} up"
