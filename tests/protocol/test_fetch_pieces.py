"""A Fetch answer whose records are file slices, encoded as pieces (``encode_response_pieces``), is byte for
byte the frame the generated encoder writes for the same records as bytes, in every Fetch version."""

from __future__ import annotations

import os
import uuid

import pytest

from kraftwire.protocol.framing import encode_response, encode_response_pieces
from kraftwire.protocol.messages.fetch_response import (
    FetchableTopicResponse,
    FetchResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
)
from kraftwire.protocol.runtime import BIG_BLOB
from kraftwire.storage.file_slice import FileSlice

FETCH = 1


def _response(version: int, first, second) -> FetchResponse:
    """Two topics, the slice in the first partition of the first, so bytes follow it at every level."""
    def part(index: int, records) -> PartitionData:
        p = PartitionData(partition_index=index, high_watermark=123_456, last_stable_offset=123_456,
                          log_start_offset=7, aborted_transactions=None if version >= 4 else [], records=records)
        if version >= 12:
            p.current_leader = LeaderIdAndEpoch(3, 9)       # a tagged field after the records
        return p

    topics = [FetchableTopicResponse(topic="__cluster_metadata" if version < 13 else "",
                                     topic_id=uuid.UUID(int=1) if version >= 13 else uuid.UUID(int=0),
                                     partitions=[part(0, first), part(1, b"tail")]),
              FetchableTopicResponse(topic="other" if version < 13 else "",
                                     topic_id=uuid.UUID(int=2) if version >= 13 else uuid.UUID(int=0),
                                     partitions=[part(0, second)])]
    resp = FetchResponse(responses=topics, session_id=0)
    if version >= 16:
        resp.node_endpoints = [NodeEndpoint(3, "localhost", 9092, None)]
    return resp


def _slice(path, content: bytes, cuts: list[int]) -> FileSlice:
    """A slice of ``content`` stored at offset 100 of ``path``, split into ranges at ``cuts``."""
    path.write_bytes(os.urandom(100) + content + os.urandom(50))
    bounds = [0, *cuts, len(content)]
    return FileSlice([(os.open(path, os.O_RDONLY), 100 + a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)])


@pytest.mark.parametrize("version", range(FetchResponse.MIN_VERSION, FetchResponse.MAX_VERSION + 1))
def test_pieces_are_the_encoded_frame(tmp_path, version):
    one, two = os.urandom(BIG_BLOB * 3 + 17), os.urandom(BIG_BLOB)
    expected = encode_response(_response(version, one, two), FETCH, version, 77)
    pieces = encode_response_pieces(_response(version, _slice(tmp_path / "a", one, [5000, 40_000]),
                                              _slice(tmp_path / "b", two, [])), FETCH, version, 77)
    assert isinstance(pieces, list)
    slices = [p for p in pieces if isinstance(p, FileSlice)]
    assert len(slices) == 2, "the slices are handed out, not copied into the buffer"
    assert b"".join(p.materialize() if isinstance(p, FileSlice) else bytes(p) for p in pieces) == expected


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_a_frame_without_slices_comes_as_bytes(version):
    resp = _response(version, os.urandom(BIG_BLOB), b"small")
    assert encode_response_pieces(resp, FETCH, version, 5) == encode_response(resp, FETCH, version, 5)


def test_encode_response_reads_slices(tmp_path):
    content = os.urandom(BIG_BLOB * 2)
    expected = encode_response(_response(12, content, b""), FETCH, 12, 1)
    assert encode_response(_response(12, _slice(tmp_path / "c", content, [999]), b""), FETCH, 12, 1) == expected
