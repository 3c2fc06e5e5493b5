"""The one door (core/api_door.py, ``NodeCore.handle_api``): Kafka requests in, outputs out, on a one-voter
node driven by hand. ApiVersions and refusals come from the registry, authorization runs inside, controller
APIs are submitted to the controller role (a heartbeat that writes nothing is answered in the same call),
image reads are answered at once, and what the shell carries out comes out as ``Relay``."""

from __future__ import annotations

import pytest

from kraftwire.broker.metadata_cache import LocalView
from kraftwire.core import ApiDoor, DoorPlane, Park, Read, Relay, RelayKind, Respond, Route
from kraftwire.core.api_registry import ApiRegistry
from kraftwire.core.broker_reads import BrokerReads
from kraftwire.core.node_core import NodeCore
from kraftwire.core.voter_reads import VoterReads
from kraftwire.metadata.features import SUPPORTED_FEATURES
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request, RequestHeader
from kraftwire.protocol.messages import broker_heartbeat_request as bhq
from kraftwire.protocol.messages import create_delegation_token_request as cdt
from kraftwire.protocol.messages import describe_client_quotas_request as dcq
from kraftwire.protocol.messages import describe_quorum_request as dqq
from kraftwire.protocol.messages import describe_topic_partitions_request as dtp
from kraftwire.protocol.messages import fetch_request as frq
from kraftwire.protocol.messages import fetch_response as frs
from kraftwire.protocol.messages import find_coordinator_request as fcq
from kraftwire.protocol.messages import join_group_request as jgq
from kraftwire.protocol.messages import list_groups_request as lgq
from kraftwire.protocol.messages import list_groups_response as lgr
from kraftwire.protocol.messages import metadata_request as mdq
from kraftwire.protocol.messages import produce_request as pq
from kraftwire.protocol.messages.api_versions_request import ApiVersionsRequest
from kraftwire.protocol.requests import RefusedRequest, Reply, RequestContext
from kraftwire.security.authorizer import AclAuthorizer
from kraftwire.security.gate import RequestGate
from tests.core.test_node_core import Shell, _active, _create, _node, _register

CTL, CLIENT = "CONTROLLER", "EXTERNAL"


class RaftView:
    """The voter's replica as its door's answers read it (the server's is ``node/view.LogPartitionView``)."""

    def __init__(self, raft) -> None:
        self.raft = raft

    @property
    def leader_id(self) -> int:
        return -1 if self.raft.leader_id is None else self.raft.leader_id

    @property
    def controller_id(self) -> int:
        return -1 if self.raft.known_leader_id is None else self.raft.known_leader_id

    @property
    def leader_epoch(self) -> int:
        return self.raft.epoch


class DoorShell(Shell):
    """The test shell, keeping the door's outputs: ``Respond`` replies and ``Relay``s."""

    def __init__(self, node: NodeCore) -> None:
        super().__init__(node)
        self.relays: dict[int, Relay] = {}
        self.reads: list[int] = []
        self.parked: dict[int, int] = {}

    def take(self, outputs: list) -> None:
        rest = []
        for out in outputs:
            if isinstance(out, Relay):
                self.relays[out.request_id] = out
            elif isinstance(out, Read):
                self.reads.append(out.request_id)
                self.parked.pop(out.request_id, None)
            elif isinstance(out, Park):
                self.parked[out.request_id] = out.until_ms
            else:
                rest.append(out)
        super().take(rest)

    def api(self, rid: int, key: int, version: int, body, *, listener: str = CTL, principal: str = "User:ANONYMOUS",
            protocol: str = "PLAINTEXT") -> list:
        ctx = RequestContext(listener, protocol, "10.0.0.9", 5555, principal)
        out = self.node.handle_api(self.now, rid, Request(RequestHeader(key, version, rid, "door-test"), body), ctx)
        self.take(out)
        return out


def _door_node(*, gate: bool = False, serving: list[bool] | None = None) -> DoorShell:
    serving = [True] if serving is None else serving
    node = _node()
    role = node.controller
    image = lambda: role.controller.committed_image   # noqa: E731
    authorizer = AclAuthorizer(lambda: image().acls, super_users={"User:admin"}) if gate else None
    raft = node.raft
    controller = DoorPlane(ApiRegistry.controller(), "here",
                           lambda: (SUPPORTED_FEATURES, image().features, role.controller.committed_offset),
                           gate=None if authorizer is None else RequestGate(authorizer, image), controller=role,
                           voter=VoterReads(1, "door-cluster", {CTL: ("c1.example", 9093)},
                                            lambda: {1: ("127.0.0.1", 19093), 2: ("127.0.0.2", 19093)}, image,
                                            lambda: RaftView(raft), lambda group: (2, "127.0.0.2", 19093)))
    local = LocalView(node_id=1, host="b1.example", port=9092, rack=None, serving=True, raft_leader_known=True,
                      raft_epoch=1, voters=(1,))
    broker = DoorPlane(ApiRegistry.broker(), "by a broker", lambda: ({}, {}, 0),
                       broker=BrokerReads(1, "door-cluster", image, lambda listener: local, lambda: serving[0]))
    door = ApiDoor({CTL: controller, CLIENT: broker})
    node = NodeCore(node.raft, role, door=door)
    shell = DoorShell(node)
    _active(shell)
    return shell


def test_api_versions_come_from_the_registry_with_the_finalized_features() -> None:
    shell = _door_node()
    [answer] = shell.api(1, ApiKey.API_VERSIONS, 3, ApiVersionsRequest())
    reply = answer.body
    assert isinstance(answer, Respond) and reply.version == 3 and reply.body.error_code == 0
    assert {k.api_key for k in reply.body.api_keys} == set(ApiRegistry.controller().versions)
    assert "metadata.version" in {f.name for f in reply.body.finalized_features}
    [too_new] = shell.api(2, ApiKey.API_VERSIONS, 99, ApiVersionsRequest())
    assert too_new.body.version == 0 and too_new.body.body.error_code == Errors.UNSUPPORTED_VERSION


def test_an_api_the_plane_does_not_serve_is_refused() -> None:
    shell = _door_node()
    with pytest.raises(RefusedRequest):   # DescribeTopicPartitions is the broker plane's
        shell.api(1, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, dtp.DescribeTopicPartitionsRequest(topics=[]))
    assert shell.node.door.planes[CTL].route(ApiKey.BROKER_HEARTBEAT) is Route.CONTROLLER


def test_a_registration_is_answered_once_committed_and_a_heartbeat_that_writes_nothing_at_once() -> None:
    shell = _door_node()
    shell.api(1, ApiKey.BROKER_REGISTRATION, 0, _register(11))
    assert 1 not in shell.answers and shell.persist, "appended: answered once durable"
    shell.sync()
    registered = shell.answers[1]
    assert registered.version == 0 and registered.body.error_code == 0
    epoch = registered.body.broker_epoch
    out = shell.api(2, ApiKey.BROKER_HEARTBEAT, 1, bhq.BrokerHeartbeatRequest(
        broker_id=11, broker_epoch=epoch, current_metadata_offset=0, want_fence=True))
    assert [type(o) for o in out] == [Respond], "the synchronous answer is the only output"
    assert out[0].body.body.error_code == 0 and out[0].body.body.is_fenced


def test_a_denied_write_is_answered_at_once_and_writes_nothing() -> None:
    shell = _door_node(gate=True)
    end = shell.node.log.end_offset
    shell.api(1, ApiKey.CREATE_TOPICS, 5, _create("orders"), principal="User:mallory")
    topic = shell.answers[1].body.topics[0]
    assert topic.error_code == Errors.TOPIC_AUTHORIZATION_FAILED
    assert shell.node.log.end_offset == end and not shell.persist
    shell.api(2, ApiKey.BROKER_REGISTRATION, 0, _register(11), principal="User:mallory")
    assert shell.answers[2].body.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    shell.api(3, ApiKey.BROKER_REGISTRATION, 0, _register(11), principal="User:admin")
    shell.sync()
    assert shell.answers[3].body.error_code == 0


def test_image_reads_are_answered_at_once() -> None:
    shell = _door_node()
    [answer] = shell.api(1, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, dcq.DescribeClientQuotasRequest(components=[]))
    assert answer.body.body.error_code == 0 and answer.body.body.entries == []


def test_what_the_core_does_not_answer_is_relayed_and_completed_when_handed_back() -> None:
    shell = _door_node(gate=True)
    shell.api(1, ApiKey.LIST_GROUPS, 4, lgq.ListGroupsRequest(), principal="User:alice")
    relay = shell.relays[1]
    assert relay.kind is RelayKind.GROUP and 1 not in shell.answers
    answer = Reply(lgr.ListGroupsResponse(groups=[lgr.ListedGroup(group_id="secret")]), 4)
    shell.take(shell.node.handle_relayed(shell.now, 1, answer))
    assert shell.answers[1] is answer and answer.body.groups == [], "the authorization rule's filter completed it"
    shell.take(shell.node.handle_relayed(shell.now, 1, Reply(None, 4)))   # handed back twice: answered once
    assert list(shell.answers) == [1] and shell.answers[1] is answer


def test_the_broker_plane_forwards_admin_writes_and_refuses_token_writes_on_plaintext() -> None:
    shell = _door_node()
    shell.api(1, ApiKey.CREATE_TOPICS, 5, _create("orders"), listener=CLIENT)
    assert shell.relays[1].kind is RelayKind.FORWARD and 1 not in shell.answers
    shell.take(shell.node.handle_relay_failed(shell.now, 1))
    assert shell.node.door._relayed == {}
    shell.api(2, ApiKey.CREATE_DELEGATION_TOKEN, 3, cdt.CreateDelegationTokenRequest(), listener=CLIENT)
    assert shell.answers[2].body.error_code == Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED and 2 not in shell.relays


def test_an_admin_write_on_an_inactive_voter_is_relayed_to_the_active_controller() -> None:
    shell = _door_node()
    shell.node.controller.controller.deactivate()   # as between an election and the new epoch's activation
    shell.api(1, ApiKey.CREATE_TOPICS, 5, _create("orders"))
    assert shell.relays[1].kind is RelayKind.FORWARD


def test_the_broker_plane_answers_from_its_image_and_refuses_describes_while_not_serving() -> None:
    serving = [True]
    shell = _door_node(serving=serving)
    [answer] = shell.api(1, ApiKey.METADATA, 12, mdq.MetadataRequest(topics=None), listener=CLIENT)
    body = answer.body.body
    assert body.cluster_id == "door-cluster" and [(b.node_id, b.host) for b in body.brokers] == [(1, "b1.example")]
    [answer] = shell.api(2, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, dcq.DescribeClientQuotasRequest(components=[]),
                         listener=CLIENT)
    assert answer.body.body.error_code == 0
    serving[0] = False
    [answer] = shell.api(3, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, dcq.DescribeClientQuotasRequest(components=[]),
                         listener=CLIENT)
    assert answer.body.body.error_code == Errors.REQUEST_TIMED_OUT and not shell.relays


def test_a_broker_names_itself_coordinator_and_lists_its_share_of_the_voters_groups() -> None:
    serving = [True]
    shell = _door_node(serving=serving)
    [answer] = shell.api(1, ApiKey.FIND_COORDINATOR, 4, fcq.FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]),
                         listener=CLIENT)
    [c] = answer.body.body.coordinators
    assert (c.error_code, c.node_id, c.host, c.port) == (0, 1, "b1.example", 9092)
    shell.api(2, ApiKey.LIST_GROUPS, 4, lgq.ListGroupsRequest(), listener=CLIENT)
    assert shell.relays[2].kind is RelayKind.GROUP
    gathered = lgr.ListGroupsResponse(groups=[lgr.ListedGroup(group_id=g) for g in ("a", "b", "c")])
    shell.take(shell.node.handle_relayed(shell.now, 2, Reply(gathered, 4)))
    assert [g.group_id for g in shell.answers[2].body.groups] == ["a", "b", "c"], "the only live broker: all"
    shell.api(3, ApiKey.DESCRIBE_QUORUM, 2, _describe_quorum(), listener=CLIENT)
    assert shell.answers[3].body.topics[0].partitions[0].leader_id == 1 and 3 not in shell.relays, "it leads"
    shell.api(4, ApiKey.JOIN_GROUP, 9, jgq.JoinGroupRequest(group_id="g"), listener=CLIENT)
    assert shell.relays[4].kind is RelayKind.GROUP
    serving[0] = False
    [answer] = shell.api(5, ApiKey.FIND_COORDINATOR, 4, fcq.FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]),
                         listener=CLIENT)
    assert answer.body.body.coordinators[0].error_code == Errors.COORDINATOR_NOT_AVAILABLE
    shell.api(6, ApiKey.LIST_GROUPS, 4, lgq.ListGroupsRequest(), listener=CLIENT)
    assert 6 not in shell.relays and shell.answers[6].body.error_code != 0


def _consumer_fetch(max_wait_ms: int = 500) -> frq.FetchRequest:
    return frq.FetchRequest(replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, topics=[frq.FetchTopic(
        topic="__cluster_metadata", partitions=[frq.FetchPartition(partition=0, fetch_offset=0)])])


def _found(error: int = 0) -> frs.FetchResponse:
    return frs.FetchResponse(responses=[frs.FetchableTopicResponse(topic="__cluster_metadata", partitions=[
        frs.PartitionData(partition_index=0, error_code=error, records=b"")])])


def test_a_consumer_fetch_is_read_parked_until_the_high_watermark_moves_then_answered() -> None:
    shell = _door_node()
    shell.api(1, ApiKey.FETCH, 12, _consumer_fetch())
    assert shell.reads == [1] and 1 not in shell.answers
    shell.take(shell.node.handle_read(shell.now, 1, _found(), 0))   # nothing new: it waits
    assert shell.parked == {1: shell.now + 500} and shell.node.next_deadline() <= shell.now + 500
    shell.api(2, ApiKey.BROKER_REGISTRATION, 0, _register(11))
    shell.sync()                                                     # the high watermark moves: read again
    assert shell.reads == [1, 1] and 1 not in shell.parked
    found = _found()
    shell.take(shell.node.handle_read(shell.now, 1, found, 120))
    assert shell.answers[1].body is found and shell.answers[1].version == 12


def test_a_parked_fetch_is_answered_when_its_wait_is_over_and_an_error_at_once() -> None:
    shell = _door_node()
    shell.api(1, ApiKey.FETCH, 12, _consumer_fetch(max_wait_ms=100))
    shell.take(shell.node.handle_read(shell.now, 1, _found(), 0))
    until = shell.parked[1]
    shell.now = until
    shell.take(shell.node.tick(shell.now))                           # the wait is over: a last read
    assert shell.reads == [1, 1]
    shell.take(shell.node.handle_read(shell.now, 1, _found(), 0))
    assert shell.answers[1].body.responses[0].partitions[0].error_code == 0 and not shell.parked
    shell.api(2, ApiKey.FETCH, 12, _consumer_fetch())
    shell.take(shell.node.handle_read(shell.now, 2, _found(int(Errors.OFFSET_OUT_OF_RANGE)), 0))
    assert shell.answers[2].body.responses[0].partitions[0].error_code == Errors.OFFSET_OUT_OF_RANGE
    shell.api(3, ApiKey.FETCH, 12, _consumer_fetch())
    shell.take(shell.node.handle_relay_failed(shell.now, 3))        # its connection went away
    assert shell.node.door._reading == {}


def _describe_quorum() -> dqq.DescribeQuorumRequest:
    return dqq.DescribeQuorumRequest(topics=[dqq.TopicData("__cluster_metadata", [dqq.PartitionData(0)])])


def test_a_replicas_fetch_is_rafts() -> None:
    shell = _door_node()
    fetch = _consumer_fetch()
    fetch.replica_id = 2
    part = fetch.topics[0].partitions[0]
    part.current_leader_epoch, part.last_fetched_epoch = shell.node.raft.epoch, 0
    shell.api(1, ApiKey.FETCH, 12, fetch)
    answer = shell.answers[1].body.responses[0].partitions[0]
    assert answer.error_code == 0 and answer.records and not shell.relays and shell.reads == []


def test_every_plane_refuses_produce_at_once_and_the_leader_answers_describe_quorum() -> None:
    shell = _door_node()
    produce = pq.ProduceRequest(acks=1, timeout_ms=1000, topic_data=[pq.TopicProduceData(
        name="__cluster_metadata", partition_data=[pq.PartitionProduceData(index=0, records=b"")])])
    for rid, listener in ((1, CTL), (2, CLIENT)):
        [answer] = shell.api(rid, ApiKey.PRODUCE, 9, produce, listener=listener)
        assert answer.body.body.responses[0].partition_responses[0].error_code == Errors.INVALID_TOPIC_EXCEPTION
    produce.acks = 0
    [answer] = shell.api(3, ApiKey.PRODUCE, 9, produce)
    assert answer == Respond(3, None), "acks=0: no answer at all"
    shell.api(4, ApiKey.DESCRIBE_QUORUM, 2, _describe_quorum())
    assert shell.answers[4].body.topics[0].partitions[0].leader_id == 1 and not shell.relays
    shell.api(5, ApiKey.DESCRIBE_QUORUM, 2, dqq.DescribeQuorumRequest(topics=[]))   # no partition: Raft's error
    assert shell.answers[5].body.error_code == Errors.INVALID_REQUEST
