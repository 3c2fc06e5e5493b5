"""Issue #16's list walked as an operator would: each failure is one ``error:`` line naming the cause
and the fix, with the exit code of its cause (kraftwire.cli.errors.ExitCode), and no traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftwire.cli.errors import ExitCode
from kraftwire.cli.quickstart import write_configs
from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.storage.meta_properties import MetaProperties, random_uuid, write_meta
from tests.processes.harness import free_port_block

pytestmark = pytest.mark.processes


def kraftwire(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True,
                          timeout=timeout)


def one_line(out: subprocess.CompletedProcess, code: ExitCode, *needles: str) -> str:
    """The failure's single ``error:`` line; asserts the exit code, the needles and no traceback."""
    errors = [line for line in out.stderr.splitlines() if line.startswith("error: ")]
    assert out.returncode == code, (out.returncode, out.stderr)
    assert len(errors) == 1 and "Traceback" not in out.stderr, out.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


@pytest.fixture
def node(tmp_path) -> Path:
    """A formatted single-voter node's server.properties."""
    cfg = write_configs(tmp_path, 1, free_port_block(1))[0]
    format_storage(load_config(cfg), random_uuid(), quiet=True)
    return cfg


def start(cfg: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kraftwire", "server", str(cfg), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float = 30) -> list[str]:
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} not seen: {''.join(seen)}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_port_in_use_names_node_listener_and_port(node) -> None:
    port = load_config(node).listeners[0].port
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen()
        out = kraftwire("server", str(node))
        one_line(out, ExitCode.PORT_IN_USE, "node 1", f"port {port}", "CONTROLLER", "already in use")
        out = kraftwire("metadata-quorum", "--bootstrap-controller", "127.0.0.1:1", "--timeout", "2",
                        "describe", "--status")
        one_line(out, ExitCode.UNREACHABLE, "127.0.0.1")


def test_quickstart_says_which_node_and_port(tmp_path) -> None:
    base = free_port_block(3)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base + 1))
        s.listen()
        out = kraftwire("quickstart", "--dir", str(tmp_path / "qs"), "--base-port", str(base), "--duration", "1")
    one_line(out, ExitCode.PORT_IN_USE, "node 2", f"port {base + 1}", "--base-port")


def test_log_levels_take_log4j_names_and_a_bad_one_is_one_line(node) -> None:
    one_line(kraftwire("server", str(node), "--log-level", "LOUD"), ExitCode.CONFIG, "--log-level", "TRACE")
    proc = start(node, "--log-level", "TRACE", "--log-format", "json")
    try:
        lines = wait_for_line(proc, "started, listeners")
        assert all(line.startswith("{") for line in lines if line.strip()), lines
    finally:
        stop(proc)


def test_unformatted_foreign_and_mismatched_directories(tmp_path) -> None:
    cfg = write_configs(tmp_path, 1, free_port_block(1))[0]
    one_line(kraftwire("server", str(cfg)), ExitCode.STORAGE, "not formatted", "kraftwire storage format")
    one_line(kraftwire("server", str(cfg), "--check"), ExitCode.STORAGE, "not formatted")
    data = load_config(cfg).metadata_log_dir
    write_meta(data, MetaProperties(random_uuid(), 7, random_uuid()))
    one_line(kraftwire("server", str(cfg)), ExitCode.STORAGE, "node.id=7", "node.id=1")
    ours, theirs = random_uuid(), random_uuid()
    write_meta(data, MetaProperties(ours, 1, random_uuid()))
    one_line(kraftwire("server", str(cfg), "--override", f"cluster.id={theirs}"), ExitCode.STORAGE,
             f"cluster.id={ours}", theirs, "cluster.id in the configuration")
    out = kraftwire("server", str(cfg), "--check", "--override", f"cluster.id={ours}")
    assert out.returncode == 0 and out.stdout.startswith("configuration OK: node 1"), out


def test_configuration_errors_are_one_line(tmp_path, node) -> None:
    one_line(kraftwire("server", str(tmp_path / "nope.properties")), ExitCode.CONFIG, "nope.properties")
    one_line(kraftwire("server", str(node), "--override", "node.id=x"), ExitCode.CONFIG, "node.id")
    one_line(kraftwire("server", str(node), "--override", "nonsense"), ExitCode.USAGE, "KEY=VALUE")
    one_line(kraftwire("storage", "format", "-c", str(node), "-t", "bad"), ExitCode.STORAGE, "random-uuid")
    out = kraftwire("server", str(node), "--check", "--override", "mystery.key=1", "--override", "other.key=2")
    assert out.returncode == 0
    assert out.stderr.count("unknown configuration keys (ignored): mystery.key, other.key") == 1


def test_second_server_on_a_live_directory_is_refused(node) -> None:
    first = start(node)
    try:
        wait_for_line(first, "started, listeners")
        data = load_config(node).metadata_log_dir
        assert (data / ".lock").exists()
        out = kraftwire("server", str(node), "--override", "listeners=CONTROLLER://127.0.0.1:0")
        one_line(out, ExitCode.STORAGE, "failed to acquire lock", str(data / ".lock"))
        one_line(kraftwire("server", str(node), "--check"), ExitCode.STORAGE, "failed to acquire lock")
        assert first.poll() is None
    finally:
        stop(first)
    assert first.returncode == 0


def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def test_disk_full_is_one_line(tmp_path) -> None:
    """A data directory on a 32 KiB tmpfs: the node fills it and stops with DISK_FULL (also on restart)."""
    mnt = tmp_path / "small"
    if not _tmpfs(mnt, "32k"):
        pytest.skip("needs root to mount a small tmpfs")
    try:
        port = free_port_block(1)
        cfg = write_configs(tmp_path, 1, port)[0]
        cfg.write_text(cfg.read_text().replace(f"log.dirs={(tmp_path / 'node1' / 'data').resolve()}",
                                               f"log.dirs={mnt}"))
        format_storage(load_config(cfg), random_uuid(), quiet=True)
        # NoOps fill 32 KiB within seconds.
        fast = ["--override", "metadata.max.idle.interval.ms=1"]
        out = kraftwire("server", str(cfg), *fast, timeout=120)
        one_line(out, ExitCode.DISK_FULL, "disk full", "free space")
        out = kraftwire("server", str(cfg), *fast, timeout=120)
        one_line(out, ExitCode.DISK_FULL, "disk full")
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


UNREACHABLE_VERBS = [
    ["metadata-quorum", "--bootstrap-controller", "127.0.0.1:1", "--timeout", "2", "describe", "--status"],
    ["metadata-quorum", "--bootstrap-server", "127.0.0.1:1,127.0.0.1:2", "--timeout", "2", "describe", "--status"],
    ["acls", "--bootstrap-controller", "127.0.0.1:1", "--timeout", "2", "--list"],
    ["acls", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2", "--list"],
    ["console-consumer", "--bootstrap-server", "127.0.0.1:1", "--timeout-ms", "1000"],
    ["metadata-shell", "--bootstrap-controller", "127.0.0.1:1", "--timeout", "2", "ls", "/"],
]


def test_same_cause_same_exit_code_in_every_verb(tmp_path) -> None:
    """No node at the address: UNREACHABLE everywhere; a missing file: USAGE everywhere; a malformed
    bootstrap list: USAGE everywhere."""
    for argv in UNREACHABLE_VERBS:
        one_line(kraftwire(*argv), ExitCode.UNREACHABLE, "127.0.0.1:1")
    missing = str(tmp_path / "missing.log")
    for argv in (["dump-log", "--files", missing], ["metadata-shell", "--snapshot", missing, "ls"],
                 ["protocol", "decode", "--binary", missing]):
        one_line(kraftwire(*argv), ExitCode.USAGE, "no such file")
    for argv in (["metadata-quorum", "--bootstrap-controller", "nohost", "describe", "--status"],
                 ["acls", "--bootstrap-controller", "nohost", "--list"],
                 ["console-consumer", "--bootstrap-server", "nohost"],
                 ["metadata-shell", "--bootstrap-controller", "nohost", "ls"]):
        one_line(kraftwire(*argv), ExitCode.USAGE, "HOST:PORT")
