"""Security settings from ``server.properties``: per-listener TLS/SASL, the authorizer, inter-node clients.

Every key may be given for one listener with Kafka's prefix, ``listener.name.<listener>.<key>``
(listener name in lower case), which wins over the plain key. SASL JAAS entries are looked up as
``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (mechanism in lower case), then
``listener.name.<listener>.sasl.jaas.config``, then ``sasl.jaas.config``.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kraftwire.metadata.image import MetadataImage, ScramCredential
from kraftwire.security.authorizer import AclAuthorizer
from kraftwire.security.jaas import JaasError, parse_jaas
from kraftwire.security.principal import (
    ANONYMOUS,
    PrincipalError,
    SslPrincipalMapper,
    parse_super_users,
    subject_dn,
)
from kraftwire.security.sasl import SUPPORTED_MECHANISMS, SaslSettings
from kraftwire.security.scram import BY_TYPE, ScramMechanism, TokenLookup
from kraftwire.security.tls import TlsConfigError, client_context, server_context

log = logging.getLogger(__name__)
DEFAULT_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"


class SecurityConfigError(ValueError):
    """A security setting that cannot be used; the message names the key."""


def scoped(raw: Mapping[str, str], listener: str) -> dict[str, str]:
    """``raw`` with ``listener.name.<listener>.`` keys applied over the plain ones (prefix removed)."""
    prefix = f"listener.name.{listener.lower()}."
    out = {k: v for k, v in raw.items() if not k.startswith("listener.name.")}
    out.update({k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)})
    return out


def _mechanisms(props: Mapping[str, str]) -> tuple[str, ...]:
    mechs = tuple(m.strip().upper() for m in props.get("sasl.enabled.mechanisms", DEFAULT_MECHANISMS).split(",")
                  if m.strip())
    bad = [m for m in mechs if m not in SUPPORTED_MECHANISMS]
    if bad or not mechs:
        raise SecurityConfigError(f"sasl.enabled.mechanisms: kraftwire supports {', '.join(SUPPORTED_MECHANISMS)}; "
                                  f"got {', '.join(bad or mechs) or 'nothing'}")
    return mechs


def _jaas(props: Mapping[str, str], mechanism: str) -> Any:
    text = props.get(f"{mechanism.lower()}.sasl.jaas.config") or props.get("sasl.jaas.config")
    if not text:
        return None
    try:
        return parse_jaas(text)
    except JaasError as e:
        raise SecurityConfigError(f"{mechanism.lower()}.sasl.jaas.config: {e}") from None


class ScramStore:
    """SCRAM credentials from the metadata image (``UserScramCredentialRecord``).

    Until the image holds a metadata.version (the bootstrap records are not committed yet) the
    credentials in this node's bootstrap records are used, so controllers can authenticate to each
    other with SCRAM users added by ``storage format --add-scram``.
    """

    def __init__(self, image: Callable[[], MetadataImage], bootstrap: list[Any] | None = None) -> None:
        self.image = image
        self.bootstrap: dict[tuple[str, int], ScramCredential] = {}
        for r in bootstrap or ():
            m = getattr(r, "message", r)
            if type(m).__name__ == "UserScramCredentialRecord" and m.mechanism in BY_TYPE:
                self.bootstrap[(m.name, m.mechanism)] = ScramCredential(m.salt, m.stored_key, m.server_key,
                                                                        m.iterations)

    def __call__(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        img = self.image()
        cred = img.scram.get((user, mechanism.type_id))
        if cred is None and img.metadata_version == 0:
            cred = self.bootstrap.get((user, mechanism.type_id))
        return cred


@dataclass
class ListenerSecurity:
    """What a listener needs beyond its address: TLS context, SASL settings, TLS principal mapping."""

    protocol: str
    ssl_context: ssl.SSLContext | None = None
    sasl: SaslSettings | None = None
    mapper: SslPrincipalMapper | None = None
    handshake_timeout_s: float = 10.0

    def tls_principal(self, peer_cert: Mapping[str, Any] | None) -> str:
        """``User:<mapped DN>`` for a client certificate, ANONYMOUS without one."""
        if not peer_cert or not peer_cert.get("subject") or self.mapper is None:
            return ANONYMOUS
        return self.mapper.principal(subject_dn(peer_cert["subject"]))


def listener_security(raw: Mapping[str, str], listener: str, protocol: str,
                      scram: Callable[[str, ScramMechanism], ScramCredential | None],
                      tokens: TokenLookup | None = None) -> ListenerSecurity:
    """Build one listener's security from the raw properties; raises SecurityConfigError."""
    props = scoped(raw, listener)
    sec = ListenerSecurity(protocol)
    try:
        if protocol in ("SSL", "SASL_SSL"):
            sec.ssl_context = server_context(props)
            sec.mapper = SslPrincipalMapper(props.get("ssl.principal.mapping.rules", "DEFAULT"))
    except (TlsConfigError, PrincipalError) as e:
        raise SecurityConfigError(f"listener {listener}: {e}") from None
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechs = _mechanisms(props)
        entry = _jaas(props, "PLAIN") if "PLAIN" in mechs else None
        users = entry.plain_users() if entry is not None else {}
        if "PLAIN" in mechs and not users:
            log.warning("listener %s enables PLAIN but its JAAS entry lists no user_<name> passwords: every "
                        "PLAIN login will fail", listener)
        sec.sasl = SaslSettings(mechs, users.get, scram, tokens)
    return sec


@dataclass(frozen=True)
class ClientSecurity:
    """How an outbound connection secures itself: TLS context and SASL login."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def client_security(props: Mapping[str, str], protocol: str | None = None, mechanism: str | None = None
                    ) -> ClientSecurity:
    """A client's security from Kafka client keys (``security.protocol``, ``sasl.mechanism``,
    ``sasl.jaas.config`` or librdkafka's ``sasl.username``/``sasl.password``, ``ssl.*``)."""
    protocol = (protocol or props.get("security.protocol", "PLAINTEXT")).strip().upper()
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise SecurityConfigError(f"security.protocol: unknown {protocol!r}")
    ctx = None
    if protocol in ("SSL", "SASL_SSL"):
        try:
            ctx = client_context(props)
        except TlsConfigError as e:
            raise SecurityConfigError(str(e)) from None
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return ClientSecurity(protocol, ctx)
    mech = (mechanism or props.get("sasl.mechanism", "PLAIN")).strip().upper()
    if mech not in SUPPORTED_MECHANISMS:
        raise SecurityConfigError(f"sasl.mechanism: kraftwire supports {', '.join(SUPPORTED_MECHANISMS)}, got {mech}")
    entry = _jaas(props, mech)
    user = (entry.username if entry else None) or props.get("sasl.username", "")
    password = (entry.password if entry else None) or props.get("sasl.password", "")
    if not user or not password:
        raise SecurityConfigError(f"SASL {mech} needs username and password in sasl.jaas.config")
    return ClientSecurity(protocol, ctx, mech, user, password)


def inter_node_security(raw: Mapping[str, str], controller_listener: str, protocol: str) -> ClientSecurity:
    """How this node connects to the controller listener of other nodes (Kafka uses the controller
    listener's own settings; the mechanism is ``sasl.mechanism.controller.protocol``, by default the
    listener's first enabled mechanism)."""
    props = scoped(raw, controller_listener)
    mechanism = None
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        mechanism = raw.get("sasl.mechanism.controller.protocol") or _mechanisms(props)[0]
    return client_security(props, protocol, mechanism)


def authorizer_from(raw: Mapping[str, str], acls: Callable[[], Any]) -> AclAuthorizer | None:
    """The ACL authorizer when ``authorizer.class.name`` is set, else None (every request allowed)."""
    name = raw.get("authorizer.class.name", "").strip()
    if not name:
        return None
    if not name.endswith("StandardAuthorizer") and name != "kraftwire":
        log.warning("authorizer.class.name=%s: kraftwire always uses its built-in ACL authorizer "
                    "(StandardAuthorizer semantics)", name)
    try:
        supers = parse_super_users(raw.get("super.users", ""))
    except PrincipalError as e:
        raise SecurityConfigError(f"super.users: {e}") from None
    allow = raw.get("allow.everyone.if.no.acl.found", "false").strip().lower() == "true"
    return AclAuthorizer(acls, supers, allow)
