"""The voter's controller plane in the one door (``NodeCore.handle_api``), driven by hand on a one-voter node:
Envelopes unwrapped and their inner request run as the forwarded client (core/envelope.py), Metadata /
DescribeCluster / FindCoordinator from the voter's state (core/voter_reads.py), group requests relayed to the
group shell, ListOffsets read by the shell, BROKER_LOGGER resources handed to the shell after the
controller's part."""

from __future__ import annotations

import uuid
from dataclasses import replace

from kraftwire.broker.envelope import host_bytes, request_bytes, response_body, serialize_principal
from kraftwire.controller.configs import BROKER_LOGGER
from kraftwire.core import RelayKind
from kraftwire.metadata.image import ControllerRegistration, Endpoint
from kraftwire.protocol.api import ApiKey, response_class
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request, RequestHeader
from kraftwire.protocol.messages import create_acls_request as caq
from kraftwire.protocol.messages import describe_cluster_request as dcl
from kraftwire.protocol.messages import find_coordinator_request as fcq
from kraftwire.protocol.messages import heartbeat_request as hbq
from kraftwire.protocol.messages import incremental_alter_configs_request as iacq
from kraftwire.protocol.messages import incremental_alter_configs_response as iacr
from kraftwire.protocol.messages import list_offsets_request as loq
from kraftwire.protocol.messages import list_offsets_response as lor
from kraftwire.protocol.messages import metadata_request as mdq
from kraftwire.protocol.messages.envelope_request import EnvelopeRequest
from kraftwire.protocol.requests import Reply
from tests.core.test_api_door import CLIENT, CTL, _door_node

TOPIC, LITERAL, READ, ALLOW = 2, 3, 3, 3


def _acl(name: str) -> caq.CreateAclsRequest:
    return caq.CreateAclsRequest(creations=[caq.AclCreation(TOPIC, name, LITERAL, "User:bob", "*", READ, ALLOW)])


def _envelope(inner: Request, principal: bytes | None = None, host: bytes | None = None) -> EnvelopeRequest:
    return EnvelopeRequest(request_data=request_bytes(inner),
                           request_principal=serialize_principal("User:alice") if principal is None else principal,
                           client_host_address=host_bytes("10.1.2.3") if host is None else host)


def _inner(key: int, version: int, body) -> Request:
    return Request(RequestHeader(key, version, 4242, "alice-cli"), body)


def _unwrapped(reply: Reply, inner: Request):
    """The inner answer an EnvelopeResponse carries."""
    env = reply.body
    assert env.error_code == 0, Errors(env.error_code).name
    data = response_body(env.response_data, inner.api_key, inner.api_version, inner.correlation_id)
    return response_class(inner.api_key).decode(data, inner.api_version)


def test_an_envelope_runs_its_inner_write_as_the_forwarded_client_and_wraps_the_committed_answer() -> None:
    shell = _door_node()
    inner = _inner(ApiKey.CREATE_ACLS, 3, _acl("orders"))
    shell.api(1, ApiKey.ENVELOPE, 0, _envelope(inner), principal="User:broker")
    assert 1 not in shell.answers and shell.persist and not shell.relays, "written: answered once durable"
    [audit] = shell.audits
    assert (audit.entry.principal, audit.entry.forwarded, audit.entry.client_host) == ("User:alice", True, "10.1.2.3")
    shell.sync()
    answer = shell.answers[1]
    assert answer.version == 0 and _unwrapped(answer, inner).results[0].error_code == 0


def test_an_envelopes_inner_request_is_authorized_as_the_client() -> None:
    shell = _door_node(gate=True)
    inner = _inner(ApiKey.CREATE_ACLS, 3, _acl("orders"))
    [answer] = shell.api(2, ApiKey.ENVELOPE, 0, _envelope(inner), principal="User:admin")
    assert _unwrapped(answer.body, inner).results[0].error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    [denied] = shell.api(3, ApiKey.ENVELOPE, 0, _envelope(inner), principal="User:alice")
    assert denied.body.body.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED, "the envelope needs CLUSTER_ACTION"


def test_envelope_level_errors() -> None:
    shell = _door_node()
    acl = _inner(ApiKey.CREATE_ACLS, 3, _acl("orders"))
    too_new = bytearray(request_bytes(acl))
    too_new[2:4] = (99).to_bytes(2, "big")   # the header's request version
    cases = [
        (_envelope(acl, principal=b"\x00"), Errors.PRINCIPAL_DESERIALIZATION_FAILURE),
        (_envelope(acl, host=b"\x01\x02"), Errors.INVALID_REQUEST),
        (_envelope(_inner(ApiKey.METADATA, 12, mdq.MetadataRequest(topics=None))), Errors.INVALID_REQUEST),
        (EnvelopeRequest(request_data=bytes(too_new), request_principal=serialize_principal("User:alice"),
                         client_host_address=host_bytes("10.1.2.3")), Errors.UNSUPPORTED_VERSION),
    ]
    for rid, (body, code) in enumerate(cases, 1):
        [answer] = shell.api(rid, ApiKey.ENVELOPE, 0, body)
        assert answer.body.body.error_code == code and answer.body.body.response_data is None, rid
    shell.node.controller.controller.deactivate()
    [answer] = shell.api(9, ApiKey.ENVELOPE, 0, _envelope(acl))
    assert answer.body.body.error_code == Errors.NOT_CONTROLLER and not shell.persist


def test_metadata_and_describe_cluster_list_the_voters_at_the_clients_listener() -> None:
    shell = _door_node()
    reads = shell.node.door.planes[CTL].voter
    registered = replace(reads.image(), controllers={2: ControllerRegistration(
        2, uuid.UUID(int=2), listeners=(Endpoint(CTL, "c2.example", 9093, 0),))})
    reads.image = lambda: registered
    [answer] = shell.api(1, ApiKey.METADATA, 12, mdq.MetadataRequest(topics=None))
    body = answer.body.body
    assert [(b.node_id, b.host, b.port) for b in body.brokers] == [(1, "c1.example", 9093), (2, "c2.example", 9093)]
    assert body.cluster_id == "door-cluster" and body.controller_id == 1
    [part] = body.topics[0].partitions
    assert body.topics[0].name == "__cluster_metadata" and part.leader_id == 1 and part.replica_nodes == [1, 2]
    [answer] = shell.api(2, ApiKey.DESCRIBE_CLUSTER, 1, dcl.DescribeClusterRequest())
    body = answer.body.body
    assert body.controller_id == 1 and [b.host for b in body.brokers] == ["c1.example", "c2.example"]
    assert not shell.relays


def test_find_coordinator_names_the_owner_at_the_listener_and_other_group_requests_are_relayed() -> None:
    shell = _door_node()
    [answer] = shell.api(1, ApiKey.FIND_COORDINATOR, 4, fcq.FindCoordinatorRequest(
        key_type=0, coordinator_keys=["g"]))
    [c] = answer.body.body.coordinators
    assert (c.error_code, c.node_id, c.host, c.port) == (0, 2, "127.0.0.2", 19093), "no registration: its address"
    for key_type, expected in ((1, Errors.COORDINATOR_NOT_AVAILABLE), (2, Errors.INVALID_REQUEST),
                               (7, Errors.INVALID_REQUEST)):
        [answer] = shell.api(10 + key_type, ApiKey.FIND_COORDINATOR, 5, fcq.FindCoordinatorRequest(
            key_type=key_type, coordinator_keys=["x"]))
        assert [c.error_code for c in answer.body.body.coordinators] == [expected], key_type
    shell.node.door.planes[CTL].voter.coordinator = lambda group: None   # e.g. the offsets quorum has no leader
    [answer] = shell.api(20, ApiKey.FIND_COORDINATOR, 4, fcq.FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]))
    assert answer.body.body.coordinators[0].error_code == Errors.COORDINATOR_NOT_AVAILABLE, "the chaos fuzzer's case"
    shell.api(2, ApiKey.HEARTBEAT, 4, hbq.HeartbeatRequest(group_id="g", generation_id=1, member_id="m"))
    assert shell.relays[2].kind is RelayKind.GROUP and 2 not in shell.answers


def test_list_offsets_is_read_by_the_shell_and_answered_with_what_it_found() -> None:
    shell = _door_node()
    request = loq.ListOffsetsRequest(replica_id=-1, topics=[loq.ListOffsetsTopic(
        name="__cluster_metadata", partitions=[loq.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    shell.api(1, ApiKey.LIST_OFFSETS, 7, request)
    assert shell.reads == [1] and 1 not in shell.answers
    found = lor.ListOffsetsResponse(topics=[])
    shell.take(shell.node.handle_read(shell.now, 1, found, 0))
    assert shell.answers[1].body is found and not shell.parked


def _resource(kind: int, name: str) -> iacq.AlterConfigsResource:
    return iacq.AlterConfigsResource(resource_type=kind, resource_name=name, configs=[
        iacq.AlterableConfig(name="kraftwire" if kind == BROKER_LOGGER else "retention.ms", config_operation=0,
                             value="DEBUG" if kind == BROKER_LOGGER else "1000")])


def test_broker_logger_resources_go_to_the_shell_after_the_controllers_part_answered_in_request_order() -> None:
    shell = _door_node()
    body = iacq.IncrementalAlterConfigsRequest(resources=[_resource(BROKER_LOGGER, "1"), _resource(2, "orders")],
                                               validate_only=False)
    shell.api(1, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    relay = shell.relays[1]
    assert relay.kind is RelayKind.LOGGERS and [r.resource_type for r in relay.request.body.resources] == [BROKER_LOGGER]
    logged = iacr.IncrementalAlterConfigsResponse(responses=[iacr.AlterConfigsResourceResponse(
        0, None, BROKER_LOGGER, "1")])
    shell.take(shell.node.handle_relayed(shell.now, 1, Reply(logged, 1)))
    got = shell.answers[1].body
    assert [(r.resource_type, r.resource_name) for r in got.responses] == [(BROKER_LOGGER, "1"), (2, "orders")]
    assert got.responses[1].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    only = iacq.IncrementalAlterConfigsRequest(resources=[_resource(BROKER_LOGGER, "1")], validate_only=True)
    shell.api(2, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, only)
    assert shell.relays[2].kind is RelayKind.LOGGERS and shell.relays[2].request.body.validate_only


def test_a_broker_changes_its_own_loggers_and_forwards_the_other_resources_first() -> None:
    """As a Kafka broker: BROKER_LOGGER resources are this node's (never forwarded); the rest goes to the active
    controller first; the answer keeps the request's order."""
    shell = _door_node()
    body = iacq.IncrementalAlterConfigsRequest(resources=[_resource(2, "orders"), _resource(BROKER_LOGGER, "1"),
                                                          _resource(2, "payments")], validate_only=False)
    shell.api(1, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body, listener=CLIENT)
    forward = shell.relays.pop(1)
    assert forward.kind is RelayKind.FORWARD and 1 not in shell.answers
    assert [r.resource_name for r in forward.request.body.resources] == ["orders", "payments"]
    controller = iacr.IncrementalAlterConfigsResponse(responses=[
        iacr.AlterConfigsResourceResponse(0, None, 2, "payments"), iacr.AlterConfigsResourceResponse(0, None, 2, "orders")])
    shell.take(shell.node.handle_relayed(shell.now, 1, Reply(controller, 1)))
    loggers = shell.relays.pop(1)
    assert loggers.kind is RelayKind.LOGGERS and [r.resource_type for r in loggers.request.body.resources] == [BROKER_LOGGER]
    assert 1 not in shell.answers
    logged = iacr.IncrementalAlterConfigsResponse(responses=[iacr.AlterConfigsResourceResponse(0, None, BROKER_LOGGER, "1")])
    shell.take(shell.node.handle_relayed(shell.now, 1, Reply(logged, 1)))
    got = shell.answers[1].body
    assert [(r.resource_type, r.resource_name) for r in got.responses] == [(2, "orders"), (BROKER_LOGGER, "1"),
                                                                          (2, "payments")]
    only = iacq.IncrementalAlterConfigsRequest(resources=[_resource(BROKER_LOGGER, "1")], validate_only=False)
    shell.api(2, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, only, listener=CLIENT)
    assert shell.relays[2].kind is RelayKind.LOGGERS   # nothing to forward
    shell.api(3, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body, listener=CLIENT)
    shell.take(shell.node.handle_relay_failed(shell.now, 3))   # the forward failed: no logger changed, no answer
    assert 3 not in shell.answers and 3 not in shell.node.door._relayed
