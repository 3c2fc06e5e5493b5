"""Configs (incremental ops), ACL filters, UpdateFeatures."""

from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_configs_request as acq
from kraftwire.protocol.messages import create_acls_request as caq
from kraftwire.protocol.messages import delete_acls_request as daq
from kraftwire.protocol.messages import describe_configs_request as dcq
from kraftwire.protocol.messages import incremental_alter_configs_request as iaq
from kraftwire.protocol.messages import update_features_request as ufq
from kraftwire.protocol.messages.describe_acls_request import DescribeAclsRequest

from .harness import Harness

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _inc(h, rtype, name, ops, validate_only=False):
    res = iaq.AlterConfigsResource(rtype, name, [iaq.AlterableConfig(k, op, v) for k, op, v in ops])
    r = h.run(iaq.IncrementalAlterConfigsRequest(resources=[res], validate_only=validate_only))
    return r.responses[0]


def test_incremental_alter_configs_ops() -> None:
    h = Harness()
    h.start_brokers(1)
    h.create_topic("t")
    assert _inc(h, 2, "t", [("retention.ms", SET, "100"), ("cleanup.policy", APPEND, "compact")]).error_code == 0
    assert h.image.configs[(2, "t")] == {"retention.ms": "100", "cleanup.policy": "delete,compact"}
    assert _inc(h, 2, "t", [("cleanup.policy", SUBTRACT, "delete")]).error_code == 0
    assert h.image.configs[(2, "t")]["cleanup.policy"] == "compact"
    assert _inc(h, 2, "t", [("retention.ms", DELETE, None)]).error_code == 0
    assert h.image.configs[(2, "t")] == {"cleanup.policy": "compact"}
    r = _inc(h, 2, "t", [("retention.ms", APPEND, "1")])
    assert r.error_code == Errors.INVALID_CONFIG
    assert _inc(h, 2, "t", [("retention.ms", SET, "x")]).error_code == Errors.INVALID_CONFIG
    assert _inc(h, 2, "t", [("bogus", SET, "1")]).error_code == Errors.INVALID_CONFIG
    assert _inc(h, 2, "nope", [("retention.ms", SET, "1")]).error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert _inc(h, 2, "t", [("retention.ms", SET, "7")], validate_only=True).error_code == 0
    assert "retention.ms" not in h.image.configs[(2, "t")]


def test_broker_configs() -> None:
    h = Harness()
    assert _inc(h, 4, "", [("log.retention.ms", SET, "1000")]).error_code == 0
    r = _inc(h, 4, "1", [("num.io.threads", SET, "4")])   # Kafka's existence check: a registered node only
    assert (r.error_code, r.error_message) == (Errors.BROKER_ID_NOT_REGISTERED, "No node with id 1 found.")
    h.start_brokers(1)
    assert _inc(h, 4, "1", [("num.io.threads", SET, "0")]).error_code == Errors.INVALID_CONFIG
    assert _inc(h, 4, "1", [("num.io.threads", SET, "4"), ("custom.key", SET, "x")]).error_code == 0
    assert _inc(h, 4, "abc", [("num.io.threads", SET, "4")]).error_code == Errors.INVALID_REQUEST
    # broker configs always write a record (brokers reload on it), even when unchanged
    assert _inc(h, 4, "1", [("num.io.threads", SET, "4")]).error_code == 0
    assert len(h.last.records) == 1
    r = h.run(dcq.DescribeConfigsRequest(resources=[dcq.DescribeConfigsResource(4, "1", None)]))
    entries = {e.name: (e.value, e.config_source) for e in r.results[0].configs}
    assert entries["num.io.threads"] == ("4", 2)
    assert entries["log.retention.ms"] == ("1000", 3)
    assert entries["num.network.threads"] == ("3", 5)


def test_legacy_alter_configs_replaces_resource() -> None:
    h = Harness()
    h.start_brokers(1)
    h.create_topic("t", configs={"retention.ms": "5", "segment.ms": "10"})
    res = acq.AlterConfigsResource(2, "t", [acq.AlterableConfig("retention.ms", "6")])
    assert h.run(acq.AlterConfigsRequest(resources=[res])).responses[0].error_code == 0
    assert h.image.configs[(2, "t")] == {"retention.ms": "6"}


def test_describe_topic_configs() -> None:
    h = Harness()
    h.start_brokers(1)
    h.create_topic("t", configs={"retention.ms": "5"})
    res = dcq.DescribeConfigsResource(2, "t", ["retention.ms", "segment.ms"])
    r = h.run(dcq.DescribeConfigsRequest(resources=[res, dcq.DescribeConfigsResource(2, "zz", None)]))
    got = {e.name: (e.value, e.config_source) for e in r.results[0].configs}
    assert got == {"retention.ms": ("5", 1), "segment.ms": ("604800000", 5)}   # TOPIC_CONFIG, DEFAULT_CONFIG
    assert r.results[1].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_describe_configs_encodes_at_every_version() -> None:
    """IsDefault exists only in v0: Java Admin's v4 request once made the encoder fail (issue #12 item 1)."""
    from kraftwire.protocol.messages.describe_configs_response import DescribeConfigsResponse

    h = Harness()
    h.start_brokers(1)
    h.create_topic("t", configs={"retention.ms": "5"})
    for version in range(dcq.DescribeConfigsRequest.MIN_VERSION, dcq.DescribeConfigsRequest.MAX_VERSION + 1):
        for res in (dcq.DescribeConfigsResource(2, "t", None), dcq.DescribeConfigsResource(4, "1", None)):
            r = h.run(dcq.DescribeConfigsRequest(resources=[res]), version)
            back = DescribeConfigsResponse.decode(r.encode(version), version)
            entries = {e.name: e for e in back.results[0].configs}
            assert entries, f"v{version} resource {res.resource_type} described nothing"
            if res.resource_type == 2:
                assert entries["retention.ms"].value == "5"
                assert entries["segment.ms"].is_default is (version == 0)


def _acl(rt, name, pt, principal="User:a", host="*", op=3, perm=3):
    return caq.AclCreation(rt, name, pt, principal, host, op, perm)


def _describe(h, rt=1, name=None, pt=1, principal=None, host=None, op=1, perm=1):
    r = h.run(DescribeAclsRequest(rt, name, pt, principal, host, op, perm))
    assert r.error_code == 0, r
    return sorted((x.resource_type, x.resource_name, x.pattern_type, len(x.acls)) for x in r.resources)


def test_acls_create_describe_delete() -> None:
    h = Harness()
    creations = [_acl(2, "foo", 3), _acl(2, "fo", 4), _acl(2, "*", 3), _acl(2, "bar", 3, principal="User:b"),
                 _acl(3, "foo", 3)]
    r = h.run(caq.CreateAclsRequest(creations=creations))
    assert [x.error_code for x in r.results] == [0] * 5
    assert len(h.image.acls) == 5
    h.run(caq.CreateAclsRequest(creations=[_acl(2, "foo", 3)]))  # duplicate: no new record
    assert len(h.image.acls) == 5 and h.last.records == []
    bad = [_acl(1, "x", 3), _acl(2, "x", 2), _acl(2, "x", 3, op=1), _acl(2, "", 3), _acl(2, "x", 3, principal="bob")]
    assert all(x.error_code == Errors.INVALID_REQUEST for x in h.run(caq.CreateAclsRequest(creations=bad)).results)
    # ANY: every pattern type, exact name
    assert _describe(h, 2, "foo", 1) == [(2, "foo", 3, 1)]
    # MATCH: literal name, wildcard and prefixes that match it
    assert _describe(h, 2, "foo", 2) == [(2, "*", 3, 1), (2, "fo", 4, 1), (2, "foo", 3, 1)]
    assert _describe(h, 1, None, 3, principal="User:b") == [(2, "bar", 3, 1)]
    assert len(_describe(h)) == 5
    assert h.run(DescribeAclsRequest(0, None, 1, None, None, 1, 1)).error_code == Errors.INVALID_REQUEST
    f = daq.DeleteAclsFilter(2, "foo", 2, None, None, 1, 1)
    r = h.run(daq.DeleteAclsRequest(filters=[f, daq.DeleteAclsFilter(2, None, 1, None, None, 3, 1)]))
    assert len(r.filter_results[0].matching_acls) == 3
    assert len(r.filter_results[1].matching_acls) == 4
    assert len(h.last.records) == 4  # each ACL removed once
    assert _describe(h) == [(3, "foo", 3, 1)]


def test_update_features() -> None:
    h = Harness(mv=17)
    h.start_brokers(1)

    def upd(level, typ=1, validate_only=False, feature="metadata.version"):
        req = ufq.UpdateFeaturesRequest(feature_updates=[ufq.FeatureUpdateKey(feature, level, False, typ)],
                                        validate_only=validate_only)
        return h.run(req)

    assert upd(21, validate_only=True).error_code == 0 and h.image.metadata_version == 17
    assert upd(21).error_code == 0 and h.image.metadata_version == 21
    assert upd(22).error_code == Errors.INVALID_UPDATE_VERSION
    assert upd(20).error_code == Errors.INVALID_UPDATE_VERSION       # downgrade needs a downgrade type
    assert upd(17, 2).error_code == 0 and h.image.metadata_version == 17  # 18..21 changed nothing
    assert upd(16, 2).error_code == Errors.INVALID_UPDATE_VERSION    # 17 changed the layout
    assert upd(16, 3).error_code == Errors.INVALID_UPDATE_VERSION
    assert upd(3).error_code == Errors.INVALID_UPDATE_VERSION
    assert upd(1, feature="group.version").error_code == Errors.INVALID_UPDATE_VERSION  # broker lacks it
    h2 = Harness(mv=17)
    h2.register(1)
    req = h2.registration(2, mv_range=(1, 17))
    assert h2.run(req).error_code == 0
    r = h2.run(ufq.UpdateFeaturesRequest(feature_updates=[ufq.FeatureUpdateKey("metadata.version", 21, False, 1)]))
    assert r.error_code == Errors.INVALID_UPDATE_VERSION
