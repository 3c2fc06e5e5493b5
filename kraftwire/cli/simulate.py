"""``kraftwire simulate``: run seeded quorum simulations and report invariant violations.

With ``--spark [--master URL]`` the seeds are split into contiguous ranges run as Spark tasks;
the output (one line per failing seed with its reproduction command, then the summary line) is the
same as a local run's.
"""

from __future__ import annotations

import argparse
import sys

from kraftwire.sim.config import ALL_FAULTS, EXTRA_FAULTS, SimConfig
from kraftwire.sim.runner import run_seed, run_seeds


def _faults(text: str) -> frozenset[str]:
    if text == "all":
        return frozenset(ALL_FAULTS)
    if text == "none":
        return frozenset()
    names = frozenset(x.strip() for x in text.split(",") if x.strip())
    unknown = names - set(ALL_FAULTS) - set(EXTRA_FAULTS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown faults {sorted(unknown)}; choose from {', '.join(ALL_FAULTS + EXTRA_FAULTS)}")
    return names


def _level(text: str) -> int:
    from kraftwire.metadata.features import LATEST_LEVEL, MINIMUM_BOOTSTRAP_LEVEL

    if text == "all":
        return -1
    try:
        level = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a metadata.version level: {text!r}") from None
    if not MINIMUM_BOOTSTRAP_LEVEL <= level <= LATEST_LEVEL:
        raise argparse.ArgumentTypeError(f"metadata.version {level} is outside "
                                         f"{MINIMUM_BOOTSTRAP_LEVEL}-{LATEST_LEVEL}")
    return level


def level_for_seed(level: int, seed: int) -> int:
    """The level a seed runs at: ``level`` itself, or with -1 ('all') a cycle through every level."""
    from kraftwire.metadata.features import LATEST_LEVEL, MINIMUM_BOOTSTRAP_LEVEL

    if level >= 0:
        return level
    span = LATEST_LEVEL - MINIMUM_BOOTSTRAP_LEVEL + 1
    return MINIMUM_BOOTSTRAP_LEVEL + seed % span


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("simulate", help="deterministic Raft simulation with fault injection",
                              description="Run seeded simulations of the KRaft quorum and check invariants.")
    p.add_argument("--seeds", type=int, default=100, help="number of seeds to run (default 100)")
    p.add_argument("--start-seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--seed", type=int, default=None, help="run exactly this one seed")
    p.add_argument("--voters", type=int, default=3, choices=range(1, 6), metavar="V", help="voters, 1-5")
    p.add_argument("--observers", type=int, default=1, choices=range(0, 6), metavar="O", help="observers, 0-5")
    p.add_argument("--faults", type=_faults, default=frozenset(ALL_FAULTS),
                   help=f"comma list of {','.join(ALL_FAULTS + EXTRA_FAULTS)}, or all / none (default all; "
                        f"'all' leaves out {','.join(EXTRA_FAULTS)})")
    p.add_argument("--duration-ms", type=int, default=6000, help="simulated time per seed (default 6000)")
    p.add_argument("--controller", action="store_true",
                   help="run the quorum controller on the voters, driven by scripted brokers and an admin "
                        "client (observers are not used)")
    p.add_argument("--metadata-version", type=_level, default=0, metavar="LEVEL",
                   help="with --controller: the metadata.version level the cluster bootstraps at, "
                        "or 'all' to cycle the seeds through every level kraftwire supports (default latest)")
    p.add_argument("--wire", action="store_true",
                   help="send every simulated message through the Kafka wire format (encode, decode, "
                        "convert back) at the versions kraftwire advertises")
    p.add_argument("--reconfig", action="store_true",
                   help="KIP-853: a kraft.version 1 quorum whose voters an admin adds and removes under the faults")
    p.add_argument("--recovery", action="store_true",
                   help="a kraft.version 1 quorum loses every voter but one for good mid-run; the survivor is made a "
                        "single-voter quorum as `storage recover-as-single-voter` does and voters are added back")
    p.add_argument("--groups", action="store_true",
                   help="consumer groups on the voters' offsets quorum: consumers join, commit and fetch offsets "
                        "through voters' and brokers' doors (observers are not used)")
    p.add_argument("--never-started", type=int, default=0, metavar="N",
                   help="voters that never run (a fresh quorum with machines missing; default 0)")
    p.add_argument("--start-spread-ms", type=int, default=0, metavar="MS",
                   help="each node starts at a random time in [0, MS] (default 0: all at once)")
    p.add_argument("--first-leader-within-ms", type=int, default=None, metavar="MS",
                   help="liveness check: a leader must exist MS after the start")
    p.add_argument("--bugs", default="", help=argparse.SUPPRESS)  # test-only deliberate bugs
    p.add_argument("--spark", action="store_true", help="run the seeds as Spark tasks (needs PySpark)")
    p.add_argument("--master", default=None, metavar="URL", help="Spark master URL with --spark (default local[*])")
    p.add_argument("--tasks", type=int, default=None, metavar="N",
                   help="Spark tasks to split the seeds into (default 4 x the default parallelism)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if not 0 <= args.never_started < args.voters:
        print(f"simulate: --never-started must be between 0 and {args.voters - 1} (--voters {args.voters})",
              file=sys.stderr)
        return 2
    bugs = frozenset(b for b in args.bugs.split(",") if b)
    cfg = SimConfig(voters=args.voters, observers=args.observers, faults=args.faults,
                    duration_ms=args.duration_ms, bugs=bugs, controller=args.controller,
                    metadata_version=max(0, args.metadata_version), wire=args.wire, reconfig=args.reconfig,
                    recovery=args.recovery, groups=args.groups,
                    never_started=args.never_started, start_spread_ms=args.start_spread_ms,
                    first_leader_within_ms=args.first_leader_within_ms)
    seeds = [args.seed] if args.seed is not None else range(args.start_seed, args.start_seed + args.seeds)
    import time

    from kraftwire.cli.progress import bar

    started = time.monotonic()
    if args.metadata_version < 0 and args.controller:
        from dataclasses import replace

        results = (run_seed(s, replace(cfg, metadata_version=level_for_seed(-1, s))) for s in seeds)
    elif args.spark:
        from kraftwire.analytics.session import spark_session
        from kraftwire.analytics.sweep import spark_sweep

        print(f"running {len(seeds)} seeds as Spark tasks...", file=sys.stderr, flush=True)
        results = spark_sweep(spark_session(args.master, app_name="kraftwire-simulate"), seeds, cfg, args.tasks)
    else:
        results = run_seeds(seeds, cfg)
    total = bad = changes = 0
    with bar(total=len(seeds), desc="simulate", unit="seed") as progress:
        for result in results:
            total += 1
            changes += result.voter_changes
            progress.update(1)
            if not result.ok:
                bad += 1
                progress.write(f"seed={result.seed} {result.violations[0]} | repro: {result.repro}", file=sys.stdout)
    print(f"seeds={total} violations={bad}" + (f" voter_changes={changes}" if args.reconfig or args.recovery else ""), flush=True)   # the result line (same for local and Spark runs)
    print(f"simulate: {total} seeds in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 1 if bad else 0
