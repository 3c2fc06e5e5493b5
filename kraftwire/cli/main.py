"""Entry point of the ``kraftwire`` console script.

Each verb lives in its own module under ``kraftwire.cli`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (called with the parsed namespace, returning an exit code).
Only the verb being run is imported: ``--help`` and ``--version`` import no verb module at all
(their one-line help is listed here; a test keeps it equal to what each module registers).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# verb -> (module under kraftwire.cli, one-line help); order is the order shown by --help.
VERBS: dict[str, tuple[str, str]] = {
    "quickstart": ("quickstart", "format and run a local 3-voter quorum"),
    "server": ("server", "run a node in the foreground"),
    "storage": ("storage", "format and inspect node storage (like kafka-storage.sh)"),
    "metadata-quorum": ("metadata_quorum", "describe the metadata quorum (like kafka-metadata-quorum.sh)"),
    "dump-log": ("dump_log", "print log segments / snapshots as JSON lines"),
    "console-consumer": ("console_consumer", "print __cluster_metadata records as they commit"),
    "metadata-shell": ("metadata_shell", "browse the metadata image (snapshot, log directory or live controller)"),
    "protocol": ("protocol", "decode Kafka protocol frames to JSON and encode them back"),
    "acls": ("acls", "add, remove and list ACLs (like kafka-acls.sh)"),
    "analytics": ("analytics", "Spark analytics over a metadata log (Parquet, PNG, summary)"),
    "simulate": ("simulate", "deterministic Raft simulation with fault injection"),
}
VERB_MODULES: list[str] = [module for module, _ in VERBS.values()]


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command's parser; with ``argv`` only the verb it names is imported and registered."""
    parser = argparse.ArgumentParser(
        prog="kraftwire",
        description="KRaft metadata quorum and controller speaking the Kafka wire protocol.",
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="verb", metavar="<verb>")
    chosen = None if argv is None else _verb_of(argv)
    for verb, (module_name, help_text) in VERBS.items():
        if argv is not None and verb != chosen:
            sub.add_parser(verb, help=help_text, add_help=False)  # listed by --help, never parsed
            continue
        try:
            module = importlib.import_module(f"kraftwire.cli.{module_name}")
        except ModuleNotFoundError as e:
            if e.name != f"kraftwire.cli.{module_name}":
                raise
            continue  # verb not part of this build
        module.register(sub)
    return parser


def _verb_of(argv: list[str]) -> str | None:
    """The verb ``argv`` runs: its first word that is not an option."""
    for word in argv:
        if not word.startswith("-"):
            return word
    return None


def _version() -> str:
    from kraftwire import __version__

    return f"kraftwire {__version__}"


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    parser = build_parser(argv)
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
