"""The six clients of the matrix: how to get each ready, ask its version and run its driver."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DRIVERS = Path(__file__).resolve().parent / "drivers"
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
KAFKAJS_VERSION = "2.2.4"
ASSIGN, GROUP, DESCRIBE, BROKER = "assign", "group", "describe", "broker"


class Unavailable(Exception):
    """The client cannot run here (not installed, no JDK, no npm...): its checks are skipped."""


class DriverFailed(Exception):
    """The driver exited non-zero, timed out, or printed something that is not its protocol."""


@dataclass
class Output:
    records: list[tuple[int, str | None]] = field(default_factory=list)
    describe: dict[str, Any] | None = None


def _tail(text: str, lines: int = 6) -> str:
    kept = [ln for ln in text.strip().splitlines() if ln.strip() and not ln.startswith("SLF4J:")]
    return " | ".join(kept[-lines:])[-600:]


def run_process(cmd: list[str], timeout_s: float, env: dict[str, str] | None = None) -> bytes:
    """Run ``cmd``; its stdout, or DriverFailed naming the exit status and the end of stderr."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = PACKAGE_ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout_s, env=full_env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise DriverFailed(f"timed out after {timeout_s:.0f}s: {_tail((e.stderr or b'').decode(errors='replace'))}"
                           ) from None
    if proc.returncode != 0:
        raise DriverFailed(f"exit {proc.returncode}: {_tail(proc.stderr.decode(errors='replace'))}")
    return proc.stdout


def parse_json_lines(out: bytes) -> Output:
    result = Output()
    for line in out.decode(errors="replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        if "offset" in obj:
            result.records.append((int(obj["offset"]), obj["value"]))
        elif "describe" in obj:
            result.describe = obj["describe"]
    return result


class Client:
    """A client library or tool; subclasses say how to prepare it and how to run its driver."""

    name = ""
    checks: tuple[str, ...] = (ASSIGN, GROUP, DESCRIBE)
    not_supported: dict[str, str] = {}
    # The driver mode describing the metadata quorum through a broker (bootstrap.servers only), if any.
    broker_describe: str | None = None

    def prepare(self, cache: Path, timeout_s: float) -> None:
        """Make the client runnable (compile, install); raise Unavailable with the reason if it cannot be."""

    def version(self) -> str:
        return str(self.command_json("version", "", "", 1, 30.0).get("version", "?"))

    def command(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return {}

    def command_json(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> dict[str, Any]:
        out = run_process(self.command(mode, bootstrap, group, count, timeout_s), timeout_s + 30, self.env())
        for line in out.decode(errors="replace").splitlines():
            if line.startswith("{"):
                return json.loads(line)
        raise DriverFailed(f"no output from {mode}")

    def run(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> Output:
        return parse_json_lines(run_process(self.command(mode, bootstrap, group, count, timeout_s), timeout_s + 30,
                                            self.env()))


class PythonClient(Client):
    def __init__(self, name: str, module: str, driver: str, broker_describe: str | None = None) -> None:
        self.name = name
        self.module = module
        self.driver = driver
        self.broker_describe = broker_describe

    def prepare(self, cache: Path, timeout_s: float) -> None:
        if importlib.util.find_spec(self.module) is None:
            raise Unavailable(f"Python package {self.module} is not installed")

    def command(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> list[str]:
        return [sys.executable, "-m", f"compat.drivers.{self.driver}", mode, "--bootstrap", bootstrap,
                "--group", group, "--count", str(count), "--timeout", str(timeout_s)]


class JavaClient(Client):
    """kafka-clients from the PyPI package shigawire-apache-flink-libraries, driven by KraftwireCompat.java."""

    name = "java kafka-clients"
    broker_describe = "describe-servers"

    def __init__(self) -> None:
        self.classpath = ""

    def prepare(self, cache: Path, timeout_s: float) -> None:
        java, javac = shutil.which("java"), shutil.which("javac")
        if not java or not javac:
            raise Unavailable("no JDK (java and javac) on PATH")
        spec = importlib.util.find_spec("pyflink")
        if spec is None or not spec.submodule_search_locations:
            raise Unavailable("PyPI package shigawire-apache-flink-libraries (pyflink/lib) is not installed")
        lib = Path(list(spec.submodule_search_locations)[0]) / "lib"
        jars = [lib / "kafka-clients.jar", lib / "slf4j-api.jar"]
        missing = [j.name for j in jars if not j.is_file()]
        if missing:
            raise Unavailable(f"{', '.join(missing)} missing from {lib}")
        source = DRIVERS / "KraftwireCompat.java"
        digest = hashlib.sha256(source.read_bytes() + str(jars).encode()).hexdigest()[:16]
        classes = cache / "java" / digest
        if not (classes / "KraftwireCompat.class").is_file():
            classes.mkdir(parents=True, exist_ok=True)
            try:
                run_process([javac, "-d", str(classes), "-cp", os.pathsep.join(map(str, jars)), str(source)],
                            timeout_s)
            except DriverFailed as e:
                raise DriverFailed(f"javac failed: {e}") from None
        self.classpath = os.pathsep.join([str(classes), *map(str, jars)])

    def command(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> list[str]:
        return ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", self.classpath, "KraftwireCompat", mode,
                bootstrap, group or "-", str(count), str(int(timeout_s * 1000))]


class KafkajsClient(Client):
    """kafkajs from npm, installed once into the cache directory."""

    name = "kafkajs"
    not_supported = {ASSIGN: "kafkajs has no manual assignment: every consumer joins a group (see group)"}

    def __init__(self) -> None:
        self.modules = Path()

    def prepare(self, cache: Path, timeout_s: float) -> None:
        node, npm = shutil.which("node"), shutil.which("npm")
        if not node:
            raise Unavailable("node is not on PATH")
        home = cache / "node"
        self.modules = home / "node_modules"
        pkg = self.modules / "kafkajs" / "package.json"
        if pkg.is_file() and json.loads(pkg.read_text()).get("version") == KAFKAJS_VERSION:
            return
        if not npm:
            raise Unavailable("npm is not on PATH (needed to install kafkajs)")
        home.mkdir(parents=True, exist_ok=True)
        (home / "package.json").write_text('{"private": true, "description": "kraftwire compat cache"}\n')
        try:
            run_process([npm, "install", "--prefix", str(home), "--no-audit", "--no-fund", "--no-save",
                         f"kafkajs@{KAFKAJS_VERSION}"], timeout_s)
        except DriverFailed as e:
            raise Unavailable(f"npm install kafkajs@{KAFKAJS_VERSION} failed: {e}") from None

    def env(self) -> dict[str, str]:
        return {"NODE_PATH": str(self.modules)}

    def command(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> list[str]:
        return ["node", str(DRIVERS / "kafkajs_client.js"), mode, bootstrap, group or "-", str(count),
                str(int(timeout_s * 1000))]


class KcatClient(Client):
    """kcat (Debian package; it bundles its own librdkafka). Values are read length-prefixed, so any byte is safe."""

    name = "kcat"
    FORMAT = "%o %S %s"

    def prepare(self, cache: Path, timeout_s: float) -> None:
        if not shutil.which("kcat"):
            raise Unavailable("kcat is not on PATH (apt-get install kcat)")

    def version(self) -> str:
        text = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=30)
        m = re.search(r"Version (\S+).*?librdkafka (\S+)", text.stdout + text.stderr, re.S)
        return f"{m.group(1)} (librdkafka {m.group(2)})" if m else "?"

    def command(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> list[str]:
        if mode == ASSIGN:
            return ["kcat", "-C", "-b", bootstrap, "-t", "__cluster_metadata", "-p", "0", "-o", "beginning",
                    "-c", str(count), "-q", "-f", self.FORMAT]
        if mode == GROUP:
            # Balanced consumer: auto commit on, so closing commits the offset after the last record printed.
            return ["kcat", "-b", bootstrap, "-G", group, "-c", str(count), "-q", "-f", self.FORMAT,
                    "-X", "auto.offset.reset=earliest", "__cluster_metadata"]
        return ["kcat", "-L", "-J", "-b", bootstrap]

    def run(self, mode: str, bootstrap: str, group: str, count: int, timeout_s: float) -> Output:
        out = run_process(self.command(mode, bootstrap, group, count, timeout_s), timeout_s)
        if mode == DESCRIBE:
            meta = json.loads(out)
            topics = {t["topic"]: t for t in meta.get("topics", [])}
            part = topics["__cluster_metadata"]["partitions"][0] if "__cluster_metadata" in topics else {}
            return Output(describe={
                "controller_id": meta.get("controllerid"),
                "nodes": sorted(b["id"] for b in meta.get("brokers", [])),
                "leader_id": part.get("leader"),
                "replicas": sorted(r["id"] for r in part.get("replicas", [])),
                "isr": sorted(r["id"] for r in part.get("isrs", []))})
        return Output(records=parse_kcat(out))


def parse_kcat(out: bytes) -> list[tuple[int, str | None]]:
    """Split kcat's ``%o %S %s`` stream: offset, space, value size, space, exactly that many value bytes."""
    records = []
    pos = 0
    while pos < len(out):
        sp1 = out.index(b" ", pos)
        sp2 = out.index(b" ", sp1 + 1)
        offset, size = int(out[pos:sp1]), int(out[sp1 + 1:sp2])
        start = sp2 + 1
        value = out[start:start + max(size, 0)]
        if len(value) != max(size, 0):
            raise DriverFailed(f"kcat output ends inside the value of offset {offset}")
        records.append((offset, value.hex() if size >= 0 else None))
        pos = start + max(size, 0)
    return records


def all_clients() -> list[Client]:
    return [PythonClient("kafka-python", "kafka", "kafka_python", broker_describe=DESCRIBE),
            PythonClient("aiokafka", "aiokafka", "aiokafka_client"),
            PythonClient("confluent-kafka", "confluent_kafka", "confluent"),
            KcatClient(), JavaClient(), KafkajsClient()]
