"""``kraftwire metadata-quorum``: describe a quorum like kafka-metadata-quorum.sh does."""

from __future__ import annotations

import argparse
import json
import time
from functools import partial
from typing import Any

import anyio

from kraftwire.cli.bootstrap import first_answer, parse_bootstrap
from kraftwire.cli.client_config import add_command_config, command_security
from kraftwire.cli.errors import ExitCode, OperatorError, kafka_error
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.describe_quorum_request import (
    DescribeQuorumRequest,
    PartitionData,
    TopicData,
)
from kraftwire.protocol.metadata import METADATA_TOPIC
from kraftwire.security.settings import ClientSecurity


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metadata-quorum", help="describe the metadata quorum (like kafka-metadata-quorum.sh)",
                       description="Describe the KRaft metadata quorum: leader, epoch, high watermark, "
                                   "voters and observers, and each replica's replication state.")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                        help="brokers or node client listeners (the first that answers is used)")
    target.add_argument("--bootstrap-controller", metavar="HOST:PORT[,...]",
                        help="controller listeners (the first that answers is used)")
    add_command_config(p)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the whole answer (default 10)")
    dsub = p.add_subparsers(dest="action", metavar="describe | add-controller | remove-controller", required=True)
    d = dsub.add_parser("describe", help="describe the quorum")
    what = d.add_mutually_exclusive_group(required=True)
    what.add_argument("--status", action="store_true", help="leader, epoch, high watermark, voters, observers")
    what.add_argument("--replication", action="store_true", help="one row per voter and observer")
    d.add_argument("--human-readable", action="store_true", help="timestamps as durations ago")
    d.add_argument("--json", action="store_true", help="print the result as JSON")
    from kraftwire.cli.quorum_changes import register as register_changes

    register_changes(dsub)
    p.set_defaults(func=run)


async def describe(addr: str, timeout_s: float, security: ClientSecurity | None = None, *,
                   controller: bool = True) -> dict[str, Any]:
    """Ask the first node of the bootstrap list ``addr`` that answers (following the leader if needed)
    for the quorum's state, all within ``timeout_s``; ``controller`` says whether the list names
    controller listeners (--bootstrap-controller) or brokers'."""
    flag = "--bootstrap-controller" if controller else "--bootstrap-server"
    addresses = parse_bootstrap(addr, flag)
    failure: BaseException | None = None
    result: dict[str, Any] = {}
    with anyio.move_on_after(timeout_s) as scope:
        async with anyio.create_task_group() as tg:
            try:
                result = await _describe(tg, addresses, timeout_s, security, 2 if controller else 1)
            except (RequestFailed, OSError, TimeoutError) as e:
                failure = e     # raised outside the task group, so callers see it unwrapped
            finally:
                tg.cancel_scope.cancel()
    if scope.cancelled_caught:
        raise OperatorError(f"no answer from {addr} within --timeout {timeout_s:g} s", ExitCode.UNREACHABLE)
    if failure is not None:
        raise failure
    return result


async def _describe(tg: Any, addresses: list[tuple[str, int]], timeout_s: float,
                    security: ClientSecurity | None, endpoint_type: int = 2) -> dict[str, Any]:
    async def ask(conn: Connection) -> Any:
        cluster = await conn.request(DescribeClusterRequest(endpoint_type=endpoint_type), None, timeout_s)
        if cluster.error_code == Errors.MISMATCHED_ENDPOINT_TYPE:  # a broker named as a controller, or reverse
            cluster = await conn.request(DescribeClusterRequest(endpoint_type=3 - endpoint_type), None, timeout_s)
        return cluster

    conn, cluster = await first_answer(tg, addresses, ask, client_id="kraftwire-metadata-quorum",
                                       timeout_s=timeout_s, security=security)
    if cluster.error_code:
        raise RequestFailed(f"DescribeCluster failed: {kafka_error(cluster.error_code)}")
    active = _cluster_endpoint(cluster, cluster.controller_id) if cluster.endpoint_type == 2 else None
    if active is not None and active != (conn.host, conn.port):
        # a controller lists the controllers: ask the active one, as Kafka's Admin does (a Kafka follower
        # answers DescribeQuorum NOT_LEADER_OR_FOLLOWER without naming the leader)
        await conn.close()
        conn = Connection(tg, active[0], active[1], client_id="kraftwire-metadata-quorum",
                          connect_timeout_s=timeout_s, security=security)
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
            raise RequestFailed(f"DescribeQuorum failed: {kafka_error(code)} {resp.error_message or ''}".strip())
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
    """The quorum as kafka-metadata-quorum.sh computes it: each replica's Lag is the leader's log end
    offset minus its own; MaxFollowerLag is that of the voter with the lowest log end offset (the first
    such voter; the leader itself gives 0), MaxFollowerLagTimeMs the leader's last caught-up time minus
    that voter's (-1 when one is unknown). Rows: the leader, the other voters, then observers."""
    now = int(time.time() * 1000)
    leader_id = part.leader_id
    leader = next((r for r in part.current_voters if r.replica_id == leader_id), None)
    leader_leo = leader.log_end_offset if leader is not None else part.high_watermark

    def row(r: Any, status: str) -> dict[str, Any]:
        fetch, caught_up = r.last_fetch_timestamp, r.last_caught_up_timestamp
        if status == "Leader" and caught_up < 0:  # the leader is caught up with itself now
            fetch = caught_up = now
        return {"NodeId": r.replica_id, "DirectoryId": _dir_id(getattr(r, "replica_directory_id", None)),
                "LogEndOffset": r.log_end_offset, "Lag": leader_leo - r.log_end_offset,
                "LastFetchTimestamp": fetch, "LastCaughtUpTimestamp": caught_up, "Status": status}

    rows = ([row(leader, "Leader")] if leader is not None else []) + [
        row(r, "Follower") for r in part.current_voters if r.replica_id != leader_id] + [
        row(r, "Observer") for r in part.observers]
    max_lag, max_lag_time = 0, 0
    if leader is not None and part.current_voters:
        laggard = min(part.current_voters, key=lambda r: r.log_end_offset)   # first of the lowest, as Java's min
        max_lag = leader.log_end_offset - laggard.log_end_offset
        if laggard is not leader:
            lead_ts = rows[0]["LastCaughtUpTimestamp"]
            lag_ts = laggard.last_caught_up_timestamp
            max_lag_time = lead_ts - lag_ts if lead_ts >= 0 and lag_ts >= 0 else -1
    return {
        "ClusterId": cluster.cluster_id,
        "LeaderId": leader_id,
        "LeaderEpoch": part.leader_epoch,
        "HighWatermark": part.high_watermark,
        "MaxFollowerLag": max_lag,
        "MaxFollowerLagTimeMs": max_lag_time,
        "CurrentVoters": [r.replica_id for r in part.current_voters],
        "CurrentObservers": [r.replica_id for r in part.observers],
        "Replication": rows,
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
    if args.action != "describe":
        from kraftwire.cli.quorum_changes import run_change

        return run_change(args)
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
