"""Physical planning: an optimized window query (``rsp_jobs.compiler``) and the statistics of
the slice it reads become a ``WindowPlan``, the choices the Spark layer executes
(``rsp_jobs.engine.evaluate``) written out as named steps (``rsp explain --physical``).

Logical rewrites stay in ``rsp_jobs.algebra.optimize``, which marks what a query allows (its
windows may take solutions rather than triples: ``window_solutions``; a MIN or MAX may go by
rank: ``rank_extrema``). What depends on the data's size is chosen here, once, before Spark
runs anything:

- **what goes into windows**: solutions matched over the slice (``Spans``) where the optimizer
  allows it and no entailment derives triples per window; else the triples, copied into every
  window that holds them, entailed per window under RDFS;
- **where the slice's facts come from** (whether a triple repeats, the distinct times, the
  vocabulary, the terms a ranked MIN or MAX reads): the Parquet files, read by pyarrow on the
  driver, below ``FACTS_ON_DRIVER_BELOW_ROWS`` stream rows; Spark jobs above;
- **MIN and MAX**: by rank (a hash aggregate of numbers) where the terms are listed on the
  driver, else sorted by their ORDER BY key;
- **how expressions run**: interpreted on few shuffle partitions below
  ``RSP_INTERPRETED_BELOW_ROWS`` stream rows, Spark's generated code above
  (``rsp_jobs.spark.session``);
- **its size**: an evaluation past ``RSP_MAX_WINDOWS`` closes or ``RSP_MAX_WINDOW_ROWS``
  window rows is refused here (``check_size``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rsp_jobs import settings
from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.explain import expr
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.algebra.regimes import check_regime
from rsp_jobs.algebra.schedule import Schedule, schedule
from rsp_jobs.errors import InputError
from rsp_jobs.language import ast
from rsp_jobs.times import US_PER_MS as MS
from rsp_jobs.times import from_us, iso_ms
from rsp_jobs.tree import walk

# From this many stream rows on, Spark tells whether the slice repeats a triple and which
# windows hold data; below, pyarrow does, faster, in the driver's memory: three string columns
# of the span
FACTS_ON_DRIVER_BELOW_ROWS = 5_000_000
# Below this many stream rows an action runs interpreted, on few partitions: compiling Java for
# every stage costs more than a small batch computes (``rsp_jobs.spark.session``)
INTERPRETED_BELOW_ROWS = 50_000

SOLUTIONS, TRIPLES, ENTAILED = "solutions", "triples", "entailed triples"


class Statistics(Protocol):
    """What the planner asks of the lake before Spark reads it (``statistics.LakeStatistics``)."""

    def rows(self, streams: Iterable[str], start=None, end=None) -> int: ...

    def extent(self, streams: Iterable[str], start=None, end=None) -> tuple[int, int] | None: ...


@dataclass(frozen=True)
class SliceOf:
    """``Statistics`` of a slice of ``rows`` stream rows over the hour from ``first`` (µs): the
    plan a lake of that size would get (``rsp explain --physical --rows``, golden files)."""

    count: int
    first: int = 0

    def rows(self, streams: Iterable[str], start=None, end=None) -> int:
        return self.count

    def extent(self, streams: Iterable[str], start=None, end=None) -> tuple[int, int] | None:
        return (self.first, self.first + 3_600_000_000) if self.count else None


@dataclass(frozen=True)
class Step:
    """One named step of a physical plan, as ``rsp explain --physical`` prints it."""

    name: str
    detail: str


@dataclass(frozen=True)
class WindowPlan:
    """How one evaluation of a window query runs. ``after``/``until``: the closes it computes
    (µs, ``after`` excluded; ISTREAM and DSTREAM start one STEP earlier, to compare with the
    window before the first reported one); ``[start, until)``: the span of the lake it reads."""

    query: ContinuousQuery
    sched: Schedule
    after: int | None
    until: int | None
    start: int | None
    rows: int
    windowing: str
    facts_on_driver: bool
    ranked: frozenset[tuple[P.TermsAt, ...]]
    interpreted: bool

    @property
    def streams(self) -> list[str]:
        return [w.stream for w in self.query.windows]

    @property
    def simple(self) -> bool:
        return self.windowing != ENTAILED

    def steps(self) -> tuple[Step, ...]:
        span = span_text(self.start, self.until)
        windows = ", ".join(sorted({str(w.window) for w in self.query.windows}))
        facts = [
            "repeats",
            "times" if self.windowing == SOLUTIONS else None,
            "vocabulary",
            *(f"terms of ({_places(p)})" for p in sorted(self.ranked)),
        ]
        steps = [
            Step(
                "Read",
                f"{' '.join(f'<{s}>' for s in dict.fromkeys(self.streams))} {span}: the lake's "
                f"Parquet by stream and hour, {self.rows:,} stream rows",
            )
        ]
        if self.windowing == ENTAILED:
            steps.append(Step("Facts", "none: entailment may derive triples the files do not hold"))
        elif self.facts_on_driver:
            steps.append(
                Step(
                    "Facts",
                    f"{', '.join(f for f in facts if f)}: from the files by pyarrow on the "
                    "driver, beside the plan's first steps",
                )
            )
        else:
            steps.append(
                Step(
                    "Facts",
                    "vocabulary from the files' footers; "
                    + (
                        "repeats from the files' triple hashes on the driver (a Spark job where "
                        "a file has none), times by a Spark job"
                        if self.windowing == SOLUTIONS
                        else "repeats from the files' triple hashes on the driver (taken as "
                        "repeated where a file has none)"
                    ),
                )
            )
        if self.windowing == SOLUTIONS:
            tumbling = all(
                isinstance(w.window, ast.TimeWindow) and w.window.step_ms == w.window.range_ms
                for w in self.query.windows
            )
            steps += [
                Step(
                    "Match",
                    f"each BGP over the slice's triples {windows}, a solution keeping the "
                    "earliest and latest time of its triples (Spans)",
                ),
                Step(
                    "Join",
                    "keyed by window (tumbling: no copies)"
                    if tumbling
                    else "band join: solutions within RANGE, keyed by RANGE-long buckets",
                ),
                Step(
                    "Windows with data",
                    "from the slice's distinct times on the driver, a local relation"
                    if self.facts_on_driver
                    else "a Spark job over the slice's times",
                ),
                Step(
                    "Into windows",
                    "each solution into the closes that hold all its triples, "
                    "de-duplicated only where the slice repeats a triple",
                ),
            ]
        else:
            steps += [
                Step(
                    "Into windows",
                    f"each triple into every close {windows} that holds it"
                    + (
                        ", the triples no pattern names dropped first"
                        if self.query.predicates is not None
                        else ""
                    ),
                ),
                Step(
                    "Cache",
                    "the window rows, read by every pattern"
                    + (
                        "; each window's graph entailed with the background's closure"
                        if self.windowing == ENTAILED
                        else ""
                    ),
                ),
                Step(
                    "Join",
                    "equi-joins within a window, window-independent (background) rows "
                    "keyed to meet every window",
                ),
            ]
        paths = [n for n in walk(self.query.plan) if isinstance(n, P.Path)]
        if paths:
            steps.append(
                Step(
                    "Paths",
                    f"{len(paths)} property path(s) over the window rows and the background's "
                    "triples, their * and + to a fixpoint by semi-naive iteration, a Spark job a "
                    f"step, at most {settings.max_path_steps()} (RSP_MAX_PATH_STEPS); over the "
                    "background's predicates alone computed once for every window",
                )
            )
        for node in walk(self.query.plan):
            if isinstance(node, P.Group):
                for (agg, _var), places in zip(
                    node.aggregates, node.ranked or [()] * len(node.aggregates)
                ):
                    if agg.name in ("min", "max"):
                        how = (
                            "by rank: a hash aggregate of the terms' ranks, joined back to the terms"
                            if places in self.ranked
                            else "by ORDER BY key: a sort aggregate"
                        )
                        steps.append(Step("Extrema", f"{expr(agg)}: {how}"))
        steps += [
            Step(
                "Expressions",
                f"interpreted, few shuffle partitions (under {_interpreted_below():,} stream rows)"
                if self.interpreted
                else "Spark's generated code",
            ),
            Step(
                "Broadcasts",
                "explicit only (the background's selected triples)"
                if self.windowing == SOLUTIONS
                else "by size (Spark's default threshold)",
            ),
            Step(
                "Results",
                f"every close of {span_text(self.after, self.until, closes=True)} in one job, "
                f"{self.query.r2s}, as Arrow to the driver",
            ),
        ]
        return tuple(steps)

    def explain(self) -> str:
        return explain_steps(self.query.name, self.steps())


def explain_steps(name: str, steps: tuple[Step, ...]) -> str:
    """A physical plan as ``rsp explain --physical`` prints it: its title, then a step a line."""
    lines = [f"Physical plan of {name}"]
    lines += [f"  {step.name}: {step.detail}" for step in steps]
    return "\n".join(lines) + "\n"


def plan_windows(
    query: ContinuousQuery,
    stats: Statistics,
    after: int | None = None,
    until: int | None = None,
    t0_us: int = 0,
    entailment: str = "simple",
) -> WindowPlan:
    """The physical plan of evaluating the closes ``c`` of ``query`` with ``after < c <= until``
    (µs; None: unbounded) over what ``stats`` describes; refused past the size limits."""
    sched = schedule(query, t0_us)
    if after is not None and query.r2s != "RSTREAM" and sched.step:
        after -= sched.step  # ISTREAM/DSTREAM compare with the window before the first one
    lookback = lookback_us(query)
    start = None if after is None or lookback is None else after - lookback
    streams = [w.stream for w in query.windows]
    begin, end = (None if t is None else from_us(t) for t in (start, until))
    rows = stats.rows(streams, begin, end)
    check_size(
        query,
        sched,
        after,
        until,
        stats.extent(streams, begin, end),
        rows,
        settings.max_windows(),
        settings.max_window_rows(),
    )
    simple = check_regime(entailment) == "simple"
    windowing = ENTAILED if not simple else SOLUTIONS if query.window_solutions else TRIPLES
    on_driver = simple and rows < FACTS_ON_DRIVER_BELOW_ROWS
    ranked = (
        frozenset(
            places
            for node in walk(query.plan)
            if isinstance(node, P.Group)
            for places in node.ranked
            if places
        )
        if on_driver
        else frozenset()
    )
    return WindowPlan(
        query, sched, after, until, start, rows, windowing, on_driver, ranked, interpreted(rows)
    )


@dataclass(frozen=True)
class SharedPlan:
    """Window queries that read one slice of the lake (the same streams, and a bounded or an
    unbounded look-back alike), evaluated together: the slice read once, as wide as the widest
    of theirs, and cached; each query's ``WindowPlan`` run over it; all their results in one job
    (multi-query execution). A slice only one query reads runs as that query's plan alone.
    ``members``: each plan's place in the list it was planned from."""

    plans: tuple[WindowPlan, ...]
    members: tuple[int, ...]
    start: int | None
    until: int | None
    rows: int

    @property
    def streams(self) -> list[str]:
        return list(dict.fromkeys(s for p in self.plans for s in p.streams))

    def explain(self) -> str:
        """The shared steps, then each query's plan, its read taken from the shared scan."""
        if len(self.plans) == 1:
            return self.plans[0].explain()
        names = ", ".join(p.query.name for p in self.plans)
        shared = explain_steps(
            f"{len(self.plans)} queries together ({names})",
            (
                Step(
                    "Scan",
                    f"{' '.join(f'<{s}>' for s in self.streams)} "
                    f"{span_text(self.start, self.until)}: the lake's Parquet by stream and "
                    f"hour once, {self.rows:,} stream rows, cached",
                ),
                Step("Results", "every query's reported windows in one job, as Arrow"),
            ),
        )
        return shared + "".join(
            explain_steps(
                p.query.name,
                tuple(
                    Step("Read", f"{span_text(p.start, p.until)} of the shared scan")
                    if step.name == "Read"
                    else step
                    for step in p.steps()
                    if step.name not in ("Broadcasts", "Expressions", "Results")
                ),
            )
            for p in self.plans
        )


def plan_together(
    queries: Sequence[ContinuousQuery],
    stats: Statistics,
    after: int | None = None,
    until: int | None = None,
    t0_us: int = 0,
    entailment: str = "simple",
) -> list[SharedPlan]:
    """The plans of evaluating ``queries`` over the closes of ``(after, until]``: one
    ``SharedPlan`` for the queries of each slice (their streams; a look-back or none), in the
    order of each slice's first query. Each query is planned, and its size checked, as alone
    (``plan_windows``); expressions run as the whole slice's size says, and broadcasts are the
    explicit ones only, since a broadcast by size is a Spark job of its own."""
    groups: dict[tuple, list[int]] = {}
    plans = [plan_windows(q, stats, after, until, t0_us, entailment) for q in queries]
    for i, physical in enumerate(plans):
        key = (tuple(sorted(set(physical.streams))), physical.start is None)
        groups.setdefault(key, []).append(i)
    out = []
    for (streams, unbounded), members in groups.items():
        starts = [plans[i].start for i in members]
        ends = [plans[i].until for i in members]
        start = None if unbounded else min(t for t in starts if t is not None)
        end = None if None in ends else max(t for t in ends if t is not None)
        rows = stats.rows(streams, *(None if t is None else from_us(t) for t in (start, end)))
        out.append(SharedPlan(tuple(plans[i] for i in members), tuple(members), start, end, rows))
    return out


def lookback_us(query: ContinuousQuery) -> int | None:
    """How far before the first close of an interval a run must read; None: from the start
    (count windows may reach back arbitrarily far)."""
    if any(isinstance(w.window, ast.CountWindow) for w in query.windows):
        return None
    return (
        max(w.window.range_ms for w in query.windows if isinstance(w.window, ast.TimeWindow)) * MS
    )


def check_size(
    query: ContinuousQuery,
    sched: Schedule,
    after_us: int | None,
    until_us: int | None,
    extent: tuple[int, int] | None,
    rows: int,
    max_closes: int,
    max_rows: int,
) -> None:
    """Refuse, before Spark runs anything, an evaluation of more than ``max_closes`` window closes
    or ``max_rows`` window rows: the closes of the grid in ``(after, until]`` that data in
    ``extent`` (``[first, last)`` µs, the slice's hours) can reach, and the slice's ``rows`` each
    copied into ceil(RANGE / STEP) windows. Count windows and closes on arrival are as many as
    the data's frames, and are not sized here."""
    time_windows = [w.window for w in query.windows if isinstance(w.window, ast.TimeWindow)]
    if not time_windows or sched.step is None or extent is None:
        return
    base, step = sched.grid
    widest = max(w.range_ms for w in time_windows) * MS
    # an element at ts, first <= ts < last, is in the closes of (ts, ts + RANGE]
    low = extent[0] if after_us is None else max(after_us, extent[0])
    high = extent[1] - 1 + widest if until_us is None else min(until_us, extent[1] - 1 + widest)
    first_k = max(0, (low - base) // step + 1)
    last_k = (high - base) // step
    closes = max(0, last_k - first_k + 1)
    copies = max(-(-w.range_ms // w.step_ms) for w in time_windows)
    spread = ", ".join(sorted({str(w) for w in time_windows}))
    if closes > max_closes:
        first, last = (iso_ms(base + k * step) for k in (first_k, last_k))
        raise InputError(
            f"{query.source}: {spread} would compute {closes:,} window closes, from {first} to "
            f"{last}, more than RSP_MAX_WINDOWS ({max_closes:,}): evaluate a shorter interval, "
            "widen STEP, or raise the setting"
        )
    if rows * copies > max_rows:
        raise InputError(
            f"{query.source}: {spread} copies each of the slice's {rows:,} rows into {copies:,} "
            f"windows, {rows * copies:,} window rows, more than RSP_MAX_WINDOW_ROWS "
            f"({max_rows:,}): evaluate a shorter interval, widen STEP, or raise the setting"
        )


def interpreted(rows: int) -> bool:
    """Whether an action reading ``rows`` stream rows runs interpreted, on few partitions
    (``RSP_INTERPRETED_BELOW_ROWS`` sets the bound)."""
    return rows < _interpreted_below()


def _interpreted_below() -> int:
    return int(os.environ.get("RSP_INTERPRETED_BELOW_ROWS", INTERPRETED_BELOW_ROWS))


def _places(places: tuple[P.TermsAt, ...]) -> str:
    return " ".join(f"{p.position} of {p.predicate}" for p in places)


def span_text(start: int | None, end: int | None, closes: bool = False) -> str:
    if start is None and end is None:
        return "the whole stream" if not closes else "the stream"
    left, right = ("(", "]") if closes else ("[", ")")
    return f"{left}{'…' if start is None else iso_ms(start)}, {'…' if end is None else iso_ms(end)}{right}"
