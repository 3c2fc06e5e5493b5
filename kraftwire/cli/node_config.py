"""Reading server.properties for the node verbs, and probing listener ports (no verb imports here)."""

from __future__ import annotations

import socket

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.config import NodeConfig, load_config


def read_config(path: str, override: list[str]) -> NodeConfig:
    """The validated configuration with ``--override KEY=VALUE`` items applied."""
    overrides = {}
    for item in override:
        key, sep, value = item.partition("=")
        if not sep:
            raise OperatorError(f"--override expects KEY=VALUE, got {item!r}", ExitCode.USAGE)
        overrides[key.strip()] = value.strip()
    try:
        return load_config(path, overrides)
    except OSError as e:
        raise OperatorError(f"cannot read the configuration {path}: {e.strerror or e}", ExitCode.CONFIG) from None


def port_in_use(host: str, port: int) -> bool:
    """Whether binding ``host:port`` fails now (as a listener would)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False
