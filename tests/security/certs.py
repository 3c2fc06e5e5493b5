"""Real X.509 material for the TLS tests, made with the openssl command line (EC P-256 keys, 2 days)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

KEY_PASSWORD = "key-secret"


@dataclass(frozen=True)
class Certs:
    dir: Path
    ca: Path                 # CA certificate (truststore)
    server_keystore: Path    # key + certificate in one PEM file (ssl.keystore.location)
    server_enc_key: Path     # the server key encrypted with KEY_PASSWORD
    server_cert: Path
    alice_cert: Path         # client certificate, subject CN=alice,OU=ops,O=acme
    alice_key: Path
    alice_keystore: Path
    ctl_keystore: Path       # controller client+server certificate, subject CN=controller,O=kraftwire
    rogue_cert: Path         # a client certificate from a CA the servers do not trust
    rogue_key: Path


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _leaf(d: Path, name: str, subject: str, ca: str, ca_key: str, san: str | None) -> None:
    _run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key",
         "-out", f"{name}.csr", "-subj", subject, cwd=d)
    ext = d / f"{name}.ext"
    lines = ["basicConstraints=CA:FALSE", "keyUsage=digitalSignature,keyAgreement",
             "extendedKeyUsage=serverAuth,clientAuth"]
    if san:
        lines.append(f"subjectAltName={san}")
    ext.write_text("\n".join(lines) + "\n")
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
         "-out", f"{name}.crt", "-extfile", ext.name, cwd=d)
    (d / f"{name}.pem").write_text((d / f"{name}.key").read_text() + (d / f"{name}.crt").read_text())


def _ca(d: Path, name: str, cn: str) -> None:
    _run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", f"{name}.key", "-out", f"{name}.crt", "-subj", f"/CN={cn}", "-days", "2",
         "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)


def make_certs(d: Path) -> Certs:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to generate test certificates")
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca", "kraftwire-test-ca")
    _ca(d, "rogue-ca", "rogue-ca")
    _leaf(d, "server", "/O=kraftwire/CN=localhost", "ca.crt", "ca.key", "DNS:localhost,IP:127.0.0.1")
    _leaf(d, "alice", "/O=acme/OU=ops/CN=alice", "ca.crt", "ca.key", None)
    _leaf(d, "controller", "/O=kraftwire/CN=controller", "ca.crt", "ca.key", "DNS:localhost,IP:127.0.0.1")
    _leaf(d, "rogue", "/CN=alice", "rogue-ca.crt", "rogue-ca.key", None)
    _run("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{KEY_PASSWORD}", "-out", "server-enc.key", cwd=d)
    return Certs(d, d / "ca.crt", d / "server.pem", d / "server-enc.key", d / "server.crt", d / "alice.crt",
                 d / "alice.key", d / "alice.pem", d / "controller.pem", d / "rogue.crt", d / "rogue.key")
