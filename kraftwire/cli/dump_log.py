"""``kraftwire dump-log``: print log segments and snapshot files, like kafka-dump-log.sh.

Output is one JSON object per line: a ``batch`` line for every record batch, followed (with
``--print-records`` or ``--cluster-metadata-decoder``) by one ``record`` line per record. With
``--cluster-metadata-decoder`` record values are decoded as metadata records and control records
(LeaderChange, SnapshotHeader/Footer, KRaftVersion, Voters) are decoded too.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path
from typing import Any

from kraftwire.protocol.control import CONTROL_MESSAGES, control_type
from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import RecordBatch, iter_batches
from kraftwire.protocol.runtime import to_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dump-log", help="print log segments / snapshots as JSON lines",
                       description="Dump __cluster_metadata segment (.log) or snapshot (.checkpoint) files, "
                                   "one JSON object per batch and per record.")
    p.add_argument("--files", nargs="+", required=True, metavar="FILE", help="segment or checkpoint files")
    p.add_argument("--cluster-metadata-decoder", action="store_true",
                   help="decode record values as KRaft metadata and control records")
    p.add_argument("--print-records", action="store_true", help="print a line per record (raw values)")
    p.add_argument("--skip-crc-check", action="store_true", help="do not verify batch CRCs")
    p.set_defaults(func=run)


def batch_json(batch: RecordBatch, position: int, size: int) -> dict[str, Any]:
    return {"batch": {
        "baseOffset": batch.base_offset, "lastOffset": batch.last_offset, "count": len(batch.records),
        "partitionLeaderEpoch": batch.leader_epoch, "isControl": batch.control,
        "isTransactional": batch.transactional, "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch, "baseSequence": batch.base_sequence,
        "baseTimestamp": batch.base_timestamp, "compression": batch.compression,
        "position": position, "size": size}}


def record_json(batch: RecordBatch, index: int, decode: bool) -> dict[str, Any]:
    rec = batch.records[index]
    out: dict[str, Any] = {"offset": batch.base_offset + index,
                           "timestamp": batch.base_timestamp + rec.timestamp_delta,
                           "keySize": -1 if rec.key is None else len(rec.key),
                           "valueSize": -1 if rec.value is None else len(rec.value)}
    if not decode:
        if rec.value is not None:
            out["value"] = base64.b64encode(rec.value).decode()
        return {"record": out}
    try:
        if batch.control:
            kind = control_type(rec)
            out["controlType"] = kind.name if kind is not None else "UNKNOWN"
            name = CONTROL_MESSAGES.get(kind) if kind is not None else None
            if name and rec.value is not None:
                from kraftwire.protocol.messages import message_class

                cls = message_class(name)
                version = int.from_bytes(bytes(rec.value[:2]), "big", signed=True)
                out["payload"] = to_json(cls.decode(rec.value, min(max(version, cls.MIN_VERSION),
                                                                   cls.MAX_VERSION)))
        elif rec.value is not None:
            out["payload"] = decode_record(rec.value).to_json()
    except KafkaProtocolError as e:
        out["error"] = f"undecodable: {e}"
    return {"record": out}


def dump_file(path: Path, decode: bool, records: bool, verify_crc: bool, out: Any) -> int:
    data = path.read_bytes()
    errors = 0
    print(json.dumps({"file": str(path), "size": len(data)}), file=out)
    end = 0
    try:
        for batch, position, size in iter_batches(data, verify_crc=verify_crc):
            print(json.dumps(batch_json(batch, position, size)), file=out)
            if records or decode:
                for i in range(len(batch.records)):
                    line = record_json(batch, i, decode)
                    errors += "error" in line["record"]
                    print(json.dumps(line), file=out)
            end = position + size
    except KafkaProtocolError as e:
        print(json.dumps({"error": f"corrupt batch at position {end}: {e}"}), file=out)
        return errors + 1
    if end < len(data):
        print(json.dumps({"warning": f"{len(data) - end} trailing bytes after position {end} (partial batch)"}),
              file=out)
    return errors


def run(args: argparse.Namespace) -> int:
    failures = 0
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            print(f"error: {name}: no such file", file=sys.stderr)
            failures += 1
            continue
        failures += dump_file(path, args.cluster_metadata_decoder, args.print_records, not args.skip_crc_check,
                              sys.stdout)
    return 1 if failures else 0
