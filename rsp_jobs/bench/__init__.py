"""The benchmarks of ``make bench``: the engine against rdflib (``__main__``), the frame store
(``store``), temporal patterns (``patterns``), reasoning (``reasoning``) and a task's fixed
cost (``task_cost``), with the rdflib
reference they compare against (``reference``, which the differential tests use too). Here:
what they share, how they read a window's close and name the machine."""

from __future__ import annotations

import os

from rsp_jobs.results import WindowResult
from rsp_jobs.times import us_to_ms


def close_ms(window: WindowResult) -> int:
    return us_to_ms(window.close_us)


def cores() -> int:
    return os.cpu_count() or 0
