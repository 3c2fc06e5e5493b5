"""metadata-shell --at-offset/--at-time and metadata-diff over a real controller-written log (processes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kraftwire.analytics.scenario import DEMO_START_MS, MINUTE, demo_log

PART = "__cluster_metadata-0"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    demo_log(root).close()
    return root


def kw(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftwire", *argv], capture_output=True, text=True, timeout=120)


def test_at_offset_replays_up_to_the_point_and_uses_the_snapshot_at_or_below(demo) -> None:
    early = kw("metadata-shell", "--snapshot", str(demo), "--at-offset", "7", "ls", "/topics")
    assert early.returncode == 0 and early.stdout.split() == []       # topics are created later
    late = kw("metadata-shell", "--snapshot", str(demo), "--at-offset", "45", "cat",
              "/provenance/snapshot", "/provenance/lastContainedOffset")
    assert late.returncode == 0, late.stderr
    assert late.stdout.split() == ["00000000000000000046-0000000004", "45"]  # the snapshot ending at 46 covers 45
    mid = kw("metadata-shell", "--snapshot", str(demo), "--at-offset", "30", "cat", "/provenance/snapshot",
             "/provenance/lastContainedOffset")
    assert mid.stdout.split() == ["none", "30"]
    now = kw("metadata-shell", "--snapshot", str(demo), "ls", "/topics")
    at_end = kw("metadata-shell", "--snapshot", str(demo), "--at-offset", "45", "ls", "/topics")
    assert now.stdout == at_end.stdout and now.stdout.split()


def test_at_time_names_the_last_batch_appended_at_or_before_it(demo) -> None:
    iso = kw("metadata-shell", "--snapshot", str(demo), "--at-time", "2026-01-05T00:05:00Z", "cat",
             "/provenance/lastContainedOffset")
    epoch = kw("metadata-shell", "--snapshot", str(demo), "--at-time", str(DEMO_START_MS + 5 * MINUTE), "cat",
               "/provenance/lastContainedOffset")
    assert iso.returncode == 0 and iso.stdout == epoch.stdout
    assert int(iso.stdout) == 11        # the batch 8..11 was appended at 00:05


def test_diff_text_and_json_agree_and_cover_topics_partitions_and_brokers(demo) -> None:
    text = kw("metadata-diff", "--log-dir", str(demo), "2026-01-05T00:05:00Z", f"time:{DEMO_START_MS + 63 * MINUTE}")
    assert text.returncode == 0, text.stderr
    doc = json.loads(kw("metadata-diff", "--log-dir", str(demo), "2026-01-05T00:05:00Z",
                        f"time:{DEMO_START_MS + 63 * MINUTE}", "--json").stdout)
    assert doc["from"]["lastContainedOffset"] == "11"
    paths = {c["path"]: c for c in doc["changes"]}
    assert paths["/topics/payments"]["change"] == "added"
    assert paths["/cluster/brokers/103/fenced"] == {"section": "cluster", "path": "/cluster/brokers/103/fenced",
                                                   "change": "changed", "before": "false", "after": "true"}
    assert paths["/topics/orders/2/leader"]["change"] == "changed"
    for c in doc["changes"]:
        if c["change"] == "changed":
            assert f"~ {c['path']}: {c['before']} -> {c['after']}" in text.stdout
        else:
            assert f"{'+' if c['change'] == 'added' else '-'} {c['path']}" in text.stdout
    same = kw("metadata-diff", "--log-dir", str(demo), "20", "20")
    assert same.returncode == 0 and "no changes" in same.stdout


@pytest.mark.parametrize(("argv", "code", "words"), [
    (["--at-offset", "470"], 2, "after the end of the log (last offset 45)"),
    (["--at-time", "2020-01-01T00:00:00Z"], 2, "before the oldest retained batch"),
    (["--at-time", "yesterday"], 2, "cannot read 'yesterday' as a time"),
    (["--at-offset", "-3"], 2, "cannot read '-3' as an offset"),
])
def test_bad_points_get_one_line_errors(demo, argv, code, words) -> None:
    out = kw("metadata-shell", "--snapshot", str(demo), *argv, "ls", "/")
    assert out.returncode == code and words in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_before_the_log_start_without_a_snapshot_and_across_a_gap(demo, tmp_path) -> None:
    cleaned = tmp_path / "cleaned" / PART
    shutil.copytree(demo / PART, cleaned)
    (cleaned / "00000000000000000000.log").unlink()       # the log now starts at 16; the snapshot ends at 46
    out = kw("metadata-shell", "--snapshot", str(cleaned), "--at-offset", "10", "ls", "/")
    assert out.returncode == 4 and "offset 10 is before the log start 16 and no snapshot" in out.stderr
    gap = tmp_path / "gap" / PART
    shutil.copytree(demo / PART, gap)
    (gap / "00000000000000000016.log").unlink()            # offsets 16..39 are missing
    out = kw("metadata-diff", "--log-dir", str(gap), "5", "42")
    assert out.returncode == 4 and "offset 42 cannot be reached" in out.stderr and "expected 16" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    ok = kw("metadata-diff", "--log-dir", str(gap), "5", "15")   # before the gap: fine
    assert ok.returncode == 0, ok.stderr
    snap = kw("metadata-shell", "--snapshot", str(next(gap.glob("*.checkpoint"))), "--at-offset", "3", "ls")
    assert snap.returncode == 2 and "give the log directory" in snap.stderr
