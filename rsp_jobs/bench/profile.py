"""Where an evaluation's time goes, for ``make bench`` (wanted wherever Spark itself is the
limit on two cores): the Spark jobs and stages it ran (the status tracker
of the bench's own session, in a job group of its own) and its py4j round trips to the JVM:
how many, and how long the driver waited in the short ones (building the plan: every
``pyspark.sql.functions`` call is one or more) against the rest of the block (Spark running its
jobs and the results reaching Python: they come as an Arrow stream over a socket of their own,
not in a py4j call).

A measuring tool for the bench only: it wraps py4j's connection for the length of the block."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

SHORT_S = 0.01  # a round trip shorter than this is the plan being built, not a job running


@contextmanager
def profiled(spark, group: str) -> Iterator[dict]:
    """Fills the yielded dict, when the block ends, with ``seconds``, ``jobs``, ``stages`` (the
    distinct stages of those jobs: a stage two jobs share, run once, is one), ``py4j_calls``,
    ``bytes_read`` (``bytes_read``), ``plan_calls_seconds`` and ``other_seconds``."""
    from py4j.clientserver import ClientServerConnection

    from rsp_jobs.spark.session import is_remote

    if is_remote(spark):  # no py4j and no status tracker on the driver: nothing to count
        yield {}
        return
    counts = {"calls": 0, "short": 0.0}
    send = ClientServerConnection.send_command

    def counted(connection, command):
        started = time.perf_counter()
        try:
            return send(connection, command)
        finally:
            took = time.perf_counter() - started
            counts["calls"] += 1
            if took < SHORT_S:
                counts["short"] += took

    context = spark.sparkContext
    context.setJobGroup(group, "make bench profile")
    ClientServerConnection.send_command = counted
    read_before = bytes_read(spark)
    profile: dict = {}
    started = time.perf_counter()
    try:
        yield profile
    finally:
        ClientServerConnection.send_command = send
        seconds = time.perf_counter() - started
        context.setLocalProperty("spark.jobGroup.id", None)
        tracker = context.statusTracker()
        jobs = tracker.getJobIdsForGroup(group)
        stage_ids = {s for info in map(tracker.getJobInfo, jobs) if info for s in info.stageIds}
        profile.update(
            {
                "seconds": round(seconds, 2),
                "jobs": len(jobs),
                "stages": len(stage_ids),
                "py4j_calls": counts["calls"],
                "bytes_read": bytes_read(spark) - read_before,
                "plan_calls_seconds": round(counts["short"], 2),
                "other_seconds": round(seconds - counts["short"], 2),
            }
        )


def bytes_read(spark) -> int:
    """The bytes the session's JVM has read from local files so far (Hadoop's file-system
    statistics of the ``file`` scheme): the lake's Parquet as Spark reads it. A cached
    relation's reads are not counted (Spark's stage "Input" counts them too)."""
    statistics = spark.sparkContext._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()
    return sum(
        statistics.get(i).getBytesRead()
        for i in range(statistics.size())
        if statistics.get(i).getScheme() == "file"
    )
