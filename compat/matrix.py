"""The checks of the matrix and its table: client × check → pass / fail / skip(reason)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from compat.clients import ASSIGN, BROKER, DESCRIBE, GROUP, Client, DriverFailed, Unavailable
from compat.cluster import Quorum
from compat.expected import LogContents, committed_records

CHECK_TITLES = {ASSIGN: "(a) assign, earliest", GROUP: "(b) group, commit, resume", DESCRIBE: "(c) describe",
                BROKER: "(d) via a broker", "decode": "decode segments"}
CHECKS = (ASSIGN, GROUP, DESCRIBE, BROKER)
MAX_ASSIGN_RECORDS = 200
GROUP_BATCH = 20
BROKER_BATCH = 10


@dataclass
class Result:
    status: str  # "pass" | "fail" | "skip" | "n/a"
    detail: str = ""

    def cell(self) -> str:
        return self.status if self.status in ("pass", "n/a") else f"{self.status} ({self.detail})"


@dataclass
class Row:
    client: str
    version: str
    results: dict[str, Result] = field(default_factory=dict)


class Matrix:
    """Runs the checks of each client against one running quorum."""

    def __init__(self, quorum: Quorum, cache: Path, timeout_s: float = 45.0) -> None:
        self.quorum = quorum
        self.cache = cache
        self.timeout_s = timeout_s

    # -- the truth the clients are compared with ------------------------------------------------
    def expected(self, at_least: int) -> LogContents:
        """Committed records from the leader's segments, waiting until ``at_least`` of them exist."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            status = self.quorum.wait_ready()
            contents = committed_records(self.quorum.log_dir(status.leader_id), status.high_watermark)
            if len(contents.records) >= at_least or time.monotonic() > deadline:
                return contents
            time.sleep(0.5)

    # -- one client -------------------------------------------------------------------------------
    def run_client(self, client: Client) -> Row:
        try:
            client.prepare(self.cache, 300.0)
            version = client.version()
        except Unavailable as e:
            return Row(client.name, "-", {c: Result("skip", str(e)) for c in CHECKS})
        except DriverFailed as e:
            return Row(client.name, "-", {c: Result("fail", f"setup: {e}") for c in CHECKS})
        row = Row(client.name, version)
        for check, fn in ((ASSIGN, self.check_assign), (GROUP, self.check_group), (DESCRIBE, self.check_describe),
                          (BROKER, self.check_broker)):
            if check in client.not_supported:
                row.results[check] = Result("skip", client.not_supported[check])
                continue
            try:
                row.results[check] = fn(client)
            except DriverFailed as e:
                row.results[check] = Result("fail", str(e))
        return row

    def check_assign(self, client: Client) -> Result:
        """(a) assign partition 0, seek to the beginning: every committed record in order, controls skipped."""
        truth = self.expected(10)
        want = truth.records[:MAX_ASSIGN_RECORDS]
        out = client.run(ASSIGN, self.quorum.bootstrap, "", len(want), self.timeout_s)
        return compare(out.records, want, truth)

    def check_group(self, client: Client) -> Result:
        """(b) subscribe with a new group from earliest, commit, close; a new consumer resumes after it."""
        truth = self.expected(2 * GROUP_BATCH)
        group = f"compat-{client.name.replace(' ', '-')}-{uuid.uuid4().hex[:8]}"
        first = client.run(GROUP, self.quorum.bootstrap, group, GROUP_BATCH, self.timeout_s)
        verdict = compare(first.records, truth.records[:GROUP_BATCH], truth)
        if verdict.status != "pass":
            return Result("fail", f"first consumer: {verdict.detail}")
        second = client.run(GROUP, self.quorum.bootstrap, group, GROUP_BATCH, self.timeout_s)
        verdict = compare(second.records, truth.records[GROUP_BATCH:2 * GROUP_BATCH], truth)
        if verdict.status != "pass":
            return Result("fail", f"after restart: {verdict.detail}")
        return Result("pass", f"group {group}: offsets {first.records[0][0]}..{first.records[-1][0]}, committed, "
                              f"resumed at {second.records[0][0]}")

    def check_describe(self, client: Client) -> Result:
        """(c) whatever the client's admin API tells about the cluster and quorum matches the quorum."""
        status = self.quorum.wait_ready()
        out = client.run(DESCRIBE, self.quorum.bootstrap, "", 1, self.timeout_s)
        d = out.describe
        if d is None:
            return Result("fail", "the client printed no description")
        truth = {"cluster_id": self.quorum.cluster_id, "leader_id": status.leader_id, "voters": status.voters}
        problems = []
        for key, value in d.items():
            if key.endswith("cluster_id"):
                ok = value == truth["cluster_id"]
            elif key.endswith("controller_id") or key.endswith("leader_id"):
                ok = value == truth["leader_id"]
            elif key.endswith("nodes") or key in ("voters", "replicas", "isr"):
                ok = sorted(value) == truth["voters"]
            elif key == "high_watermark":
                ok = value >= status.high_watermark
            elif key == "leader_epoch":
                ok = value >= status.leader_epoch
            else:
                continue
            if not ok:
                problems.append(f"{key}={value!r}")
        if problems:
            return Result("fail", f"disagrees with the quorum ({truth}): " + ", ".join(problems))
        return Result("pass", ", ".join(f"{k}={v}" for k, v in d.items()))


    def check_broker(self, client: Client) -> Result:
        """(d) through a broker: a group consumer reads from earliest and commits (the commit must be on the
        voter coordinating the group); clients with a quorum API also describe the quorum through the broker."""
        if not self.quorum.broker_ids:
            return Result("skip", "the quorum runs without a broker (--no-broker)")
        broker = self.quorum.broker_ids[0]
        addr = self.quorum.addr(broker)
        truth = self.expected(BROKER_BATCH)
        group = f"compat-broker-{client.name.replace(' ', '-')}-{uuid.uuid4().hex[:8]}"
        out = client.run(GROUP, addr, group, BROKER_BATCH, self.timeout_s)
        verdict = compare(out.records, truth.records[:BROKER_BATCH], truth)
        if verdict.status != "pass":
            return Result("fail", f"group read through broker {broker}: {verdict.detail}")
        owner, committed = self.quorum.committed_offset(group)
        # At least past what the client printed; a client may also commit records it fetched and handed to its
        # loop but did not print before exiting (kcat -c N with librdkafka's auto-commit), never past the log.
        lo, hi = out.records[-1][0] + 1, truth.records[-1][0] + 1
        if committed is None or not lo <= committed <= hi:
            return Result("fail", f"committed offset {committed} on voter {owner}, expected {lo}..{hi}")
        detail = (f"broker {broker}: group {group} offsets {out.records[0][0]}..{out.records[-1][0]}, "
                  f"committed {committed} on voter {owner}")
        if client.broker_describe is None:
            return Result("pass", detail)
        status = self.quorum.wait_ready()
        d = client.run(client.broker_describe, addr, "", 1, self.timeout_s).describe
        if d is None:
            return Result("fail", "the client printed no description")
        want = {"cluster_id": self.quorum.cluster_id, "leader_id": status.leader_id, "voters": status.voters,
                "nodes": self.quorum.broker_ids}
        problems = [f"{k}={d.get(k)!r}" for k, v in want.items() if k in d and d[k] != v]
        if d.get("controller_id") not in self.quorum.broker_ids:  # KRaft clients are told a broker
            problems.append(f"controller_id={d.get('controller_id')!r}")
        if d.get("high_watermark", status.high_watermark) < status.high_watermark:
            problems.append(f"high_watermark={d['high_watermark']}")
        if "observers" in d and broker not in d["observers"]:
            problems.append(f"observers={d['observers']}")
        if problems:
            return Result("fail", f"describe through broker {broker} disagrees ({want}): " + ", ".join(problems))
        return Result("pass", f"{detail}; described: " + ", ".join(f"{k}={v}" for k, v in d.items()))


def compare(got: list[tuple[int, str | None]], want: list[tuple[int, str | None]], truth: LogContents) -> Result:
    """Pass when the client read exactly ``want``: same offsets, same values, same order."""
    if got == want:
        skipped = [o for o in truth.control_offsets if want and want[0][0] <= o <= want[-1][0]]
        return Result("pass", f"{len(got)} records, offsets {want[0][0]}..{want[-1][0]}, "
                              f"{len(skipped)} control records skipped")
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        if g != w:
            kind = "control record delivered" if g[0] in truth.control_offsets else "mismatch"
            return Result("fail", f"{kind} at record {i}: got offset {g[0]} value {str(g[1])[:24]}, "
                                  f"expected offset {w[0]} value {str(w[1])[:24]}")
    return Result("fail", f"got {len(got)} records, expected {len(want)}")


def render(rows: list[Row], checks: list[str]) -> str:
    """The table as GitHub markdown (readable in a terminal too)."""
    header = ["client", "version"] + [CHECK_TITLES.get(c, c) for c in checks]
    lines = [header, ["---"] * len(header)]
    for row in rows:
        lines.append([row.client, row.version] + [row.results.get(c, Result("n/a")).cell() for c in checks])
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def details(rows: list[Row]) -> str:
    out = []
    for row in rows:
        for check, r in row.results.items():
            if r.detail:
                out.append(f"- {row.client} {check}: {r.status}: {r.detail}")
    return "\n".join(out)
