"""``kraftwire audit --log-dir DIR... (--topic X | --principal P)``: who changed the metadata, when, from where.

Reads the audit files the controllers wrote beside their metadata logs (``storage/audit.py``; give the
log directory of every voter that may have led: each keeps the entries of its own writes) and the
longest of their metadata logs, and joins them by offset: ``--topic X`` lists every write that
created, deleted, reconfigured or changed partitions of topic X; ``--principal P`` every write P made.
Entries whose offsets a later leader overwrote are marked, entries the log no longer holds (below its
start) too. Text by default, ``--json`` for one document.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.storage.audit import AUDIT_FILE, AuditEntry, audit_path, read_audit
from kraftwire.storage.reader import PARTITION_DIR, MetadataSource, read_log_dir

TOPIC_RESOURCE = 2


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="who changed the metadata: writes by topic or principal (audit files)",
                       description="Join the controllers' audit files with the metadata log: who created, "
                                   "deleted or changed a topic, or everything a principal wrote.")
    p.add_argument("--log-dir", action="append", required=True, metavar="DIR",
                   help="a voter's metadata log directory (repeat for every voter that led)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--topic", metavar="NAME", help="writes that touched this topic")
    what.add_argument("--principal", metavar="PRINCIPAL", help="writes made by this principal, e.g. User:alice")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=run)


def _dir(path: str) -> Path:
    d = Path(path)
    if d.name == PARTITION_DIR:
        d = d.parent
    if not d.is_dir():
        raise OperatorError(f"{path}: no such directory", ExitCode.USAGE)
    return d


def load_entries(dirs: list[Path]) -> tuple[list[AuditEntry], list[str]]:
    """Every voter's entries (one per offset range: the same write is never in two files) and warnings."""
    entries: dict[tuple[int, int, int], AuditEntry] = {}
    warnings: list[str] = []
    found = False
    for d in dirs:
        path = audit_path(d)
        if not path.exists():
            warnings.append(f"{d}: no {AUDIT_FILE} (this voter wrote nothing while it led, or never led)")
            continue
        found = True
        got, bad = read_audit(path)
        warnings += bad
        for e in got:
            entries[(e.first_offset, e.last_offset, e.epoch)] = e
    if not found:
        raise OperatorError(f"no {AUDIT_FILE} in {', '.join(map(str, dirs))}: give the log directories of the "
                            "voters (the active controller writes it while it leads)", ExitCode.STORAGE)
    return sorted(entries.values(), key=lambda e: (e.first_offset, e.epoch)), warnings


def _status(entry: AuditEntry, src: MetadataSource, log_start: int) -> str:
    if entry.last_offset < log_start:
        return "below the log start"
    span = next((s for s in src.batches if s.base <= entry.first_offset <= s.last), None)
    if span is None:
        return "beyond the log end"
    return "in the log" if span.epoch == entry.epoch else f"overwritten (the log has epoch {span.epoch} there)"


def _topic_names(src: MetadataSource) -> dict[uuid.UUID, str]:
    names: dict[uuid.UUID, str] = {}
    for rec in [*src.snapshot, *(r for _, r in src.records)]:
        if rec.type_name == "TopicRecord":
            names[rec.message.topic_id] = rec.message.name
    return names


def _about_topic(rec: Any, topic: str, ids: set[uuid.UUID]) -> str | None:
    """What ``rec`` does to ``topic`` (None: nothing)."""
    kind, msg = rec.type_name, rec.message
    if kind == "TopicRecord" and msg.name == topic:
        return "topic created"
    if kind == "RemoveTopicRecord" and msg.topic_id in ids:
        return "topic deleted"
    if kind == "ConfigRecord" and msg.resource_type == TOPIC_RESOURCE and msg.resource_name == topic:
        return f"config {msg.name}={'(deleted)' if msg.value is None else msg.value}"
    if kind == "PartitionRecord" and msg.topic_id in ids:
        return f"partition {msg.partition_id} added"
    if kind == "PartitionChangeRecord" and msg.topic_id in ids:
        return f"partition {msg.partition_id} changed"
    return None


def run(args: argparse.Namespace) -> int:
    dirs = [_dir(d) for d in args.log_dir]
    entries, warnings = load_entries(dirs)
    src = max((read_log_dir(d, from_start=True) for d in dirs), key=lambda s: s.last_offset)   # the longest log
    warnings += src.warnings
    log_start = src.batches[0].base if src.batches else (src.snapshot_id.end_offset if src.snapshot_id else 0)
    by_offset = dict(src.records)
    ids = {tid for tid, name in _topic_names(src).items() if name == args.topic} if args.topic else set()
    rows: list[dict[str, Any]] = []
    for e in entries:
        if args.principal is not None and e.principal != args.principal:
            continue
        recs = [by_offset[o] for o in range(e.first_offset, e.last_offset + 1) if o in by_offset]
        if args.topic is not None:
            what = [w for r in recs if (w := _about_topic(r, args.topic, ids)) is not None]
            if not what:
                continue
            summary = _squash(what)
        else:
            summary = ", ".join(f"{n} {k}" for k, n in Counter(r.type_name for r in recs).items()) or "no records read"
        rows.append({"time": _time(e.time_ms), **{k: getattr(e, k) for k in AuditEntry.__dataclass_fields__},
                     "status": _status(e, src, log_start), "what": summary})
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps({"entries": rows}, indent=2))
        return 0
    if not rows:
        who = f"topic {args.topic}" if args.topic is not None else f"principal {args.principal}"
        print(f"no audited write for {who} in offsets {log_start}..{src.last_offset}")
        return 0
    for r in rows:
        via = " (forwarded by a broker)" if r["forwarded"] else ""
        note = "" if r["status"] == "in the log" else f" [{r['status']}]"
        print(f"{r['time']}  {r['api']}  offsets {r['first_offset']}-{r['last_offset']}  {r['principal']}  "
              f"client {r['client_id'] or '-'} from {r['client_host']} via {r['listener']}{via}  "
              f"controller {r['node_id']} epoch {r['epoch']}: {r['what']}{note}")
    return 0


def _squash(items: list[str]) -> str:
    counts = Counter(items)
    return ", ".join(k if n == 1 else f"{k} x{n}" for k, n in counts.items())


def _time(ms: int) -> str:
    from kraftwire.cli.time_travel import format_ms

    return format_ms(ms)
