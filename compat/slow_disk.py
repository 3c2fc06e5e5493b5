"""A slow disk for tests and benchmarks: every fsync, fdatasync, rename and replace of the process
sleeps first (or waits at a gate), in whatever thread makes it.

``install(delay_s)`` patches ``os`` in this process; ``SlowDisk`` also counts the calls made on the
thread that installed it (the event loop's, in a server) and can hold calls at a gate. A
``kraftwire server`` child gets it through ``compat/slow_disk_site`` on its PYTHONPATH and
``KRAFTWIRE_SLOW_DISK_MS`` in its environment (``child_env``); at exit it writes its counts to
``KRAFTWIRE_SLOW_DISK_REPORT``.
"""

from __future__ import annotations

import json
import os
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENV_DELAY = "KRAFTWIRE_SLOW_DISK_MS"
ENV_REPORT = "KRAFTWIRE_SLOW_DISK_REPORT"
SITE_DIR = Path(__file__).resolve().parent / "slow_disk_site"
CALLS = ("fsync", "fdatasync", "rename", "replace")


class SlowDisk:
    """Delays (and counts) the durable-write calls of ``os`` until ``uninstall``."""

    def __init__(self, delay_s: float, *, only: Callable[[tuple[Any, ...]], bool] | None = None) -> None:
        self.delay_s = delay_s
        self.only = only                     # None: every call; else only calls whose args pass
        self.loop_thread = threading.current_thread()
        self.calls = 0
        # (wall time, call, where) of the calls made on the installing thread; where: the caller's frames
        self.on_loop: list[tuple[float, str, str]] = []
        self.gate: threading.Event | None = None   # an unset Event: calls off the loop wait for it
        self.in_flight = 0
        self._saved: dict[str, Any] = {}
        self._lock = threading.Lock()

    def install(self) -> SlowDisk:
        for name in CALLS:
            real = getattr(os, name)
            self._saved[name] = real
            setattr(os, name, self._wrap(name, real))
        return self

    def uninstall(self) -> None:
        for name, real in self._saved.items():
            setattr(os, name, real)
        self._saved.clear()

    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def slow(*args: Any, **kw: Any) -> Any:
            if self.only is None or self.only(args):
                on_loop = threading.current_thread() is self.loop_thread
                with self._lock:
                    self.calls += 1
                    self.in_flight += 1
                    if on_loop:
                        self.on_loop.append((time.time(), f"{name}{_describe(args)}", _where()))
                try:
                    gate = self.gate
                    if gate is not None and not on_loop:   # (held on the loop it would stall the test)
                        gate.wait(60)
                    time.sleep(self.delay_s)
                finally:
                    with self._lock:
                        self.in_flight -= 1
            return real(*args, **kw)
        return slow

    def report(self) -> dict[str, Any]:
        return {"delay_ms": self.delay_s * 1000, "calls": self.calls, "on_loop": self.on_loop}


def _where(depth: int = 10) -> str:
    """The caller's frames, innermost first, as ``module:line function`` joined by `` < ``."""
    frames = traceback.extract_stack()[:-2][-depth:]   # (not _where and the wrapper)
    return " < ".join(f"{Path(f.filename).stem}:{f.lineno} {f.name}" for f in reversed(frames))


def _describe(args: tuple[Any, ...]) -> str:
    if args and isinstance(args[0], int):
        try:
            return f"({os.readlink(f'/proc/self/fd/{args[0]}')})"
        except OSError:
            return f"(fd {args[0]})"
    return f"({', '.join(str(a) for a in args[:2])})"


def install_from_env() -> SlowDisk | None:
    """The child side (sitecustomize): install when ``KRAFTWIRE_SLOW_DISK_MS`` is set; report at exit."""
    ms = os.environ.get(ENV_DELAY)
    if not ms:
        return None
    disk = SlowDisk(float(ms) / 1000).install()
    out = os.environ.get(ENV_REPORT)
    if out:   # (a server stops cleanly on SIGTERM, so atexit runs)
        import atexit

        atexit.register(lambda: Path(f"{out}.{os.getpid()}").write_text(json.dumps(disk.report())))
    return disk


def child_env(delay_ms: float, report: Path | None = None) -> dict[str, str]:
    """Environment entries that give ``python -m kraftwire ...`` children this slow disk."""
    path = os.environ.get("PYTHONPATH", "")
    env = {"PYTHONPATH": f"{SITE_DIR}{os.pathsep}{path}" if path else str(SITE_DIR), ENV_DELAY: str(delay_ms)}
    if report is not None:
        env[ENV_REPORT] = str(report)
    return env
