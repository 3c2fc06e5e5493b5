"""``kraftwire storage``: random-uuid, format and info (like kafka-storage.sh), and recover-as-single-voter
(a quorum that lost a majority for good: ``recover_quorum.py``)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kraftwire.cli.errors import ExitCode, OperatorError
from kraftwire.cli.node_config import read_config
from kraftwire.config import ConfigError, NodeConfig
from kraftwire.storage import StorageError
from kraftwire.storage.meta_properties import (
    MetaProperties,
    random_uuid,
    read_meta,
    valid_cluster_id,
    write_meta,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("storage", help="format and inspect node storage (like kafka-storage.sh)",
                       description="Generate cluster ids, format log directories, and show their state.")
    ssub = p.add_subparsers(dest="action", metavar="<action>", required=True)
    r = ssub.add_parser("random-uuid", help="print a new cluster id")
    r.set_defaults(func=lambda args: print(random_uuid()) or 0)
    f = ssub.add_parser("format", help="write meta.properties and the bootstrap metadata")
    f.add_argument("-c", "--config", required=True, help="server.properties")
    f.add_argument("-t", "--cluster-id", required=True, help="cluster id (see random-uuid)")
    f.add_argument("-g", "--ignore-formatted", action="store_true",
                   help="succeed without changes when already formatted with this cluster id")
    mv = f.add_mutually_exclusive_group()
    mv.add_argument("-r", "--release-version", default=None, metavar="RELEASE",
                    help="Kafka release whose metadata.version to bootstrap, e.g. 3.7-IV4 (as kafka-storage.sh; "
                         "every node of a mixed cluster must know it: Kafka 3.7 knows up to 3.7-IV4)")
    mv.add_argument("--metadata-version", type=int, default=None, metavar="LEVEL",
                    help="metadata.version feature level to bootstrap, e.g. 19 (default: the latest kraftwire supports)")
    q = f.add_mutually_exclusive_group()
    q.add_argument("-s", "--standalone", action="store_true",
                   help="initialize a controller as a single-node dynamic quorum (KIP-853, kraft.version 1)")
    q.add_argument("-I", "--initial-controllers", default=None, metavar="id@host:port:directory,...",
                   help="initialize a server with a specific dynamic quorum topology (the same list on every node)")
    q.add_argument("-N", "--no-initial-controllers", action="store_true",
                   help="initialize a server without a dynamic quorum topology")
    f.add_argument("-S", "--add-scram", action="append", default=[], metavar="MECHANISM=[name=...,password=...]",
                   help="add a SCRAM user to the bootstrap metadata, e.g. "
                        "'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable)")
    f.set_defaults(func=run_format)
    i = ssub.add_parser("info", help="show the state of the configured log directories")
    i.add_argument("-c", "--config", required=True, help="server.properties")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=run_info)
    rv = ssub.add_parser("recover-as-single-voter",
                         help="make a surviving voter the only voter of a new quorum, keeping its log (data loss)",
                         description="After losing a majority of the controllers for good: turn this stopped voter's "
                                     "metadata directory into a one-voter quorum keeping its log, then add "
                                     "controllers back. Prints what may be lost; changes nothing without "
                                     "--i-understand-data-loss.")
    rv.add_argument("-c", "--config", required=True, help="the surviving voter's server.properties")
    rv.add_argument("--i-understand-data-loss", dest="confirmed", action="store_true",
                    help="do it: records the lost voters committed that this node lacks are gone for good")
    rv.set_defaults(func=run_recover)


def log_dirs(cfg: NodeConfig) -> list[Path]:
    return cfg.log_dirs


def format_storage(cfg: NodeConfig, cluster_id: str, *, ignore_formatted: bool = False,
                   metadata_version: int | None = None, quiet: bool = False, add_scram: list[str] | None = None,
                   standalone: bool = False, initial_controllers: str | None = None,
                   no_initial_controllers: bool = False) -> int:
    """Format every log directory of ``cfg``; returns how many were newly formatted.

    ``standalone`` / ``initial_controllers`` format a KIP-853 dynamic quorum (kraft.version 1): the metadata
    log directory also gets the bootstrap snapshot holding the voter set (``dynamic_quorum.py``)."""
    from kraftwire.cli.dynamic_quorum import check_quorum_flags, dynamic_voters, write_voters_snapshot
    from kraftwire.metadata import bootstrap_records
    from kraftwire.node.bootstrap import write_bootstrap
    from kraftwire.security.credentials import SCRAM_MIN_METADATA_VERSION, parse_add_scram

    if not valid_cluster_id(cluster_id):
        raise StorageError(f"cluster id {cluster_id!r} is not a base64url-encoded 16-byte id "
                           "(use `kraftwire storage random-uuid`)")
    records = bootstrap_records() if metadata_version is None else bootstrap_records(metadata_version)
    if add_scram:
        level = records[0].message.feature_level
        if level < SCRAM_MIN_METADATA_VERSION:
            raise StorageError(f"SCRAM is only supported in metadata.version {SCRAM_MIN_METADATA_VERSION} "
                               f"(3.5-IV2) or later; this format would use {level}")
        records = records + [parse_add_scram(a) for a in add_scram]
    check_quorum_flags(cfg, standalone, initial_controllers, no_initial_controllers,
                       records[0].message.feature_level)
    own_dir = random_uuid()
    voters, own_dir = dynamic_voters(cfg, standalone, initial_controllers, own_dir)
    formatted = 0
    for d in log_dirs(cfg):
        existing = read_meta(d)
        if existing is not None:
            if existing.cluster_id != cluster_id or existing.node_id != cfg.node_id:
                raise StorageError(f"{d} is already formatted for cluster {existing.cluster_id} node "
                                   f"{existing.node_id}")
            if not ignore_formatted:
                raise StorageError(f"{d} is already formatted (use --ignore-formatted to accept that)")
            if not quiet:
                print(f"All of the log directories are already formatted: {d}")
            continue
        d.mkdir(parents=True, exist_ok=True)
        meta_dir = d == cfg.metadata_log_dir
        if meta_dir:
            write_bootstrap(d, records)
            if voters is not None:
                write_voters_snapshot(d, voters)
        write_meta(d, MetaProperties(cluster_id, cfg.node_id, own_dir if meta_dir else random_uuid()))
        formatted += 1
        if not quiet:
            kind = " dynamic metadata voter directory" if meta_dir and voters is not None else ""
            print(f"Formatting{kind} {d} with metadata.version {records[0].message.feature_level} "
                  f"(cluster {cluster_id}, node {cfg.node_id}).")
    return formatted


def metadata_level(release: str | None, level: int | None) -> int | None:
    """The metadata.version level named by ``--release-version`` or ``--metadata-version`` (None: default)."""
    from kraftwire.metadata.features import LATEST_LEVEL, MINIMUM_BOOTSTRAP_LEVEL, parse_release_version

    if release is not None:
        level = parse_release_version(release)
    if level is not None and not MINIMUM_BOOTSTRAP_LEVEL <= level <= LATEST_LEVEL:
        raise ValueError(f"metadata.version {level} cannot be bootstrapped: kraftwire formats "
                         f"{MINIMUM_BOOTSTRAP_LEVEL}..{LATEST_LEVEL} (3.3-IV0 and later releases it knows)")
    return level


def run_format(args: argparse.Namespace) -> int:
    cfg = read_config(args.config, [])
    try:
        format_storage(cfg, args.cluster_id, ignore_formatted=args.ignore_formatted,
                       metadata_version=metadata_level(args.release_version, args.metadata_version),
                       add_scram=args.add_scram, standalone=args.standalone,
                       initial_controllers=args.initial_controllers,
                       no_initial_controllers=args.no_initial_controllers)
    except ValueError as e:   # a malformed --add-scram, an unknown release or level
        if isinstance(e, ConfigError):
            raise
        raise OperatorError(str(e), ExitCode.USAGE) from None
    return 0


def run_info(args: argparse.Namespace) -> int:
    cfg = read_config(args.config, [])
    rows = []
    problems = 0
    for d in log_dirs(cfg):
        row: dict[str, object] = {"directory": str(d)}
        try:
            meta = read_meta(d)
        except StorageError as e:
            row["error"] = str(e)
            problems += 1
            rows.append(row)
            continue
        if meta is None:
            row["status"] = "not formatted" if d.exists() else "missing"
            problems += 1
        else:
            row.update(status="formatted", cluster_id=meta.cluster_id, node_id=meta.node_id,
                       directory_id=meta.directory_id, version=meta.version)
            if meta.node_id != cfg.node_id:
                row["error"] = f"node.id {meta.node_id} does not match the configuration's {cfg.node_id}"
                problems += 1
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"Found {len(rows)} log director{'y' if len(rows) == 1 else 'ies'}:")
        for row in rows:
            print(f"  {row['directory']}: " + ", ".join(f"{k}={v}" for k, v in row.items() if k != "directory"))
    return ExitCode.STORAGE if problems else 0


def run_recover(args: argparse.Namespace) -> int:
    from kraftwire.cli.recover_quorum import recover_as_single_voter

    recover_as_single_voter(read_config(args.config, []), confirmed=args.confirmed)
    return 0
