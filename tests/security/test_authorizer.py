"""ACL authorizer semantics (Kafka's StandardAuthorizer) and principal parsing/mapping."""

from __future__ import annotations

import uuid

import pytest

from kraftwire.metadata.image import AclEntry
from kraftwire.security.authorizer import (
    ALL,
    ALLOW,
    ALTER,
    ALTER_CONFIGS,
    CLUSTER,
    CLUSTER_ACTION,
    CREATE,
    DELETE,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    GROUP,
    LITERAL,
    PREFIXED,
    READ,
    TOPIC,
    WRITE,
    AclAuthorizer,
)
from kraftwire.security.principal import PrincipalError, SslPrincipalMapper, parse_super_users, subject_dn


def acl(rtype, name, op, perm=ALLOW, principal="User:alice", host="*", pattern=LITERAL):
    return AclEntry(rtype, name, pattern, principal, host, op, perm)


class Acls:
    def __init__(self, *entries):
        self.map = {uuid.uuid4(): e for e in entries}

    def add(self, *entries):
        self.map = {**self.map, **{uuid.uuid4(): e for e in entries}}

    def __call__(self):
        return self.map


def authz(*entries, supers=(), allow_if_none=False):
    return AclAuthorizer(Acls(*entries), supers, allow_if_none)


def test_literal_allow_and_default_deny():
    a = authz(acl(TOPIC, "orders", READ))
    assert a.authorize("User:alice", "10.0.0.1", READ, TOPIC, "orders")
    assert not a.authorize("User:bob", "10.0.0.1", READ, TOPIC, "orders")
    assert not a.authorize("User:alice", "10.0.0.1", WRITE, TOPIC, "orders")
    assert not a.authorize("User:alice", "10.0.0.1", READ, TOPIC, "orders2")   # no ACLs, default deny
    assert not a.authorize("User:alice", "10.0.0.1", READ, GROUP, "orders")


def test_allow_everyone_if_no_acl_found_only_for_resources_without_acls():
    a = authz(acl(TOPIC, "orders", READ), allow_if_none=True)
    assert a.authorize("User:bob", "h", WRITE, TOPIC, "payments")     # no ACLs at all on payments
    assert not a.authorize("User:bob", "h", READ, TOPIC, "orders")    # orders has ACLs, none for bob


def test_deny_wins_over_allow_and_wildcards():
    a = authz(acl(TOPIC, "*", ALL, principal="User:*"), acl(TOPIC, "secret", READ, DENY))
    assert a.authorize("User:alice", "h", WRITE, TOPIC, "secret")
    assert not a.authorize("User:alice", "h", READ, TOPIC, "secret")
    assert a.authorize("User:bob", "h", READ, TOPIC, "secret")
    assert a.authorize("User:anyone", "h", CREATE, TOPIC, "whatever")


def test_prefixed_patterns():
    a = authz(acl(TOPIC, "app-", WRITE, pattern=PREFIXED), acl(TOPIC, "app-internal-", WRITE, DENY,
                                                                 pattern=PREFIXED))
    assert a.authorize("User:alice", "h", WRITE, TOPIC, "app-orders")
    assert a.authorize("User:alice", "h", WRITE, TOPIC, "app-")
    assert not a.authorize("User:alice", "h", WRITE, TOPIC, "app-internal-x")
    assert not a.authorize("User:alice", "h", WRITE, TOPIC, "ap")
    assert not a.authorize("User:alice", "h", WRITE, TOPIC, "other")
    # a LITERAL ACL whose name is a prefix of the resource does not apply
    b = authz(acl(TOPIC, "app", WRITE))
    assert not b.authorize("User:alice", "h", WRITE, TOPIC, "app-orders")


def test_host_matching():
    a = authz(acl(TOPIC, "t", READ, host="10.0.0.1"))
    assert a.authorize("User:alice", "10.0.0.1", READ, TOPIC, "t")
    assert not a.authorize("User:alice", "10.0.0.2", READ, TOPIC, "t")


@pytest.mark.parametrize("granted", [READ, WRITE, DELETE, ALTER, DESCRIBE, ALL])
def test_operations_implying_describe(granted):
    a = authz(acl(TOPIC, "t", granted))
    assert a.authorize("User:alice", "h", DESCRIBE, TOPIC, "t")


def test_implications_are_for_allow_only_and_describe_configs():
    a = authz(acl(TOPIC, "t", CREATE))
    assert not a.authorize("User:alice", "h", DESCRIBE, TOPIC, "t")   # CREATE does not imply DESCRIBE
    b = authz(acl(TOPIC, "t", ALTER_CONFIGS))
    assert b.authorize("User:alice", "h", DESCRIBE_CONFIGS, TOPIC, "t")
    assert not b.authorize("User:alice", "h", ALTER, TOPIC, "t")
    c = authz(acl(TOPIC, "t", ALL), acl(TOPIC, "t", READ, DENY))
    assert c.authorize("User:alice", "h", DESCRIBE, TOPIC, "t")       # a DENY READ does not deny DESCRIBE
    d = authz(acl(TOPIC, "t", ALL), acl(TOPIC, "t", ALL, DENY, host="10.9.9.9"))
    assert not d.authorize("User:alice", "10.9.9.9", DESCRIBE, TOPIC, "t")


def test_super_users_bypass_acls_and_cluster_action():
    a = authz(acl(CLUSTER, "kafka-cluster", CLUSTER_ACTION, DENY, principal="User:*"), supers={"User:admin"})
    assert a.authorize("User:admin", "h", CLUSTER_ACTION, CLUSTER, "kafka-cluster")
    assert not a.authorize("User:alice", "h", CLUSTER_ACTION, CLUSTER, "kafka-cluster")


def test_index_follows_new_acl_maps_and_authorized_operations():
    acls = Acls()
    a = AclAuthorizer(acls)
    assert not a.authorize("User:alice", "h", READ, TOPIC, "t")
    acls.add(acl(TOPIC, "t", READ))
    assert a.authorize("User:alice", "h", READ, TOPIC, "t")
    bits = a.authorized_operations("User:alice", "h", TOPIC, "t")
    assert bits == (1 << READ) | (1 << DESCRIBE)


def test_super_users_parsing():
    assert parse_super_users(" User:admin ; User:CN=ctl,O=acme;") == {"User:admin", "User:CN=ctl,O=acme"}
    with pytest.raises(PrincipalError):
        parse_super_users("admin")


def test_subject_dn_and_mapping_rules():
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc."),), (("organizationalUnitName", "ops"),),
               (("commonName", "alice"),))
    dn = subject_dn(subject)
    assert dn == "CN=alice,OU=ops,O=Acme\\, Inc.,C=US"
    assert SslPrincipalMapper().principal(dn) == f"User:{dn}"
    m = SslPrincipalMapper("RULE:^CN=(.*?),OU=ops,.*$/$1-ops/U, RULE:^CN=([^,]*).*$/$1/L, DEFAULT")
    assert m.name(dn) == "ALICE-OPS"
    assert m.name("CN=Bob,OU=dev,O=x") == "bob"
    only = SslPrincipalMapper("RULE:^CN=svc-(.*?),.*$/$1/")
    with pytest.raises(PrincipalError):
        only.name("CN=alice,O=x")
    with pytest.raises(PrincipalError):
        SslPrincipalMapper("RULE:^CN=(.*$/x/")
