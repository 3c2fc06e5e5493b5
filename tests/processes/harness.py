"""Real `kraftwire server` processes on 127.0.0.1 for process-level tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kraftwire.cli.quickstart import broker_port, write_configs
from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.storage.meta_properties import random_uuid
from tests.ports import free_port_block

__all__ = ["FAST", "Cluster", "free_port_block", "write_broker_config"]

FAST = ["controller.quorum.election.timeout.ms=500", "controller.quorum.fetch.timeout.ms=1000",
        "controller.quorum.election.backoff.max.ms=300", "controller.quorum.request.timeout.ms=1000",
        "metadata.max.idle.interval.ms=100"]


def write_broker_config(root: Path, node: int, port: int, voters: str, extra: list[str]) -> Path:
    """server.properties for a broker-only node listening on PLAINTEXT://127.0.0.1:``port``."""
    node_dir = root / f"node{node}"
    node_dir.mkdir(parents=True, exist_ok=True)
    cfg = node_dir / "server.properties"
    cfg.write_text("\n".join([
        f"# kraftwire broker {node}",
        "process.roles=broker",
        f"node.id={node}",
        f"controller.quorum.voters={voters}",
        f"listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={(node_dir / 'data').resolve()}",
        *extra,
        "",
    ]))
    return cfg


class Cluster:
    """N voters (ids 1..N) and B brokers (ids N+1..N+B) as subprocesses; each has its own config,
    data dir and log file. Node i listens on base_port + i - 1."""

    def __init__(self, root: Path, n: int = 3, cluster_id: str | None = None, brokers: int = 0,
                 broker_props: list[str] | None = None, combined: bool = False) -> None:
        self.root = root
        self.n = n
        self.combined = combined
        self.brokers = list(range(n + 1, n + brokers + 1))
        self.base_port = (free_port_block(n, [*range(n), *range(10, 10 + n)]) if combined
                          else free_port_block(n + brokers))
        self.configs = write_configs(root, n, self.base_port, combined=combined)
        voters = ",".join(f"{i}@127.0.0.1:{self.base_port + i - 1}" for i in range(1, n + 1))
        for b in self.brokers:
            self.configs.append(write_broker_config(root, b, self.base_port + b - 1, voters, broker_props or []))
        self.cluster_id = cluster_id or random_uuid()
        self.procs: dict[int, subprocess.Popen] = {}
        for cfg in self.configs:
            format_storage(load_config(cfg), self.cluster_id, quiet=True)

    def addr(self, node: int) -> str:
        return f"127.0.0.1:{self.base_port + node - 1}"

    def client_addr(self, node: int) -> str:
        """A combined node's broker (client) listener."""
        assert self.combined
        return f"127.0.0.1:{broker_port(self.base_port, node)}"

    def data_dir(self, node: int) -> Path:
        return self.root / f"node{node}" / "data"

    def start(self, node: int, *extra: str) -> subprocess.Popen:
        args = [sys.executable, "-m", "kraftwire", "server", str(self.configs[node - 1])]
        for o in FAST + list(extra):
            args += ["--override", o]
        log = open(self.root / f"node{node}" / "server.log", "ab")  # noqa: SIM115 - child keeps it
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.procs[node] = proc
        return proc

    def start_all(self) -> None:
        for i in range(1, self.n + 1):
            self.start(i)

    def kill(self, node: int, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[node]
        proc.send_signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM):
            proc.wait(timeout=15)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def describe(self, node: int, what: str = "--status", timeout: float = 5.0) -> dict | None:
        """`kraftwire metadata-quorum ... describe --json`, or None if it failed."""
        out = subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum", "--bootstrap-controller",
                              self.addr(node), "--timeout", str(timeout), "describe", what, "--json"],
                             capture_output=True, text=True, timeout=timeout + 20)
        if out.returncode != 0:
            return None
        return json.loads(out.stdout)

    def wait_status(self, pred, nodes: list[int], timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            for node in nodes:
                last = self.describe(node)
                if last is not None and pred(last):
                    return last
            time.sleep(0.3)
        raise AssertionError(f"condition not met within {timeout}s; last status {last}")

    def log_text(self, node: int) -> str:
        return (self.root / f"node{node}" / "server.log").read_text(errors="replace")
