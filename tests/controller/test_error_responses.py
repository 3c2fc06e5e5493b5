"""Every controller API's whole-request error answer encodes at every version a client may send."""

from __future__ import annotations

import pytest
from protocol.schema_strategies import filled

from kraftwire.core.api_registry import CONTROLLER_APIS
from kraftwire.protocol.api import request_class
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import decode_response, encode_response

CASES = [(key, v) for key, (lo, hi) in sorted(CONTROLLER_APIS.items()) for v in range(lo, hi + 1)]


@pytest.mark.parametrize(("key", "version"), CASES)
def test_not_controller_answer_encodes_at_every_version(key, version):
    request = filled(request_class(key).__name__, version)
    body = request.error_response(version, Errors.NOT_CONTROLLER, "not the active controller")
    frame = encode_response(body, key, version, 5)
    corr, decoded = decode_response(frame[4:], key, version)
    assert corr == 5
    assert int(Errors.NOT_CONTROLLER) in set(_error_codes(decoded)), decoded


def _error_codes(value):
    """Every ErrorCode anywhere in a decoded message."""
    if isinstance(value, list):
        for v in value:
            yield from _error_codes(v)
    elif hasattr(type(value), "_SPEC"):  # a generated message or struct
        for name in type(value).__slots__:
            v = getattr(value, name)
            if name == "error_code":
                yield v
            else:
                yield from _error_codes(v)


def test_elect_leaders_v0_carries_the_error_per_partition():
    from kraftwire.protocol.messages import elect_leaders_request as elq

    req = elq.ElectLeadersRequest(topic_partitions=[elq.TopicPartitions("t", [0, 2])])
    body = req.error_response(0, Errors.NOT_CONTROLLER, "moved")
    _, decoded = decode_response(encode_response(body, 43, 0, 1)[4:], 43, 0)
    assert [(p.partition_id, p.error_code) for p in decoded.replica_election_results[0].partition_result] == [
        (0, Errors.NOT_CONTROLLER), (2, Errors.NOT_CONTROLLER)]
