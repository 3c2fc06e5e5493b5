"""``kraftwire dump-log``: print log segments and snapshot files like kafka-dump-log.sh.

The default output is Kafka's text: ``Dumping FILE``, a ``baseOffset: ... isvalid: true`` line per
batch and, with ``--print-data-log``, ``--deep-iteration`` or ``--cluster-metadata-decoder``, a
``| offset: ...`` line per record (metadata records decoded to Kafka's JSON with the decoder).
``--json`` prints one JSON object per batch and record instead. Only ``.log`` segments and
``.checkpoint`` snapshots are dumped; any other file is refused in one line.
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import sys
from pathlib import Path
from typing import Any

from crc32c import crc32c

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.protocol.control import CONTROL_MESSAGES, control_type
from kraftwire.protocol.errors import KafkaProtocolError
from kraftwire.protocol.metadata import decode_record
from kraftwire.protocol.records import RecordBatch, iter_batches
from kraftwire.protocol.runtime import to_json

SUFFIXES = (".log", ".checkpoint")
_HEADER = struct.Struct(">qiibIhiqqqhii")
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
_CONTROL_LABELS = {"SNAPSHOT_HEADER": "SnapshotHeader", "SNAPSHOT_FOOTER": "SnapshotFooter",
                   "KRAFT_VERSION": "KRaftVersion", "KRAFT_VOTERS": "KRaftVoters"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("dump-log", help="print log segments / snapshots (like kafka-dump-log.sh)",
                       description="Dump __cluster_metadata segment (.log) or snapshot (.checkpoint) files in "
                                   "kafka-dump-log.sh's text format (--json: one JSON object per batch/record).")
    p.add_argument("--files", nargs="+", required=True, metavar="FILE", help="segment or checkpoint files (space- or comma-separated)")
    p.add_argument("--cluster-metadata-decoder", action="store_true",
                   help="decode record values as KRaft metadata records (implies --print-data-log)")
    p.add_argument("--print-data-log", "--print-records", dest="print_records", action="store_true",
                   help="print a line per record with its value")
    p.add_argument("--deep-iteration", action="store_true", help="print a line per record")
    p.add_argument("--skip-record-metadata", action="store_true", help="omit offsets, sizes, timestamps of records")
    p.add_argument("--skip-crc-check", action="store_true", help="--json only: do not verify batch CRCs")
    p.add_argument("--json", action="store_true", help="one JSON object per batch and per record")
    p.set_defaults(func=run)


# -------------------------------------------------------------------------------- Kafka's text
def batch_line(data: memoryview, position: int, size: int) -> str:
    (base, _length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, base_seq,
     count) = _HEADER.unpack_from(data, position)
    last_seq = -1 if base_seq < 0 else (base_seq + last_delta) & 0x7FFFFFFF
    horizon = f"OptionalLong[{base_ts}]" if attrs & 0x40 else "OptionalLong.empty"
    ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
    valid = crc32c(bytes(data[position + 21:position + size])) == crc
    codec = _CODECS[attrs & 0x07] if attrs & 0x07 < len(_CODECS) else f"unknown({attrs & 0x07})"
    return (f"baseOffset: {base} lastOffset: {base + last_delta} count: {count} baseSequence: {base_seq} "
            f"lastSequence: {last_seq} producerId: {pid} producerEpoch: {pepoch} partitionLeaderEpoch: {epoch} "
            f"isTransactional: {str(bool(attrs & 0x10)).lower()} isControl: {str(bool(attrs & 0x20)).lower()} "
            f"deleteHorizonMs: {horizon} position: {position} {ts_type}: {max_ts} size: {size} magic: {magic} "
            f"compresscodec: {codec} crc: {crc} isvalid: {str(valid).lower()}")


def record_line(batch: RecordBatch, index: int, header: tuple, *, decode: bool, contents: bool,
                skip_metadata: bool) -> str:
    from kraftwire.cli.kafka_json import dumps, record_type_name, to_kafka_json

    rec = batch.records[index]
    attrs, max_ts = header[5], header[8]
    out = "| "
    if not skip_metadata:
        ts_type = "LogAppendTime" if attrs & 0x08 else "CreateTime"
        ts = max_ts if attrs & 0x08 else batch.base_timestamp + rec.timestamp_delta
        seq = -1 if batch.base_sequence < 0 else batch.base_sequence + index
        out += (f"offset: {batch.base_offset + index} {ts_type}: {ts} "
                f"keySize: {-1 if rec.key is None else len(rec.key)} "
                f"valueSize: {-1 if rec.value is None else len(rec.value)} sequence: {seq} "
                f"headerKeys: [{','.join(k for k, _ in rec.headers)}]")
    if batch.control:
        kind = control_type(rec)
        name = kind.name if kind is not None else "UNKNOWN"
        label = _CONTROL_LABELS.get(name)
        if label is not None and rec.value is not None:
            msg, version = _control_message(kind, rec.value)
            out += f" {label} {dumps(to_kafka_json(msg, version))}"
        else:
            type_id = int.from_bytes(bytes(rec.key[2:4]), "big", signed=True) if rec.key else -1
            out += f" controlType: {name}({type_id})"
    elif contents and rec.value is not None:
        if decode:
            try:
                m = decode_record(rec.value)
                payload = dumps({"type": record_type_name(type(m.message).__name__), "version": m.version,
                                 "data": to_kafka_json(m.message, m.version)})
            except KafkaProtocolError as e:
                payload = f"Error at {batch.base_offset + index}, skipping. {e}"
        else:
            payload = bytes(rec.value).decode("utf-8", errors="replace")
        out += f" payload: {payload}"
    return out


def _control_message(kind: Any, value: bytes) -> tuple[Any, int]:
    from kraftwire.protocol.messages import message_class

    cls = message_class(CONTROL_MESSAGES[kind])
    version = int.from_bytes(bytes(value[:2]), "big", signed=True)
    version = min(max(version, cls.MIN_VERSION), cls.MAX_VERSION)
    return cls.decode(value, version), version


def dump_text(path: Path, args: argparse.Namespace, out: Any) -> int:
    data = memoryview(path.read_bytes())
    name = path.name
    if name.endswith(".log"):
        print(f"Log starting offset: {int(name.split('.')[0]) if name.split('.')[0].isdigit() else 0}", file=out)
    elif name == "bootstrap.checkpoint":
        print("KRaft bootstrap snapshot", file=out)
    else:
        offset, _, epoch = name.split(".")[0].partition("-")
        if offset.isdigit() and epoch.isdigit():
            print(f"Snapshot end offset: {int(offset)}, epoch: {int(epoch)}", file=out)
    decode = args.cluster_metadata_decoder
    contents = args.print_records or decode
    deep = contents or args.deep_iteration
    end = 0
    try:
        for batch, position, size in iter_batches(data, verify_crc=False):
            print(batch_line(data, position, size), file=out)
            if deep:
                header = _HEADER.unpack_from(data, position)
                for i in range(len(batch.records)):
                    print(record_line(batch, i, header, decode=decode, contents=contents,
                                      skip_metadata=args.skip_record_metadata), file=out)
            end = position + size
    except KafkaProtocolError as e:
        print(f"Found {len(data) - end} invalid bytes at the end of {name} ({e})", file=out)
        return 1
    if end < len(data):
        print(f"Found {len(data) - end} invalid bytes at the end of {name}", file=out)
    return 0


# -------------------------------------------------------------------------------- --json
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
            if kind in CONTROL_MESSAGES and rec.value is not None:
                out["payload"] = to_json(_control_message(kind, rec.value)[0])
        elif rec.value is not None:
            out["payload"] = decode_record(rec.value).to_json()
    except KafkaProtocolError as e:
        out["error"] = f"undecodable: {e}"
    return {"record": out}


def dump_json(path: Path, args: argparse.Namespace, out: Any) -> int:
    data = path.read_bytes()
    decode, records = args.cluster_metadata_decoder, args.print_records or args.deep_iteration
    errors = 0
    print(json.dumps({"file": str(path), "size": len(data)}), file=out)
    end = 0
    try:
        for batch, position, size in iter_batches(data, verify_crc=not args.skip_crc_check):
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
    args.files = [f for arg in args.files for f in arg.split(",") if f]   # Kafka's comma-separated form
    for name in args.files:     # refuse before printing anything
        path = Path(name)
        if not path.is_file():
            raise OperatorError(f"{name}: no such file", ExitCode.USAGE)
        if path.suffix not in SUFFIXES:
            raise OperatorError(f"{name} is not a log segment (.log) or snapshot (.checkpoint); dump-log reads "
                                "only those (quorum-state and meta.properties are text, .index files are "
                                "rebuilt from the segment)", ExitCode.USAGE)
    failures = 0
    for name in args.files:
        path = Path(name)
        if args.json:
            failures += dump_json(path, args, sys.stdout)
        else:
            print(f"Dumping {name}", flush=False)
            failures += dump_text(path, args, sys.stdout)
    return ExitCode.FAILED if failures else 0
