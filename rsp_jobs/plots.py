"""Plots of what the platform computed, read back from the frame store (``rsp plot``, the demo):

- a DART station: observed water-column height and the tide prediction over time, the residual
  against the detection threshold, and the detections (tsunami alerts) marked;
- traffic: every segment's congestion level over a day as a heat map, with the traffic alerts
  (congestion, silence) marked on their segment and time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from sqlalchemy import Engine, func, select

from rsp_jobs.alerts.build import solutions
from rsp_jobs.alerts.store import list_alerts
from rsp_jobs.errors import InputError
from rsp_jobs.results import WindowResult
from rsp_jobs.store.models import Frame, FrameTriple, StoredResult, Stream
from rsp_jobs.times import as_utc, parse_datetime

SOSA_RESULT = "<http://www.w3.org/ns/sosa/hasSimpleResult>"
CONGESTION = "<urn:rsp:ns:traffic/congestion>"
THRESHOLD_M = 0.03


def _series(
    engine: Engine, stream: str, predicate: str, start: datetime | None, end: datetime | None
):
    """(time, subject, value) of a stream's numeric ``predicate`` triples, by frame time."""
    query = (
        select(Frame.ts, FrameTriple.s, FrameTriple.o_num)
        .join(FrameTriple, FrameTriple.frame_id == Frame.id)
        .join(Stream, Stream.id == Frame.stream_id)
        .where(Stream.iri == stream, FrameTriple.p == predicate, FrameTriple.o_num.is_not(None))
    )
    if start is not None:
        query = query.where(Frame.ts >= start)
    if end is not None:
        query = query.where(Frame.ts < end)
    with engine.connect() as conn:
        return conn.execute(query.order_by(Frame.ts)).all()


def _predictions(
    engine: Engine, query_iri: str, sensor: str
) -> list[tuple[datetime, float, float]]:
    """(sample time, prediction, residual) from the prediction query's stored results."""
    with engine.connect() as conn:
        stored = conn.execute(
            select(StoredResult.form, StoredResult.payload)
            .where(StoredResult.query_iri == query_iri)
            .order_by(StoredResult.window_close)
        ).all()
    rows = []
    for r in stored:
        for row in solutions(WindowResult.from_json(r.payload, r.form)):
            if row.get("sensor") == sensor and "prediction" in row:
                rows.append(
                    (parse_datetime(row["time"]), float(row["prediction"]), float(row["residual"]))
                )
    return sorted(rows)


@dataclass
class DartView:
    """What a DART plot shows, read from the store: samples (time, height), the prediction query's
    (sample time, prediction, residual) and the station's tsunami alerts, all within the range."""

    samples: list[tuple[datetime, float]]
    predictions: list[tuple[datetime, float, float]]
    detections: list[dict]
    start: datetime | None = None  # the range shown, ``[start, end)``
    end: datetime | None = None


# Decided: without --from/--to a DART plot shows where something happened: from two
# hours before the station's first detection to four after its last (a tsunami's wave train lasts
# hours), or with no detection its last day of samples.
BEFORE_DETECTION, AFTER_DETECTION, QUIET_DAY = (
    timedelta(hours=2),
    timedelta(hours=4),
    timedelta(days=1),
)


def default_range(engine: Engine, station: str) -> tuple[datetime, datetime]:
    """The range ``rsp plot dart`` shows when none is given (see the decision above)."""
    from rsp_jobs.ingest import dart

    sensor = str(dart.sensor_iri(station))
    detected = [
        parse_datetime(a["event_time"])
        for a in list_alerts(engine, kind="tsunami")
        if a["subject"] == sensor
    ]
    if detected:
        return min(detected) - BEFORE_DETECTION, max(detected) + AFTER_DETECTION
    with engine.connect() as conn:
        last = conn.scalar(
            select(func.max(Frame.ts))
            .join(Stream, Stream.id == Frame.stream_id)
            .where(Stream.iri == dart.stream_iri(station))
        )
    if last is None:
        raise InputError(
            f"no stored samples of DART {station} (stream <{dart.stream_iri(station)}>)"
        )
    last = as_utc(last)
    return last - QUIET_DAY, last + timedelta(microseconds=1)


def dart_view(
    engine: Engine,
    station: str,
    start: datetime | None = None,
    end: datetime | None = None,
    prediction_query: str = "urn:rsp:query:dart_prediction",
) -> DartView:
    """What the plot of ``station`` shows over ``[start, end)`` (neither given: ``default_range``)."""
    from rsp_jobs.ingest import dart

    if start is None and end is None:
        start, end = default_range(engine, station)
    samples = [
        (s.ts, s.o_num) for s in _series(engine, dart.stream_iri(station), SOSA_RESULT, start, end)
    ]
    if not samples:
        raise InputError(
            f"no stored samples of DART {station} (stream <{dart.stream_iri(station)}>) in that range"
        )
    sensor = str(dart.sensor_iri(station))  # results and alerts hold plain strings, not URIRefs

    def within(moment: datetime) -> bool:
        return (start is None or moment >= start) and (end is None or moment < end)

    predictions = [p for p in _predictions(engine, prediction_query, sensor) if within(p[0])]
    detections = [
        a
        for a in list_alerts(engine, since=start, kind="tsunami")
        if a["subject"] == sensor and within(parse_datetime(a["event_time"]))
    ]
    return DartView(samples, predictions, detections, start, end)


def plot_dart(
    engine: Engine,
    station: str,
    out: Path,
    start: datetime | None = None,
    end: datetime | None = None,
    prediction_query: str = "urn:rsp:query:dart_prediction",
) -> Path:
    view = dart_view(engine, station, start, end, prediction_query)
    samples, predicted, alerts = view.samples, view.predictions, view.detections
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(12, 7), height_ratios=(2, 1))
    top.plot(
        [s[0] for s in samples],
        [s[1] for s in samples],
        ".",
        ms=2,
        color="tab:blue",
        label="observed height",
    )
    if predicted:
        top.plot(
            [p[0] for p in predicted],
            [p[1] for p in predicted],
            "-",
            lw=0.8,
            color="tab:orange",
            label="tide prediction",
        )
        bottom.plot(
            [p[0] for p in predicted],
            [p[2] for p in predicted],
            ".",
            ms=2,
            color="tab:purple",
            label="observed - predicted",
        )
    for limit in (THRESHOLD_M, -THRESHOLD_M):
        bottom.axhline(limit, color="tab:red", lw=0.8, ls="--")
    for i, alert in enumerate(alerts):
        when = parse_datetime(alert["event_time"])
        for axis in (top, bottom):
            axis.axvline(
                when, color="tab:red", lw=1.2, label="detection" if i == 0 and axis is top else None
            )
    top.set_ylabel("water column height (m)")
    bottom.set_ylabel("residual (m)")
    bottom.set_ylim(-0.3, 0.3)
    top.set_title(
        f"DART {station}: observed height, prediction and detections ({len(alerts)} detected)"
    )
    top.legend(loc="upper right")
    bottom.xaxis.set_major_formatter(mdates.DateFormatter("%m-%d %H:%M"))
    fig.autofmt_xdate()
    return _save(fig, out)


def plot_traffic(
    engine: Engine,
    day: datetime,
    out: Path,
    readings_stream: str = "urn:rsp:query:congestion_readings/stream",
) -> Path:
    start = day.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=day.tzinfo or UTC)
    end = start + timedelta(days=1)
    rows = _series(engine, readings_stream, CONGESTION, start, end)
    if not rows:
        raise InputError(
            f"no congestion readings stored in <{readings_stream}> on {start:%Y-%m-%d}"
        )
    segments = sorted({r.s for r in rows})
    times = sorted({r.ts for r in rows})
    column = {t: i for i, t in enumerate(times)}
    grid = [[float("nan")] * len(times) for _ in segments]
    for r in rows:
        grid[segments.index(r.s)][column[r.ts]] = r.o_num
    fig, axis = plt.subplots(figsize=(12, 0.25 * len(segments) + 2.5))
    x0, x1 = mdates.date2num(times[0]), mdates.date2num(times[-1] + timedelta(minutes=5))
    image = axis.imshow(
        grid,
        aspect="auto",
        interpolation="nearest",
        cmap="viridis",
        extent=(x0, x1, len(segments) - 0.5, -0.5),
    )
    fig.colorbar(image, ax=axis, label="congestion level (vehicles / m)")
    names = [s.strip("<>").rsplit("AarhusTrafficData", 1)[-1] for s in segments]
    axis.set_yticks(range(len(segments)), names, fontsize=7)
    marks = {"congestion": ("v", "tab:red"), "silence": ("x", "white")}
    for kind, (marker, color) in marks.items():
        hits = [
            a
            for a in list_alerts(engine, since=start, kind=kind)
            if f"<{a['subject']}>" in segments and a["event_time"] < end.isoformat()
        ]
        if hits:
            axis.scatter(
                [mdates.date2num(parse_datetime(a["event_time"])) for a in hits],
                [segments.index(f"<{a['subject']}>") for a in hits],
                marker=marker,
                color=color,
                s=30,
                label=f"{kind} alerts ({len(hits)})",
            )
    axis.xaxis_date()
    axis.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))
    axis.set_title(f"Aarhus traffic {start:%Y-%m-%d}: congestion per segment, alerts marked")
    if axis.get_legend_handles_labels()[0]:
        axis.legend(loc="upper right", fontsize=8)
    return _save(fig, out)


def _save(fig, out: Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
