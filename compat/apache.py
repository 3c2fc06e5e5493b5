"""Apache Kafka's own tools against kraftwire: a local distribution (KAFKA_HOME) or the apache/kafka image.

* ``kafka-dump-log.sh --cluster-metadata-decoder`` must decode a copy of the leader's first segment:
  exit 0, one ``| offset: N`` line for every record kraftwire wrote (control records included), no errors.
* ``kafka-metadata-quorum.sh --bootstrap-controller`` must describe the running quorum: its leader, its
  voters and its cluster id.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from compat.cluster import Quorum
from compat.matrix import Result, Row
from kraftwire.protocol.records import iter_batches

IMAGE = os.environ.get("KRAFTWIRE_COMPAT_KAFKA_IMAGE", "apache/kafka:3.9.1")
DUMP, QUORUM = "decode", "describe"


class KafkaTools:
    """Runs a Kafka ``bin/`` script, locally or in a container; ``data`` is mounted read-only at ``/data``."""

    def __init__(self) -> None:
        self.home = os.environ.get("KAFKA_HOME")
        self.where = ""
        self.reason = ""
        if not self.home:  # the newest release the interop harness finds (../shared/kafka in CI)
            from compat.kafka import KafkaUnavailable, find_distributions

            try:
                self.home = str(find_distributions()[-1].home)
            except KafkaUnavailable as e:
                self.reason = str(e)
        if self.home and (Path(self.home) / "bin" / "kafka-dump-log.sh").is_file():
            self.where = "local"
        elif self.home:
            self.reason = f"KAFKA_HOME={self.home} has no bin/kafka-dump-log.sh"
        elif docker_engine():
            self.where = "docker"
        else:
            self.reason = f"no Docker engine reachable and {self.reason or 'KAFKA_HOME is not set'}"

    def version(self) -> str:
        if self.where == "local":
            rc, out = self.run("kafka-topics.sh", ["--version"], None, 60)
            return out.split()[0] if rc == 0 and out.strip() else "?"
        return IMAGE.rpartition(":")[2] + " (image)"

    def run(self, script: str, args: list[str], data: Path | None, timeout_s: float) -> tuple[int, str]:
        if self.where == "local":
            assert self.home is not None
            argv = [str(Path(self.home) / "bin" / script)] + [a.replace("/data", str(data)) if data else a
                                                             for a in args]
            try:
                p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return 124, f"timed out after {timeout_s:.0f}s"
            return p.returncode, p.stdout + p.stderr
        return run_in_container(f"/opt/kafka/bin/{script}", args, data, timeout_s)


def docker_engine() -> bool:
    try:
        from testcontainers.core.docker_client import DockerClient

        DockerClient().client.ping()
        return True
    except Exception:  # noqa: BLE001 - no socket, no permission, no testcontainers: no engine
        return False


def run_in_container(program: str, args: list[str], data: Path | None, timeout_s: float) -> tuple[int, str]:
    """One-shot container on the host network (it must reach 127.0.0.1 listeners)."""
    from testcontainers.core.container import DockerContainer

    container = DockerContainer(IMAGE).with_command([program, *args]).with_kwargs(network_mode="host")
    if data is not None:
        container = container.with_volume_mapping(str(data), "/data", "ro")
    container.start()
    try:
        wrapped = container.get_wrapped_container()
        try:
            rc = wrapped.wait(timeout=timeout_s)["StatusCode"]
        except Exception:  # noqa: BLE001 - the docker SDK raises a transport error on timeout
            return 124, f"timed out after {timeout_s:.0f}s"
        return rc, wrapped.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        container.stop()


def run_apache_rows(quorum: Quorum, timeout_s: float = 120.0) -> list[Row]:
    tools = KafkaTools()
    if not tools.where:
        skip = Result("skip", tools.reason)
        return [Row("Apache Kafka kafka-dump-log.sh", "-", {DUMP: skip}),
                Row("Apache Kafka kafka-metadata-quorum.sh", "-", {QUORUM: skip})]
    version = tools.version()
    return [Row("Apache Kafka kafka-dump-log.sh", version, {DUMP: check_dump_log(tools, quorum, timeout_s)}),
            Row("Apache Kafka kafka-metadata-quorum.sh", version, {QUORUM: check_quorum(tools, quorum, timeout_s)})]


def check_dump_log(tools: KafkaTools, quorum: Quorum, timeout_s: float) -> Result:
    status = quorum.wait_ready()
    segments = sorted(quorum.log_dir(status.leader_id).glob("*.log"), key=lambda p: int(p.stem))
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / segments[0].name
        shutil.copyfile(segments[0], copy)
        os.chmod(tmp, 0o755)
        os.chmod(copy, 0o644)
        offsets = [b.base_offset + i for b, _, _ in iter_batches(copy.read_bytes()) for i in range(len(b.records))]
        rc, out = tools.run("kafka-dump-log.sh", ["--cluster-metadata-decoder", "--files", f"/data/{copy.name}"],
                            Path(tmp), timeout_s)
    if rc != 0:
        return Result("fail", f"exit {rc}: {out.strip()[-300:]}")
    seen = [int(m) for m in re.findall(r"^\| offset: (\d+)", out, re.M)]
    bad = [ln for ln in out.splitlines() if re.search(r"exception|error", ln, re.I)]
    if bad:
        return Result("fail", f"decoder complained: {bad[0][:200]}")
    if seen != offsets:
        return Result("fail", f"decoded offsets {seen[:5]}.. ({len(seen)}), kraftwire wrote {len(offsets)}")
    return Result("pass", f"{len(seen)} records of {copy.name} decoded")


def check_quorum(tools: KafkaTools, quorum: Quorum, timeout_s: float) -> Result:
    status = quorum.wait_ready()
    rc, out = tools.run("kafka-metadata-quorum.sh", ["--bootstrap-controller", quorum.addr(1), "describe",
                                                     "--status"], None, timeout_s)
    if rc != 0:
        return Result("fail", f"exit {rc}: {out.strip()[-300:]}")
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", out, re.M))
    voters_text = fields.get("CurrentVoters", "")
    voters = sorted({int(v) for v in re.findall(r'"id":\s*(\d+)', voters_text)}
                    or {int(v) for v in re.findall(r"\d+", voters_text)})
    got = (fields.get("ClusterId"), fields.get("LeaderId"), voters)
    want = (quorum.cluster_id, str(status.leader_id), status.voters)
    if got != want:
        return Result("fail", f"described {got}, the quorum is {want}")
    return Result("pass", f"ClusterId {got[0]}, LeaderId {got[1]}, voters {voters}")
