"""``kraftwire analytics``: Spark jobs over a metadata log (a directory or a live node).

``kraftwire analytics <job> --log-dir DIR | --bootstrap HOST:PORT --out DIR [--master URL]`` runs
one job (or ``all``) and writes Parquet tables, PNG charts and ``summary.txt`` into ``--out``; the
summary is printed too. ``kraftwire analytics demo-log DIR`` writes the scripted demo log used by
the docs and tests. PySpark is imported only when a job runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kraftwire.analytics import JOBS

HELP = {
    "membership": "broker registered/fenced/unfenced/controlled-shutdown intervals (timeline chart)",
    "fencing": "fencing episodes, their causes and durations",
    "elections": "Raft leader elections: epochs, leaders, skipped epochs, gaps",
    "isr-churn": "ISR shrinks/expands per partition per hour, top-N partitions",
    "topics": "topic creation and deletion history",
    "all": "every job above",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analytics", help="Spark analytics over a metadata log (Parquet, PNG, summary)",
                       description="Analyse a KRaft metadata log with Spark: broker membership, fencing, "
                                   "elections, ISR churn, topic history.")
    jobs = p.add_subparsers(dest="job", metavar="<job>", required=True)
    common = argparse.ArgumentParser(add_help=False)
    src = common.add_mutually_exclusive_group(required=True)
    src.add_argument("--log-dir", metavar="DIR", help="metadata log directory (or its __cluster_metadata-0)")
    src.add_argument("--bootstrap", metavar="HOST:PORT[,...]",
                     help="read the committed log of a running node (the first of the list that answers)")
    common.add_argument("--out", required=True, metavar="DIR", help="output directory")
    common.add_argument("--master", metavar="URL", help="Spark master URL (default local[*])")
    common.add_argument("--top", type=int, default=10, metavar="N", help="partitions in the ISR churn top list")
    common.add_argument("--partitions", type=int, default=None, metavar="N",
                        help="offset ranges (Spark tasks) for a --bootstrap read (default 1)")
    for name in (*JOBS, "all"):
        jp = jobs.add_parser(name, parents=[common], help=HELP[name], description=HELP[name])
        jp.set_defaults(func=run)
    diff = jobs.add_parser("diff", help="metadata-diff FROM TO computed by Spark over a log directory",
                           description="The images at two offsets or times of a log directory, selected by "
                                       "Spark from the kraftwire source and diffed as metadata-diff does; "
                                       "writes diff.json into --out and prints the text.")
    diff.add_argument("from_point", metavar="FROM", help="offset (N, offset:N) or time (ISO-8601, time:EPOCH_MS)")
    diff.add_argument("to_point", metavar="TO", help="offset or time, as FROM")
    diff.add_argument("--log-dir", required=True, metavar="DIR", help="metadata log directory")
    diff.add_argument("--out", required=True, metavar="DIR", help="output directory (diff.json)")
    diff.add_argument("--master", metavar="URL", help="Spark master URL (default local[*])")
    diff.add_argument("--json", action="store_true", help="print the JSON document instead of the text")
    diff.set_defaults(func=run_diff)
    demo = jobs.add_parser("demo-log", help="write the scripted demo metadata log into DIR",
                           description="Write a real metadata log (FileLog) from a scripted controller: "
                                       "brokers fenced and unfenced, topics, ISR changes, elections.")
    demo.add_argument("dir", metavar="DIR")
    demo.add_argument("--no-snapshot", action="store_true", help="do not write the final snapshot")
    demo.set_defaults(func=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from kraftwire.analytics.scenario import demo_log

    root = Path(args.dir)
    if (root / "__cluster_metadata-0").exists():
        print(f"error: {root} already holds a metadata log", file=sys.stderr)
        return 1
    demo_log(root, snapshot=not args.no_snapshot).close()
    print(f"wrote {root / '__cluster_metadata-0'}")
    return 0


def run_diff(args: argparse.Namespace) -> int:
    import json

    from kraftwire.cli import time_travel
    from kraftwire.cli.errors import ExitCode, OperatorError
    from kraftwire.cli.metadata_diff import document, write_text
    from kraftwire.cli.metadata_shell import image_tree
    from kraftwire.metadata.diff import diff_trees

    if not Path(args.log_dir).exists():
        raise OperatorError(f"{args.log_dir}: no such directory", ExitCode.USAGE)
    points = [time_travel.parse_point(args.from_point), time_travel.parse_point(args.to_point)]
    try:
        from kraftwire.analytics.diff import PointError, image_at, point_offset
        from kraftwire.analytics.report import load
        from kraftwire.analytics.session import spark_session
    except ImportError as e:
        raise OperatorError(f"analytics need PySpark (pip install 'kraftwire[spark]'): {e}") from None
    spark = spark_session(args.master)
    df = load(spark, log_dir=str(Path(args.log_dir).resolve())).cache()
    try:
        trees = []
        for point in points:
            image, prov = image_at(df, point_offset(df, point))
            prov["source"] = f"{args.log_dir} at {point} (spark)"
            trees.append(image_tree(image, prov))
    except PointError as e:
        raise OperatorError(f"{args.log_dir}: {e}", ExitCode.USAGE) from None
    changes = diff_trees(trees[0], trees[1])
    doc = document(trees[0]["provenance"], trees[1]["provenance"], changes)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "diff.json").write_text(json.dumps(doc, indent=2) + "\n")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        write_text(trees[0]["provenance"], trees[1]["provenance"], changes, sys.stdout)
        print(f"diff.json: {out / 'diff.json'}")
    return 0


def _first_reachable(text: str) -> str:
    """The first address of a ``--bootstrap`` list that accepts a connection (Kafka's bootstrap habit);
    the Spark source then reads from that node."""
    import socket

    from kraftwire.cli.bootstrap import parse_bootstrap

    addresses = parse_bootstrap(text, "--bootstrap")
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=2).close()
            return f"{host}:{port}"
        except OSError:
            continue
    return f"{addresses[0][0]}:{addresses[0][1]}"   # none answered: the source reports the first's failure


def _cause(e: BaseException) -> str:
    """The innermost meaningful line of a (possibly Spark-wrapped) error."""
    lines = [ln.strip(" |\t") for ln in str(e).splitlines() if ln.strip(" |\t")]
    for ln in reversed(lines):
        head = ln.split(":", 1)[0]
        if "Error" in head or "Exception" in head or head.endswith("RequestFailed"):
            return ln
    return lines[0] if lines else type(e).__name__


def run(args: argparse.Namespace) -> int:
    if args.log_dir and not Path(args.log_dir).exists():
        from kraftwire.cli.errors import ExitCode, OperatorError

        raise OperatorError(f"{args.log_dir}: no such directory", ExitCode.USAGE)
    try:
        from kraftwire.analytics.report import load, run_jobs
        from kraftwire.analytics.session import spark_session
    except ImportError as e:
        print(f"error: analytics need PySpark (pip install 'kraftwire[spark]'): {e}", file=sys.stderr)
        return 1
    import time

    from kraftwire.cli.progress import Steps

    names = list(JOBS) if args.job == "all" else [args.job]
    if args.bootstrap:
        args.bootstrap = _first_reachable(args.bootstrap)
    started = time.monotonic()
    steps = Steps(["start Spark", "load the log", *names], "analytics")
    steps.advance("start Spark")
    spark = spark_session(args.master)
    # Executors resolve the path themselves: hand them an absolute one.
    log_dir = str(Path(args.log_dir).resolve()) if args.log_dir else None
    steps.advance("load the log")
    df = load(spark, log_dir=log_dir, bootstrap=args.bootstrap, partitions=args.partitions)
    try:
        report = run_jobs(df, names, Path(args.out), top_n=args.top, progress=steps.advance)
    except Exception as e:  # noqa: BLE001 - Spark wraps worker errors; show the cause, not the JVM trace
        steps.close()
        print(f"error: {_cause(e)}", file=sys.stderr)
        return 1
    steps.close()
    for line in report.summary:
        print(line)
    for name, path in report.tables.items():
        print(f"table {name}: {path}")
    for path in report.charts:
        print(f"chart: {path}")
    print(f"analytics: {len(names)} job{'s' if len(names) != 1 else ''} in {time.monotonic() - started:.1f} s; "
          f"summary in {Path(args.out) / 'summary.txt'}")
    return 0
