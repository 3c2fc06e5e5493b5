"""``python -m compat``: run the compatibility matrix and print its table."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

from compat.apache import DUMP, run_apache_rows
from compat.clients import ASSIGN, BROKER, DESCRIBE, GROUP, all_clients
from compat.cluster import Quorum
from compat.matrix import GROUP_BATCH, Matrix, Row, details, render


def default_cache() -> Path:
    env = os.environ.get("KRAFTWIRE_COMPAT_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kraftwire-compat"


def main(argv: list[str] | None = None) -> int:
    names = [c.name for c in all_clients()]
    p = argparse.ArgumentParser(prog="python -m compat", description=__doc__)
    p.add_argument("--clients", default="all", help=f"comma-separated subset of: {', '.join(names)}; "
                                                    "'none' runs only the Apache Kafka rows")
    p.add_argument("--no-apache", action="store_true", help="leave out the Apache Kafka tool rows")
    p.add_argument("--no-broker", action="store_true", help="run no broker node: check (d) is skipped")
    p.add_argument("--cache", type=Path, default=default_cache(),
                   help="where compiled Java classes and the kafkajs install are kept "
                        "(default $KRAFTWIRE_COMPAT_CACHE or ~/.cache/kraftwire-compat)")
    p.add_argument("--kafka", action="store_true",
                   help="also run the interop matrix against every Apache Kafka release found (KAFKA_HOME, "
                        "KRAFTWIRE_KAFKA_DISTS or ../shared/kafka): Kafka brokers on kraftwire controllers, "
                        "Kafka's tools on kraftwire, a kraftwire broker on Kafka controllers, mixed quorums")
    p.add_argument("--kafka-release", action="append", default=[], metavar="VERSION",
                   help="with --kafka: only this release, e.g. 3.9.0 (repeatable)")
    p.add_argument("--timeout", type=float, default=45.0, help="seconds each check may take (default 45)")
    p.add_argument("--keep", action="store_true", help="keep the quorum's data directory")
    p.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    args = p.parse_args(argv)

    wanted = names if args.clients == "all" else [] if args.clients == "none" else args.clients.split(",")
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        p.error(f"unknown clients {unknown}; known: {names}")
    clients = [c for c in all_clients() if c.name in wanted]
    root = Path(tempfile.mkdtemp(prefix="kraftwire-compat-"))
    started = time.monotonic()
    rows: list[Row] = []
    quorum = Quorum(root, brokers=0 if args.no_broker else 1)
    try:
        quorum.start()
        status = quorum.wait_ready()
        log(f"quorum up: leader {status.leader_id}, epoch {status.leader_epoch}, data in {root}")
        status = quorum.change_leader()
        log(f"leader changed: now {status.leader_id}, epoch {status.leader_epoch}")
        if quorum.broker_ids:
            quorum.wait_brokers()
            log(f"broker {quorum.broker_ids[0]} serving at {quorum.addr(quorum.broker_ids[0])}")
        matrix = Matrix(quorum, args.cache, args.timeout)
        contents = matrix.expected(2 * GROUP_BATCH)
        log(f"{len(contents.records)} committed records below offset {contents.high_watermark} "
            f"(control records at {contents.control_offsets})")
        for client in clients:
            t0 = time.monotonic()
            rows.append(matrix.run_client(client))
            log(f"{client.name}: {', '.join(f'{k} {r.status}' for k, r in rows[-1].results.items())} "
                f"({time.monotonic() - t0:.1f}s)")
        if not args.no_apache:
            rows += run_apache_rows(quorum)
    finally:
        quorum.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    cells = run_kafka(args) if args.kafka else []
    print(render(rows, [ASSIGN, GROUP, DESCRIBE, BROKER, DUMP]))
    print()
    print(details(rows))
    if args.kafka:
        from compat.interop import render_cells

        print()
        print(render_cells(cells))
        for v, row, title, res in cells:
            if res.detail:
                print(f"- Kafka {v} {row} / {title}: {res.status}: {res.detail}")
        rows += [Row(f"Kafka {v} {row}", v, {title: res}) for v, row, title, res in cells]
    failed = [f"{r.client} {c}" for r in rows for c, res in r.results.items() if res.status == "fail"]
    print(f"\n{sum(res.status == 'pass' for r in rows for res in r.results.values())} passed, {len(failed)} failed, "
          f"{sum(res.status == 'skip' for r in rows for res in r.results.values())} skipped "
          f"in {time.monotonic() - started:.0f}s")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    return 1 if failed else 0


def run_kafka(args: argparse.Namespace) -> list:
    """The interop matrix against real Kafka releases (a skip row with the reason when there is none)."""
    from compat.interop import run_release
    from compat.kafka import KafkaUnavailable, find_distributions
    from compat.matrix import Result

    try:
        dists = [d for d in find_distributions() if not args.kafka_release or d.version in args.kafka_release]
    except KafkaUnavailable as e:
        return [("-", "Apache Kafka releases", "all", Result("skip", str(e)))]
    cells = []
    for dist in dists:
        root = Path(tempfile.mkdtemp(prefix=f"kraftwire-interop-{dist.version}-"))
        try:
            cells += run_release(dist, root, log)
        finally:
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    return cells


def log(msg: str) -> None:
    print(f"[compat] {msg}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
