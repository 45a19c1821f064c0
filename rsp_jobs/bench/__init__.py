"""The benchmarks of ``make bench``: the engine against rdflib (``__main__``), the frame store
(``store``), temporal patterns (``patterns``) and reasoning (``reasoning``), with the rdflib
reference they compare against (``reference``, which the differential tests use too). Here:
what they share, how they read a window's close and name the machine."""
from __future__ import annotations

import os
from datetime import datetime


def close_ms(window: dict) -> int:
    moment = datetime.fromisoformat(window["window_close"].replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


def cores() -> int:
    return os.cpu_count() or 0
