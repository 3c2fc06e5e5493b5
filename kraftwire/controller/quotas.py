"""Client quotas (KIP-546): AlterClientQuotas on the controller, DescribeClientQuotas from an image.

An entity is a map of entity type (``user``, ``client-id``, ``ip``) to a name, a null name meaning the
type's default. Validation, error codes and messages follow Kafka's ClientQuotaControlManager; the filter
semantics of DescribeClientQuotas follow Kafka's ClientQuotasImage.describe.
"""

from __future__ import annotations

import ipaddress
import math
from typing import TYPE_CHECKING, Any

from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import wrap
from kraftwire.metadata.image import MetadataImage, QuotaEntity
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import alter_client_quotas_response as acr
from kraftwire.protocol.messages import describe_client_quotas_response as dcr
from kraftwire.protocol.messages.client_quota_record import ClientQuotaRecord, EntityData
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
LONG_MAX = float((1 << 63) - 1)
INT_MAX = float((1 << 31) - 1)

#: Quota keys and their config types, per entity kind (Kafka's QuotaConfig).
USER_CLIENT_QUOTAS = {"producer_byte_rate": "long", "consumer_byte_rate": "long",
                      "request_percentage": "double", "controller_mutation_rate": "double"}
IP_QUOTAS = {"connection_creation_rate": "int"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def entity_label(entity: dict[str, str | None]) -> str:
    """How Kafka's ClientQuotaEntity prints in error messages."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity.items()) + "})"


def _key(entity: dict[str, str | None]) -> QuotaEntity:
    return tuple(sorted(entity.items(), key=lambda kv: kv[0]))


def valid_ip_entity(name: str | None) -> bool:
    """A null name (the default) or an IP address literal. Kafka also accepts a host name it can resolve;
    the controller is sans-I/O and does not resolve names, so a host name is refused."""
    if name is None:
        return True
    try:
        ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    return True


def check_entity(entity: dict[str, str | None]) -> dict[str, str]:
    """The quota keys this entity accepts; raises CommandError(INVALID_REQUEST) as Kafka words it."""
    if not entity:
        raise CommandError(Errors.INVALID_REQUEST, "Invalid empty client quota entity")
    for etype, name in entity.items():
        if etype not in ENTITY_TYPES:
            raise CommandError(Errors.INVALID_REQUEST, f"Unhandled client quota entity type: {etype}")
        if name is not None and name == "":
            raise CommandError(Errors.INVALID_REQUEST, f"Empty {etype} not supported")
    if IP in entity:
        if USER in entity or CLIENT_ID in entity:
            raise CommandError(Errors.INVALID_REQUEST, "Invalid quota entity combination, IP entity should"
                                                       "not be combined with User or ClientId")
        if not valid_ip_entity(entity[IP]):
            raise CommandError(Errors.INVALID_REQUEST, f"{entity[IP]} is not a valid IP or resolvable host.")
        return IP_QUOTAS
    return USER_CLIENT_QUOTAS


def check_value(keys: dict[str, str], key: str, value: float) -> None:
    """A quota value for ``key`` of an entity accepting ``keys``; raises CommandError(INVALID_REQUEST)."""
    kind = keys.get(key)
    if kind is None:
        raise CommandError(Errors.INVALID_REQUEST, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise CommandError(Errors.INVALID_REQUEST, f"Quota {key} must be greater than 0")
    if kind == "double":
        return
    limit, article = (INT_MAX, "an INT") if kind == "int" else (LONG_MAX, "a LONG")
    if value > limit:
        raise CommandError(Errors.INVALID_REQUEST, f"Proposed value for {key} is too large for {article}.")
    if abs(math.fmod(value, 1.0)) > 1e-6:   # NaN passes, as in Kafka (no comparison with NaN holds)
        raise CommandError(Errors.INVALID_REQUEST, f"{key} cannot be a fractional value.")


def _alter_one(image: MetadataImage, entity: dict[str, str | None],
               ops: dict[str, float | None]) -> list[MetadataRecord]:
    keys = check_entity(entity)
    current = image.quotas.get(_key(entity), {})
    records: list[MetadataRecord] = []

    def record(key: str, value: float, remove: bool) -> MetadataRecord:
        data = [EntityData(t, n) for t, n in sorted(entity.items())]
        return wrap(ClientQuotaRecord(entity=data, key=key, value=value, remove=remove))

    for key, value in ops.items():
        if value is None:
            if key in current:
                records.append(record(key, 0.0, True))
            continue
        check_value(keys, key, value)
        old = current.get(key)
        if old != value and not (old is not None and math.isnan(old) and math.isnan(value)):  # Double.equals
            records.append(record(key, value, False))
    return records


def alter_client_quotas(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[list[MetadataRecord], Any]:
    """AlterClientQuotas: per-entity results; with ``validate_only`` nothing is written."""
    image = ctl.image
    records: list[MetadataRecord] = []
    results: dict[QuotaEntity, tuple[dict[str, str | None], int, str | None]] = {}
    for entry in req.entries:
        entity = {e.entity_type: e.entity_name for e in entry.entity}   # a map: a repeated type keeps its last
        key = _key(entity)
        ops: dict[str, float | None] = {}
        duplicate_key = False
        for op in entry.ops:
            if op.key in ops:
                duplicate_key = True
            else:
                ops[op.key] = None if op.remove else op.value
        if duplicate_key or key in results:
            # Kafka reports a repeated key and a repeated entity with the same words
            results[key] = (entity, int(Errors.INVALID_REQUEST), f"Ignoring duplicate entity {entity_label(entity)}")
            continue
        try:
            records.extend(_alter_one(image, entity, ops))
            results[key] = (entity, 0, None)
        except CommandError as e:
            results[key] = (entity, int(e.code), e.message)
    resp = acr.AlterClientQuotasResponse(entries=[
        acr.EntryData(error_code=code, error_message=msg,
                      entity=[acr.EntityData(t, n) for t, n in entity.items()])
        for entity, code, msg in results.values()])
    return ([] if req.validate_only else records), resp


def _filter(req: Any) -> tuple[dict[str, str | None], set[str]]:
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for c in req.components:
        etype = c.entity_type
        if not etype:
            raise CommandError(Errors.INVALID_REQUEST, "Invalid empty entity type.")
        if etype in exact or etype in specified:
            raise CommandError(Errors.INVALID_REQUEST, f"Entity type {etype} cannot appear more than once in the filter.")
        if etype not in ENTITY_TYPES:
            raise CommandError(Errors.UNSUPPORTED_VERSION, f"Unsupported entity type {etype}")
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise CommandError(Errors.INVALID_REQUEST,
                                   "Request specified MATCH_TYPE_EXACT, but set match string to null.")
            exact[etype] = c.match
        elif c.match_type == MATCH_DEFAULT:
            if c.match is not None:
                raise CommandError(Errors.INVALID_REQUEST,
                                   "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            exact[etype] = None
        elif c.match_type == MATCH_SPECIFIED:
            if c.match is not None:
                raise CommandError(Errors.INVALID_REQUEST,
                                   "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
            specified.add(etype)
        else:
            raise CommandError(Errors.INVALID_REQUEST, f"Unknown match type {c.match_type}")
    if (IP in exact or IP in specified) and ({USER, CLIENT_ID} & (set(exact) | specified)):
        raise CommandError(Errors.INVALID_REQUEST, "Invalid entity filter component combination. IP filter component "
                                                   "should not be used with user or clientId filter component.")
    return exact, specified


def _matches(entity: dict[str, str | None], exact: dict[str, str | None], specified: set[str], strict: bool) -> bool:
    if strict and len(entity) != len(exact) + len(specified):
        return False
    if any(t not in entity or entity[t] != name for t, name in exact.items()):
        return False
    return all(t in entity for t in specified)


def describe(image: MetadataImage, req: Any, version: int) -> Any:
    """DescribeClientQuotas answered from ``image`` (brokers and controllers alike); a bad filter fails the
    whole request, as in Kafka."""
    try:
        exact, specified = _filter(req)
    except CommandError as e:
        return req.error_response(version, e.code, e.message)
    entries = []
    for key, values in image.quotas.items():
        entity = dict(key)
        if values and _matches(entity, exact, specified, req.strict):
            entries.append(dcr.EntryData(entity=[dcr.EntityData(t, n) for t, n in key],
                                         values=[dcr.ValueData(k, v) for k, v in sorted(values.items())]))
    return dcr.DescribeClientQuotasResponse(error_code=0, error_message=None, entries=entries)


def describe_client_quotas(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[list[MetadataRecord], Any]:
    """The controller-command form of ``describe`` (the latest image)."""
    return [], describe(ctl.image, req, version)
