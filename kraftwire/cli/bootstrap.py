"""Kafka's ``--bootstrap-server`` / ``--bootstrap-controller`` habits for the client verbs.

A bootstrap option is a comma-separated list (``a:9093,b:9093``); the first address that answers is
used, as Kafka's Admin client does. Admin writes go to the active controller: with
``--bootstrap-controller`` it is found through DescribeCluster (``controller_id`` and the voters'
endpoints); a broker (``--bootstrap-server``) forwards them itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.net.client import Connection, RequestFailed
from kraftwire.protocol.messages.describe_cluster_request import DescribeClusterRequest
from kraftwire.security.settings import ClientSecurity

Address = tuple[str, int]


def parse_bootstrap(text: str, flag: str = "--bootstrap-server") -> list[Address]:
    """``host:port[,host:port...]`` → addresses; a malformed entry is a usage error naming the flag."""
    out = []
    for item in (p.strip() for p in (text or "").split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise OperatorError(f"{flag}: expected HOST:PORT[,HOST:PORT...], got {item!r}", ExitCode.USAGE)
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise OperatorError(f"{flag}: no address given", ExitCode.USAGE)
    return out


async def first_answer(tg: Any, addresses: list[Address], ask: Callable[[Connection], Awaitable[Any]], *,
                       client_id: str, timeout_s: float,
                       security: ClientSecurity | None) -> tuple[Connection, Any]:
    """Ask each address in turn; the first connection that answers (the caller closes it) and its answer."""
    failure: Exception | None = None
    for host, port in addresses:
        conn = Connection(tg, host, port, client_id=client_id, connect_timeout_s=timeout_s, security=security)
        try:
            return conn, await ask(conn)
        except (RequestFailed, OSError, TimeoutError) as e:
            failure = e
            await conn.close()
    assert failure is not None
    if len(addresses) > 1:
        raise OperatorError(f"none of {', '.join(f'{h}:{p}' for h, p in addresses)} answered; last: {failure}",
                            ExitCode.UNREACHABLE) from failure
    raise failure


async def active_controller(tg: Any, addresses: list[Address], *, client_id: str, timeout_s: float,
                            security: ClientSecurity | None) -> Connection:
    """A connection to the active controller, found from any bootstrap controller (DescribeCluster v1,
    endpoint type controller); the bootstrap connection itself when it is the active one."""
    from kraftwire.cli.errors import kafka_error

    def ask(conn: Connection) -> Awaitable[Any]:
        return conn.request(DescribeClusterRequest(endpoint_type=2), None, timeout_s)

    conn, cluster = await first_answer(tg, addresses, ask, client_id=client_id, timeout_s=timeout_s,
                                       security=security)
    if cluster.error_code:
        await conn.close()
        raise RequestFailed(f"DescribeCluster failed: {kafka_error(cluster.error_code)}")
    leader = cluster.controller_id
    target = next(((b.host, b.port) for b in cluster.brokers if b.broker_id == leader), None)
    if leader < 0 or target is None or target == (conn.host, conn.port):
        return conn
    await conn.close()
    return Connection(tg, target[0], target[1], client_id=client_id, connect_timeout_s=timeout_s,
                      security=security)
