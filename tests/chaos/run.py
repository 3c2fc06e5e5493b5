"""One chaos run: cluster up, writer + nemesis until the deadline, heal, verdicts.

Long runs from the repository root (root needed: namespaces, tmpfs):

    .venv/bin/python tests/chaos/run.py --fault kill9 --voters 3 --duration 300

prints one verdict line and exits 1 when a verdict fails (acknowledged writes lost, logs differ,
a node died on its own).
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio

if __package__ in (None, ""):  # run as a script: make `chaos` and `processes` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from chaos.faults import NEMESES
    from chaos.lab import ChaosCluster, Verdicts, Writer, compare_logs, heal_all
else:
    from .faults import NEMESES
    from .lab import ChaosCluster, Verdicts, Writer, compare_logs, heal_all


async def _scenario(c: ChaosCluster, fault: str, duration_s: float, seed: int) -> Verdicts:
    rng = random.Random(seed)
    writer = Writer(c)
    faults = 0
    async with anyio.create_task_group() as tg:
        await writer.register_broker(tg)
        stop = anyio.Event()
        tg.start_soon(writer.run, tg, stop)
        deadline = time.monotonic() + duration_s
        with anyio.fail_after(duration_s + 90):    # one cycle may overrun the deadline by its own length (waits included)
            while time.monotonic() < deadline:
                await anyio.sleep(rng.uniform(0.5, 2.0))
                await NEMESES[fault](c, rng)
                faults += 1
                c.check_alive()
        c.check_alive()
        stop.set()
        ended = time.monotonic()
        st, unhealed = await heal_all(c)
        # Without a healed quorum nothing can be checked: the run fails as unhealed, and no write is
        # called lost on that ground (it once reported every acknowledged write lost this way).
        lost = await writer.missing(tg) if st is not None else []
        tg.cancel_scope.cancel()
    c.stop_all()
    same, compared = compare_logs(c, st["HighWatermark"]) if st is not None else (False, 0)
    gap, gap_from = writer.longest_gap(ended)
    c.note(f"longest unavailability {gap:.1f} s began at {gap_from}")
    return Verdicts(len(writer.acked), lost, same, compared, c.deaths, gap, faults,
                    writer.indeterminate, unhealed, len(c.disk_stops), gap_from)


def run_chaos(root: Path, fault: str, voters: int, duration_s: float, seed: int = 0,
              disk_mb: int = 64, keep: Path | None = None) -> Verdicts:
    """Everything a run needs, torn down afterwards (processes, namespaces, mounts)."""
    c = ChaosCluster(root, voters, disk_mb)
    try:
        c.start_all()
        return anyio.run(_scenario, c, fault, duration_s, seed)
    finally:
        c.stop_all()
        # The fault journal beside the nodes' logs (both outlive the run in ROOT/nodeN/server.log).
        (root / "journal.txt").write_text("".join(f"{line}\n" for line in c.journal))
        if keep is not None:     # logs, data and the journal for a post-mortem, before the tmpfs goes
            shutil.copytree(root, keep, dirs_exist_ok=True)
        c.close()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fault", choices=sorted(NEMESES), default="mixed")
    p.add_argument("--voters", type=int, default=3, choices=(3, 5))
    p.add_argument("--duration", type=float, default=60.0, help="seconds of faults")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", type=Path, help="copy every node's log and data here afterwards")
    args = p.parse_args()
    from chaos.netlab import lab_available

    reason = lab_available()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kraftwire-chaos-") as tmp:
        v = run_chaos(Path(tmp), args.fault, args.voters, args.duration, args.seed, keep=args.keep)
    print(f"{args.fault} voters={args.voters} duration={args.duration:.0f}s seed={args.seed}: {v.line()}")
    for d in v.deaths:
        print(f"  death: {d}")
    if v.lost:
        print(f"  lost: {v.lost[:20]}")
    return 0 if v.ok else 1


if __name__ == "__main__":
    sys.exit(main())
