"""Progress for long commands (tqdm on stderr), drawn only when stderr is a terminal.

Bars never touch stdout, so piped output stays clean; every command ends with its own result line.
"""

from __future__ import annotations

import sys
from typing import Any


def bar(total: int | None, desc: str, unit: str = "it") -> Any:
    """A tqdm bar on stderr, shown only when stderr is a terminal."""
    import shutil

    from tqdm import tqdm

    size = shutil.get_terminal_size((80, 20))   # a terminal that reports no size (0x0) gets 80x20
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not sys.stderr.isatty(),
                leave=False, ncols=size.columns or 80, nrows=size.lines or 20)


class Steps:
    """Named steps of a job as a bar on a terminal (nothing otherwise: the result lines tell)."""

    def __init__(self, steps: list[str], desc: str) -> None:
        self.steps, self.desc = steps, desc
        self.done = 0
        self.tty = sys.stderr.isatty()
        self.bar = bar(len(steps), desc, "step") if self.tty else None

    def advance(self, step: str) -> None:
        if self.bar is not None:
            if self.done:
                self.bar.update(1)
            self.bar.set_postfix_str(step)
        self.done += 1

    def close(self) -> None:
        if self.bar is not None:
            self.bar.update(1)
            self.bar.close()
