"""Entry point of the ``kraftwire`` console script.

Each verb lives in its own module under ``kraftwire.cli`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (called with the parsed namespace, returning an exit code).
Only the verb being run is imported: ``--help`` and ``--version`` import no verb module at all
(their one-line help is listed here; a test keeps it equal to what each module registers).
Failures end in one ``error: ...`` line and the exit code of their cause (``kraftwire.cli.errors``);
``--debug`` (anywhere on the command line) adds the traceback.
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
    "dump-log": ("dump_log", "print log segments / snapshots (like kafka-dump-log.sh)"),
    "console-consumer": ("console_consumer", "print __cluster_metadata records as they commit"),
    "metadata-shell": ("metadata_shell", "browse the metadata image (snapshot, log directory or live controller)"),
    "metadata-diff": ("metadata_diff", "what changed in the metadata between two offsets or times"),
    "what-if": ("what_if", "which partitions go offline or under min ISR if brokers fail"),
    "doctor": ("doctor", "explain why a quorum or broker is unhealthy (plain words, with evidence)"),
    "audit": ("audit", "who changed the metadata: writes by topic or principal (audit files)"),
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
    parser.add_argument("--debug", action="store_true", help="print tracebacks of failures (any position)")
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
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(func(args) or 0)
    except BrokenPipeError:
        return 0
    except (Exception, KeyboardInterrupt) as e:  # noqa: BLE001 - every failure ends in one line
        return report(e, debug)


def report(exc: BaseException, debug: bool = False) -> int:
    """Print the one-line explanation of ``exc`` (and its traceback with --debug); its exit code."""
    from kraftwire.cli.errors import classify, leaf

    code, line = classify(exc)
    if debug:
        import traceback

        traceback.print_exception(exc)
    if not isinstance(leaf(exc), KeyboardInterrupt):
        print(f"error: {line}", file=sys.stderr, flush=True)
    return int(code)


if __name__ == "__main__":
    raise SystemExit(main())
