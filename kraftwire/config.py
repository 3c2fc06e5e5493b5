"""Kafka-style ``server.properties`` for kraftwire nodes.

Keys and defaults follow Kafka's names so an operator's habits carry over. Unknown keys are
collected in ``NodeConfig.unknown`` (the server lists them once at startup); a bad value raises
``ConfigError`` naming the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names the key."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: ``NAME://host:port``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Voter:
    node_id: int
    host: str
    port: int


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[str, str], int]:
    def parse(key: str, text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ConfigError(f"{key}: expected an integer, got {text!r}") from None
        if lo is not None and value < lo:
            raise ConfigError(f"{key}: must be >= {lo}, got {value}")
        if hi is not None and value > hi:
            raise ConfigError(f"{key}: must be <= {hi}, got {value}")
        return value

    return parse


def _str(key: str, text: str) -> str:
    return text.strip()


def _host_counts(key: str, text: str) -> dict[str, int]:
    """``host:count`` pairs separated by commas (max.connections.per.ip.overrides)."""
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        host, sep, count = item.rpartition(":")
        if not sep or not host.strip() or not count.strip().isdigit():
            raise ConfigError(f"{key}: expected host:count pairs separated by commas, got {item!r}")
        out[host.strip()] = int(count)
    return out


def _choice(*allowed: str) -> Callable[[str, str], str]:
    def parse(key: str, text: str) -> str:
        value = text.strip()
        if value not in allowed:
            raise ConfigError(f"{key}: expected one of {', '.join(allowed)}, got {text!r}")
        return value

    return parse


def _list(key: str, text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _roles(key: str, text: str) -> list[str]:
    roles = _list(key, text)
    bad = [r for r in roles if r not in ("broker", "controller")]
    if bad or not roles:
        raise ConfigError(f"{key}: expected a comma-separated subset of broker,controller, got {text!r}")
    return roles


def _host_port(key: str, text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"{key}: expected host:port, got {text!r}")
    host = host.strip("[]")
    if not 0 <= int(port) <= 65535:
        raise ConfigError(f"{key}: port out of range in {text!r}")
    return host, int(port)


def _voters(key: str, text: str) -> list[Voter]:
    voters = []
    for item in _list(key, text):
        node, sep, addr = item.partition("@")
        if not sep or not node.strip().isdigit():
            raise ConfigError(f"{key}: expected id@host:port entries, got {item!r}")
        host, port = _host_port(key, addr)
        voters.append(Voter(int(node), host, port))
    ids = [v.node_id for v in voters]
    if len(ids) != len(set(ids)):
        raise ConfigError(f"{key}: duplicate voter ids in {text!r}")
    return voters


def _endpoints(key: str, text: str) -> list[Endpoint]:
    out = []
    for item in _list(key, text):
        name, sep, rest = item.partition("://")
        if not sep or not name:
            raise ConfigError(f"{key}: expected NAME://host:port entries, got {item!r}")
        host, port = _host_port(key, rest)
        out.append(Endpoint(name.upper(), host, port))
    names = [e.name for e in out]
    if len(names) != len(set(names)):
        raise ConfigError(f"{key}: listener names must be unique in {text!r}")
    return out


def _protocol_map(key: str, text: str) -> dict[str, str]:
    out = {}
    for item in _list(key, text):
        name, sep, proto = item.partition(":")
        if not sep:
            raise ConfigError(f"{key}: expected NAME:PROTOCOL entries, got {item!r}")
        proto = proto.strip().upper()
        if proto not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise ConfigError(f"{key}: unknown security protocol {proto!r}")
        out[name.strip().upper()] = proto
    return out


# key -> (parser, default text or None when required/absent)
SPEC: dict[str, tuple[Callable[[str, str], Any], str | None]] = {
    "node.id": (_int(0), None),
    "process.roles": (_roles, None),
    "controller.quorum.voters": (_voters, ""),
    "controller.quorum.bootstrap.servers": (_list, ""),
    "listeners": (_endpoints, None),
    "advertised.listeners": (_endpoints, ""),
    "controller.listener.names": (_list, "CONTROLLER"),
    "inter.broker.listener.name": (_str, ""),
    "listener.security.protocol.map": (
        _protocol_map,
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
    ),
    "log.dirs": (_list, ""),
    "log.dir": (_str, "/tmp/kraft-combined-logs"),
    "metadata.log.dir": (_str, ""),
    "metadata.log.segment.bytes": (_int(12), str(1 << 30)),
    "metadata.log.segment.ms": (_int(1), str(7 * 24 * 3600 * 1000)),
    "metadata.max.retention.bytes": (_int(-1), str(100 << 20)),
    "metadata.max.retention.ms": (_int(-1), str(7 * 24 * 3600 * 1000)),
    "metadata.log.max.record.bytes.between.snapshots": (_int(1), str(20 << 20)),
    "metadata.log.max.snapshot.interval.ms": (_int(0), "3600000"),
    "controller.quorum.election.timeout.ms": (_int(1), "1000"),
    "controller.quorum.fetch.timeout.ms": (_int(1), "2000"),
    # Kafka 4.x (KIP-853): an observer controller not in the voter set asks the leader to add it.
    "controller.quorum.auto.join.enable": (_choice("true", "false"), "false"),
    "controller.quorum.election.backoff.max.ms": (_int(1), "1000"),
    "controller.quorum.request.timeout.ms": (_int(1), "2000"),
    "controller.quorum.retry.backoff.ms": (_int(0), "20"),
    "controller.quorum.append.linger.ms": (_int(0), "25"),
    # Kafka's NetworkClient keys: how soon a node dials a peer (or bootstrap server) that failed it again.
    "reconnect.backoff.ms": (_int(0), "50"),
    "reconnect.backoff.max.ms": (_int(0), "1000"),
    "socket.request.max.bytes": (_int(1), str(100 << 20)),
    "connections.max.idle.ms": (_int(1), "600000"),
    "max.connections": (_int(1), "2147483647"),
    "max.connections.per.ip": (_int(0), "2147483647"),
    "max.connections.per.ip.overrides": (_host_counts, ""),
    "broker.session.timeout.ms": (_int(1), "9000"),
    "broker.heartbeat.interval.ms": (_int(1), "2000"),
    "initial.broker.registration.timeout.ms": (_int(1), "60000"),
    "metadata.max.idle.interval.ms": (_int(0), "500"),
    "num.partitions": (_int(1), "1"),
    "default.replication.factor": (_int(1), "1"),
    "min.insync.replicas": (_int(1), "1"),
    "super.users": (_str, ""),
    "broker.rack": (_str, ""),
    "request.timeout.ms": (_int(1), "30000"),
    "cluster.id": (_str, ""),
    # Delegation tokens (KIP-48/KIP-900): no secret key, no tokens.
    "delegation.token.secret.key": (_str, ""),
    "delegation.token.max.lifetime.ms": (_int(1), str(7 * 24 * 3600 * 1000)),
    "delegation.token.expiry.time.ms": (_int(1), str(24 * 3600 * 1000)),
    "delegation.token.expiry.check.interval.ms": (_int(1), str(3600 * 1000)),
    # kraftwire's own: Prometheus metrics HTTP port (0 = off).
    "kraftwire.metrics.port": (_int(0, 65535), "0"),
    "kraftwire.metrics.host": (_str, "127.0.0.1"),
    # kraftwire's own: where committed group offsets live (docs/groups.md). raft = a second Raft quorum of
    # the voters, its leader coordinates every group; local = each voter's file, groups placed by hash
    # (quorums with Apache Kafka voters, which do not run the offsets quorum).
    "kraftwire.group.offsets.replication": (_choice("raft", "local"), "raft"),
    # kraftwire's own: processes that serve a controller's client connections beside its core
    # (node/listener_pool.py); 0 = the core's event loop serves every listener.
    "kraftwire.listener.processes": (_int(0, 64), "0"),
}

# Security keys (read by kraftwire.security.settings from the raw properties); each may also be given
# per listener as ``listener.name.<listener>.<key>``, and JAAS entries as
# ``listener.name.<listener>.<mechanism>.sasl.jaas.config``.
SECURITY_KEYS = {
    "authorizer.class.name", "allow.everyone.if.no.acl.found", "sasl.enabled.mechanisms", "sasl.jaas.config",
    "sasl.mechanism.controller.protocol", "sasl.mechanism.inter.broker.protocol", "ssl.keystore.type",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates", "ssl.certificate.location", "ssl.key.location", "ssl.ca.location",
    "ssl.client.auth", "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
}


def _security_key(key: str) -> bool:
    if key in SECURITY_KEYS:
        return True
    if not key.startswith("listener.name."):
        return False
    rest = key[len("listener.name."):].partition(".")[2]
    return rest in SECURITY_KEYS or rest.endswith(".sasl.jaas.config")


# Kafka keys an operator may carry over that we accept and ignore without a warning.
IGNORED = {"num.network.threads", "num.io.threads", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
           "num.recovery.threads.per.data.dir", "offsets.topic.replication.factor",
           "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
           "log.retention.hours", "log.segment.bytes", "log.retention.check.interval.ms",
           "group.initial.rebalance.delay.ms", "share.coordinator.state.topic.replication.factor",
           "share.coordinator.state.topic.min.isr", "group.min.session.timeout.ms",
           "group.max.session.timeout.ms", "group.max.size", "offset.metadata.max.bytes",
           "offsets.retention.minutes", "offsets.retention.check.interval.ms"}


@dataclass(frozen=True)
class NodeConfig:
    """A validated node configuration. ``values`` holds every key parsed (defaults included)."""

    values: dict[str, Any]
    unknown: list[str] = field(default_factory=list)
    raw: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def node_id(self) -> int:
        return self.values["node.id"]

    @property
    def roles(self) -> list[str]:
        return self.values["process.roles"]

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    def broker_listeners(self) -> list[Endpoint]:
        """The listeners that are not controller listeners (a broker's client listeners)."""
        names = set(self.values["controller.listener.names"])
        return [e for e in self.listeners if e.name not in names]

    @property
    def voters(self) -> list[Voter]:
        return self.values["controller.quorum.voters"]

    @property
    def listeners(self) -> list[Endpoint]:
        return self.values["listeners"]

    @property
    def controller_listener(self) -> str:
        return self.values["controller.listener.names"][0]

    @property
    def metadata_log_dir(self) -> Path:
        d = self.values["metadata.log.dir"] or (self.values["log.dirs"] or [self.values["log.dir"]])[0]
        return Path(d)

    @property
    def log_dirs(self) -> list[Path]:
        """Every data directory, the metadata log's first (``log.dirs`` or ``log.dir``, and ``metadata.log.dir``)."""
        dirs = [Path(d) for d in self.values["log.dirs"]] or [Path(self.values["log.dir"])]
        meta = self.metadata_log_dir
        return [meta] + [d for d in dirs if d != meta]

    def advertised(self) -> list[Endpoint]:
        return self.values["advertised.listeners"] or self.listeners

    def security_protocol(self, listener: str) -> str:
        return self.values["listener.security.protocol.map"].get(listener, "PLAINTEXT")


_WS = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """java.util.Properties' logical lines: comments and blank lines dropped, lines ending in an odd
    number of backslashes joined with the next (whose leading whitespace is dropped)."""
    out: list[str] = []
    pending: str | None = None
    for natural in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = natural.lstrip(_WS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        body = line[:-1] if trailing % 2 else line
        pending = body if pending is None else pending + body
        if not trailing % 2:
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch if ch != "\\" else "")
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"malformed \\uxxxx escape in {text!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split_key(line: str) -> tuple[str, str]:
    """Key up to the first unescaped ``=``, ``:`` or whitespace; then whitespace, one optional
    separator and whitespace; the rest is the value."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=:" or ch in _WS:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_WS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WS)
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load`` semantics: ``key=value``, ``key: value`` and ``key value`` forms,
    ``#``/``!`` comments, backslash continuations, ``\\t \\n \\r \\f \\uXXXX`` and ``\\x`` escapes;
    the last of duplicate keys wins. Values keep trailing whitespace, as Java does; callers strip."""
    return dict(_split_key(line) for line in _logical_lines(text))


def load_config(source: Path | str | Mapping[str, str], overrides: Mapping[str, str] | None = None) -> NodeConfig:
    """Parse and validate a properties file (or mapping); raises ConfigError naming the bad key."""
    raw = dict(source) if isinstance(source, Mapping) else parse_properties(Path(source).read_text())
    raw.update(overrides or {})
    raw = {k: v.strip() for k, v in raw.items()}   # Kafka trims configuration values
    values: dict[str, Any] = {}
    for key, (parse, default) in SPEC.items():
        if key in raw:
            values[key] = parse(key, raw[key])
        elif default is None:
            if key == "listeners":
                raise ConfigError("listeners: required (e.g. CONTROLLER://127.0.0.1:9093)")
            raise ConfigError(f"{key}: required")
        else:
            values[key] = parse(key, default)
    unknown = sorted(k for k in raw if k not in SPEC and k not in IGNORED and not _security_key(k))
    cfg = NodeConfig(values, unknown, raw)
    _validate(cfg)
    return cfg


def _validate(cfg: NodeConfig) -> None:
    names = {e.name for e in cfg.listeners}
    if cfg.is_controller:
        if not any(n in names for n in cfg.values["controller.listener.names"]):
            raise ConfigError("controller.listener.names: none of "
                              f"{cfg.values['controller.listener.names']} is in listeners")
        if not cfg.voters and not cfg.values["controller.quorum.bootstrap.servers"]:
            raise ConfigError("controller.quorum.voters: required for a controller (id@host:port,...), or "
                              "controller.quorum.bootstrap.servers for a dynamic quorum (storage format --standalone "
                              "or --initial-controllers)")
        if cfg.voters and cfg.node_id not in {v.node_id for v in cfg.voters}:
            raise ConfigError(f"controller.quorum.voters: node.id {cfg.node_id} is a controller but not a voter")
    elif not cfg.voters and not cfg.values["controller.quorum.bootstrap.servers"]:
        raise ConfigError("controller.quorum.bootstrap.servers: a broker needs the controllers' addresses")
    if cfg.is_controller and cfg.is_broker and not cfg.broker_listeners():
        raise ConfigError("listeners: process.roles=broker,controller needs a broker listener besides "
                          f"{cfg.values['controller.listener.names']} (e.g. PLAINTEXT://127.0.0.1:9092)")
    for name in names:
        if name not in cfg.values["listener.security.protocol.map"]:
            raise ConfigError(f"listener.security.protocol.map: no protocol for listener {name}")
    if cfg.values["kraftwire.listener.processes"]:
        _check_listener_processes(cfg)


def _check_listener_processes(cfg: NodeConfig) -> None:
    """Listener processes serve a controller-only node's PLAINTEXT controller listeners (docs/performance.md)."""
    if cfg.is_broker:
        raise ConfigError(f"kraftwire.listener.processes: supported on controller-only nodes "
                          f"(process.roles=controller), not process.roles={','.join(cfg.roles)}; set it to 0")
    for ep in cfg.listeners:
        proto = cfg.security_protocol(ep.name)
        if proto != "PLAINTEXT":
            raise ConfigError(f"kraftwire.listener.processes: listener {ep.name} is {proto}; listener processes "
                              "serve PLAINTEXT listeners only (set it to 0, or use a PLAINTEXT listener)")
