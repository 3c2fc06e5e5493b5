"""Produce on a kraftwire node (every plane): refused, since only the quorum writes ``__cluster_metadata``; the
door answers it (``core/api_door.py``)."""

from __future__ import annotations

import uuid
from typing import Any

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages.produce_response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kraftwire.protocol.metadata import METADATA_TOPIC, METADATA_TOPIC_ID
from kraftwire.protocol.requests import Reply


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
