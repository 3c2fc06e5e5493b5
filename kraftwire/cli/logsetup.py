"""Logging the way Kafka operators read it: ``[timestamp] LEVEL message (logger)``."""

from __future__ import annotations

import logging
import sys


def configure(level: str = "INFO", prefix: str = "") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"[%(asctime)s] %(levelname)s {prefix}%(message)s (%(name)s)"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
