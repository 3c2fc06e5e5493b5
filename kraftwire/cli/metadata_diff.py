"""``kraftwire metadata-diff FROM TO``: what changed in the metadata between two offsets or times.

FROM and TO are offsets (``N`` or ``offset:N``) or times (ISO-8601, or ``time:MS`` for epoch ms),
read from a log directory (``--log-dir``) or a live controller's committed log
(``--bootstrap-controller``). Both images are rebuilt as ``metadata-shell --at-offset/--at-time``
rebuilds them; the changes cover features, brokers and controllers, topics and partitions (replica
sets, ISR, leaders, epochs), configs, ACLs, client quotas and SCRAM users (mechanism and iterations,
never the keys). Text by default, ``--json`` for a machine-readable document.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from kraftwire.cli import time_travel
from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.metadata.diff import ADDED, REMOVED, Change, diff_trees, summary
from kraftwire.storage.reader import MetadataSource

MAX_LEAVES_SHOWN = 24   # an added/removed subtree larger than this is summarised in text output


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metadata-diff", help="what changed in the metadata between two offsets or times",
                       description="Rebuild the metadata image at two points of the log and print what changed: "
                                   "topics, partitions, configs, ACLs, quotas, SCRAM users, brokers, features.")
    p.add_argument("from_point", metavar="FROM", help="offset (N, offset:N) or time (ISO-8601, time:EPOCH_MS)")
    p.add_argument("to_point", metavar="TO", help="offset or time, as FROM")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--log-dir", "--snapshot", dest="log_dir", metavar="DIR",
                     help="a metadata log directory (or its __cluster_metadata-0, or one .log segment)")
    src.add_argument("--bootstrap-controller", "--bootstrap-server", dest="bootstrap", metavar="HOST:PORT[,...]",
                     help="read the committed __cluster_metadata log of this controller")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds allowed for the live fetch")
    p.add_argument("--command-config", metavar="FILE", help="Kafka client properties for the live fetch")
    p.set_defaults(func=run)


def sources(args: argparse.Namespace, points: list[time_travel.Point]) -> list[MetadataSource]:
    """One source per point; a live log is fetched once and cut at each point."""
    from kraftwire.cli.metadata_shell import load_source

    if args.log_dir is not None:
        return [load_source(args.log_dir, None, args.timeout, None, p) for p in points]
    from kraftwire.cli.client_config import command_security

    whole = load_source(None, args.bootstrap, args.timeout, command_security(args.command_config))
    return [time_travel.live_at(whole, p) for p in points]


def run(args: argparse.Namespace) -> int:
    from kraftwire.cli.metadata_shell import build_image, image_tree, provenance
    from kraftwire.metadata.image import MetadataReplayError
    from kraftwire.protocol.errors import KafkaProtocolError

    points = [time_travel.parse_point(args.from_point), time_travel.parse_point(args.to_point)]
    try:
        trees = [image_tree(build_image(s), provenance(s)) for s in sources(args, points)]
    except (MetadataReplayError, KafkaProtocolError) as e:
        raise OperatorError(f"cannot rebuild the image: {e or type(e).__name__}", ExitCode.STORAGE) from None
    changes = diff_trees(trees[0], trees[1])
    if args.json:
        print(json.dumps(document(trees[0]["provenance"], trees[1]["provenance"], changes), indent=2))
    else:
        write_text(trees[0]["provenance"], trees[1]["provenance"], changes, sys.stdout)
    return 0


def document(before: dict[str, str], after: dict[str, str], changes: list[Change]) -> dict[str, Any]:
    """The ``--json`` document: both ends' provenance, per-section counts, every change."""
    return {"from": before, "to": after, "summary": summary(changes), "changes": [c.to_json() for c in changes]}


def _leaves(node: Any, path: str) -> list[tuple[str, str]]:
    if not isinstance(node, dict):
        return [(path, node)]
    out: list[tuple[str, str]] = []
    for name, child in node.items():
        out += _leaves(child, f"{path}/{name}")
    return out


def write_text(before: dict[str, str], after: dict[str, str], changes: list[Change], out: TextIO) -> None:
    """Operator text: the two ends, a count per section, then ``+``/``-``/``~`` lines."""
    def end(p: dict[str, str]) -> str:
        return f"{p['source']}, last offset {p['lastContainedOffset']}, epoch {p['lastContainedEpoch']}"

    print(f"from: {end(before)}", file=out)
    print(f"to:   {end(after)}", file=out)
    counts = summary(changes)
    if not counts:
        print("no changes", file=out)
        return
    print("; ".join(f"{s}: " + ", ".join(f"{n} {k}" for k, n in c.items() if n) for s, c in counts.items()),
          file=out)
    for c in changes:
        if c.kind in (ADDED, REMOVED):
            side = c.after if c.kind == ADDED else c.before
            mark = "+" if c.kind == ADDED else "-"
            if not isinstance(side, dict):
                print(f"{mark} {c.path}: {side}", file=out)
                continue
            leaves = _leaves(side, "")
            print(f"{mark} {c.path}/" + ("" if len(leaves) <= MAX_LEAVES_SHOWN else f" ({len(leaves)} entries)"),
                  file=out)
            if len(leaves) <= MAX_LEAVES_SHOWN:
                for path, value in leaves:
                    print(f"    {path.lstrip('/')}: {value}", file=out)
        else:
            print(f"~ {c.path}: {c.before} -> {c.after}", file=out)
