"""``kraftwire protocol decode|encode``: round trips through the CLI, options, errors and exit codes."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from argparse import Namespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwire.cli import protocol as cli
from kraftwire.cli.main import main
from kraftwire.protocol.api import API_KEYS
from kraftwire.protocol.framing import encode_request, encode_response
from kraftwire.protocol.messages import REQUESTS, RESPONSES, message_class
from kraftwire.protocol.messages.leader_change_message import LeaderChangeMessage, Voter
from kraftwire.protocol.messages.partition_record import PartitionRecord
from kraftwire.protocol.metadata import encode_record

from .schema_strategies import filled, message_strategy


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["protocol", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def round_trip(capsys, hex_in: str, *decode_args: str) -> dict:
    code, out, err = run(capsys, "decode", *decode_args, hex_in)
    assert code == 0, err
    doc = json.loads(out)
    code, out, err = run(capsys, "encode", json.dumps(doc))
    assert code == 0, err
    assert out.strip() == hex_in
    return doc


def test_request_round_trip_with_header_fields(capsys) -> None:
    frame = encode_request(filled("VoteRequest", 1), 1, correlation_id=7, client_id="cli-test").hex()
    doc = round_trip(capsys, frame)
    assert (doc["kind"], doc["api_name"], doc["api_key"], doc["version"]) == ("request", "Vote", 52, 1)
    assert doc["header"]["correlation_id"] == 7 and doc["header"]["client_id"] == "cli-test"
    assert doc["header_version"] == 2 and doc["framed"] is True
    assert doc["body"]["topics"][0]["partitions"][0]["candidate_directory_id"] == str(
        filled("VoteRequest", 1).topics[0].partitions[0].candidate_directory_id)


def test_response_round_trip_needs_key_and_version(capsys) -> None:
    frame = encode_response(filled("FetchResponse", 17), 1, 17, correlation_id=9).hex()
    doc = round_trip(capsys, frame, "--response", "--api-key", "1", "--version", "17")
    assert doc["header"] == {"correlation_id": 9} and doc["header_version"] == 1
    code, _, err = run(capsys, "decode", "--response", frame)
    assert code == 1 and "--api-key and --version" in err


def test_api_versions_response_keeps_header_v0_in_flexible_versions(capsys) -> None:
    frame = encode_response(filled("ApiVersionsResponse", 3), 18, 3, correlation_id=1).hex()
    doc = round_trip(capsys, frame, "--response", "--api-key", "18", "--version", "3")
    assert doc["header_version"] == 0


def test_hex_spelling_and_size_prefix_options(capsys) -> None:
    frame = encode_request(message_class("ApiVersionsRequest")(), 0, correlation_id=3)
    spaced = " ".join(f"{b:02x}" for b in frame)
    code, out, _ = run(capsys, "decode", "--compact", spaced)
    assert code == 0 and json.loads(out)["framed"] is True
    code, out, _ = run(capsys, "decode", "--compact", "0x" + ":".join(f"{b:02X}" for b in frame[4:]))
    doc = json.loads(out)
    assert code == 0 and doc["framed"] is False and doc["header"]["correlation_id"] == 3
    code, out, _ = run(capsys, "encode", json.dumps(doc))
    assert out.strip() == frame[4:].hex()
    code, _, err = run(capsys, "decode", "--size-prefix", "yes", frame[4:].hex())
    assert code == 1 and "size prefix" in err


def test_body_only_and_version_check(capsys) -> None:
    body = filled("BrokerHeartbeatRequest", 1).encode(1).hex()
    doc = round_trip(capsys, body, "--no-header", "--api-key", str(API_KEYS["BrokerHeartbeat"]), "--version", "1",
                     "--size-prefix", "no")
    assert "header" not in doc and doc["body"]["want_fence"] is True
    frame = encode_request(filled("BrokerHeartbeatRequest", 1), 1, correlation_id=1).hex()
    code, _, err = run(capsys, "decode", "--version", "0", frame)
    assert code == 1 and "header says 1" in err


def test_message_and_metadata_record_round_trips(capsys) -> None:
    lc = LeaderChangeMessage(version=0, leader_id=2, voters=[Voter(1), Voter(2)], granting_voters=[Voter(2)])
    doc = round_trip(capsys, lc.encode(0).hex(), "--message", "LeaderChangeMessage", "--version", "0")
    assert doc["data"]["leader_id"] == 2 and [v["voter_id"] for v in doc["data"]["voters"]] == [1, 2]
    rec = encode_record(PartitionRecord(partition_id=3, replicas=[1, 2], isr=[1], leader=1))
    doc = round_trip(capsys, rec.hex(), "--metadata-record")
    assert (doc["name"], doc["type"], doc["data"]["leader"]) == ("PartitionRecord", 3, 1)


def test_binary_input_and_output(capsys, tmp_path) -> None:
    frame = encode_request(filled("DescribeQuorumRequest", 2), 2, correlation_id=4)
    (tmp_path / "frame.bin").write_bytes(frame)
    code, out, _ = run(capsys, "decode", "--binary", str(tmp_path / "frame.bin"))
    assert code == 0
    (tmp_path / "doc.json").write_text(out)
    code, _, _ = run(capsys, "encode", "--file", str(tmp_path / "doc.json"), "--binary", str(tmp_path / "out.bin"))
    assert code == 0 and (tmp_path / "out.bin").read_bytes() == frame


@pytest.mark.parametrize(("argv", "message"), [
    (["decode", "zz"], "not hex"),
    (["decode", "00000004000100"], "shorter than a header"),
    (["decode", "270f000000000001"], "unknown API key 9999"),
    (["decode", "0034006300000001"], "not supported"),
    (["decode", "--message", "NoSuchThing", "--version", "0", "00"], "unknown message"),
    (["decode", "--message", "LeaderChangeMessage", "00"], "--version"),
    (["decode", "--metadata-record", "017f00"], "unknown metadata record type"),
    (["decode", "--response", "--api-key", "9999", "--version", "0", "00000001"], "unknown API key"),
    (["encode", "{"], "not JSON"),
    (["encode", "[]"], "JSON object"),
    (["encode", '{"kind": "frame"}'], "unknown kind"),
    (["encode", '{"kind": "request", "api_key": 52, "version": 1, "body": {"bogus": 1}}'], "unknown fields"),
    (["encode", '{"kind": "request", "api_key": 52, "version": 1, "body": {"voter_id": 99999999999}}'], "Vote"),
    (["encode", '{"kind": "request", "api_key": 52, "version": 9, "body": {}}'], "not supported"),
    (["encode", '{"kind": "message", "name": "VotersRecord", "version": 0, "data": {"voters": "x"}}'], "error"),
    (["encode", '{"kind": "request", "api_key": "52", "version": 1, "body": {}}'], "must be int"),
])
def test_errors_exit_1_with_a_message(capsys, argv, message) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and message in err


def test_usage_errors_exit_2(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["protocol"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["protocol", "decode", "--response", "--message", "X"])
    assert info.value.code == 2


REQ_RESP = [(n, v) for n in sorted(set(REQUESTS.values()) | set(RESPONSES.values()))
            for v in range(message_class(n).MIN_VERSION, message_class(n).MAX_VERSION + 1)]


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(REQ_RESP), st.data(), st.integers(-(2**31), 2**31 - 1))
def test_any_frame_survives_decode_json_encode(pair, data, corr) -> None:
    name, version = pair
    body = data.draw(message_strategy(name, version))
    if name.endswith("Request"):
        frame = encode_request(body, version, corr, client_id=data.draw(st.none() | st.text(max_size=5)))
        args = Namespace(metadata_record=False, message=None, response=False, no_header=False, api_key=None,
                         version=None, size_prefix="auto")
    else:
        frame = encode_response(body, body.API_KEY, version, corr)
        args = Namespace(metadata_record=False, message=None, response=True, no_header=False,
                         api_key=body.API_KEY, version=version, size_prefix="auto")
    doc = json.loads(json.dumps(cli.decode_document(frame, args)))
    assert cli.encode_document(doc) == frame


def test_console_script_round_trip() -> None:
    """The real entry point, decode piped into encode (both processes run at once)."""
    frame = encode_request(filled("AlterPartitionRequest", 3), 3, correlation_id=11).hex()
    exe = f"{shlex.quote(sys.executable)} -m kraftwire.cli.main protocol"
    proc = subprocess.run(["sh", "-c", f"{exe} decode --compact | {exe} encode"], input=frame,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == frame
