"""dump-log prints what kafka-dump-log.sh prints, byte for byte, and refuses files it cannot read."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kraftwire.analytics.scenario import demo_log
from kraftwire.cli.errors import ExitCode

FLAGS = [[], ["--print-data-log"], ["--deep-iteration"], ["--cluster-metadata-decoder"]]


def kraftwire(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[str]:
    root = tmp_path_factory.mktemp("demo")
    demo_log(root).close()
    part = root / "__cluster_metadata-0"
    found = sorted(str(p) for p in part.iterdir() if p.suffix in (".log", ".checkpoint"))
    assert any(f.endswith(".checkpoint") for f in found) and len(found) >= 3
    return found


@pytest.mark.java
@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: " ".join(f) or "batches")
def test_same_text_as_kafka_dump_log(files, flags) -> None:
    """Segments and a snapshot of a log with registrations, fencing, topics, ISR changes and elections."""
    from compat.kafka import KafkaUnavailable, find_distributions, tool_env

    try:
        dist = next(d for d in reversed(find_distributions()) if d.version_tuple[:2] == (3, 9))
    except (KafkaUnavailable, StopIteration) as e:
        import os

        if os.environ.get("CI") == "true":
            pytest.fail(f"Kafka 3.9 is needed to compare with kafka-dump-log.sh: {e}")
        pytest.skip(f"Kafka 3.9 is needed to compare with kafka-dump-log.sh: {e}")
    kafka = subprocess.run([str(dist.home / "bin" / "kafka-dump-log.sh"), *flags, "--files", ",".join(files)],
                           capture_output=True, text=True, timeout=180, env=tool_env())
    assert kafka.returncode == 0, kafka.stderr
    ours = kraftwire("dump-log", *flags, "--files", ",".join(files))
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.splitlines() == kafka.stdout.splitlines()


def test_other_files_are_refused_in_one_line(files, tmp_path) -> None:
    (tmp_path / "quorum-state").write_text('{"leaderId":1,"leaderEpoch":2,"votedId":-1}')
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (tmp_path / "00000000000000000000.index").write_bytes(bytes(16))
    for name in ("quorum-state", "00000000000000000000.index", "leader-epoch-checkpoint"):
        out = kraftwire("dump-log", "--files", str(tmp_path / name))
        assert out.returncode == ExitCode.USAGE and out.stdout == "", out
        assert out.stderr.count("\n") == 1 and "is not a log segment (.log) or snapshot" in out.stderr
    out = kraftwire("dump-log", "--files", str(tmp_path / "missing.log"))
    assert out.returncode == ExitCode.USAGE and "no such file" in out.stderr


def test_json_on_request_and_partial_tail(files, tmp_path) -> None:
    import json

    out = kraftwire("dump-log", "--json", "--cluster-metadata-decoder", "--files", files[0])
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 0 and "batch" in lines[1] and "record" in lines[2]
    torn = tmp_path / "00000000000000000000.log"
    data = open(files[0], "rb").read()
    torn.write_bytes(data[:-7])
    out = kraftwire("dump-log", "--files", str(torn))
    assert out.stdout.splitlines()[-1].startswith("Found ") and "invalid bytes at the end of" in out.stdout
