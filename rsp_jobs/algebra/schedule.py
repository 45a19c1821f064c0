"""When a registered query is evaluated: its grid of window closes (µs since the epoch).

Kept free of Spark so that the DAG processor (``rsp_jobs.orchestrate.registry``), the store's lineage
(``rsp_jobs.store.results``) and the Spark
job (``rsp_jobs.spark.windows``) read the one definition.

C-SPARQL tutorial (004), slide "Query and Stream Registration": "Registration → 'Register'
('Query'| 'Stream') QueryName ['Computed Every' Number TimeUnit] 'As' Query"; paper 001 §4:
"This process is executed as frequently as specified in the REGISTER clause". So:

- without ``COMPUTED EVERY`` the query is evaluated on its windows' STEP grid, closes
  ``t0 + RANGE + k*STEP`` (k >= 0; CSRBench's reporting policy);
- with ``COMPUTED EVERY d`` it is evaluated every d, whatever its windows' STEPs: at the ticks
  ``t0 + k*d`` (k >= 1) of a clock started at registration (``t0``), from the first tick at which
  every window is full (``t0 + k*d >= t0 + RANGE``, the widest RANGE); each window holds
  ``[c - its RANGE, c)``.

Which closes report is the reporting policy (RSP-QL's term, after SECRET's window close and
non-empty content): ``non-empty``, the default, is C-SPARQL's as CSRBench fixes it ("report
when the window closes; skip windows with no data"); ``every-close`` reports every close, a
window without data answering as SPARQL does over an empty graph (``COUNT(*)`` 0, the rows of a
VALUES, one group of an aggregate without GROUP BY), for a query whose silence matters.
"""

from __future__ import annotations

from dataclasses import dataclass

from rsp_jobs.errors import InputError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.times import ms_to_us

REPORT_NON_EMPTY = "non-empty"
REPORT_EVERY_CLOSE = "every-close"
REPORTS = (REPORT_NON_EMPTY, REPORT_EVERY_CLOSE)


def check_report(report: str, where: str) -> str:
    """``report`` if it names a reporting policy, else an error naming ``where`` it was set."""
    if report not in REPORTS:
        raise InputError(f"{where}: report is one of {', '.join(REPORTS)}, not {report!r}")
    return report


@dataclass(frozen=True)
class Schedule:
    """When a query reports: closes ``first_close + k*step`` (µs, k >= 0); ``None`` step means
    on arrival."""

    t0: int
    step: int | None
    first_close: int | None

    @property
    def grid(self) -> tuple[int, int]:
        """``(first_close, step)``: what window assignment reads; a query that reports on
        arrival has no grid, and windowing it is a bug of the caller."""
        if self.step is None or self.first_close is None:
            raise ValueError("a query that reports on arrival has no grid of closes")
        return self.first_close, self.step


def schedule(query, t0_us: int) -> Schedule:
    """The query's grid of closes (``query``: an ``algebra.plan.ContinuousQuery``)."""
    time_windows = [w.window for w in query.windows if isinstance(w.window, ast.TimeWindow)]
    if query.computed_every_ms and time_windows:
        # Decision (the papers give the clause, not its first tick): the clock ticks every d from
        # t0, as a timer started at registration would, and the first evaluation is the first tick
        # at which every window is full; CSRBench reports only full windows on the STEP grid too,
        # and when RANGE is a multiple of d the two grids agree. The windows' STEPs are not used:
        # COMPUTED EVERY sets the one grid, so streams with different STEPs, or RANGEs that differ
        # by a non-multiple of STEP, are fine in one query.
        every = ms_to_us(query.computed_every_ms)
        widest = ms_to_us(max(w.range_ms for w in time_windows))
        return Schedule(t0_us, every, t0_us + -(-widest // every) * every)
    steps = {w.step_ms for w in time_windows}
    if len(steps) > 1:
        raise UnsupportedConstruct(
            query.source,
            "streams with different STEPs in one query "
            f"({', '.join(f'{s} ms' for s in sorted(steps))}) without COMPUTED EVERY",
        )
    if time_windows:
        step = ms_to_us(time_windows[0].step_ms)
        phases = {ms_to_us(w.range_ms) % step for w in time_windows}
        if len(phases) > 1:
            raise UnsupportedConstruct(
                query.source,
                "windows whose closes never coincide "
                "(RANGEs that differ by a non-multiple of STEP) without COMPUTED EVERY",
            )
        return Schedule(t0_us, step, t0_us + ms_to_us(min(w.range_ms for w in time_windows)))
    if query.computed_every_ms:
        step = ms_to_us(query.computed_every_ms)
        return Schedule(t0_us, step, t0_us + step)
    return Schedule(t0_us, None, None)
