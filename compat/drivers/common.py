"""Argument parsing and output shared by the Python drivers."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

TOPIC = "__cluster_metadata"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["assign", "group", "describe", "version"])
    p.add_argument("--bootstrap", default="")
    p.add_argument("--group", default="")
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the records")
    return p.parse_args(argv)


def emit_record(offset: int, value: bytes | None) -> None:
    print(json.dumps({"offset": offset, "value": None if value is None else value.hex()}), flush=True)


def emit(key: str, obj: Any) -> None:
    print(json.dumps({key: obj}, default=str), flush=True)


def fail(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(2)
