"""``kraftwire doctor --bootstrap-controller HOST:PORT,...``: why a quorum or a broker is unhealthy, in plain words.

Asks every controller it can find (the bootstrap list plus the voters DescribeQuorum and
DescribeCluster name) for ApiVersions (supported and finalized features), DescribeQuorum and
DescribeCluster, reads the metadata image as ``metadata-shell --bootstrap-controller`` does, and
prints findings with their evidence (``kraftwire.cli.diagnosis``): no leader (unreachable voters,
epochs), voters falling behind, why each fenced broker is fenced, upgrades blocked by nodes whose
feature ranges are too low, partitions offline or under min ISR. Works against kraftwire and Kafka
quorums. Exit status: 0 healthy, 1 problems found, 7 nothing answered.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import anyio

from kraftwire.cli.diagnosis import OK, PROBLEM, Evidence, Finding, Probe, Replica, diagnose
from kraftwire.cli.errors import ExitCode, classify, kafka_error
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.describe_quorum_request import (
    DescribeQuorumRequest,
    PartitionData,
    TopicData,
)
from kraftwire.protocol.metadata import METADATA_TOPIC

MARKS = {OK: "ok     ", PROBLEM: "PROBLEM", "note": "note   "}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="explain why a quorum or broker is unhealthy (plain words, with evidence)",
                       description="Check a KRaft quorum (kraftwire or Kafka): leader and voters, fenced brokers, "
                                   "feature upgrades, offline and under-min-ISR partitions.")
    p.add_argument("--bootstrap-controller", dest="bootstrap", required=True, metavar="HOST:PORT[,...]",
                   help="controller listeners (every one is asked; list all voters to diagnose a lost leader)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds allowed per node (default 5)")
    p.add_argument("--command-config", metavar="FILE", help="Kafka client properties (security.protocol, ...)")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kraftwire.cli.bootstrap import parse_bootstrap
    from kraftwire.cli.client_config import command_security

    addresses = [f"{h}:{p}" for h, p in parse_bootstrap(args.bootstrap, "--bootstrap-controller")]
    security = command_security(args.command_config)
    ev = anyio.run(gather, addresses, args.timeout, security)
    read_image(ev, args.timeout, security)
    findings = diagnose(ev)
    if args.json:
        print(json.dumps({"findings": [f.to_json() for f in findings]}, indent=2))
    else:
        write_text(findings)
    if all(p.error is not None for p in ev.probes):
        return ExitCode.UNREACHABLE
    return ExitCode.FAILED if any(f.severity == PROBLEM for f in findings) else 0


def write_text(findings: list[Finding]) -> None:
    for f in findings:
        print(f"{MARKS.get(f.severity, f.severity)} [{f.area}] {f.text}")
        for e in f.evidence:
            print(f"          - {e}")


async def gather(addresses: list[str], timeout: float, security: Any) -> Evidence:
    """Probe every address (and every controller they name) once."""
    ev = Evidence(now_ms=int(time.time() * 1000), probes=[])
    queue = list(addresses)
    seen: set[str] = set()
    ids: dict[str, int] = {}     # address -> node id, as the controllers name each other
    while queue:
        addr = queue.pop(0)
        if addr in seen:
            continue
        seen.add(addr)
        probe, named = await _probe(addr, timeout, security, ev)
        ev.probes.append(probe)
        ids.update(named)
        queue += [a for a in named if a not in seen]
    for p in ev.probes:
        p.node_id = ids.get(p.address, p.node_id)
    return ev


async def _probe(addr: str, timeout: float, security: Any, ev: Evidence) -> tuple[Probe, dict[str, int]]:
    host, _, port = addr.rpartition(":")
    probe = Probe(addr)
    named: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        conn = Connection(tg, host, int(port), client_id="kraftwire-doctor", connect_timeout_s=timeout,
                          security=security)
        try:
            with anyio.fail_after(timeout):
                versions = await conn.request(ApiVersionsRequest(client_software_name="kraftwire-doctor",
                                                                 client_software_version="1"), None, timeout)
                probe.supported = {f.name: (f.min_version, f.max_version) for f in versions.supported_features or []}
                probe.finalized = {f.name: f.max_version_level for f in versions.finalized_features or []}
                cluster = await conn.request(DescribeClusterRequest(endpoint_type=2), None, timeout)
                if not cluster.error_code:
                    for b in cluster.brokers:
                        named[f"{b.host}:{b.port}"] = b.broker_id
                        if (b.host, b.port) == (host, int(port)):
                            probe.node_id = b.broker_id
                await _quorum(conn, probe, ev, named, timeout)
        except (RequestFailed, KafkaProtocolError, OSError, TimeoutError) as e:
            probe.error = classify(e)[1].split("; ")[0]
        finally:
            await conn.close()
            tg.cancel_scope.cancel()
    return probe, named


async def _quorum(conn: Connection, probe: Probe, ev: Evidence, named: dict[str, int], timeout: float) -> None:
    resp = await conn.request(DescribeQuorumRequest(topics=[TopicData(METADATA_TOPIC, [PartitionData(0)])]), None,
                              timeout)
    part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
    code = resp.error_code or (part.error_code if part is not None else 0)
    if part is not None:
        probe.leader_id, probe.leader_epoch = part.leader_id, part.leader_epoch
    for node in getattr(resp, "nodes", None) or []:
        for listener in node.listeners[:1]:
            named[f"{listener.host}:{listener.port}"] = node.node_id
            if (listener.host, listener.port) == (conn.host, conn.port):
                probe.node_id = node.node_id
    if code:
        probe.quorum_error = f"DescribeQuorum: {kafka_error(code)}"
        return
    if part is None:
        return
    if ev.leader_id < 0 or part.leader_epoch > ev.leader_epoch:
        ev.leader_id, ev.leader_epoch, ev.high_watermark = part.leader_id, part.leader_epoch, part.high_watermark
        ev.voters = [_replica(r) for r in part.current_voters]
        ev.observers = [_replica(r) for r in part.observers]


def _replica(r: Any) -> Replica:
    return Replica(r.replica_id, r.log_end_offset, r.last_fetch_timestamp, r.last_caught_up_timestamp)


def read_image(ev: Evidence, timeout: float, security: Any) -> None:
    """The image from the answering controllers (the leader first), as metadata-shell reads it live."""
    from kraftwire.cli.metadata_shell import build_image, load_source

    reached = sorted((p for p in ev.probes if p.error is None), key=lambda p: p.node_id != ev.leader_id)
    if not reached:
        ev.image_error = "no controller answered"
        return
    try:
        src = load_source(None, ",".join(p.address for p in reached), max(timeout, 10.0), security)
        ev.image, ev.image_offset = build_image(src), src.last_offset
    except Exception as e:  # noqa: BLE001 - the image is one source of evidence among several
        ev.image_error = classify(e)[1]

