"""Every config resource type Kafka 4.1 has: CLIENT_METRICS (16), GROUP (32), unknown and repeated resources,
BROKER existence, and BROKER_LOGGER (8) answered by the node from its own loggers."""

from __future__ import annotations

import logging

import pytest

from kraftwire.node import loggers
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_configs_request as acq
from kraftwire.protocol.messages import describe_configs_request as dcq
from kraftwire.protocol.messages import incremental_alter_configs_request as iaq

from .harness import Harness

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
CLIENT_METRICS, GROUP, BROKER_LOGGER = 16, 32, 8


def _res(rtype: int, name: str, ops: list) -> iaq.AlterConfigsResource:
    return iaq.AlterConfigsResource(rtype, name, [iaq.AlterableConfig(k, op, v) for k, op, v in ops])


def _inc(h: Harness, *resources: iaq.AlterConfigsResource, validate_only: bool = False) -> list[tuple]:
    resp = h.run(iaq.IncrementalAlterConfigsRequest(resources=list(resources), validate_only=validate_only))
    return [(r.resource_type, r.resource_name, r.error_code, r.error_message) for r in resp.responses]


def _describe(h: Harness, rtype: int, name: str):
    return h.run(dcq.DescribeConfigsRequest(resources=[dcq.DescribeConfigsResource(rtype, name, None)]),
                 4).results[0]


def test_client_metrics_subscription_round_trip() -> None:
    h = Harness()
    ops = [("metrics", SET, "org.apache.kafka.producer."), ("interval.ms", SET, "1000"),
           ("match", SET, "client_software_name=kafka-python, client_id=app.*")]
    assert _inc(h, _res(CLIENT_METRICS, "sub1", ops)) == [(16, "sub1", 0, None)]
    assert h.image.configs[(16, "sub1")]["interval.ms"] == "1000"
    assert _inc(h, _res(CLIENT_METRICS, "sub1", [("metrics", APPEND, "org.apache.kafka.consumer.")]))[0][2] == 0
    r = _describe(h, CLIENT_METRICS, "sub1")
    assert r.error_code == 0
    assert {e.name: (e.value, e.config_source) for e in r.configs} == {
        "metrics": ("org.apache.kafka.producer.,org.apache.kafka.consumer.", 7), "interval.ms": ("1000", 7),
        "match": ("client_software_name=kafka-python, client_id=app.*", 7)}
    assert _describe(h, CLIENT_METRICS, "nobody").configs == []
    assert _inc(h, _res(CLIENT_METRICS, "sub1", [("metrics", DELETE, None), ("interval.ms", DELETE, None),
                                                 ("match", DELETE, None)]))[0][2] == 0
    assert (16, "sub1") not in h.image.configs


@pytest.mark.parametrize(("name", "ops", "code", "message"), [
    ("", [("interval.ms", SET, "1000")], Errors.INVALID_REQUEST, "Subscription name can't be empty"),
    ("s", [("bogus", SET, "1")], Errors.INVALID_REQUEST, "Unknown client metrics configuration: bogus"),
    ("s", [("interval.ms", SET, "50")], Errors.INVALID_REQUEST,
     "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    ("s", [("interval.ms", SET, "soon")], Errors.INVALID_CONFIG,
     "Invalid value soon for configuration interval.ms: Not a number of type INT"),
    ("s", [("match", SET, "client_id")], Errors.INVALID_CONFIG, "Illegal client matching pattern: client_id"),
    ("s", [("match", SET, "user=bob")], Errors.INVALID_CONFIG, "Illegal client matching pattern: user=bob"),
    ("s", [("match", SET, "client_id=(")], Errors.INVALID_CONFIG, "Illegal client matching pattern: client_id=("),
    ("s", [("interval.ms", APPEND, "5")], Errors.INVALID_CONFIG,
     "Can't APPEND to key interval.ms because its type is not LIST."),
])
def test_client_metrics_validation(name: str, ops: list, code: int, message: str) -> None:
    h = Harness()
    assert _inc(h, _res(CLIENT_METRICS, name, ops)) == [(16, name, code, message)]
    assert h.last.records == []


def test_group_configs_within_the_broker_bounds() -> None:
    h = Harness(static_broker_configs={"group.consumer.max.session.timeout.ms": "90000",
                                       "group.consumer.session.timeout.ms": "50000"})
    assert _inc(h, _res(GROUP, "g1", [("consumer.session.timeout.ms", SET, "80000")]))[0][2] == 0
    entries = {e.name: (e.value, e.config_source, e.config_type) for e in _describe(h, GROUP, "g1").configs}
    assert entries["consumer.session.timeout.ms"] == ("80000", 8, 3)
    assert entries["consumer.heartbeat.interval.ms"] == ("5000", 5, 3)
    assert entries["share.isolation.level"] == ("read_uncommitted", 5, 2)
    other = {e.name: e.value for e in _describe(h, GROUP, "other").configs}
    assert other["consumer.session.timeout.ms"] == "50000"   # the broker's own setting is the default
    assert _describe(h, GROUP, "").error_code == Errors.INVALID_REQUEST


@pytest.mark.parametrize(("name", "ops", "code", "message"), [
    ("", [("consumer.session.timeout.ms", SET, "50000")], Errors.INVALID_REQUEST,
     "Default group resources are not allowed."),
    ("g", [("session.timeout.ms", SET, "50000")], Errors.INVALID_CONFIG, "Unknown group config name: session.timeout.ms"),
    ("g", [("consumer.session.timeout.ms", SET, "70000")], Errors.INVALID_CONFIG,
     "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
    ("g", [("consumer.heartbeat.interval.ms", SET, "1000")], Errors.INVALID_CONFIG,
     "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    ("g", [("streams.num.standby.replicas", SET, "3")], Errors.INVALID_CONFIG,
     "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
    ("g", [("share.record.lock.duration.ms", SET, "500")], Errors.INVALID_CONFIG,
     "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ("g", [("share.isolation.level", SET, "dirty")], Errors.INVALID_CONFIG,
     "Invalid value dirty for configuration share.isolation.level: String must be one of: read_committed, "
     "read_uncommitted"),
])
def test_group_config_validation(name: str, ops: list, code: int, message: str) -> None:
    h = Harness()
    assert _inc(h, _res(GROUP, name, ops)) == [(32, name, code, message)]


def test_group_session_must_exceed_heartbeat() -> None:
    h = Harness(static_broker_configs={"group.consumer.min.session.timeout.ms": "1000",
                                       "group.consumer.max.heartbeat.interval.ms": "60000"})
    r = _inc(h, _res(GROUP, "g", [("consumer.session.timeout.ms", SET, "20000"),
                                  ("consumer.heartbeat.interval.ms", SET, "20000")]))
    assert r[0][2:] == (Errors.INVALID_CONFIG,
                        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
    assert _inc(h, _res(GROUP, "g", [("share.auto.offset.reset", SET, "by_duration:PT1H")]))[0][2] == 0
    assert _inc(h, _res(GROUP, "g", [("share.auto.offset.reset", SET, "by_duration:soon")]))[0][2] == \
        Errors.INVALID_CONFIG


def test_unknown_and_repeated_resources_are_answered_before_the_controller() -> None:
    h = Harness()
    h.start_brokers(1)
    r = _inc(h, _res(64, "x", [("a", SET, "b")]), _res(4, "1", [("num.io.threads", SET, "4")]),
             _res(4, "1", [("num.io.threads", SET, "5")]), _res(16, "s", [("interval.ms", SET, "1000")]))
    assert r == [(64, "x", Errors.UNSUPPORTED_VERSION, "Unknown resource type 64."),
                 (4, "1", Errors.INVALID_REQUEST, "Duplicate resource."), (16, "s", 0, None)]
    assert (4, "1") not in h.image.configs
    legacy = h.run(acq.AlterConfigsRequest(resources=[acq.AlterConfigsResource(8, "0", [])]))
    assert (legacy.responses[0].error_code, legacy.responses[0].error_message) == (
        Errors.INVALID_REQUEST, "Unexpected resource type BROKER_LOGGER.")
    assert _describe(h, 0, "x").error_code == Errors.INVALID_REQUEST


def test_broker_logger_is_this_nodes_loggers() -> None:
    logging.getLogger("kraftwire.test.loggers")
    entries = {e.name: (e.value, e.config_source) for e in loggers.describe(3, "3", 4)}
    assert "root" in entries and entries["kraftwire.test.loggers"][1] == 6
    with pytest.raises(Exception, match="Unexpected broker id, expected 3 but received 4"):
        loggers.describe(3, "4", 4)
    res = _res(BROKER_LOGGER, "3", [("kraftwire.test.loggers", SET, "DEBUG")])
    assert loggers.alter(3, res, validate_only=True) == (0, None)
    assert logging.getLogger("kraftwire.test.loggers").level == logging.NOTSET
    assert loggers.alter(3, res, validate_only=False) == (0, None)
    assert logging.getLogger("kraftwire.test.loggers").level == logging.DEBUG
    assert loggers.alter(3, _res(8, "3", [("kraftwire.test.loggers", DELETE, None)]), False) == (0, None)
    assert logging.getLogger("kraftwire.test.loggers").level == logging.NOTSET
    assert loggers.alter(3, _res(8, "3", [("no.such.logger.x", SET, "INFO")]), False) == (
        Errors.INVALID_CONFIG, "Logger no.such.logger.x does not exist!")
    assert loggers.alter(3, _res(8, "3", [("root", DELETE, None)]), False) == (
        Errors.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    assert loggers.alter(3, _res(8, "3", [("root", SET, "LOUD")]), False)[0] == Errors.INVALID_CONFIG
    assert loggers.alter(3, _res(8, "3", [("root", APPEND, "INFO")]), False) == (
        Errors.INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")
    assert loggers.alter(3, _res(8, "x", []), False) == (
        Errors.INVALID_REQUEST, "Node id must be an integer, but it is: x")


def test_list_config_resources() -> None:
    from kraftwire.controller.configs import list_config_resources
    from kraftwire.protocol.messages.list_config_resources_request import ListConfigResourcesRequest

    h = Harness()
    h.start_brokers(1)
    h.create_topic("t")
    _inc(h, _res(CLIENT_METRICS, "sub1", [("interval.ms", SET, "1000")]),
         _res(GROUP, "g1", [("consumer.session.timeout.ms", SET, "50000")]))

    def listed(types: list[int], version: int = 1) -> tuple[int, list[tuple[str, int]]]:
        r = list_config_resources(h.image, ListConfigResourcesRequest(resource_types=types), version)
        return r.error_code, [(c.resource_name, c.resource_type) for c in r.config_resources]

    assert listed([]) == (0, [("g1", 32), ("sub1", 16), ("1", 8), ("1", 4), ("t", 2)])
    assert listed([16, 2]) == (0, [("sub1", 16), ("t", 2)])
    assert listed([], version=0) == (0, [("sub1", 16)])
    assert listed([64]) == (Errors.UNSUPPORTED_VERSION, [])
