"""Missing system tools: skip with a reason, except under CI=true where they must be installed."""

from __future__ import annotations

import os
import shutil

import pytest


def require_tool(name: str, why: str) -> str:
    path = shutil.which(name)
    if path is None:
        message = f"`{name}` is not installed ({why}); scripts/install-system-tools.sh installs it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path
