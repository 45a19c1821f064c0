"""The engine executes what ``rsp_jobs.compiler`` compiled: a window query's optimized plan →
Spark → window results, and a temporal pattern's (EP-SPARQL query, DOTR rule) → matches.

    >>> query = compiler.compile_file("queries/csrbench/q1.rsp")           # doctest: +SKIP
    >>> for window in evaluate(query, lake, background_files=[]):             # doctest: +SKIP
    ...     print(window.window_close, window.rows)

Every window close of the run's interval is computed in one Spark job; only the results come
back to the driver.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.algebra.schedule import REPORT_EVERY_CLOSE, REPORT_NON_EMPTY, check_report
from rsp_jobs.compiler import compile_rule_set
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.physical import dotr, patterns, planner
from rsp_jobs.physical.statistics import LakeStatistics, SliceFacts
from rsp_jobs.results import Match, WindowResult
from rsp_jobs.spark import windows
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.entailment import WINDOW_KEY, entail
from rsp_jobs.spark.evaluate import WIN, Evaluator, rank_terms
from rsp_jobs.spark.results import iter_windows, result_frame, windows_together
from rsp_jobs.spark.session import (
    NO_SIZE_BROADCASTS,
    batch_settings,
    get_spark,
    settings_while,
    small_batch,
)
from rsp_jobs.times import from_us

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _files_facts(
    stats: LakeStatistics, streams: Sequence[str], start, end, ranked: set, background: Background
) -> tuple[Future, Future]:
    """The slice's ``SliceFacts`` (``LakeStatistics.facts``), then the terms of each place set in
    ``ranked`` ranked (``rank_terms``: a local relation Spark evaluates on the driver), on a
    thread of their own while the driver builds the plan's first steps: it waits on the JVM
    then, and pyarrow reads without holding the GIL, so the reading overlaps the planning. Each
    has its future, as the facts are wanted first. A thread per call, not a pool kept across calls, which a forked task process
    would inherit without its thread."""
    facts: Future[SliceFacts] = Future()
    ranks: Future[dict] = Future()

    def settle(future: Future, make) -> None:
        try:
            future.set_result(make())
        except BaseException as error:  # the caller's result() raises it
            future.set_exception(error)

    def read() -> None:
        settle(
            facts,
            lambda: stats.facts(
                streams, start, end, {place for places in ranked for place in places}
            ),
        )
        settle(
            ranks,
            lambda: {
                places: rank_terms(get_spark(), places, facts.result().terms, background)
                for places in ranked
            },
        )

    threading.Thread(target=read, name="lake-files", daemon=True).start()
    return facts, ranks


def _on_driver(facts: Future[SliceFacts] | None) -> SliceFacts:
    """The slice's facts, read on the driver where the physical plan says so (``facts_on_driver``)."""
    if facts is None:
        raise ValueError("the physical plan reads the slice's facts on Spark, not on the driver")
    return facts.result()


@dataclass(frozen=True)
class Interval:
    """Evaluate the window closes ``c`` with ``after < c <= until`` (µs; None: unbounded)."""

    after: int | None = None
    until: int | None = None


def evaluate(
    query: ContinuousQuery,
    lake: Lake,
    background_files: Sequence[str] = (),
    t0_us: int = 0,
    interval: Interval = Interval(),
    entailment: str = "simple",
    report: str = REPORT_NON_EMPTY,
) -> Iterator[WindowResult]:
    """Evaluate ``query`` over the streams in ``lake``; yields one ``WindowResult`` per reported
    window, in time order. ``entailment``: ``simple``, ``rdfs`` or ``rdfs++``: the background is
    closed once, and each window's graph (its streams' triples in it, with the background) is
    entailed whole, as C-SPARQL answers "under RDFS entailment regime" over what the window holds
    (tutorial 004, "C-SPARQL queries and reasoning"); see ``rsp_jobs.reasoning.entailment``.
    ``report``: which closes report, ``non-empty`` (C-SPARQL's policy as CSRBench fixes it: the
    windows that hold data) or ``every-close`` (every close of the interval, a window without
    data answering as SPARQL does over an empty graph: ``COUNT(*)`` is 0).
    How it runs is the physical plan's (``planner.plan_windows``: ``rsp explain --physical``)."""
    check_report(report, query.source)
    physical = planner.plan_windows(
        query, LakeStatistics(lake), interval.after, interval.until, t0_us, entailment
    )
    yield from execute(physical, lake, background_files, interval.after, entailment, report)


def execute(
    physical: planner.WindowPlan,
    lake: Lake,
    background_files: Sequence[str],
    report_after: int | None,
    entailment: str,
    report: str = REPORT_NON_EMPTY,
) -> list[WindowResult]:
    """Run ``physical`` on Spark: its windows' results, those closing after ``report_after``
    (``report``: see ``evaluate``)."""
    spark = get_spark()
    # The batch's settings hold while the evaluation makes any plan, not only for its last
    # action: Spark plans a DataFrame when ``cache()`` is called, under the settings of that
    # moment (a small batch's cached window rows were compiled to Java all the same)
    with (
        settings_while(spark, batch_settings(physical.rows)),
        _windows_frame(physical, lake, background_files, entailment, report) as frame,
        # One job whatever the number of patterns: read from Parquet, a pattern's triples
        # would be broadcast by size, each broadcast a job of its own (and at eight days the
        # largest sides were broadcast). The background's explicit broadcasts stay.
        settings_while(
            spark, NO_SIZE_BROADCASTS if physical.windowing == planner.SOLUTIONS else {}
        ),
    ):
        return list(iter_windows(frame, physical.query, report_after))


def evaluate_together(
    queries: Sequence[ContinuousQuery],
    lake: Lake,
    background_files: Sequence[Sequence[str]],
    t0_us: int = 0,
    interval: Interval = Interval(),
    entailment: str = "simple",
    report: str = REPORT_NON_EMPTY,
) -> list[list[WindowResult]]:
    """``evaluate`` for each of ``queries`` (``background_files[i]`` is query i's), the results
    in their order: the queries that read one slice of the lake are evaluated together, in one
    Spark job over one scan of it (multi-query execution), as their shared plan says
    (``planner.plan_together``)."""
    check_report(report, queries[0].source if queries else "")
    results: list[list[WindowResult]] = [[] for _ in queries]
    for shared in planner.plan_together(
        queries, LakeStatistics(lake), interval.after, interval.until, t0_us, entailment
    ):
        found = execute_together(
            shared,
            lake,
            [background_files[i] for i in shared.members],
            interval.after,
            entailment,
            report,
        )
        for i, windows_of in zip(shared.members, found):
            results[i] = windows_of
    return results


def execute_together(
    shared: planner.SharedPlan,
    lake: Lake,
    background_files: Sequence[Sequence[str]],
    report_after: int | None,
    entailment: str,
    report: str = REPORT_NON_EMPTY,
) -> list[list[WindowResult]]:
    """Run ``shared`` on Spark: the slice read once and cached, each query's plan over it, their
    results in one job (``results.windows_together``), in the order of ``shared.plans``."""
    if len(shared.plans) == 1:  # nothing to share: no cached scan
        return [
            execute(shared.plans[0], lake, background_files[0], report_after, entailment, report)
        ]
    spark = get_spark()
    start, end = (None if t is None else from_us(t) for t in (shared.start, shared.until))
    # one set of settings for the job of all: a broadcast by size would be a job of its own
    with settings_while(spark, {**batch_settings(shared.rows), **NO_SIZE_BROADCASTS}):
        scan = lake.read(spark, shared.streams, start, end).cache()
        try:
            with ExitStack() as frames:
                made = [
                    frames.enter_context(
                        _windows_frame(physical, lake, files, entailment, report, scan)
                    )
                    for physical, files in zip(shared.plans, background_files)
                ]
                return windows_together(made, [p.query for p in shared.plans], report_after)
        finally:
            scan.unpersist()


@contextmanager
def _windows_frame(
    physical: planner.WindowPlan,
    lake: Lake,
    background_files: Sequence[str],
    entailment: str,
    report: str,
    scan: DataFrame | None = None,
) -> Iterator[DataFrame]:
    """The frame of ``physical``'s reported windows (``results.result_frame``), over the lake's
    Parquet or, given, over ``scan`` (a cached read of a slice that holds this plan's); what it
    caches is released when the block ends."""
    query, sched, after, until = physical.query, physical.sched, physical.after, physical.until
    start, end = (None if t is None else from_us(t) for t in (physical.start, physical.until))
    streams, simple = physical.streams, physical.simple
    spark = get_spark()
    small = physical.facts_on_driver
    spans = (
        windows.spans(query, sched, after, until)
        if physical.windowing == planner.SOLUTIONS
        else None
    )
    background = Background.for_query(query.graphs, background_files, query.source)
    stats = LakeStatistics(lake)
    facts, ranks = (
        _files_facts(stats, streams, start, end, set(physical.ranked), background)
        if small
        else (None, None)
    )
    elements = (
        lake.read(spark, streams, start, end)
        if scan is None
        else Lake.within(scan, streams, start, end)
    )
    triples: DataFrame | None = None  # the slice's, where solutions go to windows
    rows: DataFrame | None = None  # the window rows, where triples do
    if spans is not None:  # solutions, not triples, go to windows: see windows.Spans
        # Alone, not cached: each triple pattern reads the lake's Parquet for its predicate, as
        # a hand-written job would; caching the slice costs more than those reads. Together,
        # the queries' patterns read the shared scan, cached since it is read by all of them.
        triples = windows.triples(elements, query, placeholders=False)
    elif not simple:
        background, schema = background.closed(entailment)
        window_rows = windows.assign(elements, query, sched, after, until, prune=False)
        rows = entail(window_rows, schema, WINDOW_KEY).cache()
    else:
        # a stream two windows read is in the slice twice (a window may hold both, as one
        # triple); files without triple hashes (written before them) are taken to repeat
        repeats = len(set(streams)) < len(streams) or (
            _on_driver(facts).repeats
            if small
            else stats.repeats_by_hash(streams, start, end) is not False
        )
        rows = windows.assign(elements, query, sched, after, until, repeats=repeats).cache()
    active = None
    try:
        from pyspark.sql import functions as F

        if spans is not None and small:  # both read on the driver, as no Spark job can sooner
            spans = replace(spans, repeats=_on_driver(facts).repeats)
            active = spans.active_of(spark, _on_driver(facts).times)
        elif spans is not None and triples is not None:
            # the files' triple hashes on the driver; a Spark job where a file has none
            hashed = stats.repeats_by_hash(streams, start, end)
            spans = (
                windows.with_repeats(spans, triples)
                if hashed is None
                else replace(spans, repeats=hashed)
            )
            # times only: no pruning
            active = spans.active(windows.triples(elements, query, prune=False)).cache()
            # the window rows are made only if the plan asks (evaluate.Evaluator.rows)
        elif rows is not None:
            active = rows.groupBy(WIN).agg(F.min("_open").alias("_open")).cache()
        else:
            raise ValueError("neither the slice's triples nor its window rows were made")
        if report == REPORT_EVERY_CLOSE:
            with_data, active = active, _with_every_close(query, sched, active, after, until)
            with_data.unpersist()
        # under entailment a window's graph may hold what its triples do not name
        vocabulary = (
            None
            if not simple
            else _on_driver(facts).vocabulary
            if small
            else stats.vocabulary(streams, start, end)
        )
        evaluator = Evaluator(query, rows, active, background, spans, triples, vocabulary, ranks)
        solutions = evaluator.evaluate(query.plan)
        yield result_frame(query, evaluator, solutions, sched)
    finally:
        if rows is not None:
            rows.unpersist()
        if active is not None:
            active.unpersist()


def _with_every_close(
    query: ContinuousQuery, sched, active: DataFrame, after: int | None, until: int | None
) -> DataFrame:
    """``active`` (the windows that hold data) with every other close of ``(after, until]``.
    An unbounded side ends at the first or last window that holds data: the grid runs from
    ``t0``, the epoch unless set, and a run without an end has no last close."""
    from pyspark.sql import functions as F

    if after is None or until is None:
        bounds = active.agg(F.min(WIN), F.max(WIN)).first()
        if bounds is None or bounds[0] is None:  # no data, an open interval: no close to report
            return active
        first, last = bounds
        after = first - 1 if after is None else after
        until = last if until is None else until
    closes = windows.every_close(active.sparkSession, query, sched, after, until)
    return active.unionByName(closes).groupBy(WIN).agg(F.min("_open").alias("_open")).cache()


def match(
    pattern,
    lake: Lake,
    background_files: Sequence[str] = (),
    interval: Interval = Interval(),
    entailment: str = "simple",
    consumed: frozenset[str] = frozenset(),
    partials=None,
    retention_us: int | None = None,
) -> tuple[list[Match], set[str]]:
    """The matches of ``pattern`` (an EP-SPARQL pattern query or a DOTR rule) whose final event
    lies in ``(after, until]``, and the facts they consumed (DOTR ``consuming``; ``consumed``
    are those earlier batches consumed).

    A match is emitted by the one batch whose interval holds its end. A bounded pattern reads
    back as far as its duration bound (or the ``retention_us`` stated for it: longer matches
    are not reported); an unbounded EP-SPARQL pattern reads the events after the cut of its
    kept ``partials`` (``rsp_jobs.algebra.patterns.PartialMatches``), or, without them, the whole
    stream. Either way: no duplicates across batches and no matches lost at their borders
    (../shared/DESIGN.md, "Windows and micro-batches"). How a batch reads and joins is its
    physical plan's (``physical.patterns.plan_pattern``: ``rsp explain --physical``)."""
    # a set of one (retention is EP-SPARQL's only: the registry refuses it)
    if isinstance(pattern, RulePlan):
        return match_rules(
            compile_rule_set([pattern]), lake, background_files, interval, entailment, [consumed]
        )[0]
    physical = patterns.plan_pattern(
        pattern,
        LakeStatistics(lake),
        interval.after,
        interval.until,
        entailment,
        kept=partials is not None,
        cut_us=None if partials is None else partials.cut_us,
        retention_us=retention_us,
    )
    return execute_pattern(physical, lake, background_files, partials), set()


def execute_pattern(
    physical: patterns.PatternPlan,
    lake: Lake,
    background_files: Sequence[str] = (),
    partials=None,
) -> list[Match]:
    """Run ``physical`` on Spark: the pattern's matches ending in its interval. ``partials``
    are read and written only where the plan says the batch keeps them."""
    pattern = physical.query
    start = None if physical.start is None else from_us(physical.start)
    end = None if physical.until is None else from_us(physical.until + 1)
    with settings_while(get_spark(), small_batch() if physical.interpreted else {}):
        elements = _events(lake, physical.streams, start, end)
        background = Background.for_query(pattern.graphs, background_files, pattern.source)
        if physical.regime != "simple":
            background, schema = background.closed(physical.regime)
            elements = entail(elements, schema)
        elements = elements.cache()  # planned now, under the batch's settings (``evaluate``)
        try:
            from rsp_jobs.spark.events import evaluate_events

            found = evaluate_events(
                pattern,
                elements,
                background,
                physical.after,
                physical.until,
                partials=partials if physical.kept else None,
            )
        finally:
            elements.unpersist()
    if physical.retention is not None:
        found = [m for m in found if m.end_us - m.start_us <= physical.retention]
    return found


def match_rules(
    rules: RuleSetPlan,
    lake: Lake,
    background_files: Sequence[str] = (),
    interval: Interval = Interval(),
    entailment: str = "simple",
    consumed: Sequence[frozenset[str]] = (),
) -> list[tuple[list[Match], set[str]]]:
    """``match`` for every DOTR rule of a set (``compiler.compile_rule_set``) in one
    evaluation: one read of their streams, one pass over each group's instants (an event SELECT
    several rules ask for is evaluated once), one job for all facts and one collect for all
    candidates, as its physical plan says (``physical.dotr.plan_rules``: ``rsp explain
    --physical``; run by ``spark.dotr.execute_rules``). Returns each rule's matches and newly
    consumed facts, in the set's order; ``consumed`` is per rule, as each rule consumes only for
    itself. A DOTR rule entails per instant, under the stronger of its own regime and the run's,
    and with its Datalog rules (what those derive is entailed too: DOTR §3's ontological part is
    one closure per instant)."""
    physical = dotr.plan_rules(
        rules, LakeStatistics(lake), interval.after, interval.until, entailment
    )
    return execute_rules(physical, lake, background_files, consumed)


def execute_rules(
    physical: dotr.RulesPlan,
    lake: Lake,
    background_files: Sequence[str] = (),
    consumed: Sequence[frozenset[str]] = (),
) -> list[tuple[list[Match], set[str]]]:
    """Run ``physical`` on Spark: each rule's matches and newly consumed facts."""
    rules = physical.rules
    start = None if physical.start is None else from_us(physical.start)
    end = None if physical.until is None else from_us(physical.until + 1)
    backgrounds = [Background.for_query(r.graphs, background_files, r.source) for r in rules.rules]
    with settings_while(get_spark(), small_batch() if physical.interpreted else {}):
        # planned under the batch's settings
        elements = _events(lake, physical.streams, start, end).cache()
        try:
            from rsp_jobs.spark import dotr as spark_dotr

            found = spark_dotr.execute_rules(physical, elements, backgrounds, consumed)
            return [([*matches], newly) for matches, newly in found]
        finally:
            elements.unpersist()


def _events(lake: Lake, streams: Sequence[str], start, end):
    """The elements of ``streams`` in ``[start, end)`` as a pattern reads them: a frame is a
    graph, so a triple two files bring for one time is one event."""
    return lake.read(get_spark(), streams, start, end).dropDuplicates(
        ["stream", "start", "ts", "s", "p", "o"]
    )
