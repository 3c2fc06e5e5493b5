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
    from chaos.admin_probe import AdminProbe, Tally, available_kinds
    from chaos.faults import NEMESES
    from chaos.lab import ChaosCluster, Verdicts, Writer, compare_logs, heal_all
else:
    from .admin_probe import AdminProbe, Tally, available_kinds
    from .faults import NEMESES
    from .lab import ChaosCluster, Verdicts, Writer, compare_logs, heal_all


async def _probe_clients(c: ChaosCluster, probes: list[AdminProbe], seconds: float) -> None:
    """Every client kind creates topics for ``seconds`` (each in a thread of its own, at the same time)."""
    async def one(probe: AdminProbe) -> None:
        tally = await anyio.to_thread.run_sync(probe.window, seconds)
        c.note(f"clients after the fault: {tally.line()}")

    async with anyio.create_task_group() as tg:
        for probe in probes:
            tg.start_soon(one, probe)


async def _scenario(c: ChaosCluster, fault: str, duration_s: float, seed: int, clients_s: float = 0.0) -> Verdicts:
    rng = random.Random(seed)
    writer = Writer(c)
    faults = 0
    bootstrap = ",".join(c.addr(i) for i in range(1, c.n + 1))
    probes: list[AdminProbe] = []
    async with anyio.create_task_group() as tg:
        await writer.register_broker(tg)
        if clients_s > 0:   # once the quorum serves: kafka-python's client bootstraps in its constructor
            probes = [await anyio.to_thread.run_sync(AdminProbe, kind, bootstrap) for kind in available_kinds()]
        stop = anyio.Event()
        tg.start_soon(writer.run, tg, stop)
        if probes:
            await _probe_clients(c, probes, 1.0)         # each client learns the controller before any fault
            for probe in probes:
                probe.total = Tally(probe.kind)
        deadline = time.monotonic() + duration_s
        # one cycle may overrun the deadline by its own length (waits and client probes included)
        with anyio.fail_after(duration_s + 90 + clients_s * max(1, int(duration_s))):
            while time.monotonic() < deadline:
                await anyio.sleep(rng.uniform(0.5, 2.0))
                await NEMESES[fault](c, rng)
                faults += 1
                if probes:
                    await _probe_clients(c, probes, clients_s)
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
    for probe in probes:
        probe.close()
    return Verdicts(len(writer.acked), lost, same, compared, c.deaths, gap, faults,
                    writer.indeterminate, unhealed, len(c.disk_stops), gap_from,
                    [probe.total for probe in probes])


def run_chaos(root: Path, fault: str, voters: int, duration_s: float, seed: int = 0,
              disk_mb: int = 64, keep: Path | None = None, clients_s: float = 0.0) -> Verdicts:
    """Everything a run needs, torn down afterwards (processes, namespaces, mounts). ``clients_s`` > 0:
    after each fault every admin client kind creates topics for that long (``admin_probe``)."""
    c = ChaosCluster(root, voters, disk_mb)
    try:
        c.start_all()
        return anyio.run(_scenario, c, fault, duration_s, seed, clients_s)
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
    p.add_argument("--clients", type=float, default=0.0, metavar="SECONDS",
                   help="after each fault, create topics through every admin client kind for SECONDS and count "
                        "NOT_CONTROLLER answers beyond each client's first")
    args = p.parse_args()
    from chaos.netlab import lab_available

    reason = lab_available()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kraftwire-chaos-") as tmp:
        v = run_chaos(Path(tmp), args.fault, args.voters, args.duration, args.seed, keep=args.keep,
                      clients_s=args.clients)
    print(f"{args.fault} voters={args.voters} duration={args.duration:.0f}s seed={args.seed}: {v.line()}")
    for tally in v.clients:
        print(f"  {tally.line()}")
    for d in v.deaths:
        print(f"  death: {d}")
    if v.lost:
        print(f"  lost: {v.lost[:20]}")
    return 0 if v.ok else 1


if __name__ == "__main__":
    sys.exit(main())
