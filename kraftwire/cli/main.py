"""Entry point of the ``kraftwire`` console script.

Each verb lives in its own module under ``kraftwire.cli`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (called with the parsed namespace, returning an exit code).
Verb modules are imported lazily by name so a broken optional verb never breaks the others.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (module under kraftwire.cli) — order is the order shown by --help.
VERB_MODULES: list[str] = [
    "quickstart", "server", "storage", "metadata_quorum", "dump_log", "console_consumer",
    "metadata_shell", "protocol", "acls", "analytics", "simulate",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraftwire",
        description="KRaft metadata quorum and controller speaking the Kafka wire protocol.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="verb", metavar="<verb>")
    for name in VERB_MODULES:
        try:
            module = importlib.import_module(f"kraftwire.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"kraftwire.cli.{name}":
                raise
            continue  # verb not part of this build
        module.register(sub)
    return parser


def _version() -> str:
    from kraftwire import __version__

    return f"kraftwire {__version__}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
