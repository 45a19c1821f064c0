"""The benchmarks of ``make bench``: the engine against rdflib (``__main__``), the frame store
(``store``), temporal patterns (``patterns``), reasoning (``reasoning``) and a task's fixed
cost (``task_cost``), with the rdflib
reference they compare against (``reference``, which the differential tests use too). Here:
what they share, how they read a window's close, compile their window queries and name the
machine."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rsp_jobs.results import WindowResult
from rsp_jobs.times import us_to_ms

if TYPE_CHECKING:
    from rsp_jobs.algebra.plan import WindowQuery
    from rsp_jobs.language.ast import TimeWindow


def window_query(text: str, source: str) -> WindowQuery:
    """A benchmark's C-SPARQL query, compiled (what ``engine.evaluate`` runs)."""
    from rsp_jobs import compiler
    from rsp_jobs.algebra.plan import WindowQuery

    query = compiler.compile(text, source)
    if not isinstance(query, WindowQuery):
        raise ValueError(f"{source}: not a C-SPARQL window query")
    return query


def time_window(query: WindowQuery) -> TimeWindow:
    """The ``[RANGE r STEP s]`` window of the query's first stream."""
    from rsp_jobs.language.ast import TimeWindow

    window = query.windows[0].window
    if not isinstance(window, TimeWindow):
        raise ValueError(f"{query.source}: the first stream's window is not [RANGE r STEP s]")
    return window


def close_ms(window: WindowResult) -> int:
    return us_to_ms(window.close_us)


def cores() -> int:
    return os.cpu_count() or 0
