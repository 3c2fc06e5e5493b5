"""``ssl.SSLContext`` objects from Kafka's ``ssl.*`` keys; PEM material only.

Accepted (``props`` is a plain key → value mapping, already resolved for one listener):

* own certificate and key, one of
  - ``ssl.keystore.location``: a PEM file holding the private key and the certificate chain
    (Kafka's ``ssl.keystore.type=PEM``), key passphrase in ``ssl.key.password``;
  - ``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``: the same PEM text inline;
  - ``ssl.certificate.location`` + ``ssl.key.location`` (librdkafka's names): separate PEM files;
* trusted CAs: ``ssl.truststore.location`` (PEM bundle), ``ssl.truststore.certificates`` (inline
  PEM) or ``ssl.ca.location``;
* ``ssl.client.auth`` (none | requested | required), ``ssl.enabled.protocols``,
  ``ssl.cipher.suites`` (OpenSSL names), ``ssl.endpoint.identification.algorithm`` (``https``
  checks the server's name; empty turns the check off).

JKS and PKCS12 stores are refused with a message saying how to convert them.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping

PROTOCOLS = {"TLSv1": ssl.TLSVersion.TLSv1, "TLSv1.1": ssl.TLSVersion.TLSv1_1,
             "TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


class TlsConfigError(ValueError):
    """An ``ssl.*`` setting kraftwire cannot use; the message names the key."""


def _split(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


def _check_store_type(props: Mapping[str, str], key: str) -> None:
    kind = props.get(key, "").strip().upper()
    if kind and kind != "PEM":
        raise TlsConfigError(f"{key}={kind}: kraftwire reads PEM only; convert the store, e.g. "
                             "`openssl pkcs12 -in store.p12 -nodes -out store.pem` (keytool -importkeystore "
                             "-deststoretype PKCS12 first for JKS), and set " + key + "=PEM")


def _readable(key: str, path: str) -> str:
    if not os.path.isfile(path):
        raise TlsConfigError(f"{key}: no such file {path!r}")
    return path


def _load_own(ctx: ssl.SSLContext, props: Mapping[str, str]) -> bool:
    """Load this side's certificate chain and key; False when none is configured."""
    _check_store_type(props, "ssl.keystore.type")
    password = props.get("ssl.key.password") or props.get("ssl.keystore.password") or None
    try:
        if props.get("ssl.keystore.location"):
            path = _readable("ssl.keystore.location", props["ssl.keystore.location"])
            ctx.load_cert_chain(path, password=password)
            return True
        if props.get("ssl.keystore.certificate.chain") or props.get("ssl.keystore.key"):
            chain, key = props.get("ssl.keystore.certificate.chain", ""), props.get("ssl.keystore.key", "")
            if not chain or not key:
                raise TlsConfigError("ssl.keystore.certificate.chain and ssl.keystore.key must be set together")
            _load_inline(ctx, chain, key, password)
            return True
        if props.get("ssl.certificate.location"):
            cert = _readable("ssl.certificate.location", props["ssl.certificate.location"])
            key_path = props.get("ssl.key.location") or None
            if key_path:
                _readable("ssl.key.location", key_path)
            ctx.load_cert_chain(cert, key_path, password=password)
            return True
    except ssl.SSLError as e:
        raise TlsConfigError(f"cannot load the certificate/key (check ssl.key.password): {e}") from None
    return False


def _load_inline(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    # SSLContext loads chains from files only: write them to a private temporary directory.
    with tempfile.TemporaryDirectory(prefix="kraftwire-tls-") as d:
        path = os.path.join(d, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key.strip() + "\n" + chain.strip() + "\n")
        ctx.load_cert_chain(path, password=password)


def _load_trust(ctx: ssl.SSLContext, props: Mapping[str, str]) -> bool:
    _check_store_type(props, "ssl.truststore.type")
    try:
        if props.get("ssl.truststore.location"):
            ctx.load_verify_locations(cafile=_readable("ssl.truststore.location", props["ssl.truststore.location"]))
            return True
        if props.get("ssl.truststore.certificates"):
            ctx.load_verify_locations(cadata=props["ssl.truststore.certificates"])
            return True
        if props.get("ssl.ca.location"):
            ctx.load_verify_locations(cafile=_readable("ssl.ca.location", props["ssl.ca.location"]))
            return True
    except ssl.SSLError as e:
        raise TlsConfigError(f"cannot load the trusted certificates: {e}") from None
    return False


def _protocols(ctx: ssl.SSLContext, props: Mapping[str, str]) -> None:
    wanted = _split(props.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"))
    bad = [p for p in wanted if p not in PROTOCOLS]
    if bad or not wanted:
        raise TlsConfigError(f"ssl.enabled.protocols: unknown {bad or wanted} (use {', '.join(PROTOCOLS)})")
    versions = sorted(PROTOCOLS[p] for p in wanted)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    ciphers = _split(props.get("ssl.cipher.suites", ""))
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError as e:
            raise TlsConfigError(f"ssl.cipher.suites: {e}") from None


def server_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The context an SSL / SASL_SSL listener serves with."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(ctx, props)
    if not _load_own(ctx, props):
        raise TlsConfigError("an SSL listener needs ssl.keystore.location (PEM with key and certificate), "
                             "ssl.keystore.certificate.chain + ssl.keystore.key, or ssl.certificate.location "
                             "+ ssl.key.location")
    auth = props.get("ssl.client.auth", "none").strip().lower() or "none"
    if auth not in ("none", "requested", "required"):
        raise TlsConfigError(f"ssl.client.auth: expected none, requested or required, got {auth!r}")
    trusted = _load_trust(ctx, props)
    if auth != "none" and not trusted:
        raise TlsConfigError(f"ssl.client.auth={auth} needs ssl.truststore.location (or "
                             "ssl.truststore.certificates) to verify client certificates")
    ctx.verify_mode = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}[auth]
    return ctx


def client_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The context an outbound connection uses; presents a certificate when one is configured."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(ctx, props)
    if not _load_trust(ctx, props):
        ctx.load_default_certs()
    _load_own(ctx, props)
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
    ctx.check_hostname = algorithm == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx
