"""Client quotas: AlterClientQuotas validation and records, DescribeClientQuotas filters, replay and snapshots."""

from __future__ import annotations

import math

import pytest

from kraftwire.controller import QuorumController, quotas
from kraftwire.metadata.snapshot import image_from_snapshot, image_to_records, snapshot_batches
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_client_quotas_request as acq
from kraftwire.protocol.messages import describe_client_quotas_request as dcq
from kraftwire.protocol.messages.client_quota_record import ClientQuotaRecord
from kraftwire.raft import SnapshotId

from .harness import Harness

EXACT, DEFAULT, ANY = 0, 1, 2


def _entry(entity: dict, ops: list) -> acq.EntryData:
    return acq.EntryData(entity=[acq.EntityData(t, n) for t, n in entity.items()],
                         ops=[acq.OpData(k, 0.0 if v is None else v, v is None) for k, v in ops])


def _alter(h: Harness, *entries: acq.EntryData, validate_only: bool = False) -> list[tuple[dict, int, str | None]]:
    resp = h.run(acq.AlterClientQuotasRequest(entries=list(entries), validate_only=validate_only))
    return [({e.entity_type: e.entity_name for e in r.entity}, r.error_code, r.error_message) for r in resp.entries]


def _describe(h: Harness, components: list, strict: bool = False):
    req = dcq.DescribeClientQuotasRequest(components=[dcq.ComponentData(t, m, n) for t, m, n in components],
                                          strict=strict)
    return h.run(req)


def _found(resp) -> dict:
    assert resp.error_code == 0, resp.error_message
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {v.key: v.value for v in entry.values}
            for entry in resp.entries}


def test_set_change_and_remove_write_only_what_changes() -> None:
    h = Harness()
    [(entity, code, msg)] = _alter(h, _entry({"user": "alice", "client-id": "app"},
                                             [("producer_byte_rate", 1024.0), ("request_percentage", 12.5)]))
    assert (entity, code, msg) == ({"user": "alice", "client-id": "app"}, 0, None)
    assert len(h.last.records) == 2 and h.last.commit_offset >= 0
    key = (("client-id", "app"), ("user", "alice"))
    assert h.image.quotas[key] == {"producer_byte_rate": 1024.0, "request_percentage": 12.5}
    # the same value again writes nothing; removing an absent key writes nothing
    assert _alter(h, _entry({"client-id": "app", "user": "alice"},
                            [("producer_byte_rate", 1024.0), ("consumer_byte_rate", None)]))[0][1] == 0
    assert h.last.records == []
    assert _alter(h, _entry({"user": "alice", "client-id": "app"},
                            [("producer_byte_rate", None), ("request_percentage", None)]))[0][1] == 0
    assert [r.message.remove for r in h.last.records] == [True, True]
    assert key not in h.image.quotas


def test_validate_only_writes_nothing() -> None:
    h = Harness()
    assert _alter(h, _entry({"user": None}, [("consumer_byte_rate", 5.0)]), validate_only=True)[0][1] == 0
    assert h.last.records == [] and h.image.quotas == {}


@pytest.mark.parametrize(("entity", "ops", "message"), [
    ({}, [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
    ({"group": "g"}, [("producer_byte_rate", 1.0)], "Unhandled client quota entity type: group"),
    ({"user": ""}, [("producer_byte_rate", 1.0)], "Empty user not supported"),
    ({"ip": "10.0.0.1", "user": "u"}, [("connection_creation_rate", 1.0)],
     "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"),
    ({"ip": "no such host!"}, [("connection_creation_rate", 1.0)], "no such host! is not a valid IP or resolvable host."),
    ({"ip": "10.0.0.1"}, [("producer_byte_rate", 1.0)], "Invalid configuration key producer_byte_rate"),
    ({"user": "u"}, [("connection_creation_rate", 1.0)], "Invalid configuration key connection_creation_rate"),
    ({"user": "u"}, [("bogus", 1.0)], "Invalid configuration key bogus"),
    ({"user": "u"}, [("producer_byte_rate", 0.0)], "Quota producer_byte_rate must be greater than 0"),
    ({"user": "u"}, [("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
    ({"user": "u"}, [("producer_byte_rate", 1e19)], "Proposed value for producer_byte_rate is too large for a LONG."),
    ({"ip": None}, [("connection_creation_rate", 3e9)],
     "Proposed value for connection_creation_rate is too large for an INT."),
    ({"client-id": "c"}, [("request_percentage", 1.0), ("request_percentage", 2.0)],
     "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c})"),
])
def test_invalid_alterations_get_kafkas_error(entity: dict, ops: list, message: str) -> None:
    h = Harness()
    [(_, code, msg)] = _alter(h, _entry(entity, ops))
    assert (code, msg) == (Errors.INVALID_REQUEST, message)
    assert h.last.records == []


def test_one_bad_entity_does_not_stop_the_others() -> None:
    h = Harness()
    results = _alter(h, _entry({"user": "a"}, [("producer_byte_rate", 10.0)]),
                     _entry({"user": "b"}, [("producer_byte_rate", -1.0)]),
                     _entry({"ip": "::1"}, [("connection_creation_rate", 7.0)]))
    assert [code for _, code, _ in results] == [0, Errors.INVALID_REQUEST, 0]
    assert set(h.image.quotas) == {(("user", "a"),), (("ip", "::1"),)}


def test_double_quotas_take_fractions_and_nan_passes_as_in_kafka() -> None:
    h = Harness()
    assert _alter(h, _entry({"user": None, "client-id": None}, [("controller_mutation_rate", 0.25)]))[0][1] == 0
    nan = acq.AlterClientQuotasRequest(entries=[_entry({"user": "n"}, [("producer_byte_rate", math.nan)])])
    res = h.ctl.handle(h.now, nan)   # not through the harness: NaN never equals its decoded copy
    assert res.response.entries[0].error_code == 0 and len(res.records) == 1


@pytest.fixture
def populated() -> Harness:
    h = Harness()
    _alter(h, _entry({"user": "alice"}, [("producer_byte_rate", 1.0)]),
           _entry({"user": None}, [("producer_byte_rate", 2.0)]),
           _entry({"user": "alice", "client-id": "app"}, [("consumer_byte_rate", 3.0)]),
           _entry({"user": "alice", "client-id": None}, [("consumer_byte_rate", 4.0)]),
           _entry({"client-id": "app"}, [("request_percentage", 5.0)]),
           _entry({"ip": "10.1.2.3"}, [("connection_creation_rate", 6.0)]),
           _entry({"ip": None}, [("connection_creation_rate", 7.0)]))
    assert len(h.image.quotas) == 7
    return h


def test_describe_filters(populated: Harness) -> None:
    h = populated
    assert _found(_describe(h, [("user", EXACT, "alice")], strict=True)) == {
        (("user", "alice"),): {"producer_byte_rate": 1.0}}
    assert set(_found(_describe(h, [("user", EXACT, "alice")]))) == {
        (("user", "alice"),), (("client-id", "app"), ("user", "alice")), (("client-id", None), ("user", "alice"))}
    assert set(_found(_describe(h, [("user", DEFAULT, None)]))) == {(("user", None),)}
    assert set(_found(_describe(h, [("user", ANY, None), ("client-id", ANY, None)], strict=True))) == {
        (("client-id", "app"), ("user", "alice")), (("client-id", None), ("user", "alice"))}
    assert set(_found(_describe(h, [("ip", ANY, None)]))) == {(("ip", "10.1.2.3"),), (("ip", None),)}
    assert len(_found(_describe(h, []))) == 7
    assert _found(_describe(h, [], strict=True)) == {}


@pytest.mark.parametrize(("components", "code", "message"), [
    ([("", EXACT, "x")], Errors.INVALID_REQUEST, "Invalid empty entity type."),
    ([("user", EXACT, "a"), ("user", ANY, None)], Errors.INVALID_REQUEST,
     "Entity type user cannot appear more than once in the filter."),
    ([("group", EXACT, "g")], Errors.UNSUPPORTED_VERSION, "Unsupported entity type group"),
    ([("user", EXACT, None)], Errors.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([("user", DEFAULT, "a")], Errors.INVALID_REQUEST,
     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([("user", ANY, "a")], Errors.INVALID_REQUEST,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([("user", 9, None)], Errors.INVALID_REQUEST, "Unknown match type 9"),
    ([("ip", ANY, None), ("client-id", EXACT, "c")], Errors.INVALID_REQUEST,
     "Invalid entity filter component combination. IP filter component should not be used with user or "
     "clientId filter component."),
])
def test_describe_bad_filters_fail_the_request(populated: Harness, components: list, code: int, message: str) -> None:
    resp = _describe(populated, components)
    assert (resp.error_code, resp.error_message, resp.entries) == (code, message, None)


def test_quotas_survive_a_snapshot_and_replay(populated: Harness) -> None:
    img = populated.image
    assert len([r for r in image_to_records(img) if type(r.message) is ClientQuotaRecord]) == 7
    back = image_from_snapshot(snapshot_batches(img, SnapshotId(len(populated.log), 1)))
    assert back.quotas == img.quotas
    standby = QuorumController()   # a standby replaying the active controller's log holds the same quotas
    standby.replay_batch(populated.log)
    assert standby.image.quotas == img.quotas
    everything = dcq.DescribeClientQuotasRequest(components=[], strict=False)
    assert quotas.describe(standby.image, everything, 1).entries == quotas.describe(img, everything, 1).entries
