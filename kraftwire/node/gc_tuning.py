"""Garbage-collector settings for a long-running node.

CPython's default thresholds (700, 10, 10) collect the young generation every 700 allocations and
walk the whole heap every 100 of those. A node holds a large, long-lived heap (the metadata image,
sessions, buffers) and allocates fast (thousands of requests a second), so full collections came
every few seconds and paused the event loop for 100-800 ms — long enough to delay heartbeats past
their interval and Raft fetches past the election timeout. Freezing what exists after start-up and
collecting less often removes those pauses (docs/performance.md has the measurements).
"""

from __future__ import annotations

import gc

THRESHOLDS = (100_000, 50, 100)


def tune_gc() -> None:
    """Move every object alive now out of the collector's reach and raise the thresholds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
