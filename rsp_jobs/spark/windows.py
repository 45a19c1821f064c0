"""Window assignment: which stream elements each window close sees.

Time windows follow C-SPARQL's reporting policy as CSRBench fixes it (Dell'Aglio et al.,
ISWC 2013): closes at ``c = t0 + RANGE + k*STEP`` (k >= 0), scope ``[c - RANGE, c)``; with
``COMPUTED EVERY d`` the closes are the ticks ``t0 + k*d`` from the first at which every window
is full (``rsp_jobs.algebra.schedule``).
An element at ``ts`` belongs to every close of the schedule's grid in ``(ts, ts + RANGE]``; we
compute that k-range with integer arithmetic and explode it, so all windows of a run come from
one Spark job.

Count windows ``[TRIPLES n]`` hold the last n triples at each evaluation, ordered by time and,
within one time, by their position in the stream as delivered (the lake's ``seq``; C-SPARQL
§3.1: triples of one timestamp are "sequenced in the stream according to some positional
order"), at each evaluation: the time grid of the query's other windows or COMPUTED EVERY, or else each
arrival of the stream (then the arriving frame is included).

Exploding multiplies every element by RANGE / STEP, so before it the triples no pattern of the
query can match (by predicate: ``optimize.prune_predicates``) are dropped, and after it only triples that the slice holds more
than once go through the de-duplication that makes each window's content a set. Under one
sliding or tumbling window the optimizer has solutions exploded instead of triples (``Spans``).

All times inside the engine are microseconds since the epoch (``_win``, ``ts``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F

from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.algebra.schedule import REPORT_EVERY_CLOSE, Schedule, schedule
from rsp_jobs.errors import QueryError
from rsp_jobs.language import ast
from rsp_jobs.spark.local import local_frame
from rsp_jobs.times import US_PER_MS as MS

__all__ = [
    "Schedule",
    "Spans",
    "assign",
    "every_close",
    "schedule",
    "spans",
    "triples",
    "with_repeats",
]


def triples(
    elements: DataFrame, query: ContinuousQuery, prune: bool = True, placeholders: bool = True
) -> DataFrame:
    """The slice's triples of the query's streams, before any window: ``ts`` (µs), ``g, s, p,
    o, seq`` and ``_part`` (which of the query's windows). ``prune=False`` keeps the triples no
    pattern names (entailment over the window may derive a named one from them);
    ``placeholders=False`` leaves out ``_prune``'s placeholders where the windows with data are
    known otherwise (``Spans.active``): an aggregate and a union per stream that the optimizer
    removes again, which every plan step built over them analysed."""
    used = query.predicates if prune else None  # optimize.prune_predicates
    tagged: DataFrame | None = None
    for i, sw in enumerate(query.windows):
        graph = F.lit(f"<{sw.graph}>") if sw.graph else F.lit(None).cast("string")
        rows = elements.where(F.col("stream") == sw.stream).select(
            F.unix_micros("ts").alias("ts"),
            graph.alias("g"),
            "s",
            "p",
            "o",
            "seq",
            F.lit(i).alias("_part"),
        )
        if used is not None:
            rows = _prune(rows, used) if placeholders else rows.where(F.col("p").isin(sorted(used)))
        tagged = rows if tagged is None else tagged.unionByName(rows)
    if tagged is None:
        raise ValueError(f"{query.source}: a continuous query reads at least one stream")
    return tagged


def assign(
    elements: DataFrame | None,
    query: ContinuousQuery,
    sched: Schedule,
    after_us: int | None,
    until_us: int | None,
    prune: bool = True,
    tagged: DataFrame | None = None,
    repeats: bool = True,
) -> DataFrame:
    """Elements (with ``ts`` timestamps) → window rows ``_win, g, s, p, o, _open, ts`` for every
    close in ``(after_us, until_us]``, one row per distinct triple of a window's graph.
    ``prune``: see ``triples``; ``tagged``: ``triples(elements, query, prune)`` if made already
    (``elements`` is then not read); ``repeats=False``: the slice holds no triple twice and no
    stream is read by two windows (``LakeStatistics.repeats``), so no window can hold one twice."""
    max_range = _longest_range(query)  # read only by time windows, of which there is one then
    if tagged is None:
        if elements is None:
            raise ValueError("assign needs the slice's elements or their tagged triples")
        tagged = triples(elements, query, prune)
    # A window's content is an RDF graph: a triple that arrives twice is in it once, stamped
    # with its latest arrival (what timestamp() reports). Only a triple that the slice read
    # holds more than once (in one graph) can be twice in a window, so only those go through
    # the de-duplication, a shuffle of every window row that would otherwise dominate the run.
    # Told by ``repeats=False``, the count over the slice (a sort of every triple's four terms)
    # is left out: the tsunami chain's predictions (131k rows) spent 18 s of tasks on it.
    single = (
        F.count(F.lit(1)).over(W.partitionBy("g", "s", "p", "o")) == 1 if repeats else F.lit(True)
    )
    tagged = tagged.withColumn("_once", single)
    # Streams under the same time window are windowed in one pass: a pass per stream would put
    # ``tagged``, which reads every stream, into the plan once per stream (CityBench Q10_8's
    # eight streams: 2,358 plan nodes for the window rows, which each triple pattern reads).
    # A count window holds the last triples of its own stream, so each is a pass of its own.
    passes: dict = {}
    for i, sw in enumerate(query.windows):
        key = sw.window if isinstance(sw.window, ast.TimeWindow) else i
        passes.setdefault(key, []).append(i)
    parts = []
    for key, members in passes.items():
        rows = tagged.where(F.col("_part").isin(members)).drop("_part")
        if isinstance(key, ast.TimeWindow):
            part = _time_window(rows, key, sched, after_us, until_us, max_range)
        else:
            part = _count_window(rows, query.windows[key].window, sched, after_us, until_us)
        parts.append(part.select("_win", "_open", "g", "s", "p", "o", "ts", "_once"))
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    columns = ["_win", "g", "s", "p", "o", "_open", "ts"]
    once = out.where(F.col("_once")).select(*columns)
    if not repeats:
        return once
    repeated = (
        out.where(~F.col("_once"))
        .groupBy("_win", "g", "s", "p", "o")
        .agg(F.min("_open").alias("_open"), F.max("ts").alias("ts"))
    )
    return once.unionByName(repeated)


def _prune(rows: DataFrame, used: frozenset[str]) -> DataFrame:
    """Only triples with a predicate the query names can match a pattern, so the others are
    dropped before windows multiply them. A time all of whose triples are dropped keeps one
    placeholder row (NULL s, p, o: it matches no pattern), so that the windows holding it still
    hold data and report, as without pruning."""
    keep = F.col("p").isin(sorted(used))
    empty = (
        rows.groupBy("ts", "g", "_part")
        .agg(F.max(keep.cast("int")).alias("_kept"))
        .where(F.col("_kept") == 0)
    )
    nothing = F.lit(None).cast("string")
    placeholders = empty.select(
        "ts",
        "g",
        nothing.alias("s"),
        nothing.alias("p"),
        nothing.alias("o"),
        F.lit(None).cast("long").alias("seq"),
        "_part",
    )
    return rows.where(keep).unionByName(placeholders)


def _longest_range(query: ContinuousQuery) -> int:
    """The widest RANGE of the query's time windows (µs; 0 without any)."""
    return max(
        (w.window.range_ms * MS for w in query.windows if isinstance(w.window, ast.TimeWindow)),
        default=0,
    )


def _first_full(sched: Schedule, range_us: int) -> int:
    """The first k of the grid ``first_close + k*step`` whose close ``c`` has ``c >= t0 +
    range_us``: a window is evaluated once full."""
    (base, grid), t0 = sched.grid, sched.t0
    return max(0, -((base - t0 - range_us) // grid))


def _floor_div(x, d: int):
    """Exact floor division of a long column by a positive constant (no doubles)."""
    return ((x - F.pmod(x, F.lit(d))) / F.lit(d)).cast("long")


def _time_window(
    rows: DataFrame,
    window: ast.TimeWindow,
    sched: Schedule,
    after_us: int | None,
    until_us: int | None,
    max_range: int,
    lo: str = "ts",
    hi: str = "ts",
    columns: list[str] | None = None,
    opens: bool = True,
) -> DataFrame:
    """Each element once per close ``c`` of the schedule's grid ``first_close + k*step`` with
    ``ts < c <= ts + RANGE`` (the window ``[c - RANGE, c)`` holds it) and ``c >= t0 + RANGE``
    (a window is evaluated once full). Without COMPUTED EVERY the grid is this window's STEP
    grid; with it, every d (``rsp_jobs.algebra.schedule``), whatever the window's STEP. A
    solution that spans the times ``lo`` to ``hi`` goes to the closes with ``hi < c <= lo +
    RANGE``: the windows that hold all its triples. ``columns``: what to keep (default all);
    ``opens=False``: without ``_open``.

    Two plan steps: Spark analyses the whole plan again at each, so the closes are a NULL
    sequence (no row) where there are none rather than a filter before it."""
    (base, grid), rng = sched.grid, window.range_ms * MS
    k_lo = F.greatest(_floor_div(F.col(hi) - F.lit(base), grid) + 1, F.lit(_first_full(sched, rng)))
    k_hi = _floor_div(F.col(lo) + F.lit(rng - base), grid)
    if after_us is not None:  # closes c > after: k >= floor((after - base) / grid) + 1
        k_lo = F.greatest(k_lo, F.lit((after_us - base) // grid + 1))
    if until_us is not None:
        k_hi = F.least(k_hi, F.lit((until_us - base) // grid))
    exploded = rows.select("*", F.explode(F.when(k_lo <= k_hi, F.sequence(k_lo, k_hi))).alias("_k"))
    close = F.lit(base) + F.col("_k") * F.lit(grid)
    return exploded.select(
        close.alias("_win"),
        *([(close - F.lit(max_range)).alias("_open")] if opens else []),
        *(rows.columns if columns is None else columns),
    )


@dataclass(frozen=True)
class Spans:
    """Windows for solutions rather than triples (``spans``): a BGP is matched and joined
    over the slice's triples, each solution keeping the earliest and latest time of its
    triples (``lo``, ``hi``), and only then goes to the windows that hold all of them. Two
    solutions can join only if their times lie within RANGE of each other (``range_us``): a
    band join, keyed by ``bucket`` (the RANGE-long stretch of ``lo``) against the stretches
    next to it."""

    window: ast.TimeWindow
    sched: Schedule
    after_us: int | None
    until_us: int | None
    # whether the slice holds a triple at several times (then one mapping can come from each)
    repeats: bool = True

    @property
    def range_us(self) -> int:
        return self.window.range_ms * MS

    def bucket(self, column: str, wide: bool = False):
        """The stretch of time ``column`` is in: RANGE long, or twice that when ``wide``."""
        return _floor_div(F.col(column), self.range_us * (2 if wide else 1))

    def near(self, column: str, wide: bool = False) -> list:
        """The ``bucket``s that hold every time within RANGE of ``column``: its own and both
        next to it, or for a ``wide`` one, its own and the one on the side ``column`` lies in
        (a time in the first half of a 2·RANGE stretch is within RANGE of the stretch before,
        never of the one after). Wide buckets copy a row twice rather than three times and
        make each row meet the rows of 4·RANGE rather than 3·RANGE: the better trade where
        the join has a variable to match on, the worse where it has none (every pair within
        RANGE is a candidate)."""
        own = self.bucket(column, wide)
        if not wide:
            return [own - 1, own, own + 1]
        first_half = F.col(column) - own * F.lit(2 * self.range_us) < F.lit(self.range_us)
        return [own, F.when(first_half, own - 1).otherwise(own + 1)]

    @property
    def tumbling(self) -> bool:
        """The windows tile time (RANGE = the grid's STEP): each time is in one window."""
        return self.range_us == self.sched.step

    def window_of(self, column: str):
        """Under ``tumbling`` windows, the index of the one window holding the time ``column``:
        solutions that share a window share it (closes ``first_close + k*step`` hold
        ``[close - RANGE, close)``)."""
        base, grid = self.sched.grid
        return _floor_div(F.col(column) - F.lit(base), grid)

    def to_windows(
        self, rows: DataFrame, lo: str, hi: str, columns: list[str], opens: bool = True
    ) -> DataFrame:
        """``rows`` spanning ``lo``..``hi`` → ``_win``, ``_open`` (unless not ``opens``) and
        ``columns``, once per window."""
        return _time_window(
            rows,
            self.window,
            self.sched,
            self.after_us,
            self.until_us,
            self.range_us,
            lo,
            hi,
            columns,
            opens,
        )

    def window_rows(self, query: ContinuousQuery, tagged: DataFrame) -> DataFrame:
        """The triples of ``tagged`` in their windows (``assign``), for what reads them whole."""
        return assign(None, query, self.sched, self.after_us, self.until_us, tagged=tagged)

    def active(self, tagged: DataFrame) -> DataFrame:
        """The windows that hold data (``_win, _open``), from the slice's times alone (the
        unpruned slice: every time is there without ``_prune``'s placeholders)."""
        times = tagged.select("ts").distinct()
        return (
            self.to_windows(times, "ts", "ts", [])
            .groupBy("_win")
            .agg(F.min("_open").alias("_open"))
        )

    def active_of(self, spark, times: Iterable[int]) -> DataFrame:
        """``active`` from the slice's distinct times (µs) read on the driver
        (``LakeStatistics.times``), as a local relation: no scan of the slice, no shuffle and no
        cached plan in the job (a day of CityBench has 288 times and 288 closes). The closes of a time are
        ``_time_window``'s for ``lo = hi = ts``, in integers."""
        (base, grid), rng = self.sched.grid, self.range_us
        first = _first_full(self.sched, rng)
        if self.after_us is not None:
            first = max(first, (self.after_us - base) // grid + 1)
        last = None if self.until_us is None else (self.until_us - base) // grid
        closes: list[int] = []
        upto: int | None = None  # a time's k-range moves up with the time: merged in one pass
        for ts in sorted(times):
            k_lo = max((ts - base) // grid + 1, first, upto + 1 if upto is not None else first)
            k_hi = (
                (ts + rng - base) // grid if last is None else min((ts + rng - base) // grid, last)
            )
            closes.extend(range(k_lo, k_hi + 1))
            upto = k_hi if upto is None else max(upto, k_hi)
        return local_frame(
            spark,
            [(base + k * grid, base + k * grid - rng) for k in closes],
            "_win long, _open long",
        )


def every_close(
    spark, query: ContinuousQuery, sched: Schedule, after_us: int, until_us: int
) -> DataFrame:
    """Every close of the query's grid in ``(after_us, until_us]`` at which each of its time
    windows is full, as ``_win, _open`` (``_open``: the close less the longest RANGE, as
    ``assign`` gives a window that holds data): the windows the ``every-close`` reporting
    policy evaluates whether or not they hold data. A query evaluated on each arrival has no
    grid, so nothing closes where nothing arrives: that is an error of the caller's setting."""
    if sched.step is None:
        raise QueryError(
            f"{query.source}: report = {REPORT_EVERY_CLOSE!r} needs a grid of closes (RANGE and "
            "STEP, or COMPUTED EVERY); this query is evaluated on each arrival of its stream"
        )
    base, grid = sched.grid
    longest = _longest_range(query)
    first = max(_first_full(sched, longest), (after_us - base) // grid + 1)
    last = (until_us - base) // grid
    return local_frame(
        spark,
        [(base + k * grid, base + k * grid - longest) for k in range(first, last + 1)],
        "_win long, _open long",
    )


def spans(
    query: ContinuousQuery, sched: Schedule, after_us: int | None, until_us: int | None
) -> Spans | None:
    """``Spans`` for a query the optimizer chose them for (``optimize.window_solutions``: one
    sliding or tumbling time window), else None: triples go to windows first (``assign``)."""
    if not query.window_solutions:
        return None
    window = query.windows[0].window
    if not isinstance(window, ast.TimeWindow):
        raise ValueError(f"{query.source}: window_solutions chose a count window")
    return Spans(window, sched, after_us, until_us)


def with_repeats(spans: Spans, tagged: DataFrame) -> Spans:
    """``spans`` knowing whether the slice (``triples``) repeats a triple: a sensor's
    observations are each new, and without repeats no window needs de-duplicating (one job
    against a shuffle of every windowed solution). Triples are counted by a 64-bit hash of
    their graph and terms, a hash aggregate of longs rather than a sort of four strings (on a
    day of CityBench that sort was a second of the run); two triples that share a hash are
    taken for a repeat, which only costs the de-duplication. ``_prune``'s placeholders (NULL
    triples) match no pattern, so they are no repeat."""
    keys = tagged.where(F.col("p").isNotNull()).select(F.xxhash64("g", "s", "p", "o").alias("_h"))
    return replace(
        spans, repeats=not keys.groupBy("_h").count().where(F.col("count") > 1).isEmpty()
    )


def _count_window(
    rows: DataFrame,
    window: ast.CountWindow,
    sched: Schedule,
    after_us: int | None,
    until_us: int | None,
) -> DataFrame:
    n = window.triples
    ordered = W.orderBy("ts", F.col("seq").asc_nulls_first(), "s", "p", "o")
    seq = rows.select("*", F.row_number().over(ordered).alias("_seq"))
    if sched.step is None:  # evaluate on each arrival; the arriving frame is in the window
        closes = rows.select(F.col("ts").alias("_win")).distinct()
        inclusive = True
    else:
        bounds = rows.agg(F.min("ts").alias("lo"), F.max("ts").alias("hi"))
        first = F.greatest(
            F.lit(0), _floor_div(F.col("lo") - F.lit(sched.first_close), sched.step) + 1
        )
        last = _floor_div(F.col("hi") - F.lit(sched.first_close), sched.step) + 1
        closes = (
            bounds.where(F.col("lo").isNotNull())
            .select(F.explode(F.sequence(first, last)).alias("_k"))
            .select((F.lit(sched.first_close) + F.col("_k") * F.lit(sched.step)).alias("_win"))
        )
        inclusive = False
    if after_us is not None:
        closes = closes.where(F.col("_win") > after_us)
    if until_us is not None:
        closes = closes.where(F.col("_win") <= until_us)
    # m(c): how many elements precede close c; elements at c itself count only when inclusive
    cumulative = seq.groupBy("ts").agg(F.max("_seq").alias("_cum"))
    element_first = 0 if inclusive else 1
    timeline = cumulative.select(
        F.col("ts").alias("_t"), "_cum", F.lit(element_first).alias("_o")
    ).unionByName(
        closes.select(
            F.col("_win").alias("_t"),
            F.lit(None).cast("long").alias("_cum"),
            F.lit(1 - element_first).alias("_o"),
        )
    )
    running = W.orderBy("_t", "_o").rowsBetween(W.unboundedPreceding, W.currentRow)
    counted = (
        timeline.select("*", F.last("_cum", ignorenulls=True).over(running).alias("_m"))
        .where(F.col("_cum").isNull() & F.col("_m").isNotNull())
        .select(F.col("_t").alias("_win"), "_m")
    )
    members = counted.select(
        "_win",
        F.explode(F.sequence(F.greatest(F.col("_m") - n + 1, F.lit(1)), F.col("_m"))).alias("_seq"),
    )
    joined = members.join(seq, "_seq")
    opened = joined.select("*", F.min("ts").over(W.partitionBy("_win")).alias("_open"))
    return opened.select("_win", "_open", *rows.columns)
