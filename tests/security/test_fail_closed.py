"""Authorization fails closed: every API a node serves has a rule, and an API without one is refused."""

from __future__ import annotations

import pytest

from kraftwire.core.api_registry import (
    BROKER_FORWARDED_APIS,
    BROKER_LOCAL_APIS,
    CLIENT_APIS,
    CONTROLLER_APIS,
    ENVELOPE_APIS,
    RAFT_APIS,
)
from kraftwire.group import GROUP_APIS
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.framing import Request
from kraftwire.protocol.messages.describe_acls_request import DescribeAclsRequest
from kraftwire.protocol.messages.request_header import RequestHeader
from kraftwire.protocol.requests import RequestContext
from kraftwire.security.authorizer import AclAuthorizer
from kraftwire.security.gate import RequestGate
from kraftwire.security.rules import RULES
from kraftwire.security.sasl import SASL_APIS

SERVED = {**CLIENT_APIS, **RAFT_APIS, **CONTROLLER_APIS, **ENVELOPE_APIS, **GROUP_APIS,
          **BROKER_LOCAL_APIS, **BROKER_FORWARDED_APIS}


def test_every_served_api_has_an_authorization_rule() -> None:
    """SASL handshakes are answered by the listener before any request reaches the gate."""
    unruled = sorted(k for k in SERVED if k not in RULES and k not in SASL_APIS)
    assert unruled == [], f"APIs served without an authorization rule: {unruled}"
    assert len(SERVED) > 30


def test_an_api_without_a_rule_is_refused_and_never_dispatched() -> None:
    rules = {k: v for k, v in RULES.items() if k != 29}
    gate = RequestGate(AclAuthorizer(dict, super_users={"User:admin"}), lambda: None, rules=rules)
    req = Request(RequestHeader(29, 3, 1, "t"), DescribeAclsRequest())
    ctx = RequestContext("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 1, principal="User:admin")
    outcome = gate.check(req, ctx)
    assert outcome is not None and gate.denied == 1
    assert outcome.deny.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize("key", [58, 19])
def test_apis_in_skip_pass_to_the_handler_unchecked(key: int) -> None:
    """A broker forwards admin writes without checking them: the controller authorizes the client."""
    from kraftwire.protocol.api import request_class

    cls = request_class(key)
    gate = RequestGate(AclAuthorizer(dict), lambda: None, skip={key})
    req = Request(RequestHeader(key, cls.MAX_VERSION, 1, "t"), cls())
    ctx = RequestContext("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 1)
    assert gate.check(req, ctx) is None and gate.denied == 0
