"""The generated ``ApiKey`` enum: one member per request schema, named as Kafka names it, with its listeners."""

from __future__ import annotations

from kraftwire.protocol.api import API_KEYS, LISTENERS, ApiKey, request_class
from kraftwire.protocol.messages import REQUESTS
from kraftwire.raft import messages as m


def test_one_member_per_request_schema_with_the_schema_key() -> None:
    assert {int(k) for k in ApiKey} == set(REQUESTS)
    for key in ApiKey:
        assert request_class(key).API_KEY == key


def test_member_names_are_kafkas_upper_snake_names() -> None:
    assert ApiKey.FETCH == 1 and ApiKey.API_VERSIONS == 18 and ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS == 50
    assert ApiKey.BROKER_HEARTBEAT == API_KEYS["BrokerHeartbeat"]
    assert ApiKey.FETCH_SNAPSHOT.name == "FETCH_SNAPSHOT"
    assert ApiKey.DESCRIBE_TOPIC_PARTITIONS == API_KEYS["DescribeTopicPartitions"]


def test_listeners_come_from_the_schemas() -> None:
    assert set(LISTENERS) == set(ApiKey)
    assert LISTENERS[ApiKey.VOTE] == {"controller"}
    assert LISTENERS[ApiKey.DESCRIBE_TOPIC_PARTITIONS] == {"broker"}
    assert "controller" in LISTENERS[ApiKey.FETCH] and "broker" in LISTENERS[ApiKey.FETCH]


def test_raft_messages_carry_their_key_and_one_table_maps_responses() -> None:
    requests = [m.VoteRequest, m.BeginQuorumEpochRequest, m.EndQuorumEpochRequest, m.FetchRequest,
                m.FetchSnapshotRequest, m.DescribeQuorumRequest]
    for req in requests:
        response = m.RESPONSE_OF[req.API_KEY]
        assert response.API_KEY == req.API_KEY
        assert req.__name__.removesuffix("Request") == response.__name__.removesuffix("Response")
        assert request_class(req.API_KEY).__name__ == req.__name__
