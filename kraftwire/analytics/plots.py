"""PNG charts of the analytics results (matplotlib, headless). Inputs are small collected rows."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STATE_COLORS = {"unfenced": "#2e7d32", "fenced": "#c62828", "controlled_shutdown": "#ef6c00"}
CAUSE_COLORS = {"registration": "#90a4ae", "controlled_shutdown": "#ef6c00", "fenced_while_active": "#c62828"}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).replace(tzinfo=None)


def _time_axis(ax: Any) -> None:
    import matplotlib.dates as mdates

    ax.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M"))
    ax.set_xlabel("time (UTC)")
    for label in ax.get_xticklabels():
        label.set_rotation(30)
        label.set_horizontalalignment("right")


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def timeline(intervals: Sequence[Any], elections: Sequence[Any], end_ms: int, path: Path) -> Path:
    """Broker states as horizontal bars, one lane per broker; Raft elections as vertical lines."""
    import matplotlib.dates as mdates
    from matplotlib.patches import Patch

    plt = _plt()
    brokers = sorted({r["broker_id"] for r in intervals})
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.6 * max(1, len(brokers))))
    lane = {b: i for i, b in enumerate(brokers)}
    for r in intervals:
        if r["state"] not in STATE_COLORS:
            continue
        start = mdates.date2num(_dt(r["start_ms"]))
        stop = mdates.date2num(_dt(r["end_ms"] if r["end_ms"] is not None else end_ms))
        ax.broken_barh([(start, max(stop - start, 1e-6))], (lane[r["broker_id"]] - 0.35, 0.7),
                       facecolors=STATE_COLORS[r["state"]])
    for e in elections:
        x = _dt(e["timestamp_ms"])
        ax.axvline(x, color="#1565c0", linestyle="--", linewidth=1)
        ax.text(x, len(brokers) - 0.4, f" epoch {e['epoch']}\n leader {e['leader_id']}", color="#1565c0",
                fontsize=8, va="bottom")
    ax.set_yticks(range(len(brokers)), [f"broker {b}" for b in brokers])
    ax.set_ylim(-0.7, len(brokers) + 0.4)
    ax.xaxis_date()
    _time_axis(ax)
    ax.set_title("Broker membership and Raft elections")
    handles = [Patch(color=c, label=s) for s, c in STATE_COLORS.items()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    return _save(fig, path)


def fencing(episodes: Sequence[Any], end_ms: int, path: Path) -> Path:
    """Each fenced interval as a bar of its duration (open ones up to the end of the log)."""
    from matplotlib.patches import Patch

    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.35 * max(1, len(episodes))))
    labels = []
    for i, r in enumerate(episodes):
        dur = (r["end_ms"] if r["end_ms"] is not None else end_ms) - r["start_ms"]
        ax.barh(i, dur / 60_000, color=CAUSE_COLORS.get(r["cause"], "#555555"),
                hatch="//" if r["end_ms"] is None else None)
        labels.append(f"broker {r['broker_id']} @ {_dt(r['start_ms']):%m-%d %H:%M}")
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("fenced for (minutes)")
    ax.set_title("Fencing episodes")
    ax.legend(handles=[Patch(color=c, label=s) for s, c in CAUSE_COLORS.items()], fontsize=8)
    return _save(fig, path)


def elections(rows: Sequence[Any], path: Path) -> Path:
    """Epoch over time (steps) with the elected leader, and the leaderless gap before each election."""
    plt = _plt()
    fig, (ax, gx) = plt.subplots(2, 1, figsize=(9, 5), sharex=True)
    xs = [_dt(r["timestamp_ms"]) for r in rows]
    ax.step(xs, [r["epoch"] for r in rows], where="post", color="#1565c0")
    for x, r in zip(xs, rows, strict=True):
        ax.annotate(f"leader {r['leader_id']}", (x, r["epoch"]), fontsize=8, xytext=(3, 3),
                    textcoords="offset points")
    ax.set_ylabel("Raft epoch")
    ax.set_title("Raft leader elections")
    gx.bar(xs, [(r["gap_ms"] or 0) / 60_000 for r in rows], width=0.004, color="#c62828")
    gx.set_ylabel("gap before (min)")
    _time_axis(gx)
    return _save(fig, path)


def isr_churn(hourly: Sequence[Any], top: Sequence[Any], path: Path) -> Path:
    """Cluster-wide shrinks/expands per hour, and the top partitions' totals."""
    plt = _plt()
    fig, (hx, tx) = plt.subplots(2, 1, figsize=(9, 6.5))
    hours = sorted({r["hour_ms"] for r in hourly})
    shrinks = [sum(r["shrinks"] for r in hourly if r["hour_ms"] == h) for h in hours]
    expands = [sum(r["expands"] for r in hourly if r["hour_ms"] == h) for h in hours]
    xs = [_dt(h) for h in hours]
    width = 1 / 24 * 0.8  # most of an hour, in days
    hx.bar(xs, shrinks, width=width, color="#c62828", label="shrinks", align="edge")
    hx.bar(xs, expands, width=width, bottom=shrinks, color="#2e7d32", label="expands", align="edge")
    hx.set_ylabel("ISR changes per hour")
    hx.set_title("ISR churn")
    hx.legend(fontsize=8)
    _time_axis(hx)
    names = [f"{r['topic_name']}-{r['partition']}" for r in top]
    tx.barh(names, [r["shrinks"] for r in top], color="#c62828", label="shrinks")
    tx.barh(names, [r["expands"] for r in top], left=[r["shrinks"] for r in top], color="#2e7d32",
            label="expands")
    tx.invert_yaxis()
    tx.set_xlabel("ISR changes over the whole log")
    tx.set_title(f"Top {len(top)} partitions by ISR churn")
    return _save(fig, path)


def topics(rows: Sequence[Any], end_ms: int, path: Path) -> Path:
    """Each topic's lifetime: created to deleted (red end) or to the end of the log."""
    plt = _plt()
    import matplotlib.dates as mdates

    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.4 * max(1, len(rows))))
    for i, r in enumerate(rows):
        start = mdates.date2num(_dt(r["created_ms"] if r["created_ms"] is not None else end_ms))
        stop = mdates.date2num(_dt(r["deleted_ms"] if r["deleted_ms"] is not None else end_ms))
        ax.broken_barh([(start, max(stop - start, 1e-6))], (i - 0.3, 0.6),
                       facecolors="#c62828" if r["deleted_ms"] is not None else "#1565c0")
    ax.set_yticks(range(len(rows)), [f"{r['topic_name']} ({r['partitions'] or 0}p)" for r in rows])
    ax.invert_yaxis()
    ax.xaxis_date()
    _time_axis(ax)
    ax.set_title("Topic lifetimes (red: deleted)")
    return _save(fig, path)
