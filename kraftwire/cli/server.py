"""``kraftwire server CONFIG``: run one node in the foreground (like kafka-server-start.sh)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import anyio

from kraftwire.cli.logsetup import configure
from kraftwire.config import ConfigError, load_config

log = logging.getLogger("kraftwire.server")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("server", help="run a node in the foreground",
                       description="Start a kraftwire node from a Kafka-style server.properties file. "
                                   "SIGTERM/SIGINT resign leadership and stop cleanly.")
    p.add_argument("config", help="server.properties")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="override a property (repeatable)")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    configure(args.log_level)
    overrides = {}
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"error: --override expects KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        overrides[key.strip()] = value.strip()
    try:
        cfg = load_config(args.config, overrides)
    except (ConfigError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from kraftwire.node.node import FatalNodeError, Node
    from kraftwire.storage import StorageError

    try:
        if cfg.is_controller:
            node = Node(cfg)
        else:
            from kraftwire.node.broker_node import BrokerNode

            node = BrokerNode(cfg)
    except (StorageError, ConfigError) as e:  # ConfigError: unusable security settings
        print(f"error: {e}", file=sys.stderr)
        return 1
    failure = None
    try:
        return anyio.run(serve, node)
    except* FatalNodeError as group:
        failure = group.exceptions[0]
    log.error("%s", failure)
    return 1


async def serve(node) -> int:
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
