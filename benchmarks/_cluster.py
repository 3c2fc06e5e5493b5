"""Shared by the process benchmarks: start a formatted N-voter quorum of real server processes."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.processes.harness import Cluster  # noqa: E402

__all__ = ["Cluster"]
