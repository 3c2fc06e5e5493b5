"""One table from failure cause to exit code and one-line message, shared by every verb.

``kraftwire`` verbs raise; ``main`` turns the exception into one ``error: ...`` line naming the cause
and the fix, and the exit code of its cause (the same in every verb). ``--debug`` adds the traceback.
"""

from __future__ import annotations

import errno
from enum import IntEnum

from kraftwire.protocol.errors import Errors


class ExitCode(IntEnum):
    """Exit status by cause; documented in docs/operations.md."""

    OK = 0
    FAILED = 1          # the request or job ran and failed (a Kafka error, a corrupt file, ...)
    USAGE = 2           # bad command-line arguments
    CONFIG = 3          # invalid configuration (server.properties, --command-config, --log-level)
    STORAGE = 4         # data directory unformatted, foreign, locked, or of another cluster
    PORT_IN_USE = 5     # a listener's address is already in use
    DISK_FULL = 6       # no space left on the device holding a data directory
    UNREACHABLE = 7     # no node answered (connection refused, timeout, unknown host)
    PERMISSION = 8      # the operating system denied access to a file or port
    INTERRUPTED = 130   # Ctrl-C


class OperatorError(Exception):
    """A failure with its one-line explanation and exit code already decided."""

    def __init__(self, message: str, code: ExitCode = ExitCode.FAILED) -> None:
        super().__init__(message)
        self.code = code


def kafka_error(code: int) -> str:
    """An error code as Kafka's tools name it: ``NOT_CONTROLLER`` (unknown codes as ``UNKNOWN(n)``)."""
    named = Errors.of(code)
    return named.name if isinstance(named, Errors) else f"UNKNOWN({code})"


def leaf(exc: BaseException) -> BaseException:
    """The first non-group exception inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def classify(exc: BaseException) -> tuple[ExitCode, str]:
    """The exit code and one-line message for ``exc`` (the table operators see)."""
    from kraftwire.config import ConfigError
    from kraftwire.net.client import RequestFailed
    from kraftwire.security.settings import SecurityConfigError
    from kraftwire.storage import StorageError

    exc = leaf(exc)
    if isinstance(exc, OperatorError):
        return exc.code, str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED, "interrupted"
    if isinstance(exc, ConfigError | SecurityConfigError):
        return ExitCode.CONFIG, f"invalid configuration: {exc}"
    if isinstance(exc, StorageError):
        return ExitCode.STORAGE, str(exc)
    if isinstance(exc, TimeoutError):   # an OSError subclass: before the errno table
        return ExitCode.UNREACHABLE, "timed out waiting for an answer; check the address or raise --timeout"
    if isinstance(exc, OSError):
        return _os_error(exc)
    if isinstance(exc, RequestFailed):
        if isinstance(exc.__cause__, OSError | TimeoutError) or "timed out" in str(exc):
            return ExitCode.UNREACHABLE, f"{exc}; check the address and that the node is running (--timeout)"
        return ExitCode.FAILED, str(exc)
    if type(exc).__name__ == "FatalNodeError":   # the node explains itself in one line already
        return ExitCode.FAILED, str(exc)
    return ExitCode.FAILED, f"{type(exc).__name__}: {exc} (rerun with --debug for the traceback)"


def _os_error(exc: OSError) -> tuple[ExitCode, str]:
    where = f" ({exc.filename})" if exc.filename else ""
    if exc.errno == errno.EADDRINUSE:
        return ExitCode.PORT_IN_USE, (f"address already in use: {_strip_errno(exc)}; stop the process using "
                                      "it or change `listeners`")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ExitCode.DISK_FULL, (f"disk full{where}: no space left on the device; free space on the volume "
                                    "holding log.dirs and restart")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ExitCode.PERMISSION, f"permission denied{where}: run as the user owning it or fix its permissions"
    if exc.errno == errno.EADDRNOTAVAIL:
        return ExitCode.CONFIG, f"cannot bind: {_strip_errno(exc)}; use an address of this host in `listeners`"
    if isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED:
        return ExitCode.UNREACHABLE, f"connection refused: {_strip_errno(exc)}; is the node running there?"
    if exc.errno in (errno.ETIMEDOUT, errno.EHOSTUNREACH, errno.ENETUNREACH) or "Name or service" in str(exc):
        return ExitCode.UNREACHABLE, f"cannot reach the node: {_strip_errno(exc)}"
    if isinstance(exc, FileNotFoundError):
        return ExitCode.USAGE, f"no such file{where}"
    if isinstance(exc, IsADirectoryError):
        return ExitCode.USAGE, f"is a directory{where}"
    return ExitCode.FAILED, _strip_errno(exc)


def _strip_errno(exc: OSError) -> str:
    text = exc.strerror if exc.strerror and not exc.filename and len(exc.args) <= 2 else str(exc)
    if text.startswith("[Errno"):
        text = text.split("] ", 1)[-1]
    return text
