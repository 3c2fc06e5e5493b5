"""``--command-config FILE`` for client-side verbs: Kafka client properties → connection security.

The file is the one Kafka's tools take (``kafka-metadata-quorum.sh --command-config``): Java
properties with ``security.protocol``, ``ssl.*`` (PEM truststore / keystore), ``sasl.mechanism`` and
``sasl.jaas.config`` (or librdkafka's ``sasl.username`` / ``sasl.password``).
"""

from __future__ import annotations

import argparse

from kraftwire.config import parse_properties
from kraftwire.security.settings import ClientSecurity, SecurityConfigError, client_security

HELP = ("Kafka client properties for the connection: security.protocol, ssl.* (PEM), sasl.mechanism, "
        "sasl.jaas.config")


def add_command_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--command-config", metavar="FILE", help=HELP)


def command_security(path: str | None) -> ClientSecurity | None:
    """The security settings in ``path`` (None: plaintext); raises SecurityConfigError naming the problem."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SecurityConfigError(f"--command-config {path}: {e.strerror or e}") from None
    try:
        return client_security(parse_properties(text))
    except SecurityConfigError as e:
        raise SecurityConfigError(f"--command-config {path}: {e}") from None
