"""``kraftwire metadata-quorum add-controller | remove-controller`` (KIP-853), as kafka-metadata-quorum.sh.

add-controller reads the controller's own properties from ``--command-config`` (node.id, process.roles,
metadata.log.dir or log.dirs, listeners / advertised.listeners, controller.listener.names) and the directory id
from that directory's meta.properties, then sends AddRaftVoter to the active controller; remove-controller
sends RemoveRaftVoter for ``--controller-id`` / ``--controller-directory-id``. Output and refusals are
Kafka's words.
"""

from __future__ import annotations

import argparse
import base64
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from kraftwire.cli.bootstrap import first_answer, parse_bootstrap
from kraftwire.cli.client_config import command_security
from kraftwire.cli.errors import ExitCode, OperatorError, kafka_error
from kraftwire.config import parse_properties
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.add_raft_voter_request import AddRaftVoterRequest, Listener
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.protocol.messages.remove_raft_voter_request import RemoveRaftVoterRequest
from kraftwire.storage.meta_properties import read_meta


def register(dsub: argparse._SubParsersAction) -> None:
    a = dsub.add_parser("add-controller", help="add a controller to the KRaft controller cluster "
                                               "(--command-config: that controller's properties)")
    a.add_argument("--dry-run", action="store_true", help="print what would be done, but do not do it")
    r = dsub.add_parser("remove-controller", help="remove a controller from the KRaft controller cluster")
    r.add_argument("--controller-id", "-i", type=int, required=True, help="the id of the controller to remove")
    r.add_argument("--controller-directory-id", "-d", required=True,
                   help="the directory id of the controller to remove")
    r.add_argument("--dry-run", action="store_true", help="print what would be done, but do not do it")


def _terse(msg: str) -> OperatorError:
    return OperatorError(msg, ExitCode.USAGE)


def parse_directory_id(text: str) -> uuid.UUID:
    """Kafka's Uuid text (22 characters of base64url) or a UUID."""
    try:
        if len(text) == 22:
            raw = base64.urlsafe_b64decode(text + "==")
            if len(raw) == 16:
                return uuid.UUID(bytes=raw)
        return uuid.UUID(text)
    except ValueError as e:
        raise _terse(f"Failed to parse --controller-directory-id: Invalid UUID string: {text} ({e})") from None


def kafka_uuid(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def controller_to_add(path: str | None) -> tuple[int, uuid.UUID, list[tuple[str, str, int]]]:
    """(node id, directory id, controller endpoints) from a controller's properties file, as Kafka reads them."""
    if not path:
        raise _terse("You must supply the configuration file of the controller you are adding when using "
                     "add-controller.")
    try:
        props = parse_properties(Path(path).read_text(encoding="utf-8"))
    except OSError:
        raise _terse(f"Properties file {path} does not exists!") from None
    if "node.id" not in props:
        raise _terse("node.id not found in configuration file. Is this a valid controller configuration file?")
    node_id = int(props["node.id"])
    if node_id < 0:
        raise _terse("node.id was negative in configuration file. Is this a valid controller configuration file?")
    if "controller" not in props.get("process.roles", ""):
        raise _terse("process.roles did not contain 'controller' in configuration file. Is this a valid controller "
                     "configuration file?")
    meta_dir = props.get("metadata.log.dir") or (props.get("log.dirs") or props.get("log.dir") or "").split(",")[0].strip()
    if not meta_dir:
        raise _terse("Neither metadata.log.dir nor log.dirs were found. Is this a valid controller configuration file?")
    meta = read_meta(Path(meta_dir))
    if meta is None:
        raise _terse(f"Unable to read meta.properties from {meta_dir}")
    if not meta.directory_id:
        raise _terse(f"No directory id found in {meta_dir}")
    listeners: dict[str, tuple[str, int]] = {}
    for key in ("listeners", "advertised.listeners"):
        for item in filter(None, (s.strip() for s in props.get(key, "").split(","))):
            name, _, rest = item.partition("://")
            host, _, port = rest.rpartition(":")
            listeners[name.upper()] = (host.strip("[]") or "localhost", int(port))
    if "controller.listener.names" not in props:
        raise _terse("controller.listener.names was not found. Is this a valid controller configuration file?")
    endpoints = []
    for name in (n.strip().upper() for n in props["controller.listener.names"].split(",") if n.strip()):
        if name not in listeners:
            raise _terse(f"Cannot find information about controller listener name: {name}")
        endpoints.append((name, *listeners[name]))
    return node_id, parse_directory_id(meta.directory_id), endpoints


async def _to_leader(addr: str, body: Any, timeout_s: float, security: Any) -> Any:
    """Send ``body`` to the active controller found through the bootstrap controllers; its answer."""
    addresses = parse_bootstrap(addr, "--bootstrap-controller")
    async with anyio.create_task_group() as tg:
        try:
            async def ask(conn: Connection) -> Any:
                return await conn.request(DescribeClusterRequest(endpoint_type=2), None, timeout_s)

            conn, cluster = await first_answer(tg, addresses, ask, client_id="kraftwire-metadata-quorum",
                                               timeout_s=timeout_s, security=security)
            for _ in range(5):
                resp = await conn.request(body, 0, timeout_s)
                if resp.error_code != Errors.NOT_LEADER_OR_FOLLOWER:
                    return resp
                await conn.close()
                await anyio.sleep(0.5)
                conn, cluster = await first_answer(tg, addresses, ask, client_id="kraftwire-metadata-quorum",
                                                   timeout_s=timeout_s, security=security)
                leader = next(((b.host, b.port) for b in cluster.brokers if b.broker_id == cluster.controller_id), None)
                if leader is not None:
                    await conn.close()
                    conn = Connection(tg, leader[0], leader[1], client_id="kraftwire-metadata-quorum",
                                      connect_timeout_s=timeout_s, security=security)
            return resp
        finally:
            tg.cancel_scope.cancel()


async def _within(timeout_s: float, work: Any) -> Any:
    with anyio.fail_after(timeout_s):
        return await work


def _send(args: argparse.Namespace, body: Any) -> None:
    if not args.bootstrap_controller:
        raise _terse("add-controller and remove-controller need --bootstrap-controller (the controller listeners)")
    security = command_security(args.command_config)
    try:
        resp = anyio.run(partial(_within, args.timeout, _to_leader(args.bootstrap_controller, body, args.timeout,
                                                                    security)))
    except (RequestFailed, OSError, TimeoutError) as e:
        raise OperatorError(f"no answer from {args.bootstrap_controller}: {e}", ExitCode.UNREACHABLE) from None
    if resp.error_code:
        raise OperatorError(f"{kafka_error(resp.error_code)}: {resp.error_message or ''}".rstrip(": "),
                            ExitCode.FAILED)


def run_change(args: argparse.Namespace) -> int:
    if args.action == "add-controller":
        node_id, dir_id, endpoints = controller_to_add(args.command_config)
        if not args.dry_run:
            _send(args, AddRaftVoterRequest(cluster_id=None, timeout_ms=int(args.timeout * 1000), voter_id=node_id,
                                            voter_directory_id=dir_id,
                                            listeners=[Listener(n, h, p) for n, h, p in endpoints]))
        shown = ", ".join(f"{n}://{'[' + h + ']' if ':' in h else h}:{p}" for n, h, p in endpoints)
        print(f"{'DRY RUN of adding' if args.dry_run else 'Added'} controller {node_id} with directory id "
              f"{kafka_uuid(dir_id)} and endpoints: {shown}")
        return 0
    if args.controller_id < 0:
        raise _terse(f"Invalid negative --controller-id: {args.controller_id}")
    dir_id = parse_directory_id(args.controller_directory_id)
    if not args.dry_run:
        _send(args, RemoveRaftVoterRequest(cluster_id=None, voter_id=args.controller_id, voter_directory_id=dir_id))
    print(f"{'DRY RUN of removing ' if args.dry_run else 'Removed '} KRaft controller {args.controller_id} with "
          f"directory id {kafka_uuid(dir_id)}")
    return 0
