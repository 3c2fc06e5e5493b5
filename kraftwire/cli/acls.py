"""``kraftwire acls``: add, remove and list ACLs like kafka-acls.sh (CreateAcls, DeleteAcls, DescribeAcls).

Examples::

    kraftwire acls --bootstrap-server 127.0.0.1:9092 --command-config admin.properties \\
        --add --allow-principal User:alice --operation Read --topic __cluster_metadata
    kraftwire acls --bootstrap-server 127.0.0.1:9092 --list --topic __cluster_metadata
    kraftwire acls --bootstrap-server 127.0.0.1:9092 --remove --allow-principal User:alice --topic orders

``--command-config`` holds Kafka client properties (``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config``, ``ssl.truststore.location``, ...).
"""

from __future__ import annotations

import argparse
from typing import Any

import anyio

from kraftwire.cli.bootstrap import active_controller, first_answer, parse_bootstrap
from kraftwire.cli.client_config import command_security
from kraftwire.cli.errors import ExitCode, OperatorError, kafka_error
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.create_acls_request import AclCreation, CreateAclsRequest
from kraftwire.protocol.messages.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from kraftwire.protocol.messages.describe_acls_request import DescribeAclsRequest
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.security import authorizer as az
from kraftwire.security.settings import ClientSecurity

ANY = 1
MATCH = 2
PATTERNS = {"any": ANY, "match": MATCH, "literal": az.LITERAL, "prefixed": az.PREFIXED}
PATTERN_NAMES = {v: k.upper() for k, v in PATTERNS.items()}
OPERATIONS = {name.replace("_", "").lower(): op for op, name in az.OPERATION_NAMES.items()}
RESOURCE_TYPE_NAMES = {az.TOPIC: "TOPIC", az.GROUP: "GROUP", az.CLUSTER: "CLUSTER",
                       az.TRANSACTIONAL_ID: "TRANSACTIONAL_ID", az.DELEGATION_TOKEN: "DELEGATION_TOKEN",
                       az.USER: "USER"}


class UsageError(ValueError):
    """Options that do not make a valid request."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("acls", help="add, remove and list ACLs (like kafka-acls.sh)",
                       description="Manage ACLs through the Kafka protocol (CreateAcls, DeleteAcls, DescribeAcls).")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                        help="brokers or node client listeners (the first that answers is used)")
    target.add_argument("--bootstrap-controller", metavar="HOST:PORT[,...]",
                        help="controller listeners; the command goes to the active controller")
    p.add_argument("--command-config", help="Kafka client properties (security.protocol, sasl.*, ssl.*)")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add the ACLs described by the options")
    action.add_argument("--remove", action="store_true", help="remove matching ACLs")
    action.add_argument("--list", action="store_true", help="list matching ACLs")
    p.add_argument("--topic", action="append", default=[], help="topic resource (repeatable)")
    p.add_argument("--group", action="append", default=[], help="consumer group resource (repeatable)")
    p.add_argument("--transactional-id", action="append", default=[], help="transactional id resource")
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument("--resource-pattern-type", choices=sorted(PATTERNS), default=None,
                   help="literal or prefixed for --add; any, match, literal or prefixed to filter "
                        "(default: literal for --add/--remove, any for --list)")
    p.add_argument("--allow-principal", action="append", default=[], help="principal to allow, e.g. User:alice")
    p.add_argument("--deny-principal", action="append", default=[], help="principal to deny")
    p.add_argument("--allow-host", action="append", default=[], help="host for allow ACLs (default *)")
    p.add_argument("--deny-host", action="append", default=[], help="host for deny ACLs (default *)")
    p.add_argument("--operation", action="append", default=[],
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                        "AlterConfigs, IdempotentWrite, All (default All; repeatable)")
    p.add_argument("--principal", help="--list only: ACLs of this principal")
    p.add_argument("--consumer", action="store_true", help="shortcut: Read+Describe on topics, Read on groups")
    p.add_argument("--producer", action="store_true", help="shortcut: Write+Describe+Create on topics")
    p.add_argument("--force", action="store_true", help="accepted for compatibility (removal never prompts)")
    p.add_argument("--timeout", type=float, default=15.0, help="seconds to wait for an answer (default 15)")
    p.set_defaults(func=run)


def _resources(args: argparse.Namespace) -> list[tuple[int, str]]:
    out = [(az.TOPIC, t) for t in args.topic] + [(az.GROUP, g) for g in args.group]
    out += [(az.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    if args.cluster:
        out.append((az.CLUSTER, az.CLUSTER_NAME))
    return out


def _operations(args: argparse.Namespace) -> list[int]:
    ops = []
    for text in args.operation or ["All"]:
        op = OPERATIONS.get(text.replace("_", "").replace("-", "").lower())
        if op is None:
            raise UsageError(f"unknown operation {text!r}")
        ops.append(op)
    return ops


def _bindings(args: argparse.Namespace, pattern: int) -> list[tuple[int, str, int, str, str, int, int]]:
    """(resource type, name, pattern, principal, host, operation, permission) for --add / --remove."""
    resources = _resources(args)
    if not resources:
        raise UsageError("name a resource: --topic, --group, --transactional-id or --cluster")
    grants: list[tuple[int, str, int]] = []     # (resource type, name, operation)
    if args.consumer or args.producer:
        for rtype, name in resources:
            if rtype == az.TOPIC:
                ops = ([az.READ, az.DESCRIBE] if args.consumer else []) + (
                    [az.WRITE, az.DESCRIBE, az.CREATE] if args.producer else [])
                grants += [(rtype, name, op) for op in dict.fromkeys(ops)]
            elif rtype == az.GROUP and args.consumer:
                grants.append((rtype, name, az.READ))
    else:
        grants = [(rtype, name, op) for rtype, name in resources for op in _operations(args)]
    out = []
    for perm, principals, hosts in ((az.ALLOW, args.allow_principal, args.allow_host),
                                    (az.DENY, args.deny_principal, args.deny_host)):
        for principal in principals:
            if ":" not in principal:
                raise UsageError(f"principal {principal!r} must look like Type:Name, e.g. User:alice")
            for host in hosts or ["*"]:
                out += [(rtype, name, pattern, principal, host, op, perm) for rtype, name, op in grants]
    if not out:
        raise UsageError("name at least one --allow-principal or --deny-principal")
    return out


def _security(args: argparse.Namespace) -> ClientSecurity | None:
    return command_security(args.command_config)


def _reachable(timeout_s: float) -> Any:
    def ask(conn: Connection) -> Any:
        return conn.request(DescribeClusterRequest(endpoint_type=1), None, timeout_s)
    return ask


class NotController(RequestFailed):
    """The node asked is not the active controller (any more)."""


def _check(code: int, message: str | None, what: str) -> None:
    if code:
        cls = NotController if code == Errors.NOT_CONTROLLER else RequestFailed
        raise cls(f"{what} failed: {kafka_error(code)}" + (f": {message}" if message else ""))


def _render(resources: Any) -> list[str]:
    lines = []
    for r in resources:
        lines.append(f"Current ACLs for resource `ResourcePattern(resourceType={RESOURCE_TYPE_NAMES.get(r.resource_type)}"
                     f", name={r.resource_name}, patternType={PATTERN_NAMES.get(r.pattern_type)})`: ")
        for a in r.acls:
            lines.append(f" \t(principal={a.principal}, host={a.host}, operation="
                         f"{az.OPERATION_NAMES.get(a.operation, a.operation)}, permissionType="
                         f"{'ALLOW' if a.permission_type == az.ALLOW else 'DENY'})")
        lines.append("")
    return lines


async def execute(args: argparse.Namespace, security: ClientSecurity | None) -> list[str]:
    """Run the command against the active controller (--bootstrap-controller: found through
    DescribeCluster, followed again once on NOT_CONTROLLER) or the first answering broker."""
    flag = "--bootstrap-controller" if args.bootstrap_controller else "--bootstrap-server"
    try:
        addresses = parse_bootstrap(args.bootstrap_server or args.bootstrap_controller, flag)
    except OperatorError as e:
        raise UsageError(str(e)) from None
    if args.add or args.remove:
        _bindings(args, az.LITERAL)    # report usage errors before connecting
    result: list[str] = []
    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        for _attempt in range(2):
            conn = None
            try:
                if args.bootstrap_controller:
                    conn = await active_controller(tg, addresses, client_id="kraftwire-acls",
                                                   timeout_s=args.timeout, security=security)
                    result = await _execute(conn, args)
                else:
                    conn, _ = await first_answer(tg, addresses, _reachable(args.timeout),
                                                 client_id="kraftwire-acls", timeout_s=args.timeout,
                                                 security=security)
                    result = await _execute(conn, args)
                error = None
                break
            except NotController as e:
                error = e       # the controller moved between DescribeCluster and the request: once more
            except Exception as e:  # noqa: BLE001 - re-raised below, outside the task group
                error = e
                break
            finally:
                if conn is not None:
                    await conn.close()
        tg.cancel_scope.cancel()
    if error is not None:
        raise error
    return result


async def _execute(conn: Connection, args: argparse.Namespace) -> list[str]:
    t = args.timeout
    if args.add:
        pattern = PATTERNS[args.resource_pattern_type or "literal"]
        if pattern not in (az.LITERAL, az.PREFIXED):
            raise UsageError("--add takes --resource-pattern-type literal or prefixed")
        bindings = _bindings(args, pattern)
        resp = await conn.request(CreateAclsRequest(creations=[AclCreation(*b) for b in bindings]), None, t)
        for r in resp.results:
            _check(r.error_code, r.error_message, "CreateAcls")
        return [f"Adding ACLs for resource `{RESOURCE_TYPE_NAMES[b[0]]}:{b[1]}`: {b[3]} from {b[4]} "
                f"{'ALLOW' if b[6] == az.ALLOW else 'DENY'} {az.OPERATION_NAMES[b[5]]}" for b in bindings]
    if args.remove:
        pattern = PATTERNS[args.resource_pattern_type or "literal"]
        filters = [DeleteAclsFilter(resource_type_filter=b[0], resource_name_filter=b[1], pattern_type_filter=b[2],
                                    principal_filter=b[3], host_filter=b[4], operation=b[5], permission_type=b[6])
                   for b in _bindings(args, pattern)]
        resp = await conn.request(DeleteAclsRequest(filters=filters), None, t)
        out = []
        for fr in resp.filter_results:
            _check(fr.error_code, fr.error_message, "DeleteAcls")
            out += [f"Removed ACL (principal={m.principal}, host={m.host}, operation="
                    f"{az.OPERATION_NAMES.get(m.operation, m.operation)}) on {RESOURCE_TYPE_NAMES.get(m.resource_type)}:"
                    f"{m.resource_name}" for m in fr.matching_acls]
        return out or ["No ACLs matched."]
    pattern = PATTERNS[args.resource_pattern_type or "any"]
    targets = _resources(args) or [(ANY, None)]
    out = []
    for rtype, name in targets:
        resp = await conn.request(DescribeAclsRequest(
            resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
            principal_filter=args.principal, host_filter=None, operation=ANY, permission_type=ANY), None, t)
        _check(resp.error_code, resp.error_message, "DescribeAcls")
        out += _render(resp.resources)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        security = _security(args)
        lines = anyio.run(execute, args, security)
    except UsageError as e:
        raise OperatorError(str(e), ExitCode.USAGE) from None
    for line in lines:
        print(line)
    return 0
