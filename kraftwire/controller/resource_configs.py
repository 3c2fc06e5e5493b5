"""Config schemas and validation of the CLIENT_METRICS (KIP-714) and GROUP (KIP-848) config resources.

Both are validated on the resource's whole config after the change, as Kafka's
ControllerConfigurationValidator does: CLIENT_METRICS like ClientMetricsConfigs.validate, GROUP like
GroupConfig.validate with the bounds of the answering controller's own ``group.*`` settings.
"""

from __future__ import annotations

import re

from kraftwire.controller.result import CommandError
from kraftwire.protocol.errors import Errors

INT_MAX = (1 << 31) - 1

# -- CLIENT_METRICS -------------------------------------------------------------------------------
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
#: name -> (type, default as DescribeConfigs would print it)
CLIENT_METRICS_CONFIGS = {METRICS: ("list", ""), INTERVAL_MS: ("int", "300000"), MATCH: ("list", "")}
MATCH_PARAMS = frozenset({"client_instance_id", "client_id", "client_software_name", "client_software_version",
                          "client_source_address", "client_source_port"})


def _list(value: str) -> list[str]:
    """A LIST config value as Kafka's ConfigDef parses it (comma separated, trimmed, "" is empty)."""
    return [] if not value.strip() else [x.strip() for x in value.split(",")]


def _int(name: str, value: str, lo: int | None = None) -> int:
    try:
        n = int(value.strip())
    except ValueError:
        raise CommandError(Errors.INVALID_CONFIG,
                           f"Invalid value {value} for configuration {name}: Not a number of type INT") from None
    if not -INT_MAX - 1 <= n <= INT_MAX:
        raise CommandError(Errors.INVALID_CONFIG,
                           f"Invalid value {value} for configuration {name}: Not a number of type INT")
    if lo is not None and n < lo:
        raise CommandError(Errors.INVALID_CONFIG, f"Invalid value {n} for configuration {name}: "
                                                  f"Value must be at least {lo}")
    return n


def _java_split_eq(pattern: str) -> list[str]:
    """Java's ``String.split("=")``: trailing empty strings dropped."""
    parts = pattern.split("=")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def validate_client_metrics(name: str, configs: dict[str, str]) -> None:
    """A client metrics subscription's whole config (Kafka's errors and words)."""
    if not name:
        raise CommandError(Errors.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in CLIENT_METRICS_CONFIGS:
            raise CommandError(Errors.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS in configs:
        ms = _int(INTERVAL_MS, configs[INTERVAL_MS])
        if not 100 <= ms <= 3_600_000:
            raise CommandError(Errors.INVALID_REQUEST, f"Invalid value {ms} for {INTERVAL_MS}, interval must be "
                                                       "between 100 and 3600000 (1 hour)")
    for pattern in _list(configs.get(MATCH, "")):
        pair = _java_split_eq(pattern)
        if len(pair) != 2 or pair[0].strip() not in MATCH_PARAMS:
            raise CommandError(Errors.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        try:
            re.compile(pair[1].strip())
        except re.error:
            raise CommandError(Errors.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}") from None


# -- GROUP ------------------------------------------------------------------------------------------
#: group config -> (type, static default, minimum, broker setting giving the describe default)
GROUP_CONFIGS: dict[str, tuple[str, str, int | None, str]] = {
    "consumer.session.timeout.ms": ("int", "45000", 1, "group.consumer.session.timeout.ms"),
    "consumer.heartbeat.interval.ms": ("int", "5000", 1, "group.consumer.heartbeat.interval.ms"),
    "share.session.timeout.ms": ("int", "45000", 1, "group.share.session.timeout.ms"),
    "share.heartbeat.interval.ms": ("int", "5000", 1, "group.share.heartbeat.interval.ms"),
    "share.record.lock.duration.ms": ("int", "30000", 1000, "group.share.record.lock.duration.ms"),
    "share.auto.offset.reset": ("string", "latest", None, ""),
    "share.isolation.level": ("string", "read_uncommitted", None, ""),
    "streams.session.timeout.ms": ("int", "45000", 1, "group.streams.session.timeout.ms"),
    "streams.heartbeat.interval.ms": ("int", "5000", 1, "group.streams.heartbeat.interval.ms"),
    "streams.num.standby.replicas": ("int", "0", 0, "group.streams.num.standby.replicas"),
}
#: (group config, broker bound, its default, True for a lower bound), in the order Kafka checks them
GROUP_BOUNDS = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", 5000, True),
    ("consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", 15000, False),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", 45000, True),
    ("consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms", 60000, False),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", 5000, True),
    ("share.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", 15000, False),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", 45000, True),
    ("share.session.timeout.ms", "group.share.max.session.timeout.ms", 60000, False),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", 15000, True),
    ("share.record.lock.duration.ms", "group.share.max.record.lock.duration.ms", 60000, False),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", 5000, True),
    ("streams.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", 15000, False),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", 45000, True),
    ("streams.session.timeout.ms", "group.streams.max.session.timeout.ms", 60000, False),
    ("streams.num.standby.replicas", "group.streams.max.standby.replicas", 2, False),
)
_ISO_DURATION = re.compile(r"^[-+]?P(?:[-+]?\d+D)?(?:T(?:[-+]?\d+H)?(?:[-+]?\d+M)?(?:[-+]?\d+(?:[.,]\d{0,9})?S)?)?$",
                           re.IGNORECASE)


def _auto_offset_reset(value: str) -> None:
    v = value.strip().lower()
    if v in ("earliest", "latest"):
        return
    if v.startswith("by_duration:"):
        duration = value.strip()[len("by_duration:"):]
        if not _ISO_DURATION.match(duration) or duration.upper() in ("P", "PT") or duration.startswith("-"):
            raise CommandError(Errors.INVALID_CONFIG, f"Invalid value {value} for configuration "
                                                      f"share.auto.offset.reset: Invalid duration")
        return
    raise CommandError(Errors.INVALID_CONFIG, f"Invalid value {value} for configuration share.auto.offset.reset: "
                                              "String must be one of: earliest, latest, by_duration:PnDTnHnMn.nS")


def validate_group(name: str, configs: dict[str, str], static: dict[str, str]) -> None:
    """A group's whole config, bounded by the ``group.*`` settings in ``static`` (server.properties)."""
    if not name:
        raise CommandError(Errors.INVALID_REQUEST, "Default group resources are not allowed.")
    for key in configs:
        if key not in GROUP_CONFIGS:
            raise CommandError(Errors.INVALID_CONFIG, f"Unknown group config name: {key}")
    parsed: dict[str, int] = {}
    for key, (kind, default, lo, _) in GROUP_CONFIGS.items():
        value = configs.get(key, default)
        if kind == "int":
            parsed[key] = _int(key, value, lo)
        elif key == "share.auto.offset.reset":
            _auto_offset_reset(value)
        elif value not in ("read_committed", "read_uncommitted"):
            raise CommandError(Errors.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: String must "
                                                      "be one of: read_committed, read_uncommitted")
    for key, bound, fallback, lower in GROUP_BOUNDS:
        limit = int(static.get(bound, fallback))
        if lower and parsed[key] < limit:
            raise CommandError(Errors.INVALID_CONFIG, f"{key} must be greater than or equal to {bound}")
        if not lower and parsed[key] > limit:
            raise CommandError(Errors.INVALID_CONFIG, f"{key} must be less than or equal to {bound}")
    for kind in ("consumer", "share", "streams"):
        if parsed[f"{kind}.session.timeout.ms"] <= parsed[f"{kind}.heartbeat.interval.ms"]:
            raise CommandError(Errors.INVALID_CONFIG,
                               f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms")


def group_default(key: str, static: dict[str, str]) -> str:
    """What DescribeConfigs reports for a group config the group does not set: the broker's own setting."""
    _, default, _, broker_key = GROUP_CONFIGS[key]
    return static.get(broker_key, default) if broker_key else default
