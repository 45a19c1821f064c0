"""What the benchmarks share: how they read a window's close and name the machine."""
from __future__ import annotations

import os

from rsp_jobs.times import parse_us, us_to_ms


def close_ms(window: dict) -> int:
    return us_to_ms(parse_us(window["window_close"]))


def cores() -> int:
    return os.cpu_count() or 0
