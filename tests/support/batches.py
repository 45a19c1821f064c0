"""Tests that call a Spark stage directly (``spark.dotr``, ``spark.events``) run it under the
settings the engine gives a batch of as many stream rows (``session.batch_settings``: a small
batch interpreted, on two partitions), as ``engine.match`` and ``engine.match_rules`` do."""
from __future__ import annotations

from contextlib import contextmanager

from rsp_jobs.spark.session import batch_settings, settings_while


@contextmanager
def as_a_batch(spark, rows: int):
    with settings_while(spark, batch_settings(rows)):
        yield
