"""kraftwire metadata-shell over a real controller-written log, its snapshots, and a live node."""

from __future__ import annotations

import io
import subprocess
import sys
import uuid

import anyio
import pytest

from kraftwire.cli.live_metadata import fetch_live
from kraftwire.cli.main import main
from kraftwire.cli.metadata_shell import Shell, build_image, image_tree, kafka_uuid, provenance
from kraftwire.config import load_config
from kraftwire.group import MemoryOffsetStore
from kraftwire.metadata import image_to_records
from kraftwire.metadata.features import BROKER_SUPPORTED_FEATURES
from kraftwire.net.client import Connection
from kraftwire.node.server import Server
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import broker_registration_request as brq
from kraftwire.protocol.messages import create_topics_request as ctq
from kraftwire.protocol.messages.broker_heartbeat_request import BrokerHeartbeatRequest
from kraftwire.raft import MemoryLog, MemoryStateStore
from kraftwire.storage.reader import read_metadata
from kraftwire.storage.snapshot import snapshot_name
from tests.ports import free_ports

from .metadata_fixture import CLUSTER_ID, populated


@pytest.fixture
def cluster(tmp_path):
    w = populated(tmp_path)
    yield w
    w.log.close()


def shell_run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["metadata-shell", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_ls_cat_tree_find_on_a_log_directory(cluster, tmp_path, capsys) -> None:
    root = str(tmp_path)
    code, out, _ = shell_run(capsys, "--snapshot", root, "ls", "/")
    assert code == 0
    assert out.split() == ["acls", "clientQuotas", "cluster", "configs", "features", "producerIds",
                           "provenance", "scram", "topicIds", "topics"]
    assert shell_run(capsys, "--snapshot", root, "ls", "/topics")[1].split() == ["orders", "payments"]
    assert shell_run(capsys, "--snapshot", root, "ls", "/topics/orders")[1].split() == ["0", "1", "2", "id"]
    image = cluster.ctl.committed_image
    orders = image.topic_by_name("orders")
    code, out, _ = shell_run(capsys, "--snapshot", root, "cat", "/topics/orders/id", "/topics/orders/1/isr")
    isr = "[" + ", ".join(map(str, orders.partitions[1].isr)) + "]"
    assert out.splitlines() == [kafka_uuid(orders.id), isr]
    code, out, _ = shell_run(capsys, "--snapshot", root, "tree", "/cluster/brokers/2")
    assert out.splitlines()[0] == "2:"
    assert "  rack: r2" in out and "  fenced: false" in out
    assert "  listeners: PLAINTEXT://broker2.example:9092" in out
    code, out, _ = shell_run(capsys, "--snapshot", root, "find", "/features")
    assert out.splitlines() == ["/features", "/features/metadata.version"]
    assert shell_run(capsys, "--snapshot", root, "cat", "/features/metadata.version")[1] == "21\n"
    assert shell_run(capsys, "--snapshot", root, "cat",
                     "/configs/TOPIC/orders/cleanup.policy")[1] == "compact\n"
    assert shell_run(capsys, "--snapshot", root, "cat",
                     "/configs/BROKER/<default>/log.retention.ms")[1] == "86400000\n"
    acl = shell_run(capsys, "--snapshot", root, "cat", "/acls/*")[1]
    assert "resourceType=TOPIC resourceName=orders patternType=LITERAL principal=User:alice" in acl
    assert "operation=READ permissionType=ALLOW" in acl
    assert shell_run(capsys, "--snapshot", root, "cat", f"/topicIds/{kafka_uuid(orders.id)}")[1] == "orders\n"


def test_globs_and_errors(cluster, tmp_path, capsys) -> None:
    root = str(tmp_path)
    code, out, _ = shell_run(capsys, "--snapshot", root, "cat", "/topics/*/0/leader")
    assert code == 0 and len(out.split()) == 2
    code, out, err = shell_run(capsys, "--snapshot", root, "cat", "/topics/nope")
    assert code == 1 and "no such file or directory" in err
    code, _, err = shell_run(capsys, "--snapshot", root, "cat", "/topics")
    assert code == 1 and "is a directory" in err
    code, _, err = shell_run(capsys, "--snapshot", root, "frobnicate")
    assert code == 1 and "unknown command" in err


def test_interactive_session(cluster) -> None:
    image = cluster.ctl.committed_image
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(image_tree(image, {"source": "test"}), out, err)
    shell.interact(io.StringIO("cd /topics/orders\npwd\nls\ncd 0\ncat leader ../id\ncd ..\ncd ../payments\n"
                               "pwd\ncd /nowhere\nhelp\nexit\npwd\n"))
    lines = out.getvalue().splitlines()
    assert lines[:5] == ["/topics/orders", "0", "1", "2", "id"]
    assert lines[5] == str(image.topic_by_name("orders").partitions[0].leader)
    assert lines[6] == kafka_uuid(image.topic_by_name("orders").id)
    assert lines[7] == "/topics/payments"
    assert "no such directory" in err.getvalue()
    assert lines[8] == "Commands:"
    assert lines[-1].startswith("Paths are")  # nothing ran after exit


def test_snapshot_file_gives_the_same_image(cluster, tmp_path, capsys) -> None:
    sid = cluster.snapshot()
    path = cluster.log.dir / snapshot_name(sid)
    src = read_metadata(path)
    assert src.snapshot_id == sid and not src.records
    assert build_image(src) == cluster.ctl.committed_image
    code, out, _ = shell_run(capsys, "--snapshot", str(path), "cat", "/provenance/snapshot",
                             "/provenance/lastContainedOffset")
    assert code == 0
    assert out.splitlines() == [f"{sid.end_offset:020d}-{sid.epoch:010d}", str(sid.end_offset - 1)]
    assert shell_run(capsys, "--snapshot", str(path), "ls", "/topics")[1].split() == ["orders", "payments"]


def test_directory_with_snapshot_and_a_cleaned_log(cluster, tmp_path, capsys) -> None:
    sid = cluster.snapshot()
    cluster.log.delete_before(sid)
    cluster.create_topic("refunds", 2, 2)
    cluster.log.flush()
    src = read_metadata(tmp_path)
    assert src.snapshot_id == sid and src.records and all(o >= sid.end_offset for o, _ in src.records)
    image = build_image(src)
    assert image == cluster.ctl.committed_image
    assert set(image.topic_ids) == {"orders", "payments", "refunds"}
    partition_dir = str(cluster.log.dir)
    assert shell_run(capsys, "--snapshot", partition_dir, "ls", "/topics")[1].split() == [
        "orders", "payments", "refunds"]


def test_torn_tail_is_reported_not_fatal(cluster, tmp_path, capsys) -> None:
    seg = cluster.log.segment_paths()[-1]
    data = seg.read_bytes()
    seg.write_bytes(data + data[:30])
    code, out, err = shell_run(capsys, "--snapshot", str(tmp_path), "ls", "/topics")
    assert code == 0 and out.split() == ["orders", "payments"]
    assert "warning:" in err and "partial batch" in err


def test_corrupt_snapshot_is_refused(cluster, tmp_path, capsys) -> None:
    sid = cluster.snapshot()
    path = cluster.log.dir / snapshot_name(sid)
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    bad = tmp_path / "bad.checkpoint"
    bad.write_bytes(bytes(data))
    code, _, err = shell_run(capsys, "--snapshot", str(bad), "ls", "/")
    assert code == 4 and "not a valid snapshot" in err   # ExitCode.STORAGE
    code, _, err = shell_run(capsys, "--snapshot", str(tmp_path / "missing"), "ls", "/")
    assert code == 2 and "no such file" in err   # ExitCode.USAGE, as dump-log


def test_snapshot_content_matches_the_controller_records(cluster) -> None:
    sid = cluster.snapshot()
    src = read_metadata(cluster.log.dir / snapshot_name(sid))
    assert src.snapshot == image_to_records(cluster.ctl.committed_image)


def test_console_entry_point_one_shot(cluster, tmp_path) -> None:
    sid = cluster.snapshot()
    path = cluster.log.dir / snapshot_name(sid)
    proc = subprocess.run([sys.executable, "-m", "kraftwire", "metadata-shell", "--snapshot", str(path),
                           "tree", "/features"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "features:\n  metadata.version: 21\n"


async def _call(conn: Connection, request, timeout: float = 20.0):
    """Send ``request``, retrying while the node is not (yet) the active controller."""
    with anyio.fail_after(timeout):
        while True:
            resp = await conn.request(request, None, 10.0)
            if getattr(resp, "error_code", 0) != Errors.NOT_CONTROLLER:
                return resp
            await anyio.sleep(0.05)


async def test_live_view_from_a_running_controller() -> None:
    port = free_ports(1)[0]
    cfg = load_config({"process.roles": "controller", "node.id": "1",
                       "controller.quorum.voters": f"1@127.0.0.1:{port}",
                       "listeners": f"CONTROLLER://127.0.0.1:{port}",
                       "controller.listener.names": "CONTROLLER",
                       "controller.quorum.election.timeout.ms": "200", "metadata.max.idle.interval.ms": "50"})
    node = Server(cfg, log=MemoryLog(), store=MemoryStateStore(), cluster_id=CLUSTER_ID,
                offset_store=MemoryOffsetStore())
    async with anyio.create_task_group() as outer:
        await outer.start(node.run)
        async with anyio.create_task_group() as tg:
            conn = Connection(tg, "127.0.0.1", port)
            resp = await _call(conn, brq.BrokerRegistrationRequest(
                broker_id=7, cluster_id=CLUSTER_ID, incarnation_id=uuid.uuid4(),
                listeners=[brq.Listener("PLAINTEXT", "127.0.0.1", 9777, 0)],
                features=[brq.Feature(n, lo, hi) for n, (lo, hi) in BROKER_SUPPORTED_FEATURES.items()], rack=None, log_dirs=[uuid.uuid4()]))
            assert resp.error_code == 0, resp
            with anyio.fail_after(20):
                while (await _call(conn, BrokerHeartbeatRequest(broker_id=7, broker_epoch=resp.broker_epoch,
                                                                current_metadata_offset=1 << 30))).is_fenced:
                    await anyio.sleep(0.05)
            created = await _call(conn, ctq.CreateTopicsRequest(topics=[ctq.CreatableTopic(
                name="live-topic", num_partitions=2, replication_factor=1)], timeout_ms=10000))
            assert created.topics[0].error_code == Errors.NONE, created
            await conn.close()
            tg.cancel_scope.cancel()
        src = await fetch_live(f"127.0.0.1:{port}", 20)
        outer.cancel_scope.cancel()
    image = build_image(src)
    assert "live-topic" in image.topic_ids and 7 in image.brokers
    out = io.StringIO()
    Shell(image_tree(image, provenance(src)), out).run_line("ls /topics/live-topic")
    assert out.getvalue().split() == ["0", "1", "id"]
    assert src.source == f"127.0.0.1:{port}" and src.last_offset >= src.records[-1][0]


def test_exit_status_is_the_last_commands(cluster) -> None:
    shell = Shell(image_tree(cluster.ctl.committed_image, {"source": "test"}), io.StringIO(), io.StringIO())
    shell.interact(io.StringIO("cat /nowhere\nls /topics\n"))
    assert not shell.failed            # an earlier failure does not stick
    shell.interact(io.StringIO("ls /topics\ncat /nowhere\n"))
    assert shell.failed


def test_tab_completion_of_commands_and_paths(cluster) -> None:
    shell = Shell(image_tree(cluster.ctl.committed_image, {"source": "test"}), io.StringIO(), io.StringIO())
    assert shell.complete("c", "c") == ["cat ", "cd "]
    assert shell.complete("/to", "ls /to") == ["/topicIds/", "/topics/"]
    assert shell.complete("/topics/or", "cat /topics/or") == ["/topics/orders/"]
    shell.run_line("cd /topics/orders")
    assert shell.complete("", "cat ") == ["0/", "1/", "2/", "id "]
    assert shell.complete("0/le", "cat 0/le") == ["0/leader ", "0/leaderEpoch ", "0/leaderRecoveryState "]


def test_watch_follows_a_changing_source(cluster) -> None:
    """watch re-reads the source and prints the command's output only when it changes."""
    trees = [{"n": {"x": "1"}, "provenance": {"lastContainedOffset": "5"}},
             {"n": {"x": "1"}, "provenance": {"lastContainedOffset": "6"}},
             {"n": {"x": "2"}, "provenance": {"lastContainedOffset": "9"}}]
    out = io.StringIO()
    shell = Shell(trees[0], out, io.StringIO(), reload=lambda: trees.pop(0) if len(trees) > 1 else trees[0],
                  sleep=lambda s: None)
    shell.run_line("watch -n 0.1 -c 4 cat /n/x")
    assert out.getvalue().splitlines() == ["--- cat /n/x at offset 5 ---", "1",
                                           "--- cat /n/x at offset 9 ---", "2"]
    assert not shell.failed


def test_follow_a_live_log_directory(cluster, tmp_path) -> None:
    """--follow on a log directory that grows: the one-shot command's output changes with it."""
    proc = subprocess.run([sys.executable, "-m", "kraftwire", "metadata-shell", "--snapshot", str(cluster.log.dir),
                           "--follow", "0.2", "--count", "2", "ls", "/topics"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("--- ls /topics at offset ")
    assert "orders" in proc.stdout and proc.stdout.count("---") == 2   # unchanged output printed once


def test_terminal_session_completes_with_tab_and_keeps_history(cluster, tmp_path) -> None:
    """A real terminal (pty): Tab completes a path, Enter runs it, the history file keeps the line."""
    import os
    import select
    import time

    sid = cluster.snapshot()
    path = cluster.log.dir / snapshot_name(sid)
    master, slave = os.openpty()
    env = dict(os.environ, HOME=str(tmp_path), TERM="dumb")
    proc = subprocess.Popen([sys.executable, "-m", "kraftwire", "metadata-shell", "--snapshot", str(path)],
                            stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    seen = b""

    def read_until(needle: bytes, timeout: float = 60) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while needle not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    return
        assert needle in seen, seen[-500:]

    try:
        read_until(b">> ")
        os.write(master, b"cat /feat\t")        # completes to /features/
        os.write(master, b"metadata.version\r")
        read_until(b"21\r\n")
        os.write(master, b"exit\r")
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    history = (tmp_path / ".kraftwire_metadata_shell_history").read_text()
    assert "cat /features/metadata.version" in history


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rebuilding_a_large_image_shows_progress_on_a_terminal_only(monkeypatch) -> None:
    """Issue #16: long work shows progress (stderr, terminals only) and the image is the same."""
    from kraftwire.metadata.features import bootstrap_records
    from kraftwire.protocol.messages.topic_record import TopicRecord
    from kraftwire.storage.reader import MetadataSource

    src = MetadataSource("test")
    src.snapshot = [r.message for r in bootstrap_records()]
    src.records = [(i, TopicRecord(name=f"t{i}", topic_id=uuid.UUID(int=i + 1))) for i in range(10_000)]
    quiet = build_image(src)
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    shown = build_image(src)
    assert shown.topic_by_name("t9999") is not None and shown.topics == quiet.topics
    assert "replay" in term.getvalue() and "rec" in term.getvalue()
