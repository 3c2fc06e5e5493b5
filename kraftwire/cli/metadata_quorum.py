"""``kraftwire metadata-quorum``: describe a quorum like kafka-metadata-quorum.sh does."""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from typing import Any

import anyio

from kraftwire.cli.client_config import add_command_config, command_security
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.describe_quorum_request import (
    DescribeQuorumRequest,
    PartitionData,
    TopicData,
)
from kraftwire.security.settings import ClientSecurity

METADATA_TOPIC = "__cluster_metadata"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metadata-quorum", help="describe the metadata quorum (like kafka-metadata-quorum.sh)",
                       description="Describe the KRaft metadata quorum: leader, epoch, high watermark, "
                                   "voters and observers, and each replica's replication state.")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--bootstrap-server", metavar="HOST:PORT", help="a broker or node client listener")
    target.add_argument("--bootstrap-controller", metavar="HOST:PORT", help="a controller listener")
    add_command_config(p)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for an answer (default 10)")
    dsub = p.add_subparsers(dest="action", metavar="describe", required=True)
    d = dsub.add_parser("describe", help="describe the quorum")
    what = d.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="leader, epoch, high watermark, voters, observers")
    what.add_argument("--replication", action="store_true", help="one row per voter and observer")
    d.add_argument("--human-readable", action="store_true", help="timestamps as durations ago")
    d.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def _split(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit():
        raise SystemExit(f"error: expected HOST:PORT, got {addr!r}")
    return host.strip("[]"), int(port)


async def describe(addr: str, timeout_s: float, security: ClientSecurity | None = None, *,
                   controller: bool = True) -> dict[str, Any]:
    """Ask the node at ``addr`` (following the leader if needed) for the quorum's state; ``controller``
    says whether ``addr`` is a controller listener (--bootstrap-controller) or a broker's."""
    host, port = _split(addr)
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        try:
            result = await _describe(tg, host, port, timeout_s, security, 2 if controller else 1)
        except (RequestFailed, OSError, TimeoutError) as e:
            failure = e     # raised outside the task group, so callers see it unwrapped
        finally:
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


async def _describe(tg: Any, host: str, port: int, timeout_s: float,
                    security: ClientSecurity | None, endpoint_type: int = 2) -> dict[str, Any]:
    conn = Connection(tg, host, port, client_id="kraftwire-metadata-quorum", connect_timeout_s=timeout_s,
                      security=security)
    cluster = await conn.request(DescribeClusterRequest(endpoint_type=endpoint_type), None, timeout_s)
    if cluster.error_code == Errors.MISMATCHED_ENDPOINT_TYPE:  # a broker named as a controller, or the reverse
        cluster = await conn.request(DescribeClusterRequest(endpoint_type=3 - endpoint_type), None, timeout_s)
    if cluster.error_code:
        raise RequestFailed(f"DescribeCluster failed: {Errors.of(cluster.error_code)!r}")
    request = DescribeQuorumRequest(topics=[TopicData(METADATA_TOPIC, [PartitionData(0)])])
    for _ in range(3):
        resp = await conn.request(request, None, timeout_s)
        part = resp.topics[0].partitions[0] if resp.topics and resp.topics[0].partitions else None
        code = resp.error_code or (part.error_code if part else int(Errors.UNKNOWN_SERVER_ERROR))
        if code == Errors.NOT_LEADER_OR_FOLLOWER and part is not None and part.leader_id >= 0:
            ep = _endpoint(resp, part.leader_id) or _cluster_endpoint(cluster, part.leader_id)
            if ep is None:
                raise RequestFailed(f"leader {part.leader_id} is not reachable: no endpoint known")
            await conn.close()
            conn = Connection(tg, ep[0], ep[1], client_id="kraftwire-metadata-quorum", connect_timeout_s=timeout_s,
                              security=security)
            continue
        if code:
            raise RequestFailed(f"DescribeQuorum failed: {Errors.of(code)!r} {resp.error_message or ''}".strip())
        await conn.close()
        return _result(cluster, resp, part)
    raise RequestFailed("DescribeQuorum: no leader answered")


def _endpoint(resp: Any, node_id: int) -> tuple[str, int] | None:
    for node in getattr(resp, "nodes", None) or []:
        if node.node_id == node_id and node.listeners:
            return node.listeners[0].host, node.listeners[0].port
    return None


def _cluster_endpoint(cluster: Any, node_id: int) -> tuple[str, int] | None:
    for b in cluster.brokers:
        if b.broker_id == node_id:
            return b.host, b.port
    return None


def _result(cluster: Any, resp: Any, part: Any) -> dict[str, Any]:
    hw = part.high_watermark

    def rows(replicas: list[Any], kind: str) -> list[dict[str, Any]]:
        out = []
        for r in replicas:
            status = "Leader" if r.replica_id == part.leader_id and kind == "Follower" else kind
            out.append({"NodeId": r.replica_id,
                        "DirectoryId": _dir_id(getattr(r, "replica_directory_id", None)),
                        "LogEndOffset": r.log_end_offset,
                        "Lag": max(0, hw - r.log_end_offset) if hw >= 0 else 0,
                        "LastFetchTimestamp": r.last_fetch_timestamp,
                        "LastCaughtUpTimestamp": r.last_caught_up_timestamp,
                        "Status": status})
        return out

    voters = rows(part.current_voters, "Follower")
    observers = rows(part.observers, "Observer")
    now = int(time.time() * 1000)
    followers = [v for v in voters if v["Status"] != "Leader"]
    max_lag = max((v["Lag"] for v in followers), default=0)
    lag_times = [now - v["LastCaughtUpTimestamp"] for v in followers if v["LastCaughtUpTimestamp"] >= 0]
    leader_row = next((v for v in voters if v["Status"] == "Leader"), None)
    if leader_row is not None and leader_row["LastCaughtUpTimestamp"] < 0:
        leader_row["LastCaughtUpTimestamp"] = leader_row["LastFetchTimestamp"] = now
    return {
        "ClusterId": cluster.cluster_id,
        "LeaderId": part.leader_id,
        "LeaderEpoch": part.leader_epoch,
        "HighWatermark": hw,
        "MaxFollowerLag": max_lag,
        "MaxFollowerLagTimeMs": max(lag_times, default=0) if followers else 0,
        "CurrentVoters": [v["NodeId"] for v in voters],
        "CurrentObservers": [o["NodeId"] for o in observers],
        "Replication": voters + observers,
        "NowMs": now,
    }


def _dir_id(value: Any) -> str:
    import base64
    import uuid

    if not isinstance(value, uuid.UUID):
        return ""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def _ago(ts: int, now: int) -> str:
    return "-1" if ts < 0 else f"{max(0, now - ts)} ms ago"


def render_status(r: dict[str, Any]) -> str:
    keys = ["ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs",
            "CurrentVoters", "CurrentObservers"]
    return "\n".join(f"{k + ':':<24}{_fmt(r[k])}" for k in keys)


def _fmt(v: Any) -> str:
    return "[" + ",".join(str(x) for x in v) + "]" if isinstance(v, list) else str(v)


def render_replication(r: dict[str, Any], human: bool) -> str:
    cols = ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"]
    table = [cols]
    for row in r["Replication"]:
        cells = []
        for c in cols:
            v = row[c]
            if human and c in ("LastFetchTimestamp", "LastCaughtUpTimestamp"):
                v = _ago(v, r["NowMs"])
            cells.append(str(v))
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(cols))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in table)


def run(args: argparse.Namespace) -> int:
    addr = args.bootstrap_controller or args.bootstrap_server
    result = anyio.run(partial(describe, addr, args.timeout, command_security(args.command_config),
                               controller=bool(args.bootstrap_controller)))
    if args.json:
        result = dict(result)
        result.pop("NowMs")
        if args.status:
            result.pop("Replication")
        else:
            result = {"Replication": result["Replication"]}
        print(json.dumps(result, indent=2))
    elif args.status:
        print(render_status(result))
    else:
        print(render_replication(result, args.human_readable))
    return 0
