"""Record the real output of every kraftwire verb against a live 3-voter quorum (for docs/operations.md).

    python scripts/record_operations.py [--dir DIR] [--base-port P] > recorded.md

Starts three voters on 127.0.0.1 (with the metrics endpoint and the ACL authorizer), runs each verb
as an operator would, prints the commands and their output as Markdown blocks, and stops the nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sh(cmd: list[str], cwd: Path, *, show: str | None = None, stdin: str | None = None, head: int = 0,
       width: int = 0) -> str:
    """Run ``kraftwire ...`` (or a shell tool) and render ``$ command`` plus its output."""
    full = [sys.executable, "-m", "kraftwire", *cmd[1:]] if cmd[0] == "kraftwire" else cmd
    out = subprocess.run(full, cwd=cwd, capture_output=True, text=True, timeout=180, input=stdin)
    text = out.stdout + out.stderr
    lines = text.splitlines()
    if head and len(lines) > head:
        lines = lines[:head] + ["..."]
    if width:
        lines = [ln if len(ln) <= width else ln[:width] + " …" for ln in lines]
    shown = show or " ".join(cmd)
    rc = "" if out.returncode == 0 else f"\n$ echo $?\n{out.returncode}"
    return f"$ {shown}\n" + "\n".join(lines) + rc


def block(title: str, *parts: str) -> None:
    print(f"### {title}\n\n```\n" + "\n\n".join(parts) + "\n```\n", flush=True)


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"port {port} did not open")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/kw-ops")
    ap.add_argument("--base-port", type=int, default=29091)
    args = ap.parse_args()
    base = Path(args.dir)
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    os.environ["PYTHONPATH"] = str(ROOT)
    sys.path.insert(0, str(ROOT))
    from kraftwire.cli.quickstart import write_configs

    p = args.base_port
    configs = write_configs(base, 3, p)
    for i, cfg in enumerate(configs, 1):
        cfg.write_text(cfg.read_text() + f"kraftwire.metrics.port={p + 100 + i}\n"
                       "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
                       "allow.everyone.if.no.acl.found=true\n")
    rel = [str(c.relative_to(base)) for c in configs]
    cid = subprocess.run([sys.executable, "-m", "kraftwire", "storage", "random-uuid"], capture_output=True,
                         text=True, check=True).stdout.strip()
    block("Formatting and checking", sh(["kraftwire", "storage", "random-uuid"], base),
          *[sh(["kraftwire", "storage", "format", "-c", r, "-t", cid], base) for r in rel],
          sh(["kraftwire", "storage", "info", "-c", rel[0]], base),
          sh(["kraftwire", "server", rel[0], "--check"], base))
    procs = []
    for i, r in enumerate(rel, 1):
        log = open(base / f"node{i}" / "server.log", "wb")  # noqa: SIM115 - the child keeps it
        procs.append(subprocess.Popen([sys.executable, "-m", "kraftwire", "server", r], cwd=base, stdout=log,
                                      stderr=subprocess.STDOUT))
    try:
        for i in range(3):
            wait_port(p + i)
        addr = f"127.0.0.1:{p},127.0.0.1:{p + 1}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum", "--bootstrap-controller", addr,
                               "describe", "--status"], capture_output=True).returncode == 0:
                break
            time.sleep(0.3)
        time.sleep(2)
        other = base / "node1b"     # node 1's configuration on a fresh directory: only its port clashes
        other.mkdir()
        (other / "server.properties").write_text(configs[0].read_text().replace(
            str((base / "node1" / "data").resolve()), str((other / "data").resolve())))
        subprocess.run([sys.executable, "-m", "kraftwire", "storage", "format", "-c", "node1b/server.properties",
                        "-t", cid], cwd=base, capture_output=True, check=True)
        block("Failures an operator meets",
              sh(["kraftwire", "server", rel[0]], base),
              sh(["kraftwire", "server", "node1b/server.properties"], base),
              sh(["kraftwire", "server", rel[0], "--log-level", "LOUD"], base),
              sh(["kraftwire", "metadata-quorum", "--bootstrap-controller", "127.0.0.1:1", "--timeout", "2",
                  "describe", "--status"], base),
              sh(["kraftwire", "dump-log", "--files", "node1/data/__cluster_metadata-0/quorum-state"], base))
        block("Describing the quorum",
              sh(["kraftwire", "metadata-quorum", "--bootstrap-controller", addr, "describe", "--status"], base),
              sh(["kraftwire", "metadata-quorum", "--bootstrap-controller", addr, "describe", "--replication"], base),
              sh(["kraftwire", "metadata-quorum", "--bootstrap-controller", addr, "describe", "--replication",
                  "--human-readable"], base))
        block("ACLs (sent to the active controller from any voter)",
              sh(["kraftwire", "acls", "--bootstrap-controller", addr, "--add", "--allow-principal", "User:alice",
                  "--operation", "Read", "--topic", "orders"], base),
              sh(["kraftwire", "acls", "--bootstrap-controller", addr, "--list"], base))
        block("Reading the log",
              sh(["kraftwire", "console-consumer", "--bootstrap-server", addr, "--from-beginning",
                  "--max-messages", "3"], base, width=200),
              sh(["kraftwire", "console-consumer", "--bootstrap-server", addr, "--from-beginning",
                  "--timeout-ms", "1000"], base, head=4, width=200))
        block("The metadata shell",
              sh(["kraftwire", "metadata-shell", "--bootstrap-controller", addr, "ls", "/"], base),
              sh(["kraftwire", "metadata-shell", "--bootstrap-controller", addr, "tree", "/acls", "/features"], base),
              sh(["kraftwire", "metadata-shell", "--bootstrap-controller", addr], base,
                 show=f"printf 'cd /cluster/controllers\\nls\\ncat 1/listeners\\n' | kraftwire metadata-shell "
                      f"--bootstrap-controller {addr}", stdin="cd /cluster/controllers\nls\ncat 1/listeners\n"),
              sh(["kraftwire", "metadata-shell", "--bootstrap-controller", addr, "--follow", "1", "--count", "2",
                  "cat", "/provenance/lastContainedOffset"], base))
        everyone = ",".join(f"127.0.0.1:{p + i}" for i in range(3))
        block("Doctor", sh(["kraftwire", "doctor", "--bootstrap-controller", everyone], base))
        block("Audit (every voter's audit file)",
              sh(["kraftwire", "audit", *[a for i in (1, 2, 3) for a in ("--log-dir", f"node{i}/data")],
                  "--principal", "User:ANONYMOUS"], base, width=240))
        status = json.loads(subprocess.run([sys.executable, "-m", "kraftwire", "metadata-quorum",
                                            "--bootstrap-controller", addr, "describe", "--status", "--json"],
                                           capture_output=True, text=True, check=True).stdout)
        mport = p + 100 + status["LeaderId"]     # the active controller's metrics endpoint
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10).read().decode()
        wanted = [ln for ln in metrics.splitlines() if ln.startswith((
            "kafka_server_raft_metrics_current_state", "kafka_server_raft_metrics_current_leader",
            "kafka_server_raft_metrics_high_watermark", "kafka_server_raft_metrics_commit_latency_avg",
            "kafka_controller_kafkacontroller_", "kafka_controller_controllereventmanager_",
            "process_resident_memory_bytes", "process_open_fds",
            "# TYPE kafka_server_socket_server_metrics_connection_count",
            "kafka_server_socket_server_metrics_connection_count"))]
        ready = urllib.request.urlopen(f"http://127.0.0.1:{mport}/ready", timeout=10).read().decode()
        block("Metrics (the active controller's endpoint)", f"$ curl -s http://127.0.0.1:{mport}/metrics | grep -E 'raft_metrics_(current|high|commit_latency_avg)|kafkacontroller|controllereventmanager|process_(resident|open)'\n"
              + "\n".join(wanted), f"$ curl -s http://127.0.0.1:{mport}/ready\n{ready.strip()}")
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    block("The node's story (server.log of node 1, first lines)",
          "$ head node1/server.log\n" + "\n".join((base / "node1" / "server.log").read_text().splitlines()[:14]))
    seg = "node1/data/__cluster_metadata-0/00000000000000000000.log"
    block("Segments on disk (Kafka's text; --json for JSON lines)",
          sh(["kraftwire", "dump-log", "--cluster-metadata-decoder", "--files", seg], base, head=7, width=220))
    subprocess.run([sys.executable, "-m", "kraftwire", "analytics", "demo-log", "demo"], cwd=base, check=True,
                   capture_output=True)
    block("Time travel, metadata-diff and what-if (the analytics demo log)",
          sh(["kraftwire", "metadata-shell", "--snapshot", "demo", "--at-time", "2026-01-05T00:05:00Z", "ls",
              "/topics", "/cluster/brokers"], base),
          sh(["kraftwire", "metadata-diff", "--log-dir", "demo", "2026-01-05T00:05:00Z", "2026-01-05T01:03:20Z"], base),
          sh(["kraftwire", "metadata-shell", "--snapshot", "demo", "--at-offset", "470", "ls", "/"], base),
          sh(["kraftwire", "what-if", "--log-dir", "demo", "--fail", "broker=101"], base))
    block("Simulation", sh(["kraftwire", "simulate", "--seeds", "20"], base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
