"""ACLs: CreateAcls, DeleteAcls, DescribeAcls with Kafka's filter semantics (ANY / MATCH)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import wrap
from kraftwire.metadata.image import AclEntry, MetadataImage
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import create_acls_response as car
from kraftwire.protocol.messages import delete_acls_response as dar
from kraftwire.protocol.messages import describe_acls_response as dsr
from kraftwire.protocol.messages.access_control_entry_record import AccessControlEntryRecord
from kraftwire.protocol.messages.remove_access_control_entry_record import RemoveAccessControlEntryRecord
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    import uuid

    from kraftwire.controller.controller import QuorumController

Records = list[MetadataRecord]

UNKNOWN, ANY = 0, 1
# ResourceType: TOPIC 2, GROUP 3, CLUSTER 4, TRANSACTIONAL_ID 5, DELEGATION_TOKEN 6, USER 7
RESOURCE_TYPES = range(2, 8)
# PatternType: MATCH 2, LITERAL 3, PREFIXED 4
MATCH, LITERAL, PREFIXED = 2, 3, 4
# AclOperation: ALL 2 ... DESCRIBE_TOKENS 14; AclPermissionType: DENY 2, ALLOW 3
OPERATIONS = range(2, 15)
PERMISSIONS = (2, 3)
WILDCARD = "*"


def validate_new_acl(a: Any) -> None:
    """Kafka's checks on a binding to create; raises CommandError(INVALID_REQUEST)."""
    def bad(msg: str) -> CommandError:
        return CommandError(Errors.INVALID_REQUEST, msg)

    if a.resource_type not in RESOURCE_TYPES:
        raise bad(f"invalid resource type {a.resource_type}")
    if a.resource_pattern_type not in (LITERAL, PREFIXED):
        raise bad(f"invalid pattern type {a.resource_pattern_type}")
    if a.operation not in OPERATIONS:
        raise bad(f"invalid operation {a.operation}")
    if a.permission_type not in PERMISSIONS:
        raise bad(f"invalid permission type {a.permission_type}")
    if not a.resource_name:
        raise bad("resource name should not be empty")
    if a.host is None:
        raise bad("invalid null host")
    if not a.principal or ":" not in a.principal or a.principal.startswith(":"):
        raise bad(f"could not parse principal from {a.principal!r} (no colon is present "
                  "separating the principal type from the principal name)")


def pattern_matches(rtype: int, name: str | None, ptype: int, e: AclEntry) -> bool:
    """Kafka's ResourcePatternFilter.matches."""
    if rtype != ANY and rtype != e.resource_type:
        return False
    if ptype not in (ANY, MATCH) and ptype != e.pattern_type:
        return False
    if name is None:
        return True
    if ptype == ANY or ptype == e.pattern_type:
        return name == e.resource_name
    if e.pattern_type == LITERAL:
        return name == e.resource_name or e.resource_name == WILDCARD
    if e.pattern_type == PREFIXED:
        return name.startswith(e.resource_name)
    return False


def entry_matches(principal: str | None, host: str | None, op: int, perm: int, e: AclEntry) -> bool:
    """Kafka's AccessControlEntryFilter.matches."""
    return ((principal is None or principal == e.principal) and (host is None or host == e.host)
            and (op == ANY or op == e.operation) and (perm == ANY or perm == e.permission_type))


def filter_is_valid(rtype: int, ptype: int, op: int, perm: int) -> bool:
    return UNKNOWN not in (rtype, ptype, op, perm)


def matching(image: MetadataImage, f: Any, *, describe: bool) -> list[tuple[uuid.UUID, AclEntry]]:
    if describe:
        args = (f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter)
    else:
        args = (f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter)
    return [(aid, e) for aid, e in image.acls.items()
            if pattern_matches(*args, e)
            and entry_matches(f.principal_filter, f.host_filter, f.operation, f.permission_type, e)]


def create_acls(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    existing = set(image.acls.values())
    out: Records = []
    resp = car.CreateAclsResponse()
    for a in req.creations:
        try:
            validate_new_acl(a)
        except CommandError as e:
            resp.results.append(car.AclCreationResult(int(e.code), e.message))
            continue
        entry = AclEntry(a.resource_type, a.resource_name, a.resource_pattern_type, a.principal, a.host,
                         a.operation, a.permission_type)
        if entry not in existing:
            existing.add(entry)
            aid = ctl.new_uuid()
            out.append(wrap(AccessControlEntryRecord(
                id_=aid, resource_type=a.resource_type, resource_name=a.resource_name,
                pattern_type=a.resource_pattern_type, principal=a.principal, host=a.host,
                operation=a.operation, permission_type=a.permission_type)))
        resp.results.append(car.AclCreationResult(0, None))
    return out, resp


def delete_acls(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    image = ctl.image
    removed: set[Any] = set()
    out: Records = []
    resp = dar.DeleteAclsResponse()
    for f in req.filters:
        if not filter_is_valid(f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type):
            resp.filter_results.append(dar.DeleteAclsFilterResult(
                int(Errors.INVALID_REQUEST), "filter contains UNKNOWN elements", []))
            continue
        fr = dar.DeleteAclsFilterResult(0, None, [])
        for aid, e in matching(image, f, describe=False):
            fr.matching_acls.append(dar.DeleteAclsMatchingAcl(
                0, None, e.resource_type, e.resource_name, e.pattern_type, e.principal, e.host,
                e.operation, e.permission_type))
            if aid not in removed:
                removed.add(aid)
                out.append(wrap(RemoveAccessControlEntryRecord(id_=aid)))
        resp.filter_results.append(fr)
    return out, resp


def describe_acls(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    """The controller-command form of ``describe`` (the latest image)."""
    return [], describe(ctl.image, req)


def describe(image: MetadataImage, req: Any) -> Any:
    """DescribeAcls answered from ``image`` (controllers and brokers alike); raises CommandError."""
    if not filter_is_valid(req.resource_type_filter, req.pattern_type_filter, req.operation,
                           req.permission_type):
        raise CommandError(Errors.INVALID_REQUEST, "filter contains UNKNOWN elements")
    groups: dict[tuple[int, str, int], list[Any]] = {}
    for _, e in matching(image, req, describe=True):
        groups.setdefault((e.resource_type, e.resource_name, e.pattern_type), []).append(
            dsr.AclDescription(e.principal, e.host, e.operation, e.permission_type))
    resp = dsr.DescribeAclsResponse(error_message=None)
    for (rt, rn, pt), descs in sorted(groups.items()):
        resp.resources.append(dsr.DescribeAclsResource(rt, rn, pt, descs))
    return resp
