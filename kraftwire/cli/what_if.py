"""``kraftwire what-if --fail broker=3,rack=b``: what the controller would do if those brokers failed.

The image is read as metadata-shell reads it (live from a controller, or from a log directory or
snapshot, optionally ``--at-offset``/``--at-time``); the failed brokers are fenced by the controller's
own code on a private copy (``kraftwire.controller.what_if``); nothing is written anywhere. Prints the
partitions that would go offline, fall under min ISR, and whose leader would move (and where).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from kraftwire.cli.errors import ExitCode, OperatorError

NONE = "-"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("what-if", help="which partitions go offline or under min ISR if brokers fail",
                       description="Fence the named brokers with the controller's own code on a copy of the "
                                   "image and report partitions going offline, under min ISR, and leader moves. "
                                   "Nothing is written.")
    p.add_argument("--fail", action="append", required=True, metavar="broker=ID,rack=NAME,...",
                   help="brokers to fail, by id and/or rack (repeatable; comma-separated)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--bootstrap-controller", "--bootstrap-server", dest="bootstrap", metavar="HOST:PORT[,...]",
                     help="read the committed metadata log of this controller (live)")
    src.add_argument("--log-dir", "--snapshot", dest="snapshot", metavar="PATH",
                     help="a metadata log directory or a .checkpoint snapshot (saved)")
    at = p.add_mutually_exclusive_group()
    at.add_argument("--at-offset", metavar="N", help="use the image as of offset N")
    at.add_argument("--at-time", metavar="T", help="use the image as of time T (ISO-8601 or epoch ms)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds allowed for the live fetch")
    p.add_argument("--command-config", metavar="FILE", help="Kafka client properties for the live fetch")
    p.set_defaults(func=run)


def parse_fail(specs: list[str]) -> tuple[list[int], list[str]]:
    """Broker ids and racks of ``--fail`` values; OperatorError (usage) on anything else."""
    ids: list[int] = []
    racks: list[str] = []
    for spec in specs:
        for item in (i.strip() for i in spec.split(",") if i.strip()):
            key, sep, value = item.partition("=")
            if not sep or not value:
                raise OperatorError(f"--fail {item!r}: expected broker=ID or rack=NAME", ExitCode.USAGE)
            if key == "broker":
                if not value.lstrip("-").isdigit():
                    raise OperatorError(f"--fail {item!r}: a broker id is a number", ExitCode.USAGE)
                ids.append(int(value))
            elif key == "rack":
                racks.append(value)
            else:
                raise OperatorError(f"--fail {item!r}: unknown key {key!r} (use broker= or rack=)", ExitCode.USAGE)
    if not ids and not racks:
        raise OperatorError("--fail names no broker: use broker=ID or rack=NAME", ExitCode.USAGE)
    return ids, racks


def run(args: argparse.Namespace) -> int:
    from kraftwire.cli.metadata_shell import build_image, load_source, point_of
    from kraftwire.controller.what_if import brokers_matching, what_if

    ids, racks = parse_fail(args.fail)
    security = None
    if args.bootstrap:
        from kraftwire.cli.client_config import command_security

        security = command_security(args.command_config)
    src = load_source(args.snapshot, args.bootstrap, args.timeout, security, point_of(args))
    image = build_image(src)
    try:
        failed = brokers_matching(image, ids, racks)
    except ValueError as e:
        raise OperatorError(f"--fail: {e}", ExitCode.USAGE) from None
    result = what_if(image, failed)
    where = f"{src.source} at offset {src.last_offset}"
    if args.json:
        print(json.dumps({"source": where, **result.to_json()}, indent=2))
    else:
        write_text(image, result, where, sys.stdout)
    return 0


def _racks(image, brokers: list[int]) -> str:
    return ", ".join(f"{b}" + (f" (rack {image.brokers[b].rack})" if image.brokers[b].rack else "")
                     for b in brokers)


def write_text(image, result, where: str, out: TextIO) -> None:
    def leader(x: int) -> str:
        return NONE if x < 0 else str(x)

    def isr(x: tuple[int, ...]) -> str:
        return "[" + ", ".join(map(str, x)) + "]"

    print(f"what-if: failing broker{'s' if len(result.failed) > 1 else ''} {_racks(image, result.failed)}, "
          f"on {where}", file=out)
    print(f"the controller would fence them and write {result.records} records (nothing was written)", file=out)
    sections = [
        ("would go offline (no eligible leader left)", result.offline,
         lambda p: f"leader {leader(p.leader_before)} -> none; isr {isr(p.isr_before)} -> {isr(p.isr_after)}"
                   + (f"; elr {isr(p.elr_after)}" if p.elr_after else "")),
        ("would be under min ISR", result.under_min_isr,
         lambda p: f"isr {isr(p.isr_before)} -> {isr(p.isr_after)}, min.insync.replicas {p.min_isr}"),
        ("leaders that would move", result.leader_moves,
         lambda p: f"leader {p.leader_before} -> {p.leader_after}; isr {isr(p.isr_before)} -> {isr(p.isr_after)}"),
        ("already offline before the failure", result.already_offline, lambda p: f"isr {isr(p.isr_before)}"),
        ("already under min ISR before the failure", result.already_under_min_isr,
         lambda p: f"isr {isr(p.isr_before)}, min.insync.replicas {p.min_isr}"),
    ]
    for title, parts, describe in sections:
        if not parts and title.startswith("already"):
            continue
        print(f"{title}: {len(parts)}", file=out)
        for p in parts:
            print(f"  {p.topic}-{p.partition}  replicas {isr(p.replicas)}: {describe(p)}", file=out)
