"""Client-path helpers shared by controller and broker nodes: consumer long-poll, Produce refusal."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import anyio

from kraftwire.node import reads
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.produce_response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID
from kraftwire.protocol.requests import Reply


async def consumer_fetch(body: Any, version: int, view: reads.PartitionView, changed: Callable[[], anyio.Event]
                         ) -> Any:
    """A consumer Fetch answer, waiting up to MaxWaitMs for MinBytes of committed data."""
    deadline = anyio.current_time() + max(0, body.max_wait_ms) / 1000
    while True:
        event = changed()
        resp, size = reads.consumer_fetch_response(body, version, view)
        remaining = deadline - anyio.current_time()
        if size >= max(1, body.min_bytes) or remaining <= 0 or _has_error(resp):
            return resp
        with anyio.move_on_after(remaining):
            await event.wait()


def _has_error(resp: Any) -> bool:
    return any(p.error_code for t in resp.responses for p in t.partitions)


def refuse_produce(body: Any, version: int) -> Reply | None:
    """Every Produce is refused (only the quorum writes ``__cluster_metadata``); acks=0 gets no answer."""
    if body.acks == 0:
        return None
    topics = []
    for t in body.topic_data:
        # v13 names topics by id (KIP-516): only the metadata topic's is known here
        if version >= 13 and t.topic_id != METADATA_TOPIC_ID:
            code, why = Errors.UNKNOWN_TOPIC_ID, f"unknown topic id {t.topic_id}"
        else:
            code, why = Errors.INVALID_TOPIC_EXCEPTION, (f"{t.name or METADATA_TOPIC} is read-only: only the "
                                                         "quorum writes __cluster_metadata")
        parts = [PartitionProduceResponse(index=p.index, error_code=int(code),
                                          error_message=why if version >= 8 else None)
                 for p in t.partition_data]
        topics.append(TopicProduceResponse(name=t.name, topic_id=t.topic_id if version >= 13 else uuid.UUID(int=0),
                                           partition_responses=parts))
    return Reply(ProduceResponse(responses=topics), version)
