"""An ACL authorizer over the metadata image's ACLs, with Kafka's StandardAuthorizer semantics.

* ``super.users`` may do anything.
* ACLs for a resource are the LITERAL ones with its exact name, the LITERAL ``*`` wildcard, and the
  PREFIXED ones whose name is a prefix of it. An ACL applies when its principal is the caller's or
  ``User:*`` and its host is the caller's address or ``*``.
* Any applicable DENY wins. Otherwise an applicable ALLOW grants: for the operation itself, for
  ALL, and for DESCRIBE when the ALLOW is for READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS
  when it is for ALTER_CONFIGS. DENY ACLs imply nothing (a DENY READ does not deny DESCRIBE).
* A resource with no ACLs at all is allowed only with ``allow.everyone.if.no.acl.found=true``;
  a resource that has ACLs, none of which grant, is denied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kraftwire.metadata.image import AclEntry
from kraftwire.security.principal import WILDCARD_PRINCIPAL

audit = logging.getLogger("kraftwire.authorizer")

# AclOperation
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION = 2, 3, 4, 5, 6, 7, 8, 9
DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS = 10, 11, 12, 13, 14
OPERATION_NAMES = {ALL: "ALL", READ: "READ", WRITE: "WRITE", CREATE: "CREATE", DELETE: "DELETE", ALTER: "ALTER",
                   DESCRIBE: "DESCRIBE", CLUSTER_ACTION: "CLUSTER_ACTION", DESCRIBE_CONFIGS: "DESCRIBE_CONFIGS",
                   ALTER_CONFIGS: "ALTER_CONFIGS", IDEMPOTENT_WRITE: "IDEMPOTENT_WRITE",
                   CREATE_TOKENS: "CREATE_TOKENS", DESCRIBE_TOKENS: "DESCRIBE_TOKENS"}
# ResourceType
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 2, 3, 4, 5, 6, 7
RESOURCE_NAMES = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster", TRANSACTIONAL_ID: "TransactionalId",
                  DELEGATION_TOKEN: "DelegationToken", USER: "User"}
# PatternType, AclPermissionType
LITERAL, PREFIXED = 3, 4
DENY, ALLOW = 2, 3
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"

_IMPLIES_DESCRIBE = frozenset({DESCRIBE, READ, WRITE, DELETE, ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({DESCRIBE_CONFIGS, ALTER_CONFIGS})

# Operations an "authorized operations" bitfield reports, per resource type (Kafka's lists).
REPORTED_OPERATIONS = {
    TOPIC: (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DELETE, DESCRIBE),
    CLUSTER: (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE,
              CREATE_TOKENS, DESCRIBE_TOKENS),
}


def grants(acl_op: int, acl_perm: int, wanted: int) -> bool:
    """Whether an ACL for ``acl_op`` with permission ``acl_perm`` speaks about operation ``wanted``."""
    if acl_op == ALL or acl_op == wanted:
        return True
    if acl_perm != ALLOW:
        return False
    if wanted == DESCRIBE:
        return acl_op in _IMPLIES_DESCRIBE
    if wanted == DESCRIBE_CONFIGS:
        return acl_op in _IMPLIES_DESCRIBE_CONFIGS
    return False


@dataclass
class _Index:
    """ACLs grouped for lookup: literal by (type, name), prefixed by (type, prefix)."""

    source: Any = None
    literal: dict[tuple[int, str], list[AclEntry]] = field(default_factory=dict)
    prefixed: dict[tuple[int, str], list[AclEntry]] = field(default_factory=dict)
    max_prefix: dict[int, int] = field(default_factory=dict)

    @classmethod
    def build(cls, acls: dict[Any, AclEntry]) -> _Index:
        idx = cls(source=acls)
        for e in acls.values():
            key = (e.resource_type, e.resource_name)
            if e.pattern_type == PREFIXED:
                idx.prefixed.setdefault(key, []).append(e)
                idx.max_prefix[e.resource_type] = max(idx.max_prefix.get(e.resource_type, 0), len(e.resource_name))
            elif e.pattern_type == LITERAL:
                idx.literal.setdefault(key, []).append(e)
        return idx

    def for_resource(self, rtype: int, name: str) -> Iterable[AclEntry]:
        yield from self.literal.get((rtype, name), ())
        if name != WILDCARD:
            yield from self.literal.get((rtype, WILDCARD), ())
        for n in range(1, min(len(name), self.max_prefix.get(rtype, 0)) + 1):
            yield from self.prefixed.get((rtype, name[:n]), ())


class AclAuthorizer:
    """Authorizes (principal, host, operation, resource) against ``acls()`` (the image's ACL map).

    ``acls`` returns the current ``{id: AclEntry}`` map; the lookup index is rebuilt only when the
    map object changes (images replace it on every ACL change and never mutate it).
    """

    def __init__(self, acls: Callable[[], dict[Any, AclEntry]], super_users: Iterable[str] = (),
                 allow_if_no_acls: bool = False) -> None:
        self._acls = acls
        self.super_users = frozenset(super_users)
        self.allow_if_no_acls = allow_if_no_acls
        self._index = _Index.build({})

    def _current(self) -> _Index:
        acls = self._acls()
        if acls is not self._index.source:
            self._index = _Index.build(acls)
        return self._index

    def authorize(self, principal: str, host: str, operation: int, resource_type: int, name: str, *,
                  log_denied: bool = True) -> bool:
        if principal in self.super_users:
            return True
        found = allowed = False
        for e in self._current().for_resource(resource_type, name):
            found = True
            if e.principal != principal and e.principal != WILDCARD_PRINCIPAL:
                continue
            if e.host != WILDCARD and e.host != host:
                continue
            if not grants(e.operation, e.permission_type, operation):
                continue
            if e.permission_type == DENY:
                allowed = False
                break
            if e.permission_type == ALLOW:
                allowed = True
        else:
            if not found:
                allowed = self.allow_if_no_acls
        if not allowed and log_denied:
            audit.info("Principal = %s is Denied operation = %s from host = %s on resource = %s:%s",
                       principal, OPERATION_NAMES.get(operation, operation), host,
                       RESOURCE_NAMES.get(resource_type, resource_type), name)
        return allowed

    def authorized_operations(self, principal: str, host: str, resource_type: int, name: str) -> int:
        """Kafka's authorized-operations bitfield (bit ``op`` set per allowed operation)."""
        bits = 0
        for op in REPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name, log_denied=False):
                bits |= 1 << op
        return bits
