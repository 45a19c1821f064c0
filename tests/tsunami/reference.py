"""The NDBC DART tsunami detection algorithm in plain Python, from the description in
../shared/data/dart/README.md and the semantics fixed in queries/tsunami/README.md: the
independent reference the registered queries of queries/tsunami/ are checked against, sample
by sample. No Spark, no engine code: it reads the raw NDBC file itself.

Reading the raw file (the same rules as ``rsp_jobs.ingest.dart``, written again here):
``#`` lines are the header; a row is ``YY MM DD hh mm ss T HEIGHT`` (UTC); ``9999.000`` is
missing and gives no sample; of the rows with a value at one time the finest sample type wins
(3 = 15 s over 2 = 1 min over 1 = 15 min), the first line among equal types.

All times are epoch milliseconds.
"""
from __future__ import annotations

import calendar
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

MISSING = "9999.000"
MINUTE = 60_000
HOUR = 60 * MINUTE
WEIGHTS = (1.16818457031250, -0.28197558593750, 0.14689746093750, -0.03310644531250)
THRESHOLD = 0.030  # metres
# H_i averages the samples in [t - 10.25 min - i h, t - 0.25 min - i h)
MEAN_FROM, MEAN_TO = 10 * MINUTE + 15_000, 15_000
PAIR_WITHIN = 15 * MINUTE  # an exceedance pairs with one in [t - 15 min, t)
EVENT_QUIET = 3 * HOUR  # an event begins at a pair with no pair in [t - 3 h, t)


@dataclass(frozen=True)
class Sample:
    ms: int
    height: float
    sample_type: int
    line: int


@dataclass(frozen=True)
class Prediction:
    ms: int
    height: float
    means: tuple[float, float, float, float]
    prediction: float
    residual: float
    exceeds: bool


@dataclass(frozen=True)
class Event:
    ms: int  # the sample S that completed the first pair
    height: float
    prediction: float
    residual: float
    earlier_ms: int  # the exceedance T it paired with


def read_samples(path: Path, start_ms: Optional[int] = None, end_ms: Optional[int] = None) -> list[Sample]:
    """The samples of one raw NDBC file with ``start <= t < end``, in time order."""
    by_time: dict[int, Sample] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 8:
                raise ValueError(f"{path}:{number}: expected 8 fields, found {len(fields)}")
            year, month, day, hour, minute, second, kind = (int(f) for f in fields[:7])
            ms = calendar.timegm((year, month, day, hour, minute, second)) * 1000
            if fields[7] == MISSING or (start_ms is not None and ms < start_ms) or \
                    (end_ms is not None and ms >= end_ms):
                continue
            sample = Sample(ms, float(fields[7]), kind, number)
            known = by_time.get(ms)
            if known is None or kind > known.sample_type:
                by_time[ms] = sample
    return [by_time[ms] for ms in sorted(by_time)]


def predict(samples: list[Sample]) -> list[Prediction]:
    """Every sample that has all four averages, with its prediction and residual."""
    times = [s.ms for s in samples]
    heights = [s.height for s in samples]
    out = []
    for sample in samples:
        means = []
        for i in range(4):
            lo = bisect_left(times, sample.ms - MEAN_FROM - i * HOUR)
            hi = bisect_left(times, sample.ms - MEAN_TO - i * HOUR)
            if hi == lo:
                break
            means.append(sum(heights[lo:hi]) / (hi - lo))
        if len(means) < 4:
            continue
        # left to right, as the query's expression is evaluated
        prediction = WEIGHTS[0] * means[0] + WEIGHTS[1] * means[1] + WEIGHTS[2] * means[2] + WEIGHTS[3] * means[3]
        residual = sample.height - prediction
        out.append(Prediction(sample.ms, sample.height, tuple(means), prediction, residual,
                              abs(residual) > THRESHOLD))
    return out


def pairs(predictions: list[Prediction]) -> dict[int, int]:
    """{S: T}: each exceedance S with an earlier exceedance T in [S - 15 min, S) (the latest
    such T; an event's S has exactly one)."""
    exceeding = [p.ms for p in predictions if p.exceeds]
    found = {}
    for i, s in enumerate(exceeding):
        earlier = [t for t in exceeding[:i] if s - PAIR_WITHIN <= t < s]
        if earlier:
            found[s] = earlier[-1]
    return found


def events(predictions: list[Prediction]) -> list[Event]:
    """The detections: a pair S with no pair in [S - 3 h, S)."""
    by_ms = {p.ms: p for p in predictions}
    paired = pairs(predictions)
    starts = sorted(paired)
    out = []
    for s in starts:
        if any(s - EVENT_QUIET <= other < s for other in starts):
            continue
        p = by_ms[s]
        out.append(Event(s, p.height, p.prediction, p.residual, paired[s]))
    return out
