"""A node freezes its start-up heap and collects less often (full collections paused the loop)."""

from __future__ import annotations

import subprocess
import sys


def test_tune_gc_freezes_the_heap_and_raises_the_thresholds():
    code = ("import gc\nfrom kraftwire.node.gc_tuning import THRESHOLDS, tune_gc\n"
            "big = [[i] for i in range(10000)]\n"
            "tune_gc()\n"
            "print(gc.get_freeze_count() >= 10000, gc.get_threshold() == THRESHOLDS)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "True"]
