"""A node's security wiring: listener TLS/SASL, the inter-node client login, and the request gate.

``NodeSecurity`` is built from the node's configuration and a function returning its current
metadata image (SCRAM credentials and ACLs live there). Nodes call ``spec(endpoint)`` for each
listener and give ``outbound`` (the controller listener's client security) to their peer client;
``gate`` (the authorizer's rules when ``authorizer.class.name`` is set, else None) goes into the
role's plane of the node core's door, which decides every request with it (``core/api_door.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from kraftwire.config import ConfigError, Endpoint, NodeConfig
from kraftwire.metadata.image import MetadataImage
from kraftwire.net.server import ListenerSpec
from kraftwire.security.gate import RequestGate
from kraftwire.security.settings import (
    ClientSecurity,
    ListenerSecurity,
    ScramStore,
    SecurityConfigError,
    authorizer_from,
    inter_node_security,
    listener_security,
)
from kraftwire.security.tokens import TokenCredentials

log = logging.getLogger(__name__)


def outbound_security(cfg: NodeConfig) -> ClientSecurity | None:
    """How this node connects to the other nodes' controller listener (None: PLAINTEXT); raises ConfigError."""
    ctl = cfg.controller_listener
    proto = cfg.security_protocol(ctl)
    try:
        return None if proto == "PLAINTEXT" else inter_node_security(cfg.raw, ctl, proto)
    except SecurityConfigError as e:
        raise ConfigError(str(e)) from None


class NodeSecurity:
    """Security for one node process; raises ConfigError for unusable settings."""

    def __init__(self, cfg: NodeConfig, image: Callable[[], MetadataImage], *, bootstrap: list[Any] | None = None,
                 skip: Iterable[int] = ()) -> None:
        self.cfg = cfg
        self.scram = ScramStore(image, bootstrap)
        secret = cfg["delegation.token.secret.key"]
        tokens = TokenCredentials(image, secret) if secret else None   # SCRAM logins with delegation tokens
        self.listeners: dict[str, ListenerSecurity] = {}
        try:
            for ep in cfg.listeners:
                proto = cfg.security_protocol(ep.name)
                if proto != "PLAINTEXT":
                    self.listeners[ep.name] = listener_security(cfg.raw, ep.name, proto, self.scram, tokens)
            self.outbound = outbound_security(cfg)
            authorizer = authorizer_from(cfg.raw, lambda: image().acls)
        except SecurityConfigError as e:
            raise ConfigError(str(e)) from None
        self.authorizer = authorizer
        self.gate = None if authorizer is None else RequestGate(authorizer, image, skip)
        if self.gate is not None:
            log.info("ACL authorizer enabled; super.users: %s", ", ".join(sorted(authorizer.super_users)) or "none")

    def spec(self, ep: Endpoint) -> ListenerSpec:
        return ListenerSpec(ep.name, ep.host, ep.port, self.cfg.security_protocol(ep.name),
                            security=self.listeners.get(ep.name))
