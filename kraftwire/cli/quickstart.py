"""``kraftwire quickstart``: format and run a 3-voter quorum (``--combined``: 3 combined broker+controller
nodes) on 127.0.0.1 until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("quickstart", help="format and run a local 3-voter quorum",
                       description="Write server.properties for N voters on 127.0.0.1, format their "
                                   "storage with one new cluster id, run them, and stop them on Ctrl-C.")
    p.add_argument("--dir", default="quickstart-data", help="where configs and logs go (default ./quickstart-data)")
    p.add_argument("--voters", type=int, default=3, choices=range(1, 8), metavar="N", help="voters (default 3)")
    p.add_argument("--base-port", type=int, default=19091, help="first controller port (default 19091)")
    p.add_argument("--combined", action="store_true",
                   help="run combined nodes (process.roles=broker,controller), each with a client listener "
                        "on base port + 10 + i (19101, 19102, ... by default)")
    p.add_argument("-r", "--release-version", default=None, metavar="RELEASE",
                   help="Kafka release whose metadata.version to format with, e.g. 3.7-IV4 (default: the latest)")
    p.add_argument("--duration", type=float, default=0,
                   help="stop by itself after this many seconds (0 = run until Ctrl-C)")
    p.set_defaults(func=run)


def broker_port(base_port: int, node: int) -> int:
    """A combined quickstart node's client (PLAINTEXT) port."""
    return base_port + 10 + node - 1


def write_configs(base: Path, voters: int, base_port: int, combined: bool = False) -> list[Path]:
    quorum = ",".join(f"{i}@127.0.0.1:{base_port + i - 1}" for i in range(1, voters + 1))
    paths = []
    for i in range(1, voters + 1):
        node_dir = base / f"node{i}"
        node_dir.mkdir(parents=True, exist_ok=True)
        cfg = node_dir / "server.properties"
        controller = f"CONTROLLER://127.0.0.1:{base_port + i - 1}"
        cfg.write_text("\n".join([
            f"# kraftwire quickstart node {i}",
            "process.roles=broker,controller" if combined else "process.roles=controller",
            f"node.id={i}",
            f"controller.quorum.voters={quorum}",
            f"listeners=PLAINTEXT://127.0.0.1:{broker_port(base_port, i)},{controller}" if combined
            else f"listeners={controller}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT" if combined
            else "listener.security.protocol.map=CONTROLLER:PLAINTEXT",
            f"log.dirs={(node_dir / 'data').resolve()}",
            "",
        ]))
        paths.append(cfg)
    return paths


def run(args: argparse.Namespace) -> int:
    from kraftwire.cli.storage import format_storage
    from kraftwire.config import load_config
    from kraftwire.storage.meta_properties import random_uuid

    base = Path(args.dir).resolve()
    from kraftwire.cli.errors import ExitCode, OperatorError
    from kraftwire.cli.node_config import port_in_use

    # Arguments first: a usage error is reported as such whatever else is wrong on the machine.
    from kraftwire.cli.storage import metadata_level

    try:
        level = metadata_level(args.release_version, None)
    except ValueError as e:
        raise OperatorError(str(e), ExitCode.USAGE) from None
    for i in range(1, args.voters + 1):
        ports = [("CONTROLLER", args.base_port + i - 1)]
        if args.combined:
            ports.append(("PLAINTEXT", broker_port(args.base_port, i)))
        for name, port in ports:
            if port_in_use("127.0.0.1", port):
                raise OperatorError(f"node {i}: port {port} on 127.0.0.1 (listener {name}) is already in use; "
                                    "stop the process using it or pick other ports with --base-port",
                                    ExitCode.PORT_IN_USE)
    configs = write_configs(base, args.voters, args.base_port, combined=args.combined)
    cluster_id = None
    for cfg_path in configs:
        meta = Path(load_config(cfg_path).metadata_log_dir) / "meta.properties"
        if meta.exists():
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    cluster_id = line.split("=", 1)[1].strip()
    cluster_id = cluster_id or random_uuid()
    for cfg_path in configs:
        format_storage(load_config(cfg_path), cluster_id, ignore_formatted=True, quiet=True, metadata_version=level)
    print(f"cluster id {cluster_id}; {args.voters} voters; data in {base}"
          + (f"; metadata.version {level} ({args.release_version})" if level is not None else ""))
    procs = []
    for i, cfg_path in enumerate(configs, start=1):
        logf = open(cfg_path.parent / "server.log", "ab")  # noqa: SIM115 - kept open for the child's life
        procs.append(subprocess.Popen([sys.executable, "-m", "kraftwire", "server", str(cfg_path)],
                                      stdout=logf, stderr=subprocess.STDOUT))
        clients = f", clients 127.0.0.1:{broker_port(args.base_port, i)}" if args.combined else ""
        print(f"  node {i}: controller 127.0.0.1:{args.base_port + i - 1}{clients}  "
              f"(log {cfg_path.parent / 'server.log'})")
    addr = f"127.0.0.1:{args.base_port}"
    print(f"\nDescribe it:\n  kraftwire metadata-quorum --bootstrap-controller {addr} describe --status\n"
          f"  kraftwire metadata-quorum --bootstrap-controller {addr} describe --replication\n"
          "Stop with Ctrl-C.", flush=True)
    try:
        deadline = time.monotonic() + args.duration if args.duration else None
        while all(p.poll() is None for p in procs):
            if deadline is not None and time.monotonic() > deadline:
                break
            time.sleep(0.2)
        failed = [i for i, p in enumerate(procs, 1) if p.poll() is not None]
        for i in failed:
            reason = last_error(configs[i - 1].parent / "server.log")
            print(f"node {i} exited with code {procs[i - 1].returncode}: {reason}", file=sys.stderr)
    except KeyboardInterrupt:
        failed = []
    print("stopping...", flush=True)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
    print("stopped.")
    return max((procs[i - 1].returncode for i in failed), default=0) or (1 if failed else 0)


def last_error(log_path: Path) -> str:
    """The node's one-line ``error: ...`` from its log (or a pointer to the log)."""
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    for line in reversed(lines[-50:]):
        if line.startswith("error: "):
            return line[len("error: "):]
    return f"see {log_path}"
