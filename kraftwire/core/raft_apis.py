"""Raft's Kafka APIs at the one door: Vote, BeginQuorumEpoch, EndQuorumEpoch, a replica's Fetch,
FetchSnapshot, DescribeQuorum and KIP-853's AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter enter
``NodeCore.handle_api`` like every request and are answered by the replica's Raft core (a voter change
once the new voter set commits, or with its error; UpdateRaftVoter's answer names the leader's endpoint).

For one of them the door (``core/api_door.py``, after its registry and authorization checks) asks
``RaftApis``: the decoded request becomes the Raft core's message (``core/raft_wire.py``; a second
quorum's topic is renamed first), a request that does not address the quorum's one partition is answered
at once with the error Kafka gives (INVALID_REQUEST, UNKNOWN_TOPIC_OR_PARTITION), and the rest is handed to
``RaftCore.handle_request`` under the door's request id. The Raft core's checks stay its own: the cluster id,
the KIP-853 voter keys, the epochs. Its ``SendResponse`` for that id, whenever it comes — at once, after a
quorum-state write (a granted vote: the ``PersistState`` before it holds every output of the event, in the
server's driver and in the simulator alike, so the answer never leaves before the vote is durable), or when
a parked Fetch is woken by new data, a moved high watermark or epoch, or its MaxWaitMs — is turned into the
wire answer (with the voters' endpoints) by ``answers`` (after every event of the node core) and comes out
as the door's ``Respond``. A FetchSnapshot's chunk is the shell's to read: the Raft core decides the answer
and emits ``ReadSnapshotChunk``, the shell hands the bytes to ``NodeCore.handle_snapshot_chunk``, and the
answer it completes comes out here like any other.

DescribeQuorum is the quorum leader's to answer: a replica that leads answers from its Raft state; a
replica of the metadata quorum that does not lead has it relayed (``Relay`` DESCRIBE_QUORUM: the shell asks
the leader, following NOT_LEADER_OR_FOLLOWER hints) and, when nobody answered, gives its own view. The
voters' offsets quorum always answers from its own replica.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

from kraftwire.core.raft_wire import (
    WireError,
    addressed_topic,
    error_answer,
    request_from_wire,
    response_to_wire,
    retopic,
)
from kraftwire.protocol.api import ApiKey
from kraftwire.protocol.framing import Request
from kraftwire.protocol.metadata import METADATA_TOPIC
from kraftwire.protocol.requests import Reply
from kraftwire.raft import RaftCore
from kraftwire.raft import messages as m

K = ApiKey
Node = tuple[int, str, int, str]   # a voter's (id, host, port, listener), as DescribeQuorum v2 lists it

Respond = Callable[[Reply], Any]   # turns a Raft request's wire answer into the door's output


class Asked(Enum):
    """Where ``RaftApis.ask`` put a request that it did not refuse at once."""

    RAFT = "raft"       # handed to the Raft core: its answer comes out of ``answers``
    LEADER = "leader"   # DescribeQuorum at a metadata replica that does not lead: the leader's to answer


#: the APIs the Raft core answers (with a replica's Fetch: ``is_replica_fetch``)
RAFT_CORE_APIS = frozenset({K.VOTE, K.BEGIN_QUORUM_EPOCH, K.END_QUORUM_EPOCH, K.FETCH_SNAPSHOT, K.DESCRIBE_QUORUM})
#: KIP-853's voter changes, an operator's requests to the metadata quorum's leader (``raft/reconfig.py`` rules)
VOTER_CHANGE_KEYS = frozenset({K.ADD_RAFT_VOTER, K.REMOVE_RAFT_VOTER, K.UPDATE_RAFT_VOTER})
#: every API the door hands to ``RaftApis``
DOOR_RAFT_APIS = RAFT_CORE_APIS | VOTER_CHANGE_KEYS


def replica_of(request: Request) -> int:
    """A Fetch's ReplicaId (in ReplicaState from v15): >= 0 for a replica's (Raft's), else a consumer's."""
    body = request.body
    return int(body.replica_state.replica_id if request.api_version >= 15 else body.replica_id)


def is_raft_request(request: Request) -> bool:
    """``request`` is Raft's: one of ``RAFT_CORE_APIS`` or a replica's Fetch."""
    key = request.api_key
    return key in RAFT_CORE_APIS or (key == K.FETCH and replica_of(request) >= 0)


def raft_topic(request: Request) -> str | None:
    """The topic a Raft request names, which says which quorum's replica answers it (None: not Raft's)."""
    return addressed_topic(request.body) if is_raft_request(request) else None


class RaftApis:
    """The Raft requests of one replica's door. ``nodes``: the voters DescribeQuorum and the Raft answers
    list (empty on an observer); ``topic``: a second quorum's topic name on the wire (None for
    ``__cluster_metadata``); ``ask_leader``: DescribeQuorum at a replica that does not lead is relayed to
    the leader (the metadata quorum), else answered from this replica."""

    def __init__(self, nodes: Iterable[Node] = (), topic: str | None = None, ask_leader: bool = True) -> None:
        self.nodes: list[Node] = list(nodes)
        self.topic = topic
        self.ask_leader = ask_leader
        self.out: list[m.Output] = []   # Raft's outputs of the requests handed in during the current event
        self.asked = False              # a request reached the Raft core during the current event
        self._raft: RaftCore | None = None
        self._clock: Callable[[], int] = _no_clock
        self._waiting: dict[int, tuple[int, int, Respond]] = {}   # request id -> (key, version, respond) until answered

    def attach(self, raft: RaftCore, clock: Callable[[], int]) -> None:
        """Bind to the replica's Raft core and the node core's clock (``NodeCore`` does this)."""
        self._raft = raft
        self._clock = clock

    def ask(self, request_id: int, request: Request, respond: Respond) -> Asked | Reply:
        """Hand ``request`` to the Raft core as its message under ``request_id`` (``Asked.RAFT``: the Raft core's
        ``SendResponse`` for it becomes ``respond``'s output in ``answers``); the answer refusing it at once (not
        the quorum's partition); or ``Asked.LEADER``: DescribeQuorum at a metadata-quorum replica that does not
        lead, the leader's to answer."""
        key, version, body = request.api_key, request.api_version, request.body
        try:
            if self.topic is not None:
                retopic(body, METADATA_TOPIC)
            source, msg = request_from_wire(key, body, version)
        except WireError as e:
            return Reply(error_answer(key, int(e.error)), version)
        raft = self._core()
        if isinstance(msg, m.DescribeQuorumRequest) and self.ask_leader and not raft.is_leader:
            return Asked.LEADER
        out = raft.handle_request(self._clock(), request_id, source, msg)   # raises: nothing kept
        self._waiting[request_id] = (key, version, respond)
        self.asked = True
        self.out += out
        return Asked.RAFT

    def answers(self, out: list[Any]) -> list[Any]:
        """``out`` (a node core event's outputs) with the Raft core's answers to the requests ``ask`` handed in
        turned into their wire answers and given to their ``respond``, in place (the quorum-state write before
        a vote's answer stays before it)."""
        waiting = self._waiting
        if waiting:
            for i, o in enumerate(out):
                if type(o) is m.SendResponse and o.request_id in waiting:
                    key, version, respond = waiting.pop(o.request_id)
                    body = response_to_wire(key, o.msg, version, self.nodes)
                    if self.topic is not None:
                        retopic(body, self.topic)
                    out[i] = respond(Reply(body, version))
        return out

    def own_view(self, request: Request) -> Reply:
        """This replica's DescribeQuorum answer (NOT_LEADER_OR_FOLLOWER naming the leader it knows, unless it
        leads): when nobody else answered."""
        version = request.api_version
        msg = self._core().describe_quorum(self._clock())
        return Reply(response_to_wire(K.DESCRIBE_QUORUM, msg, version, self.nodes), version)

    def _core(self) -> RaftCore:
        if self._raft is None:
            raise RuntimeError("RaftApis used before its node core attached it")
        return self._raft


def _no_clock() -> int:
    raise RuntimeError("RaftApis used before its node core attached it")
