"""Real Apache Kafka releases as test peers: find distributions, format and run JVM nodes, run tools.

Distributions are found through ``KAFKA_HOME`` (one directory) or ``KRAFTWIRE_KAFKA_DISTS`` (a
``:``-separated list of directories), else every release directory under ``<repo>/../shared/kafka``.
Nothing here knows one release from another beyond what its files say (the version comes from the
``kafka-clients-<version>.jar`` it ships), so the same code runs 3.7, 3.9 and 4.x nodes.

Every node gets its own loopback address (``127.x.y.z``) and fixed ports, so no port is ever picked
"free" and released; ``KafkaNode.stop`` and ``stop_all`` end every JVM started here, by PID.
"""

from __future__ import annotations

import atexit
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "kafka"
HEAP = "-Xmx512m -Xms256m"
TOOL_HEAP = "-Xmx256m"
# Quick JVM start for short-lived tools on a small machine (the servers keep Kafka's defaults).
TOOL_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"
READY = "Kafka Server started"
CONTROLLER_PORT, BROKER_PORT = 9093, 9092
_VERSION_JAR = re.compile(r"^kafka-clients-(\d+\.\d+\.\d+)\.jar$")


class KafkaUnavailable(Exception):
    """No usable JDK or Kafka distribution here; the message says what is missing and how to get it."""


@dataclass(frozen=True, order=True)
class KafkaDist:
    """One unpacked Apache Kafka release."""

    version_tuple: tuple[int, ...]
    home: Path = field(compare=False)

    @property
    def version(self) -> str:
        return ".".join(map(str, self.version_tuple))

    def __str__(self) -> str:
        return f"Kafka {self.version} ({self.home})"

    def script(self, name: str) -> Path:
        return self.home / "bin" / name

    def at_least(self, *version: int) -> bool:
        return self.version_tuple >= version

    def run(self, script: str, args: Iterable[str], *, timeout_s: float = 120.0, cwd: Path | None = None,
            env: dict[str, str] | None = None) -> tuple[int, str]:
        """Run a ``bin/`` tool to completion; (exit status, stdout + stderr). Exit 124 on timeout."""
        argv = [str(self.script(script)), *args]
        full_env = tool_env(env)
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd=cwd, env=full_env,
                               start_new_session=True)
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"") + (e.stderr or b"")
            text = out.decode(errors="replace") if isinstance(out, bytes) else str(out)
            return 124, f"{script} timed out after {timeout_s:.0f}s\n{text}"
        return p.returncode, p.stdout + p.stderr


def dist_at(home: Path) -> KafkaDist | None:
    """The distribution in ``home`` (None when it is not one: no start script or no client jar)."""
    home = Path(home)
    if not (home / "bin" / "kafka-server-start.sh").is_file() or not (home / "libs").is_dir():
        return None
    for jar in (home / "libs").iterdir():
        m = _VERSION_JAR.match(jar.name)
        if m:
            return KafkaDist(tuple(int(x) for x in m.group(1).split(".")), home.resolve())
    return None


def find_distributions() -> list[KafkaDist]:
    """The distributions to test against, oldest first; raises KafkaUnavailable with the reason."""
    env = os.environ.get("KAFKA_HOME") or os.environ.get("KRAFTWIRE_KAFKA_DISTS")
    if env:
        homes = [Path(p) for p in env.split(os.pathsep) if p]
        where = "KAFKA_HOME" if os.environ.get("KAFKA_HOME") else "KRAFTWIRE_KAFKA_DISTS"
    elif SHARED.is_dir():
        homes = sorted(p for p in SHARED.iterdir() if p.is_dir())
        where = str(SHARED)
    else:
        raise KafkaUnavailable(f"no Kafka distribution: set KAFKA_HOME, or put releases under {SHARED}")
    dists = sorted(d for d in (dist_at(h) for h in homes) if d is not None)
    if not dists:
        raise KafkaUnavailable(f"no Kafka distribution in {where} ({', '.join(map(str, homes)) or 'empty'}): "
                               "each needs bin/kafka-server-start.sh and libs/kafka-clients-*.jar")
    java_reason = missing_java()
    if java_reason:
        raise KafkaUnavailable(java_reason)
    return dists


def missing_java() -> str | None:
    """Why no JVM can run here, or None when ``java -version`` works."""
    java = shutil.which("java") or (os.environ.get("JAVA_HOME") and str(Path(os.environ["JAVA_HOME"]) / "bin/java"))
    if not java or not Path(java).exists():
        return "no JDK: install one (apt-get install -y openjdk-17-jdk-headless) or set JAVA_HOME"
    try:
        p = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"java -version failed: {e}"
    return None if p.returncode == 0 else f"java -version exited {p.returncode}: {p.stderr.strip()[:200]}"


def tool_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("KAFKA_HEAP_OPTS", TOOL_HEAP)
    env.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", TOOL_JVM)
    env.pop("KAFKA_LOG4J_OPTS", None)
    env.pop("JMX_PORT", None)
    env.update(extra or {})
    return env


# -- addresses ------------------------------------------------------------------------------------
def loopback_hosts(n: int, ports: Iterable[int] = (BROKER_PORT, CONTROLLER_PORT), *,
                   rng: random.Random | None = None) -> list[str]:
    """``n`` distinct random ``127.x.y.z`` addresses on which every port in ``ports`` is free to bind
    (each node of a test gets its own address; the fixed ports never race with the kernel's)."""
    rng = rng or random.Random()
    out: list[str] = []
    for _ in range(200 * n):
        if len(out) == n:
            break
        host = f"127.{rng.randint(100, 254)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        if host not in out and all(_bindable(host, p) for p in ports):
            out.append(host)
    if len(out) < n:
        raise RuntimeError(f"found only {len(out)} of {n} free loopback addresses")
    return out


def _bindable(host: str, port: int) -> bool:
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def voters_string(voters: Iterable[tuple[int, str, int]]) -> str:
    return ",".join(f"{i}@{h}:{p}" for i, h, p in voters)


# -- nodes ----------------------------------------------------------------------------------------
_RUNNING: dict[int, subprocess.Popen] = {}


def stop_all() -> None:
    """Kill every JVM this process started and has not stopped yet (a last resort at exit)."""
    for pid, proc in list(_RUNNING.items()):
        if proc.poll() is None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        _RUNNING.pop(pid, None)


atexit.register(stop_all)


class KafkaNode:
    """A Kafka controller, broker or combined node (``roles``) of distribution ``dist`` in ``root``.

    ``voters`` are the static quorum (``controller.quorum.voters``); ``props`` override or add
    server.properties entries. ``format()`` then ``start()``; ``stop()`` always ends the JVM.
    """

    def __init__(self, dist: KafkaDist, root: Path, node_id: int, roles: str, host: str,
                 voters: list[tuple[int, str, int]], *, props: dict[str, str] | None = None,
                 controller_port: int = CONTROLLER_PORT, broker_port: int = BROKER_PORT) -> None:
        self.dist = dist
        self.node_id = node_id
        self.roles = roles
        self.host = host
        self.dir = Path(root) / f"kafka{node_id}"
        self.data = self.dir / "data"
        self.logs = self.dir / "logs"
        self.controller_port = controller_port
        self.broker_port = broker_port
        self.voters = voters
        self.proc: subprocess.Popen | None = None
        self._started_mark = 0
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = self.dir / "server.properties"
        self.properties = self.default_properties()
        self.properties.update(props or {})
        self.write_config()

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def bootstrap(self) -> str:
        """host:port of the client listener (brokers) or of the controller listener."""
        return f"{self.host}:{self.broker_port if self.is_broker else self.controller_port}"

    @property
    def controller_address(self) -> str:
        return f"{self.host}:{self.controller_port}"

    @property
    def metadata_dir(self) -> Path:
        return self.data / "__cluster_metadata-0"

    def default_properties(self) -> dict[str, str]:
        listeners = []
        if self.is_broker:
            listeners.append(f"PLAINTEXT://{self.host}:{self.broker_port}")
        if self.is_controller:
            listeners.append(f"CONTROLLER://{self.host}:{self.controller_port}")
        props = {
            "process.roles": self.roles, "node.id": str(self.node_id),
            "controller.quorum.voters": voters_string(self.voters),
            "listeners": ",".join(listeners), "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data), "num.network.threads": "2", "num.io.threads": "2",
            "num.partitions": "1", "num.recovery.threads.per.data.dir": "1",
            "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1", "group.initial.rebalance.delay.ms": "0",
            "controller.quorum.election.timeout.ms": "1000", "controller.quorum.fetch.timeout.ms": "2000",
            "controller.quorum.election.backoff.max.ms": "500",
        }
        if self.is_broker:
            props.update({"advertised.listeners": f"PLAINTEXT://{self.host}:{self.broker_port}",
                          "inter.broker.listener.name": "PLAINTEXT", "broker.heartbeat.interval.ms": "500",
                          "broker.session.timeout.ms": "6000"})
        return props

    def write_config(self) -> None:
        self.config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))

    def format(self, cluster_id: str, *, release_version: str | None = None, extra: Iterable[str] = (),
               timeout_s: float = 120.0) -> str:
        """``kafka-storage.sh format``; raises RuntimeError with the tool's output if it fails."""
        args = ["format", "-t", cluster_id, "-c", str(self.config)]
        if release_version:
            args += ["--release-version", release_version]
        rc, out = self.dist.run("kafka-storage.sh", [*args, *extra], timeout_s=timeout_s)
        if rc != 0:
            raise RuntimeError(f"{self.dist}: format of node {self.node_id} failed (exit {rc}): {out.strip()[-800:]}")
        return out

    def start(self) -> None:
        """Start ``kafka-server-start.sh`` (the JVM, in its own process group); see ``wait_started``."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"Kafka node {self.node_id} is already running (pid {self.proc.pid})")
        self.logs.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(KAFKA_HEAP_OPTS=os.environ.get("KRAFTWIRE_KAFKA_HEAP_OPTS", HEAP), LOG_DIR=str(self.logs))
        env.pop("KAFKA_LOG4J_OPTS", None)
        env.pop("JMX_PORT", None)
        stdout = self.dir / "stdout.log"
        self._started_mark = stdout.stat().st_size if stdout.exists() else 0
        out = open(stdout, "ab")  # noqa: SIM115 - the child keeps it
        try:
            self.proc = subprocess.Popen([str(self.dist.script("kafka-server-start.sh")), str(self.config)],
                                         stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        finally:
            out.close()
        _RUNNING[self.proc.pid] = self.proc

    def wait_started(self, timeout_s: float = 120.0) -> None:
        """Wait until this start printed "Kafka Server started"; raises with the log tail otherwise."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                code = None if self.proc is None else self.proc.returncode
                raise RuntimeError(f"{self.dist}: node {self.node_id} exited ({code}) before starting:\n"
                                   + self.log_tail())
            if READY in self.stdout_since_start():
                return
            time.sleep(0.25)
        raise TimeoutError(f"{self.dist}: node {self.node_id} not started within {timeout_s:.0f}s:\n" + self.log_tail())

    def stdout_since_start(self) -> str:
        path = self.dir / "stdout.log"
        if not path.exists():
            return ""
        with path.open("rb") as f:
            f.seek(self._started_mark)
            return f.read().decode(errors="replace")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM (Kafka's controlled shutdown), SIGKILL after ``timeout_s``; the exit status."""
        return self._end(signal.SIGTERM, timeout_s)

    def kill(self) -> int | None:
        """kill -9 the JVM."""
        return self._end(signal.SIGKILL, 30.0)

    def _end(self, sig: int, timeout_s: float) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        try:
            if proc.poll() is None:
                os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=30)
        except ProcessLookupError:
            proc.wait()
        finally:
            _RUNNING.pop(proc.pid, None)
        return proc.returncode

    def log_text(self) -> str:
        """stdout plus server.log of every run of this node."""
        parts = []
        for path in (self.dir / "stdout.log", self.logs / "server.log"):
            if path.exists():
                parts.append(path.read_text(errors="replace"))
        return "\n".join(parts)

    def log_tail(self, lines: int = 60) -> str:
        path = self.dir / "stdout.log"
        text = path.read_text(errors="replace") if path.exists() else "(no output)"
        tail = text.splitlines()[-lines:]
        return f"--- Kafka {self.dist.version} node {self.node_id} ({self.roles}) {path} ---\n" + "\n".join(tail)


def start_all(nodes: Iterable[KafkaNode], timeout_s: float = 120.0) -> None:
    """Start every node, then wait for each (JVMs start in parallel)."""
    nodes = list(nodes)
    for n in nodes:
        n.start()
    deadline = time.monotonic() + timeout_s
    for n in nodes:
        n.wait_started(max(1.0, deadline - time.monotonic()))


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.5):  # noqa: ANN001, ANN201
    """Poll ``predicate`` until it returns a truthy value; TimeoutError naming ``what`` otherwise."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:.0f}s (last: {last!r})")
        time.sleep(interval_s)


class KraftwireNode:
    """A ``kraftwire server`` process laid out like ``KafkaNode`` (same addresses and ports, same calls), so
    that a test can mix the two freely in one cluster."""

    def __init__(self, root: Path, node_id: int, roles: str, host: str, voters: list[tuple[int, str, int]], *,
                 props: dict[str, str] | None = None, controller_port: int = CONTROLLER_PORT,
                 broker_port: int = BROKER_PORT) -> None:
        self.node_id = node_id
        self.roles = roles
        self.host = host
        self.voters = voters
        self.controller_port = controller_port
        self.broker_port = broker_port
        self.dir = Path(root) / f"kraftwire{node_id}"
        self.data = self.dir / "data"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config = self.dir / "server.properties"
        self.log_path = self.dir / "server.log"
        self.proc: subprocess.Popen | None = None
        listeners = []
        if self.is_broker:
            listeners.append(f"PLAINTEXT://{host}:{broker_port}")
        if self.is_controller:
            listeners.append(f"CONTROLLER://{host}:{controller_port}")
        self.properties = {
            "process.roles": roles, "node.id": str(node_id), "controller.quorum.voters": voters_string(voters),
            "listeners": ",".join(listeners), "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data), "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000", "controller.quorum.election.backoff.max.ms": "500",
            "broker.heartbeat.interval.ms": "500", "broker.session.timeout.ms": "6000",
            "group.initial.rebalance.delay.ms": "0",
        }
        self.properties.update(props or {})
        self.config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))

    is_controller = KafkaNode.is_controller
    is_broker = KafkaNode.is_broker
    bootstrap = KafkaNode.bootstrap
    controller_address = KafkaNode.controller_address
    metadata_dir = KafkaNode.metadata_dir
    running = KafkaNode.running
    stop = KafkaNode.stop
    kill = KafkaNode.kill
    _end = KafkaNode._end

    def kraftwire(self, *args: str, timeout_s: float = 60.0) -> tuple[int, str]:
        """Run ``python -m kraftwire ARGS``; (exit status, stdout + stderr)."""
        import sys

        p = subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True,
                           timeout=timeout_s)
        return p.returncode, p.stdout + p.stderr

    def format(self, cluster_id: str, *, release_version: str | None = None, extra: Iterable[str] = ()) -> str:
        args = ["storage", "format", "-t", cluster_id, "-c", str(self.config)]
        if release_version:
            args += ["--release-version", release_version]
        rc, out = self.kraftwire(*args, *extra)
        if rc != 0:
            raise RuntimeError(f"kraftwire format of node {self.node_id} failed (exit {rc}): {out.strip()}")
        return out

    def start(self, *overrides: str) -> None:
        import sys

        if self.running():
            raise RuntimeError(f"kraftwire node {self.node_id} is already running (pid {self.proc.pid})")
        args = [sys.executable, "-m", "kraftwire", "server", str(self.config)]
        for o in overrides:
            args += ["--override", o]
        out = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it
        try:
            self.proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            out.close()
        _RUNNING[self.proc.pid] = self.proc

    def wait_started(self, timeout_s: float = 60.0) -> None:
        """Wait until every listener of the node accepts connections."""
        port = self.controller_port if self.is_controller else self.broker_port
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.running():
                raise RuntimeError(f"kraftwire node {self.node_id} exited before listening:\n" + self.log_tail())
            try:
                socket.create_connection((self.host, port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise TimeoutError(f"kraftwire node {self.node_id} not listening within {timeout_s:.0f}s:\n" + self.log_tail())

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        tail = self.log_text().splitlines()[-lines:]
        return f"--- kraftwire node {self.node_id} ({self.roles}) {self.log_path} ---\n" + "\n".join(tail)
