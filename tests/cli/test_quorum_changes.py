"""`kraftwire metadata-quorum add-controller | remove-controller`: Kafka's refusals, and what a kraft.version 1
controller advertises (APIs 80-82, kraft.version 0-1)."""

from __future__ import annotations

import uuid

import pytest

from kraftwire.cli.errors import OperatorError
from kraftwire.cli.quorum_changes import controller_to_add, kafka_uuid, parse_directory_id
from kraftwire.cli.storage import format_storage
from kraftwire.config import load_config
from kraftwire.metadata.features import SUPPORTED_FEATURES

CID = "MkU3OEVBNTcwNTJENDM2Qg"


def _props(tmp, **over):
    props = {"process.roles": "controller", "node.id": "4", "controller.listener.names": "CONTROLLER",
             "listeners": "CONTROLLER://127.0.0.4:19093", "log.dirs": str(tmp / "d"),
             "controller.quorum.bootstrap.servers": "127.0.0.1:19093"}
    props.update(over)
    path = tmp / "c.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v is not None))
    return props, path


def test_add_controller_reads_the_controllers_own_properties(tmp_path):
    props, path = _props(tmp_path)
    format_storage(load_config(props), CID, quiet=True, no_initial_controllers=True)
    node_id, dir_id, endpoints = controller_to_add(str(path))
    assert node_id == 4 and endpoints == [("CONTROLLER", "127.0.0.4", 19093)]
    assert parse_directory_id(kafka_uuid(dir_id)) == dir_id


@pytest.mark.parametrize(("over", "words"), [
    ({"node.id": None}, "node.id not found in configuration file"),
    ({"process.roles": "broker"}, "process.roles did not contain 'controller'"),
    ({"log.dirs": None}, "Neither metadata.log.dir nor log.dirs were found"),
    ({"controller.listener.names": "OTHER"}, "Cannot find information about controller listener name: OTHER"),
])
def test_add_controller_refusals_are_kafkas(tmp_path, over, words):
    props, _ = _props(tmp_path)
    format_storage(load_config(props), CID, quiet=True, no_initial_controllers=True)   # Kafka reads it first
    _, path = _props(tmp_path, **over)
    with pytest.raises(OperatorError, match=words):
        controller_to_add(str(path))


def test_add_controller_needs_the_config_and_a_formatted_directory(tmp_path):
    with pytest.raises(OperatorError, match="You must supply the configuration file"):
        controller_to_add(None)
    _, path = _props(tmp_path)
    with pytest.raises(OperatorError, match="Unable to read meta.properties"):
        controller_to_add(str(path))


def test_directory_ids_in_both_spellings():
    u = uuid.uuid4()
    assert parse_directory_id(kafka_uuid(u)) == parse_directory_id(str(u)) == u
    with pytest.raises(OperatorError, match="Failed to parse --controller-directory-id"):
        parse_directory_id("nope")


def test_a_dynamic_controller_advertises_voter_changes(tmp_path):
    from kraftwire.node.server import Server

    props, _ = _props(tmp_path, **{"listeners": "CONTROLLER://127.0.0.1:19093", "node.id": "1"})
    cfg = load_config(props)
    format_storage(cfg, CID, quiet=True, standalone=True)
    node = Server(cfg)
    try:
        assert {80, 81, 82} <= set(node.voter.apis)
        assert SUPPORTED_FEATURES["kraft.version"] == (0, 1)
        assert node.core.dynamic and node.core.voters == (1,) and node.core.history.kraft_version == 1
    finally:
        node.log.close()
        for lock in getattr(node, "dir_locks", []):
            lock.release()
