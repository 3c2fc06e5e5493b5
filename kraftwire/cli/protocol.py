"""``kraftwire protocol decode|encode``: a window on the wire for operators and testers.

``decode`` turns a frame (hex text, or raw bytes with ``--binary``) into JSON: a request (API key and
version from its header), a response (``--response --api-key K --version V``: a response header does
not name its API), a bare message body (``--message NAME --version V``, e.g. LeaderChangeMessage or
QuorumStateData) or a framed KRaft metadata record (``--metadata-record``). ``encode`` reads that JSON
back and writes the identical bytes, so ``decode | encode`` is the identity.

Exit codes: 0 ok, 1 the input is not a valid encoding / JSON document, 2 usage error.
"""

from __future__ import annotations

import argparse
import binascii
import json
import struct
import sys
from typing import Any

from kraftwire.protocol.api import (
    API_NAMES,
    request_class,
    request_header_version,
    response_class,
    response_header_version,
)
from kraftwire.protocol.errors import DecodeError, KafkaProtocolError, UnsupportedVersionError
from kraftwire.protocol.framing import decode_request
from kraftwire.protocol.messages import MODULES, message_class
from kraftwire.protocol.messages.request_header import RequestHeader
from kraftwire.protocol.messages.response_header import ResponseHeader
from kraftwire.protocol.metadata import RECORD_TYPES, decode_record, encode_record
from kraftwire.protocol.runtime import from_json, to_json

SIZE = struct.Struct(">i")


class InputError(Exception):
    """Input that is not hex / JSON of the expected shape (exit code 1)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("protocol", help="decode Kafka protocol frames to JSON and encode them back",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = p.add_subparsers(dest="protocol_verb", metavar="{decode,encode}")
    verbs.required = True

    d = verbs.add_parser("decode", help="frame (hex or binary) -> JSON",
                         description="Decode a request, response, message body or metadata record to JSON.")
    d.add_argument("hex", nargs="?", help="hex bytes (spaces/colons allowed); default: read stdin")
    d.add_argument("--binary", metavar="FILE", help="read raw bytes from FILE ('-' for stdin) instead of hex")
    kind = d.add_mutually_exclusive_group()
    kind.add_argument("--request", action="store_true", help="a request: header, then body (the default)")
    kind.add_argument("--response", action="store_true", help="a response (needs --api-key and --version)")
    kind.add_argument("--message", metavar="NAME", help="a bare body of schema NAME (needs --version)")
    kind.add_argument("--metadata-record", action="store_true",
                      help="a framed KRaft metadata record (frame version, type, version, record)")
    d.add_argument("--api-key", type=int, help="API key (responses; checked against a request's header)")
    d.add_argument("--version", type=int, help="API / message version")
    d.add_argument("--no-header", action="store_true",
                   help="request/response bytes are the body only (needs --api-key and --version)")
    d.add_argument("--size-prefix", choices=["auto", "yes", "no"], default="auto",
                   help="whether the bytes start with Kafka's 4-byte size (auto: if it matches the length)")
    d.add_argument("--compact", action="store_true", help="one-line JSON")
    d.set_defaults(func=run_decode)

    e = verbs.add_parser("encode", help="JSON (as printed by decode) -> hex or binary",
                         description="Encode a JSON document as printed by `kraftwire protocol decode`.")
    e.add_argument("json", nargs="?", help="the JSON document; default: read stdin")
    e.add_argument("--file", metavar="FILE", help="read the JSON document from FILE")
    e.add_argument("--binary", metavar="FILE", help="write raw bytes to FILE ('-' for stdout) instead of hex")
    e.set_defaults(func=run_encode)


# -- decode ---------------------------------------------------------------------------------------

def _read_input(args: argparse.Namespace) -> bytes:
    if args.binary:
        if args.binary == "-":
            return sys.stdin.buffer.read()
        with open(args.binary, "rb") as f:
            return f.read()
    text = args.hex if args.hex is not None else sys.stdin.read()
    cleaned = "".join(text.split()).replace(":", "")
    if cleaned.lower().startswith("0x"):
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError as e:
        raise InputError(f"not hex: {e}") from None


def _strip_size(data: bytes, mode: str) -> tuple[bytes, bool]:
    has = len(data) >= 4 and SIZE.unpack_from(data)[0] == len(data) - 4
    if mode == "yes":
        if not has:
            size = SIZE.unpack_from(data)[0] if len(data) >= 4 else None
            raise DecodeError(f"size prefix {size} does not match the {max(len(data) - 4, 0)} bytes that follow")
        return data[4:], True
    if mode == "auto" and has:
        return data[4:], True
    return data, False


def _need(args: argparse.Namespace, *names: str) -> None:
    missing = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is None]
    if missing:
        raise InputError(f"this kind of input needs {' and '.join(missing)}")


def _decode_body(cls: Any, data: bytes, pos: int, version: int) -> Any:
    if not cls.MIN_VERSION <= version <= cls.MAX_VERSION:
        raise UnsupportedVersionError(
            f"{cls.__name__} v{version} is not supported (versions {cls.MIN_VERSION}-{cls.MAX_VERSION})")
    body, end = cls.decode_from(data, pos, version)
    if end != len(data):
        raise DecodeError(f"{cls.__name__} v{version}: {len(data) - end} trailing bytes")
    return body


def decode_document(data: bytes, args: argparse.Namespace) -> dict[str, Any]:
    """The JSON document for ``data`` as selected by the decode options."""
    if args.metadata_record:
        rec = decode_record(data)
        return {"kind": "metadata_record", "name": rec.type_name, "type": rec.type_id, "version": rec.version,
                "data": to_json(rec.message)}
    if args.message:
        _need(args, "version")
        if args.message not in MODULES:
            raise InputError(f"unknown message {args.message!r} (e.g. LeaderChangeMessage, FetchRequest)")
        body = _decode_body(message_class(args.message), data, 0, args.version)
        return {"kind": "message", "name": args.message, "version": args.version, "data": to_json(body)}
    data, framed = _strip_size(data, args.size_prefix)
    doc: dict[str, Any]
    if args.response:
        _need(args, "api_key", "version")
        cls = response_class(_known_key(args.api_key))
        doc = {"kind": "response", "api_key": args.api_key, "api_name": API_NAMES[args.api_key],
               "version": args.version, "framed": framed}
        pos = 0
        if not args.no_header:
            hv = response_header_version(args.api_key, args.version)
            header, pos = ResponseHeader.decode_from(data, 0, hv)
            doc.update(header_version=hv, header=to_json(header))
        doc["body"] = to_json(_decode_body(cls, data, pos, args.version))
        return doc
    if args.no_header:
        _need(args, "api_key", "version")
        body = _decode_body(request_class(_known_key(args.api_key)), data, 0, args.version)
        return {"kind": "request", "api_key": args.api_key, "api_name": API_NAMES[args.api_key],
                "version": args.version, "framed": framed, "body": to_json(body)}
    req = decode_request(data)
    for opt, actual in (("api_key", req.api_key), ("version", req.api_version)):
        wanted = getattr(args, opt)
        if wanted is not None and wanted != actual:
            raise InputError(f"--{opt.replace('_', '-')} {wanted} but the request header says {actual}")
    return {"kind": "request", "api_key": req.api_key, "api_name": API_NAMES[req.api_key],
            "version": req.api_version, "framed": framed,
            "header_version": request_header_version(req.api_key, req.api_version),
            "header": to_json(req.header), "body": to_json(req.body)}


def _known_key(api_key: int) -> int:
    if api_key not in API_NAMES:
        raise UnsupportedVersionError(f"unknown API key {api_key}")
    return api_key


def run_decode(args: argparse.Namespace) -> int:
    try:
        doc = decode_document(_read_input(args), args)
    except (KafkaProtocolError, InputError) as e:   # undecodable input; a missing file is a usage error (main)
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps(doc, separators=(",", ":")) if args.compact else json.dumps(doc, indent=2))
    return 0


# -- encode ---------------------------------------------------------------------------------------

def _field(doc: dict[str, Any], key: str, kind: type) -> Any:
    if key not in doc:
        raise InputError(f"missing {key!r}")
    value = doc[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise InputError(f"{key!r} must be {kind.__name__}")
    return value


def encode_document(doc: Any) -> bytes:
    """The bytes a decode document stands for (inverse of ``decode_document``)."""
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object")
    kind = _field(doc, "kind", str)
    try:
        if kind == "metadata_record":
            name = _field(doc, "name", str)
            if name not in RECORD_TYPES:
                raise InputError(f"unknown metadata record {name!r}")
            return encode_record(from_json(message_class(name), _field(doc, "data", dict)),
                                 _field(doc, "version", int))
        if kind == "message":
            name = _field(doc, "name", str)
            if name not in MODULES:
                raise InputError(f"unknown message {name!r}")
            return from_json(message_class(name), _field(doc, "data", dict)).encode(_field(doc, "version", int))
        if kind not in ("request", "response"):
            raise InputError(f"unknown kind {kind!r} (request, response, message, metadata_record)")
        api_key = _known_key(_field(doc, "api_key", int))
        version = _field(doc, "version", int)
        cls = request_class(api_key) if kind == "request" else response_class(api_key)
        out = bytearray()
        if "header" in doc:
            header_cls = RequestHeader if kind == "request" else ResponseHeader
            default_hv = (request_header_version if kind == "request" else response_header_version)(api_key, version)
            header = from_json(header_cls, _field(doc, "header", dict))
            header.encode_into(out, doc.get("header_version", default_hv))
        body = from_json(cls, _field(doc, "body", dict))
        body.encode_into(out, version)
    except (TypeError, ValueError, AttributeError, binascii.Error) as e:  # malformed JSON values
        raise InputError(f"bad value: {e}") from None
    if doc.get("framed", True):
        out[0:0] = SIZE.pack(len(out))
    return bytes(out)


def run_encode(args: argparse.Namespace) -> int:
    try:
        if args.file:
            with open(args.file) as f:
                text = f.read()
        else:
            text = args.json if args.json is not None else sys.stdin.read()
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"not JSON: {e}") from None
        data = encode_document(doc)
    except (KafkaProtocolError, InputError) as e:   # undecodable input; a missing file is a usage error (main)
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.binary == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    elif args.binary:
        with open(args.binary, "wb") as f:
            f.write(data)
    else:
        print(data.hex())
    return 0
