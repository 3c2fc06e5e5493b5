"""Kafka's release names for metadata.version: `storage format --release-version 3.7-IV4 | --metadata-version N`
and `quickstart --release-version` (a Kafka 3.7 peer knows levels up to 19 and loops on anything newer)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kraftwire.metadata.features import LATEST_LEVEL, METADATA_VERSIONS, parse_release_version
from kraftwire.node.bootstrap import read_bootstrap
from kraftwire.storage.meta_properties import random_uuid

KAFKA_NAMES = {"3.0-IV1": 1, "3.3-IV0": 4, "3.3-IV3": 7, "3.4-IV0": 8, "3.5-IV2": 11, "3.6-IV2": 14,
               "3.7-IV0": 15, "3.7-IV4": 19, "3.8-IV0": 20, "3.9-IV0": 21}


@pytest.mark.parametrize("name, level", sorted(KAFKA_NAMES.items()))
def test_release_names_are_kafkas_levels(name, level):
    assert parse_release_version(name) == level and METADATA_VERSIONS[level] == name
    assert parse_release_version(name.lower()) == level


@pytest.mark.parametrize("text, level", [("3.7", 19), ("3.3", 7), ("3.9.0", 21), (" 3.7-IV4 ", 19)])
def test_bare_release_means_its_newest_level(text, level):
    assert parse_release_version(text) == level


@pytest.mark.parametrize("text", ["3.7-IV9", "2.8", "latest", "", "3.x", "99.0"])
def test_unknown_release_names_what_is_known(text):
    with pytest.raises(ValueError, match="3.0-IV1 ... "):
        parse_release_version(text)


def config(tmp_path, node=1):
    cfg = tmp_path / f"n{node}.properties"
    cfg.write_text(f"process.roles=controller\nnode.id={node}\ncontroller.quorum.voters={node}@127.0.0.1:19500\n"
                   f"listeners=CONTROLLER://127.0.0.1:19500\ncontroller.listener.names=CONTROLLER\n"
                   f"log.dirs={tmp_path / f'data{node}'}\n")
    return cfg


def kraftwire(*args):
    return subprocess.run([sys.executable, "-m", "kraftwire", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("flags, level", [(["--release-version", "3.7-IV4"], 19), (["-r", "3.5"], 11),
                                          (["--metadata-version", "19"], 19), ([], LATEST_LEVEL)])
def test_format_bootstraps_the_named_level(tmp_path, flags, level):
    cfg = config(tmp_path)
    out = kraftwire("storage", "format", "-t", random_uuid(), "-c", str(cfg), *flags)
    assert out.returncode == 0, out.stderr
    records = read_bootstrap(tmp_path / "data1")
    assert records[0].message.name == "metadata.version" and records[0].message.feature_level == level
    assert f"metadata.version {level}" in out.stdout


@pytest.mark.parametrize("flags, words", [
    (["--release-version", "3.7-IV9"], "unknown release version '3.7-IV9'"),
    (["--release-version", "3.2"], "metadata.version 3 cannot be bootstrapped"),
    (["--metadata-version", "99"], "metadata.version 99 cannot be bootstrapped"),
])
def test_format_refuses_what_it_cannot_write_in_one_line(tmp_path, flags, words):
    out = kraftwire("storage", "format", "-t", random_uuid(), "-c", str(config(tmp_path)), *flags)
    assert out.returncode != 0 and words in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "data1" / "meta.properties").exists()


def test_release_and_level_flags_are_exclusive(tmp_path):
    out = kraftwire("storage", "format", "-t", random_uuid(), "-c", str(config(tmp_path)),
                    "--release-version", "3.7-IV4", "--metadata-version", "19")
    assert out.returncode == 2 and "not allowed with argument" in out.stderr


def test_quickstart_formats_at_the_release(tmp_path):
    out = kraftwire("quickstart", "--dir", str(tmp_path), "--voters", "1", "--base-port", "19610",
                    "--release-version", "3.7-IV4", "--duration", "0.5")
    assert "metadata.version 19 (3.7-IV4)" in out.stdout, out.stdout + out.stderr
    assert read_bootstrap(tmp_path / "node1" / "data")[0].message.feature_level == 19
    bad = kraftwire("quickstart", "--dir", str(tmp_path / "x"), "--release-version", "3.7-IV9")
    assert bad.returncode != 0 and "unknown release version" in bad.stderr and "Traceback" not in bad.stderr
