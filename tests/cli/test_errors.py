"""The cause → exit code table of kraftwire.cli.errors."""

from __future__ import annotations

import errno

import pytest

from kraftwire.cli.errors import ExitCode, OperatorError, classify, kafka_error
from kraftwire.config import ConfigError
from kraftwire.net.client import RequestFailed
from kraftwire.storage import StorageError


def _refused() -> RequestFailed:
    try:
        raise RequestFailed("connect to h:1 failed") from ConnectionRefusedError(errno.ECONNREFUSED, "refused")
    except RequestFailed as e:
        return e


@pytest.mark.parametrize(("exc", "code", "needle"), [
    (OSError(errno.ENOSPC, "No space left on device", "/d/x.log"), ExitCode.DISK_FULL, "disk full (/d/x.log)"),
    (OSError(errno.EADDRINUSE, "address already in use"), ExitCode.PORT_IN_USE, "already in use"),
    (PermissionError(errno.EACCES, "Permission denied", "/d"), ExitCode.PERMISSION, "permission denied (/d)"),
    (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), ExitCode.UNREACHABLE, "connection refused"),
    (TimeoutError(), ExitCode.UNREACHABLE, "timed out"),
    (FileNotFoundError(errno.ENOENT, "No such file", "/x"), ExitCode.USAGE, "no such file (/x)"),
    (ConfigError("node.id: required"), ExitCode.CONFIG, "invalid configuration: node.id"),
    (StorageError("/d is not formatted"), ExitCode.STORAGE, "not formatted"),
    (_refused(), ExitCode.UNREACHABLE, "connect to h:1"),
    (RequestFailed("CreateAcls failed: NOT_CONTROLLER"), ExitCode.FAILED, "NOT_CONTROLLER"),
    (OperatorError("x", ExitCode.USAGE), ExitCode.USAGE, "x"),
    (ExceptionGroup("g", [ExceptionGroup("h", [OSError(errno.ENOSPC, "full")])]), ExitCode.DISK_FULL, "disk full"),
    (ValueError("odd"), ExitCode.FAILED, "ValueError: odd (rerun with --debug"),
])
def test_cause_to_exit_code_and_one_line(exc, code, needle) -> None:
    got, line = classify(exc)
    assert got == code and needle in line and "\n" not in line


def test_kafka_error_names() -> None:
    assert kafka_error(41) == "NOT_CONTROLLER" and kafka_error(6) == "NOT_LEADER_OR_FOLLOWER"
    assert kafka_error(9999) == "UNKNOWN(9999)"
