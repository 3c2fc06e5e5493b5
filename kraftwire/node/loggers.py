"""BROKER_LOGGER config resources: this process's log levels, described and changed at run time.

Kafka's nodes answer BROKER_LOGGER themselves (never through the metadata log): the resource name must be
the node's own id, SET takes a log4j level, DELETE unsets a logger's own level (not the root's), APPEND
and SUBTRACT are refused. Here the loggers are Python's; log4j level names map to Python levels.
"""

from __future__ import annotations

import logging
from typing import Any

from kraftwire.controller.configs import SOURCE_BROKER_LOGGER
from kraftwire.controller.result import CommandError
from kraftwire.protocol.errors import Errors
from kraftwire.protocol.messages import describe_configs_response as dcr
from kraftwire.protocol.messages.incremental_alter_configs_response import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)

ROOT = "root"
TRACE = 5
#: log4j level -> Python level (Kafka's LogLevelConfig.VALID_LOG_LEVELS)
LEVELS = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING, "INFO": logging.INFO,
          "DEBUG": logging.DEBUG, "TRACE": TRACE}
_NAMES = {logging.CRITICAL: "FATAL", logging.ERROR: "ERROR", logging.WARNING: "WARN", logging.INFO: "INFO",
          logging.DEBUG: "DEBUG", TRACE: "TRACE"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def _exists(name: str) -> bool:
    known = logging.Logger.manager.loggerDict
    return name == ROOT or isinstance(known.get(name), logging.Logger)


def level_name(level: int) -> str:
    """The log4j name of a Python level (the next more severe one for levels in between)."""
    return next((_NAMES[lv] for lv in sorted(_NAMES) if level <= lv), "FATAL")


def loggers() -> dict[str, str]:
    """Every logger of this process with its effective level, root first (Kafka's Log4jController.loggers)."""
    out = {ROOT: level_name(logging.getLogger().getEffectiveLevel())}
    for name, obj in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(obj, logging.Logger):
            out[name] = level_name(obj.getEffectiveLevel())
    return out


def _check_node(node_id: int, name: str) -> None:
    try:
        asked = int(name)
    except ValueError:
        raise CommandError(Errors.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if asked != node_id:
        raise CommandError(Errors.INVALID_REQUEST, f"Unexpected node id. Expected {node_id}, but received {name}")


def describe(node_id: int, name: str, version: int) -> list[Any]:
    """DescribeConfigs of BROKER_LOGGER ``name`` (must be this node's id)."""
    if not name:
        raise CommandError(Errors.INVALID_REQUEST, "Broker id must not be empty")
    try:
        asked = int(name)
    except ValueError:
        raise CommandError(Errors.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if asked != node_id:
        raise CommandError(Errors.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} but received {name}")
    return [dcr.DescribeConfigsResourceResult(name=k, value=v, read_only=False, is_default=False,
                                              config_source=SOURCE_BROKER_LOGGER, is_sensitive=False, synonyms=[],
                                              config_type=0, documentation=None)
            for k, v in loggers().items()]


def _validate(op: Any) -> None:
    name, kind = op.name, op.config_operation
    if kind == SET:
        if not _exists(name):
            raise CommandError(Errors.INVALID_CONFIG, f"Logger {name} does not exist!")
        if op.value not in LEVELS:
            raise CommandError(Errors.INVALID_CONFIG, f"Cannot set the log level of {name} to {op.value} as it is "
                                                      f"not a supported log level. Valid log levels are "
                                                      f"{', '.join(sorted(LEVELS))}")
    elif kind == DELETE:
        if not _exists(name):
            raise CommandError(Errors.INVALID_CONFIG, f"Logger {name} does not exist!")
        if name == ROOT:
            raise CommandError(Errors.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    elif kind in (APPEND, SUBTRACT):
        raise CommandError(Errors.INVALID_REQUEST, f"{'APPEND' if kind == APPEND else 'SUBTRACT'} operation is "
                                                   "not allowed for the BROKER_LOGGER resource")
    else:
        raise CommandError(Errors.INVALID_REQUEST, f"Unknown operation type {kind} is not allowed for the "
                                                   "BROKER_LOGGER resource")


def alter(node_id: int, resource: Any, validate_only: bool) -> tuple[int, str | None]:
    """Apply one IncrementalAlterConfigs BROKER_LOGGER resource; its (error code, message)."""
    try:
        _check_node(node_id, resource.resource_name)
        for op in resource.configs:
            _validate(op)
    except CommandError as e:
        return int(e.code), e.message
    if not validate_only:
        for op in resource.configs:
            target = _logger(op.name)
            target.setLevel(LEVELS[op.value] if op.config_operation == SET else logging.NOTSET)
            logging.getLogger(__name__).warning("%s the log level of %s%s", "Updated" if op.config_operation == SET
                                                else "Unset", op.name, f" to {op.value}" if op.value else "")
    return 0, None


def alter_response(node_id: int, body: Any) -> IncrementalAlterConfigsResponse:
    """The shell's answer to the door's ``Relay`` LOGGERS: ``body``'s BROKER_LOGGER resources applied in order."""
    out = IncrementalAlterConfigsResponse(responses=[])
    for r in body.resources:
        code, msg = alter(node_id, r, body.validate_only)
        out.responses.append(AlterConfigsResourceResponse(code, msg, r.resource_type, r.resource_name))
    return out
