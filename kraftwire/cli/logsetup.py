"""Logging the way Kafka operators read it: ``[timestamp] LEVEL message (logger)``, or JSON lines.

Levels take log4j's names (TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF) as well as Python's.
"""

from __future__ import annotations

import json
import logging
import sys

TRACE = 5
logging.addLevelName(TRACE, "TRACE")

LEVELS = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "WARNING": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL,
          "CRITICAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}
FORMATS = ("text", "json")


def parse_level(text: str) -> int:
    """The logging level named ``text``; raises OperatorError (exit code CONFIG) naming the choices."""
    level = LEVELS.get(text.strip().upper())
    if level is None:
        from kraftwire.cli.errors import ExitCode, OperatorError

        raise OperatorError(f"--log-level {text!r} is not a level; use one of TRACE, DEBUG, INFO, WARN, ERROR, "
                            "FATAL, OFF", ExitCode.CONFIG)
    return level


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message (and the exception, if any)."""

    def format(self, record: logging.LogRecord) -> str:
        out = {"time": self.formatTime(record), "level": _kafka_level(record.levelname),
               "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.levelname = _kafka_level(record.levelname)
        return super().format(record)


def _kafka_level(name: str) -> str:
    return {"WARNING": "WARN", "CRITICAL": "FATAL"}.get(name, name)


def configure(level: str = "INFO", prefix: str = "", fmt: str = "text") -> None:
    """Route the root logger to stderr at ``level`` in ``fmt`` (``text`` or ``json``)."""
    numeric = parse_level(level)
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter(f"[%(asctime)s] %(levelname)s {prefix}%(message)s (%(name)s)"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
