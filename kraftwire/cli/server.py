"""``kraftwire server CONFIG``: run one node in the foreground (like kafka-server-start.sh).

``--check`` validates the configuration, security settings and data directories and exits.
Failures end in one line with the exit code of their cause (``kraftwire.cli.errors``).
"""

from __future__ import annotations

import argparse
import errno
import logging
import signal
from typing import Any

from kraftwire.cli.errors import ExitCode, OperatorError, leaf
from kraftwire.cli.logsetup import FORMATS, configure
from kraftwire.cli.node_config import port_in_use, read_config
from kraftwire.config import NodeConfig

log = logging.getLogger("kraftwire.server")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("server", help="run a node in the foreground",
                       description="Start a kraftwire node from a Kafka-style server.properties file. "
                                   "SIGTERM/SIGINT resign leadership and stop cleanly.")
    p.add_argument("config", help="server.properties")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="override a property (repeatable)")
    p.add_argument("--log-level", default="INFO", help="TRACE, DEBUG, INFO, WARN, ERROR, FATAL or OFF")
    p.add_argument("--log-format", default="text", choices=FORMATS, help="text (Kafka's layout) or json lines")
    p.add_argument("--check", action="store_true",
                   help="validate the configuration and data directories, then exit without starting")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    quiet_check = args.check and args.log_level.upper() == "INFO"   # --check prints its verdict, not INFO logs
    configure("WARN" if quiet_check else args.log_level, fmt=args.log_format)
    cfg = read_config(args.config, args.override)
    if cfg.unknown:
        log.warning("unknown configuration keys (ignored): %s", ", ".join(cfg.unknown))
    if args.check:
        return check(cfg)
    from kraftwire.net.limits import raise_open_files_limit

    old, new = raise_open_files_limit()
    if new != old:
        log.info("raised the open-files limit from %d to %d (the hard limit)", old, new)
    node = build_node(cfg)
    from kraftwire.node.gc_tuning import tune_gc

    tune_gc()    # after the log and snapshot are loaded: they are the long-lived heap
    import anyio  # with the server's modules, after the log is open (``build_node``)

    try:
        return anyio.run(serve, node)
    except BaseException as e:
        raise explain_bind_failure(e, cfg) from e


def build_node(cfg: NodeConfig) -> Any:
    """One server composing the roles of ``process.roles`` (controller, broker, or both).

    The log directory is opened before the server's modules are imported: the Raft core starts there
    (``node/node_storage.py``), so its election timer runs while the roles are imported and built."""
    from kraftwire.node.node_storage import open_node_storage

    storage = open_node_storage(cfg)
    from kraftwire.node.server import Server

    return Server(cfg, storage=storage)


def check(cfg: NodeConfig) -> int:
    """``--check``: security settings load, data directories are formatted for this node and unlocked."""
    from kraftwire.node.secure import NodeSecurity
    from kraftwire.storage.data_dirs import open_data_dirs

    NodeSecurity(cfg, lambda: None)
    meta, locks = open_data_dirs(cfg)
    for lock in locks:
        lock.release()
    roles = ",".join(cfg.roles)
    print(f"configuration OK: node {cfg.node_id} ({roles}) of cluster {meta.cluster_id}; listeners "
          + ", ".join(str(e) for e in cfg.listeners) + "; log dirs " + ", ".join(str(d) for d in cfg.log_dirs))
    return 0


def explain_bind_failure(exc: BaseException, cfg: NodeConfig) -> BaseException:
    """An address-in-use failure names the listener (or metrics port) and node; others pass through."""
    inner = leaf(exc)
    if not isinstance(inner, OSError) or inner.errno != errno.EADDRINUSE:
        return exc
    candidates = [(e.name, e.host, e.port) for e in cfg.listeners if e.port]
    if cfg["kraftwire.metrics.port"]:
        candidates.append(("metrics (kraftwire.metrics.port)", cfg["kraftwire.metrics.host"],
                           cfg["kraftwire.metrics.port"]))
    for name, host, port in candidates:
        if port_in_use(host, port):
            return OperatorError(f"node {cfg.node_id}: port {port} on {host or '0.0.0.0'} (listener {name}) is "
                                 "already in use; stop the process using it or change the port",
                                 ExitCode.PORT_IN_USE)
    return OperatorError(f"node {cfg.node_id}: an address is already in use ({inner.strerror or inner}); "
                         "check listeners", ExitCode.PORT_IN_USE)


async def serve(node: Any) -> int:
    import anyio

    async with anyio.create_task_group() as tg:
        bound = await tg.start(node.run)
        log.info("node %d started, listeners %s", node.cfg.node_id,
                 ", ".join(f"{n}://{h}:{p}" for n, (h, p) in bound.items()))
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("received %s, shutting down", signal.Signals(signum).name)
                break
        with anyio.CancelScope(shield=True):
            await node.shutdown()
        tg.cancel_scope.cancel()
    log.info("node %d stopped", node.cfg.node_id)
    return 0


