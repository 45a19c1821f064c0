"""Progress of a long Spark evaluation in the project's log: every few seconds, each active
stage's completed and total tasks (``SparkContext.statusTracker``), from a thread that stops
with the evaluation. A DAG run's task log then shows that a 5-minute evaluation is moving."""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import Iterator

log = logging.getLogger("rsp.spark")


@contextmanager
def reported(spark, what: str, every_s: float = 5.0) -> Iterator[None]:
    """Log the progress of the Spark jobs run inside the block, every ``every_s`` seconds."""
    tracker = spark.sparkContext.statusTracker()
    done = threading.Event()

    def report() -> None:
        while not done.wait(every_s):
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            parts = [f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks"
                     for s in stages if s is not None]
            if parts:
                log.info("%s: Spark %s", what, ", ".join(parts))

    thread = threading.Thread(target=report, name="rsp-spark-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
