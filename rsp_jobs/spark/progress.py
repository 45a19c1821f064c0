"""Progress of a long Spark evaluation in the project's log: every few seconds, each active
stage's completed and total tasks, from a thread that stops with the evaluation. A DAG run's task
log then shows that a 5-minute evaluation is moving. A local or cluster session is asked
through ``SparkContext.statusTracker``; a Spark Connect session reports to a progress handler."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rsp_jobs.spark.session import is_remote

log = logging.getLogger("rsp.spark")


@contextmanager
def reported(spark, what: str, every_s: float = 5.0) -> Iterator[None]:
    """Log the progress of the Spark jobs run inside the block, every ``every_s`` seconds."""
    with _stages(spark) as running:
        done = threading.Event()

        def report() -> None:
            while not done.wait(every_s):
                stages = running()
                if stages:
                    log.info(
                        "%s: Spark: %d stage(s) to finish, %d/%d of their tasks done",
                        what,
                        len(stages),
                        sum(s[1] for s in stages),
                        sum(s[2] for s in stages),
                    )

        thread = threading.Thread(target=report, name="rsp-spark-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()


@contextmanager
def _stages(spark) -> Iterator[Callable[[], list[tuple[int, int, int]]]]:
    """A function giving the active stages as (id, completed tasks, tasks)."""
    if not is_remote(spark):
        tracker = spark.sparkContext.statusTracker()

        def running() -> list[tuple[int, int, int]]:
            stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
            return [(s.stageId, s.numCompletedTasks, s.numTasks) for s in stages if s is not None]

        yield running
        return
    latest: list[tuple[int, int, int]] = []

    def handler(stages, inflight_tasks, operation_id, done) -> None:
        latest[:] = (
            []
            if done
            else [
                (s.stage_id, s.num_completed_tasks, s.num_tasks) for s in stages or () if not s.done
            ]
        )

    spark.registerProgressHandler(handler)
    try:
        yield lambda: list(latest)
    finally:
        spark.removeProgressHandler(handler)
