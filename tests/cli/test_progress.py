"""Long commands show progress on a terminal (tqdm on stderr) and end with a result line."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time


def test_simulate_draws_a_bar_on_a_terminal_and_ends_with_the_result_line() -> None:
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "kraftwire", "simulate", "--seeds", "40", "--faults", "none"],
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 0
    assert out.splitlines()[-1] == "seeds=40 violations=0"    # stdout holds only results
    text = seen.decode(errors="replace")
    assert "simulate:" in text and "seed" in text and "|" in text, text   # a tqdm bar was drawn
    assert "simulate: 40 seeds in" in text


def test_no_bar_when_not_a_terminal() -> None:
    out = subprocess.run([sys.executable, "-m", "kraftwire", "simulate", "--seeds", "3", "--faults", "none"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout == "seeds=3 violations=0\n"
    assert out.stderr.startswith("simulate: 3 seeds in") and "|" not in out.stderr
