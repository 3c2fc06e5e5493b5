"""Dynamic configs: topic and broker config schemas, DescribeConfigs, AlterConfigs, IncrementalAlterConfigs."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kraftwire.controller import elr
from kraftwire.controller import resource_configs as rc
from kraftwire.controller.result import CommandError
from kraftwire.metadata.features import wrap
from kraftwire.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import describe_configs_response as dcr
from kraftwire.protocol.messages import incremental_alter_configs_response as iacr
from kraftwire.protocol.messages.alter_configs_response import (
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)
from kraftwire.protocol.messages.config_record import ConfigRecord
from kraftwire.protocol.messages.list_config_resources_response import (
    ConfigResource,
    ListConfigResourcesResponse,
)
from kraftwire.protocol.metadata import MetadataRecord

if TYPE_CHECKING:
    from kraftwire.controller.controller import QuorumController

Records = list[MetadataRecord]

# DescribeConfigs config types and sources (Kafka's numbering).
TYPE_CODES = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6, "list": 7,
              "class": 8, "password": 9}
SOURCE_TOPIC, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER = 1, 2, 3
SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 4, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class ConfigDef:
    type: str
    default: str | None
    min: float | None = None
    max: float | None = None
    choices: frozenset[str] | None = None
    check: Callable[[str, str], None] | None = None   # an extra rule (raises ValueError)

    def validate(self, name: str, value: str) -> None:
        """Raise ValueError when ``value`` is not a legal value of this config."""
        t = self.type
        if t == "boolean":
            if value.strip().lower() not in ("true", "false"):
                raise ValueError(f"invalid value {value!r} for {name}: expected a boolean")
            return
        if t in ("int", "short", "long"):
            try:
                n = int(value.strip())
            except ValueError:
                raise ValueError(f"invalid value {value!r} for {name}: expected a number") from None
            hi = {"int": INT_MAX, "short": 32767, "long": LONG_MAX}[t]
            if not -hi - 1 <= n <= hi:
                raise ValueError(f"invalid value {value!r} for {name}: out of range for {t}")
            self._bounds(name, n)
        elif t == "double":
            try:
                self._bounds(name, float(value.strip()))
            except ValueError as e:
                if "invalid value" in str(e):
                    raise
                raise ValueError(f"invalid value {value!r} for {name}: expected a number") from None
        elif t == "list":
            items = [x.strip() for x in value.split(",") if x.strip()]
            if self.choices is not None:
                for x in items:
                    if x not in self.choices:
                        raise ValueError(f"invalid value {x!r} for {name}: must be one of {sorted(self.choices)}")
            if self.check is not None:
                self.check(name, value)
        elif self.choices is not None and value not in self.choices:
            raise ValueError(f"invalid value {value!r} for {name}: must be one of {sorted(self.choices)}")

    def _bounds(self, name: str, n: float) -> None:
        if self.min is not None and n < self.min:
            raise ValueError(f"invalid value {n} for {name}: must be at least {self.min:g}")
        if self.max is not None and n > self.max:
            raise ValueError(f"invalid value {n} for {name}: must be at most {self.max:g}")


def _c(type_: str, default: str | None, lo: float | None = None, hi: float | None = None,
       choices: tuple[str, ...] | None = None) -> ConfigDef:
    return ConfigDef(type_, default, lo, hi, frozenset(choices) if choices else None)


_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def throttled_replicas(name: str, value: str) -> None:
    """Kafka's ThrottledReplicaListValidator: ``*`` or ``partition:broker`` entries, comma-separated."""
    items = [x.strip() for x in value.strip().split(",")] if value.strip() else []
    if all(_REPLICA.fullmatch(x) for x in items) or "".join(items) == "*":
        return
    raise ValueError(f"Invalid value [{', '.join(items)}] for configuration {name}: {name} must be the literal "
                     "'*' or a list of replicas in the following format: [partitionId]:[brokerId],"
                     "[partitionId]:[brokerId],...")


_LMAX = str(LONG_MAX)
TOPIC_CONFIGS: dict[str, ConfigDef] = {
    "cleanup.policy": _c("list", "delete", choices=("delete", "compact")),
    "compression.type": _c("string", "producer",
                           choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "compression.gzip.level": _c("int", "-1", -1, 9),
    "compression.lz4.level": _c("int", "9", 1, 17),
    "compression.zstd.level": _c("int", "3", -131072, 22),
    "delete.retention.ms": _c("long", "86400000", 0),
    "file.delete.delay.ms": _c("long", "60000", 0),
    "flush.messages": _c("long", _LMAX, 1),
    "flush.ms": _c("long", _LMAX, 0),
    "follower.replication.throttled.replicas": ConfigDef("list", "", check=throttled_replicas),
    "index.interval.bytes": _c("int", "4096", 0),
    "leader.replication.throttled.replicas": ConfigDef("list", "", check=throttled_replicas),
    "local.retention.bytes": _c("long", "-2", -2),
    "local.retention.ms": _c("long", "-2", -2),
    "max.compaction.lag.ms": _c("long", _LMAX, 1),
    "max.message.bytes": _c("int", "1048588", 0),
    "message.downconversion.enable": _c("boolean", "true"),
    "message.format.version": _c("string", "3.0-IV1"),
    "message.timestamp.after.max.ms": _c("long", _LMAX, 0),
    "message.timestamp.before.max.ms": _c("long", _LMAX, 0),
    "message.timestamp.difference.max.ms": _c("long", _LMAX, 0),
    "message.timestamp.type": _c("string", "CreateTime", choices=("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": _c("double", "0.5", 0, 1),
    "min.compaction.lag.ms": _c("long", "0", 0),
    "min.insync.replicas": _c("int", "1", 1),
    "preallocate": _c("boolean", "false"),
    "remote.storage.enable": _c("boolean", "false"),
    "retention.bytes": _c("long", "-1"),
    "retention.ms": _c("long", "604800000", -1),
    "segment.bytes": _c("int", "1073741824", 14),
    "segment.index.bytes": _c("int", "10485760", 4),
    "segment.jitter.ms": _c("long", "0", 0),
    "segment.ms": _c("long", "604800000", 1),
    "unclean.leader.election.enable": _c("boolean", "false"),
}

#: Dynamic broker configs the controller type-checks; other broker keys are stored unchecked
#: (brokers validate their own dynamic configs before forwarding, as in Kafka).
BROKER_CONFIGS: dict[str, ConfigDef] = {
    "background.threads": _c("int", "10", 1),
    "compression.type": _c("string", "producer",
                           choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "follower.replication.throttled.rate": _c("long", _LMAX, 0),
    "leader.replication.throttled.rate": _c("long", _LMAX, 0),
    "log.cleaner.threads": _c("int", "1", 0),
    "log.cleanup.policy": _c("list", "delete", choices=("delete", "compact")),
    "log.flush.interval.messages": _c("long", _LMAX, 1),
    "log.flush.interval.ms": _c("long", None),
    "log.message.timestamp.type": _c("string", "CreateTime", choices=("CreateTime", "LogAppendTime")),
    "log.retention.bytes": _c("long", "-1"),
    "log.retention.ms": _c("long", None),
    "log.segment.bytes": _c("int", "1073741824", 14),
    "max.connections": _c("int", str(INT_MAX), 0),
    "max.connections.per.ip": _c("int", str(INT_MAX), 0),
    "message.max.bytes": _c("int", "1048588", 0),
    "min.insync.replicas": _c("int", "1", 1),
    "num.io.threads": _c("int", "8", 1),
    "num.network.threads": _c("int", "3", 1),
    "num.replica.fetchers": _c("int", "1"),
    "replica.alter.log.dirs.io.max.bytes.per.second": _c("long", _LMAX, 0),
    "unclean.leader.election.enable": _c("boolean", "false"),
}


BROKER_LOGGER, CLIENT_METRICS, GROUP = 8, 16, 32
#: Kafka's ConfigResource.Type names by id (any other id is UNKNOWN)
RESOURCE_TYPES = {TOPIC_RESOURCE: "TOPIC", BROKER_RESOURCE: "BROKER", BROKER_LOGGER: "BROKER_LOGGER",
                  CLIENT_METRICS: "CLIENT_METRICS", GROUP: "GROUP"}
SOURCE_BROKER_LOGGER, SOURCE_CLIENT_METRICS, SOURCE_GROUP = 6, 7, 8
CLIENT_METRICS_SCHEMA: dict[str, ConfigDef] = {k: _c(t, d) for k, (t, d) in rc.CLIENT_METRICS_CONFIGS.items()}
GROUP_SCHEMA: dict[str, ConfigDef] = {k: _c(t, d, lo) for k, (t, d, lo, _) in rc.GROUP_CONFIGS.items()}
_SCHEMAS = {TOPIC_RESOURCE: TOPIC_CONFIGS, BROKER_RESOURCE: BROKER_CONFIGS, CLIENT_METRICS: CLIENT_METRICS_SCHEMA,
            GROUP: GROUP_SCHEMA}

#: Answers a DescribeConfigs for a BROKER_LOGGER resource from the node's own loggers (the node is not pure);
#: raises CommandError for a name that is not this node.
LoggerDescriber = Callable[[str, int], list[Any]]


def schema(rtype: int) -> dict[str, ConfigDef]:
    return _SCHEMAS.get(rtype, {})


def type_name(rtype: int) -> str:
    return RESOURCE_TYPES.get(rtype, "UNKNOWN")


def validate_topic_config(name: str, value: str | None) -> None:
    """Raise CommandError(INVALID_CONFIG/INVALID_REQUEST) for a bad topic config entry."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        raise CommandError(Errors.INVALID_CONFIG, f"unknown topic config name: {name}")
    if value is None:
        raise CommandError(Errors.INVALID_REQUEST, f"null value not supported for topic config {name}")
    try:
        d.validate(name, value)
    except ValueError as e:
        raise CommandError(Errors.INVALID_CONFIG, str(e)) from None


def _check_resource(image: MetadataImage, rtype: int, rname: str) -> None:
    """DescribeConfigs' resource checks (an unknown topic, a bad broker name, an unsupported type)."""
    if rtype == TOPIC_RESOURCE:
        if not rname:
            raise CommandError(Errors.INVALID_REQUEST, "default topic resources are not allowed")
        if rname not in image.topic_ids:
            raise CommandError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"topic {rname!r} does not exist")
    elif rtype == BROKER_RESOURCE:
        if rname and not (rname.isdigit() and int(rname) <= INT_MAX):
            raise CommandError(Errors.INVALID_REQUEST, f"illegal broker resource name {rname!r}")
    elif rtype == CLIENT_METRICS:
        if not rname:
            raise CommandError(Errors.INVALID_REQUEST, "Client metrics subscription name must not be empty")
    elif rtype == GROUP:
        if not rname:
            raise CommandError(Errors.INVALID_REQUEST, "Group name must not be empty")
    else:
        raise CommandError(Errors.INVALID_REQUEST, f"Unsupported resource type: {type_name(rtype)}")


def _validate_alter(ctl: QuorumController, image: MetadataImage, rtype: int, rname: str,
                    merged: dict[str, str], changed: Mapping[str, str | None]) -> None:
    """Kafka's checks of an altered resource, in its order: the name and the resulting configs
    (ControllerConfigurationValidator), then that the resource exists (the controller's existence checker)."""
    if rtype == TOPIC_RESOURCE:
        if not rname:
            raise CommandError(Errors.INVALID_REQUEST, "Default topic resources are not allowed.")
        from kraftwire.controller.replication import validate_topic_name  # replication imports this module
        validate_topic_name(rname)
        _validate_values(rtype, {k: v for k, v in merged.items() if k in changed})
        if rname not in image.topic_ids:
            raise CommandError(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{rname}' does not exist.")
    elif rtype == BROKER_RESOURCE:
        if rname:
            try:
                node = int(rname, 10)
            except ValueError:
                raise CommandError(Errors.INVALID_REQUEST,
                                   "Unable to parse broker name as a base 10 number.") from None
            if node < 0:
                raise CommandError(Errors.INVALID_REQUEST, "Invalid negative broker ID.")
        _validate_values(rtype, {k: v for k, v in merged.items() if k in changed})
        if rname and int(rname) not in image.brokers and int(rname) not in ctl.config.quorum_node_ids:
            raise CommandError(Errors.BROKER_ID_NOT_REGISTERED, f"No node with id {int(rname)} found.")
    elif rtype == CLIENT_METRICS:
        rc.validate_client_metrics(rname, merged)
    elif rtype == GROUP:
        rc.validate_group(rname, merged, ctl.config.static_broker_configs)
    else:   # BROKER_LOGGER is never stored; the node answers it (see node/loggers.py)
        raise CommandError(Errors.INVALID_REQUEST, f"Unexpected resource type {type_name(rtype)}.")


def _validate_values(rtype: int, configs: dict[str, str]) -> None:
    sch = schema(rtype)
    for k, v in configs.items():
        d = sch.get(k)
        if d is None:
            if rtype == TOPIC_RESOURCE:
                raise CommandError(Errors.INVALID_CONFIG, f"unknown topic config name: {k}")
            continue
        try:
            d.validate(k, v)
        except ValueError as e:
            raise CommandError(Errors.INVALID_CONFIG, str(e)) from None


def _records_for(image: MetadataImage, rtype: int, rname: str, current: dict[str, str],
                 new: dict[str, str | None]) -> Records:
    out: Records = []
    for k, v in new.items():
        if current.get(k) != v or rtype == BROKER_RESOURCE:
            if k == elr.MIN_ISR:
                why = elr.min_isr_change_error(image, rtype, rname, v)
                if why is not None:
                    raise CommandError(Errors.INVALID_CONFIG, why)
            out.append(wrap(ConfigRecord(resource_type=rtype, resource_name=rname, name=k, value=v)))
    return out


def _incremental_one(ctl: QuorumController, image: MetadataImage, res: Any) -> Records:
    rtype, rname = res.resource_type, res.resource_name
    current = image.configs.get((rtype, rname), {})
    sch = schema(rtype)
    changes: dict[str, str | None] = {}
    for c in res.configs:
        if c.name in changes:
            raise CommandError(Errors.INVALID_REQUEST, f"duplicate config key {c.name}")
        value = current.get(c.name)
        op = c.config_operation
        if op == SET:
            if c.value is None:
                raise CommandError(Errors.INVALID_REQUEST, f"null value not supported for SET of {c.name}")
            value = c.value
        elif op == DELETE:
            value = None
        elif op in (APPEND, SUBTRACT):
            d = sch.get(c.name)
            if d is None or d.type != "list":
                raise CommandError(Errors.INVALID_CONFIG,
                                   f"Can't {'APPEND' if op == APPEND else 'SUBTRACT'} to key {c.name} "
                                   "because its type is not LIST.")
            base = value if value is not None else (d.default or "")
            parts = [x.strip() for x in base.split(",") if x.strip()]
            for x in (c.value or "").split(","):
                x = x.strip()
                if not x:
                    continue
                if op == APPEND and x not in parts:
                    parts.append(x)
                elif op == SUBTRACT and x in parts:
                    parts.remove(x)
            value = ",".join(parts)
        else:
            raise CommandError(Errors.INVALID_REQUEST, f"unknown config operation {op}")
        changes[c.name] = value
    merged = dict(current)
    for k, v in changes.items():
        if v is None:
            merged.pop(k, None)
        else:
            merged[k] = v
    _validate_alter(ctl, image, rtype, rname, merged, changes)
    return _records_for(image, rtype, rname, current, changes)


def _legacy_one(ctl: QuorumController, image: MetadataImage, res: Any) -> Records:
    rtype, rname = res.resource_type, res.resource_name
    current = image.configs.get((rtype, rname), {})
    new: dict[str, str] = {}
    for c in res.configs:
        if c.value is None:
            raise CommandError(Errors.INVALID_REQUEST, f"null value not supported for {c.name}")
        new[c.name] = c.value
    _validate_alter(ctl, image, rtype, rname, new, new)
    changes: dict[str, str | None] = dict(new)
    for k in current:
        if k not in new:
            changes[k] = None  # AlterConfigs replaces the whole resource
    return _records_for(image, rtype, rname, current, changes)


def _screen(resources: list[Any]) -> tuple[list[Any], list[tuple[Any, int, str]]]:
    """Kafka's ControllerApis pass over the resources before the controller sees them: an unknown type is
    answered UNSUPPORTED_VERSION, a resource given twice INVALID_REQUEST (once, and neither copy is applied).
    Returns the resources to alter (request order) and the answers already made."""
    kept: dict[tuple[int, str], Any] = {}
    dropped: set[tuple[int, str]] = set()
    answered: list[tuple[Any, int, str]] = []
    for res in resources:
        key = (res.resource_type, res.resource_name)
        if res.resource_type not in RESOURCE_TYPES:
            answered.append((res, int(Errors.UNSUPPORTED_VERSION), f"Unknown resource type {res.resource_type}."))
        elif key in dropped:
            continue
        elif key in kept:
            del kept[key]
            dropped.add(key)
            answered.append((res, int(Errors.INVALID_REQUEST), "Duplicate resource."))
        else:
            kept[key] = res
    return list(kept.values()), answered


def _alter(ctl: QuorumController, req: Any, one: Callable[..., Records],
           make: Callable[[int, str | None, int, str], Any]) -> tuple[Records, list[Any]]:
    image = ctl.image
    out: Records = []
    kept, answered = _screen(req.resources)
    responses = [make(code, msg, r.resource_type, r.resource_name) for r, code, msg in answered]
    for res in kept:
        code, msg = Errors.NONE, None
        try:
            recs = one(ctl, image, res)
            if not req.validate_only:
                out.extend(recs)
        except CommandError as e:
            code, msg = e.code, e.message
        responses.append(make(int(code), msg, res.resource_type, res.resource_name))
    return out + elr.clear_elr_records(image, out), responses


def incremental_alter_configs(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    records, responses = _alter(ctl, req, _incremental_one, iacr.AlterConfigsResourceResponse)
    return records, iacr.IncrementalAlterConfigsResponse(responses=responses)


def alter_configs(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    records, responses = _alter(ctl, req, _legacy_one, AlterConfigsResourceResponse)
    return records, AlterConfigsResponse(responses=responses)


def _entry(name: str, value: str | None, source: int, d: ConfigDef | None,
           version: int) -> dcr.DescribeConfigsResourceResult:
    """One config entry; IsDefault exists only in v0 (v1+ carry ConfigSource instead)."""
    sensitive = d is not None and d.type == "password"
    return dcr.DescribeConfigsResourceResult(
        name=name, value=None if sensitive else value, read_only=False,
        is_default=version == 0 and source == SOURCE_DEFAULT, config_source=source, is_sensitive=sensitive,
        synonyms=[], config_type=TYPE_CODES.get(d.type, 0) if d else 0,
        documentation=None,
    )


def describe_resource(image: MetadataImage, static: dict[str, str], rtype: int, rname: str,
                      keys: list[str] | None, version: int, loggers: LoggerDescriber | None = None) -> list[Any]:
    """Effective configs of one resource for a DescribeConfigs ``version`` (no synonyms); ``static``
    are the answering node's own server.properties values, ``loggers`` its BROKER_LOGGER answer."""
    if rtype == BROKER_LOGGER and loggers is not None:
        out = loggers(rname, version)
        return out if keys is None else [e for e in out if e.name in set(keys)]
    _check_resource(image, rtype, rname)
    out = []
    if rtype == CLIENT_METRICS:   # only what the subscription sets, as Kafka describes it
        out = [_entry(k, v, SOURCE_CLIENT_METRICS, None, version)
               for k, v in sorted(image.configs.get((rtype, rname), {}).items())]
    elif rtype == GROUP:
        own = image.configs.get((rtype, rname), {})
        for k, d in GROUP_SCHEMA.items():
            if k in own:
                out.append(_entry(k, own[k], SOURCE_GROUP, d, version))
            else:
                out.append(_entry(k, rc.group_default(k, static), SOURCE_DEFAULT, d, version))
    elif rtype == TOPIC_RESOURCE:
        own = image.configs.get((rtype, rname), {})
        for k, d in TOPIC_CONFIGS.items():
            if k in own:
                out.append(_entry(k, own[k], SOURCE_TOPIC, d, version))
            else:
                out.append(_entry(k, d.default, SOURCE_DEFAULT, d, version))
    else:
        own = image.configs.get((rtype, rname), {}) if rname else {}
        cluster = image.configs.get((rtype, ""), {})
        names = sorted(set(BROKER_CONFIGS) | set(own) | set(cluster) | set(static))
        for k in names:
            known = BROKER_CONFIGS.get(k)
            if k in own:
                out.append(_entry(k, own[k], SOURCE_DYNAMIC_BROKER, known, version))
            elif k in cluster:
                out.append(_entry(k, cluster[k], SOURCE_DYNAMIC_DEFAULT_BROKER, known, version))
            elif k in static:
                out.append(_entry(k, static[k], SOURCE_STATIC_BROKER, known, version))
            elif known is not None:
                out.append(_entry(k, known.default, SOURCE_DEFAULT, known, version))
    if keys is not None:
        wanted = set(keys)
        out = [e for e in out if e.name in wanted]
    return out


def describe_configs(ctl: QuorumController, now: int, req: Any, version: int) -> tuple[Records, Any]:
    """The controller-command form of ``describe`` (the latest image, this controller's static configs;
    BROKER_LOGGER resources are answered by the node, which knows its loggers)."""
    return [], describe(ctl.image, req, version, ctl.config.static_broker_configs)


def describe(image: MetadataImage, req: Any, version: int, static: dict[str, str],
             loggers: LoggerDescriber | None = None) -> Any:
    """DescribeConfigs answered from ``image`` (controllers and brokers alike)."""
    resp = dcr.DescribeConfigsResponse()
    for r in req.resources:
        try:
            entries = describe_resource(image, static, r.resource_type, r.resource_name, r.configuration_keys,
                                        version, loggers)
            resp.results.append(dcr.DescribeConfigsResult(0, None, r.resource_type, r.resource_name, entries))
        except CommandError as e:
            resp.results.append(dcr.DescribeConfigsResult(int(e.code), e.message, r.resource_type,
                                                          r.resource_name, []))
    return resp


def list_config_resources(image: MetadataImage, req: Any, version: int) -> Any:
    """ListConfigResources (74) from ``image``, as Kafka 4.1's brokers answer it: v0 lists client metrics
    subscriptions; v1 the asked types (all of them when none is asked) — groups and subscriptions with configs,
    every unfenced broker (as BROKER_LOGGER and BROKER resources) and every topic. An unsupported type fails
    the request with UNSUPPORTED_VERSION."""
    supported = (CLIENT_METRICS,) if version == 0 else (TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER,
                                                         CLIENT_METRICS, GROUP)
    asked = list(getattr(req, "resource_types", None) or []) if version >= 1 else []
    if any(t not in supported for t in asked):
        return ListConfigResourcesResponse(error_code=int(Errors.UNSUPPORTED_VERSION), config_resources=[])
    wanted = asked or list(supported)
    out: list[Any] = []

    def add(names: Any, rtype: int) -> None:
        out.extend(ConfigResource(resource_name=n, resource_type=rtype) for n in names)

    if GROUP in wanted:
        add(sorted(n for (t, n), kv in image.configs.items() if t == GROUP and kv), GROUP)
    if CLIENT_METRICS in wanted:
        add(sorted(n for (t, n), kv in image.configs.items() if t == CLIENT_METRICS and kv), CLIENT_METRICS)
    brokers = [str(b.id) for b in sorted(image.brokers.values(), key=lambda b: b.id) if not b.fenced]
    if BROKER_LOGGER in wanted:
        add(brokers, BROKER_LOGGER)
    if BROKER_RESOURCE in wanted:
        add(brokers, BROKER_RESOURCE)
    if TOPIC_RESOURCE in wanted:
        add(sorted(image.topic_ids), TOPIC_RESOURCE)
    return ListConfigResourcesResponse(error_code=0, config_resources=out)
