"""Run analytics jobs end to end: Parquet tables, PNG charts and a short text summary per job."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from kraftwire.analytics import JOBS, jobs, plots


@dataclass
class Report:
    """What a run wrote: tables (name -> Parquet path), charts and summary lines."""

    out: Path
    tables: dict[str, Path] = field(default_factory=dict)
    charts: list[Path] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def fmt_duration(ms: int | None) -> str:
    if ms is None:
        return "open"
    s = ms // 1000
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else (f"{m}m{sec:02d}s" if m else f"{ms / 1000:g}s")


def fmt_time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load(spark: Any, *, log_dir: str | None = None, bootstrap: str | None = None,
         partitions: int | None = None) -> DataFrame:
    """The raw rows of a log directory or a live node."""
    reader = spark.read.format("kraftwire")
    if bootstrap:
        reader = reader.option("bootstrap", bootstrap)
        if partitions:
            reader = reader.option("partitions", str(partitions))
        return reader.load()
    return reader.load(log_dir)


class Runner:
    """Jobs over one events frame; results are computed once and reused across jobs."""

    def __init__(self, df: DataFrame, out: Path, top_n: int = 10) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.top_n = top_n
        self.base = jobs.baseline(df)
        self.ev = jobs.events(df, self.base).persist()
        agg = self.ev.agg(F.max("timestamp_ms").alias("end"), F.count("*").alias("n")).collect()[0]
        self.end_ms: int = agg["end"] or 0
        self.records: int = agg["n"]
        self.report = Report(self.out)
        self._cache: dict[str, Any] = {}

    def _table(self, name: str, df: DataFrame) -> list[Any]:
        path = self.out / f"{name}.parquet"
        df.write.mode("overwrite").parquet(str(path))
        self.report.tables[name] = path
        return df.collect()

    def _get(self, name: str) -> Any:
        if name not in self._cache:
            if name == "membership":
                self._cache[name] = self._table("membership", jobs.membership(self.ev))
            elif name == "elections":
                self._cache[name] = self._table("elections", jobs.elections(self.ev))
            elif name == "fencing":
                self._cache[name] = self._table("fencing", jobs.fencing(self.ev))
            elif name == "isr-churn":
                hourly, top = jobs.isr_churn(self.ev, self.top_n)
                self._cache[name] = (self._table("isr_churn_hourly", hourly), self._table("isr_churn_top", top))
            elif name == "topics":
                self._cache[name] = self._table("topics", jobs.topics(self.ev))
            else:
                raise ValueError(f"unknown job {name!r}; choose from {', '.join(JOBS)}")
        return self._cache[name]

    def run(self, names: Sequence[str], progress: Callable[[str], None] | None = None) -> Report:
        head = f"log: {self.records} records up to {fmt_time(self.end_ms)}"
        if self.base.snapshot_end is not None:
            head += f"; baseline snapshot at offset {self.base.snapshot_end} (log starts at {self.base.log_start})"
        elif self.base.log_start:
            head += f"; WARNING: the log starts at offset {self.base.log_start} and no snapshot covers it"
        self.report.summary.append(head)
        for name in names:
            if progress is not None:
                progress(name)
            getattr(self, "_job_" + name.replace("-", "_"))()
        (self.out / "summary.txt").write_text("\n".join(self.report.summary) + "\n")
        return self.report

    def _chart(self, path: Path) -> None:
        self.report.charts.append(path)

    # -- jobs -----------------------------------------------------------------------------------------------
    def _job_membership(self) -> None:
        rows = self._get("membership")
        elections = self._get("elections")
        self._chart(plots.timeline(rows, elections, self.end_ms, self.out / "membership.png"))
        regs = [r for r in rows if r["state"] == "registered"]
        current = {r["broker_id"]: r["state"] for r in rows if r["state"] != "registered" and r["end_ms"] is None}
        gone = sorted({r["broker_id"] for r in regs if r["ended_by"] == "unregistered"} - set(current))
        by_state: dict[str, list[int]] = {}
        for b, s in sorted(current.items()):
            by_state.setdefault(s, []).append(b)
        now = "; ".join(f"{s}: {', '.join(map(str, bs))}" for s, bs in sorted(by_state.items())) or "none"
        self.report.summary.append(
            f"membership: {len({r['broker_id'] for r in regs})} brokers, {len(regs)} registrations; "
            f"at the end {now}" + (f"; unregistered: {', '.join(map(str, gone))}" if gone else ""))

    def _job_fencing(self) -> None:
        rows = self._get("fencing")
        self._chart(plots.fencing(rows, self.end_ms, self.out / "fencing.png"))
        real = [r for r in rows if r["cause"] != "registration"]
        line = (f"fencing: {len(real)} episodes after being unfenced "
                f"({len(rows) - len(real)} more while registering)")
        if real:
            worst = max(real, key=lambda r: (r["end_ms"] or self.end_ms) - r["start_ms"])
            line += (f"; longest {fmt_duration(worst['duration_ms'])} broker {worst['broker_id']} "
                     f"from {fmt_time(worst['start_ms'])} ({worst['cause']})")
        still = sorted({r["broker_id"] for r in rows if r["end_ms"] is None})
        line += f"; fenced at the end: {', '.join(map(str, still)) or 'none'}"
        self.report.summary.append(line)

    def _job_elections(self) -> None:
        rows = self._get("elections")
        self._chart(plots.elections(rows, self.out / "elections.png"))
        if not rows:
            self.report.summary.append("elections: no LeaderChange records")
            return
        skipped = sum(r["epochs_skipped"] or 0 for r in rows)
        line = (f"elections: {len(rows)} (epochs {rows[0]['epoch']}..{rows[-1]['epoch']}; "
                f"epochs that elected nobody: {skipped})")
        gaps = [r for r in rows if r["gap_ms"] is not None]
        if gaps:
            worst = max(gaps, key=lambda r: r["gap_ms"])
            line += (f"; longest gap {fmt_duration(worst['gap_ms'])} before epoch {worst['epoch']} "
                     f"(leader {worst['leader_id']})")
        self.report.summary.append(line)

    def _job_isr_churn(self) -> None:
        hourly, top = self._get("isr-churn")
        self._chart(plots.isr_churn(hourly, top, self.out / "isr-churn.png"))
        shrinks = sum(r["shrinks"] for r in hourly)
        expands = sum(r["expands"] for r in hourly)
        parts = len({(r["topic_id"], r["partition"]) for r in hourly})
        line = f"isr-churn: {shrinks} shrinks, {expands} expands on {parts} partitions"
        if top:
            line += f"; busiest {top[0]['topic_name']}-{top[0]['partition']} ({top[0]['changes']} changes)"
            per_hour: dict[int, int] = {}
            for r in hourly:
                per_hour[r["hour_ms"]] = per_hour.get(r["hour_ms"], 0) + r["shrinks"] + r["expands"]
            hour, n = max(sorted(per_hour.items()), key=lambda kv: kv[1])
            line += f"; busiest hour {fmt_time(hour)} ({n} changes)"
        self.report.summary.append(line)

    def _job_topics(self) -> None:
        rows = self._get("topics")
        self._chart(plots.topics(rows, self.end_ms, self.out / "topics.png"))
        live = [r["topic_name"] for r in rows if r["deleted_ms"] is None]
        deleted = [r["topic_name"] for r in rows if r["deleted_ms"] is not None]
        self.report.summary.append(
            f"topics: {len(rows)} seen, {len(deleted)} deleted ({', '.join(map(str, deleted)) or '-'}), "
            f"{len(live)} live ({', '.join(map(str, live)) or '-'})")


def run_jobs(df: DataFrame, names: Sequence[str], out: Path, top_n: int = 10,
             progress: Callable[[str], None] | None = None) -> Report:
    """Run ``names`` (from JOBS) over the raw rows ``df``, writing into ``out``; ``progress(name)`` is
    called as each job starts."""
    unknown = [n for n in names if n not in JOBS]
    if unknown:
        raise ValueError(f"unknown jobs {unknown}; choose from {', '.join(JOBS)}")
    runner = Runner(df, out, top_n)
    try:
        return runner.run(names, progress)
    finally:
        runner.ev.unpersist()
