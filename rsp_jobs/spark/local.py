"""Small tables built on the driver (background graphs, schema closures, partial matches) as
DataFrames that Spark plans as a ``LocalTableScan``.

``spark.createDataFrame(list_of_tuples)`` ships the rows as a pickled Python RDD: every plan
that reads it starts a Python worker and a job of its own, which on two cores was most of the
time of a pattern or entailment batch. The same rows handed over as one Arrow table become a
local relation in the plan: no Python worker, no extra job, and Spark can broadcast it freely.

A local relation travels inside the plan, though, and every step that analyses or optimizes the
plan copies it: with 200,000 rows (an unbounded pattern's kept partial matches) a ten-step plan
over it ran in 24 s instead of 2 s. A larger table is therefore checkpointed once into Spark's
block store (``localCheckpoint``), and the plan holds only a reference to it.

``materialized`` does the same for a frame Spark computed (an operand a plan reads several
times), and ``release`` frees its blocks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

LOCAL_ROWS = 5_000  # above this many rows, a checkpointed table rather than a local relation


def local_frame(
    spark: SparkSession, rows: Iterable[Sequence], schema: str | T.StructType
) -> DataFrame:
    """``rows`` (tuples in ``schema``'s column order; a DDL string or a ``StructType``) as a
    DataFrame over a local relation (checkpointed, above ``LOCAL_ROWS``).

    >>> local_frame(spark, [("a", 1)], "x string, n long").collect()  # doctest: +SKIP
    [Row(x='a', n=1)]
    """
    struct = schema if isinstance(schema, T.StructType) else T._parse_datatype_string(schema)
    if not isinstance(struct, T.StructType):
        raise ValueError(f"a local frame's schema is a row type, not {schema!r}")
    rows = list(rows)
    columns = list(zip(*rows)) if rows else [()] * len(struct.fields)
    arrow_schema = to_arrow_schema(struct, prefers_large_types=False)
    table = pa.Table.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, arrow_schema)], schema=arrow_schema
    )
    frame = spark.createDataFrame(table, struct)
    return frame if len(rows) <= LOCAL_ROWS else frame.localCheckpoint(eager=True)


def materialized(frame: DataFrame) -> DataFrame:
    """``frame`` computed once into Spark's block store (``localCheckpoint``), for plans that
    read it several times: a relation of known (small) size that the planner can broadcast
    instead of shuffling both sides of every join. A checkpoint rather than ``cache()``: plans
    built over it hold a reference to its blocks instead of the plan that computed them, and
    Spark analyses the whole plan again at every step that builds on it (a pattern
    combination's three pieces each hold both operands, so cached plans grew threefold a level,
    and building them, not running them, took most of an unbounded pattern's batch).

    In as many partitions as a shuffle makes (``spark.sql.shuffle.partitions``): the lake's
    files, and the pieces a plan unions, would otherwise multiply the partitions, and so the
    tasks, of every stage above (168 tasks of a few rows each, for 15 minutes of traffic, were
    most of a pattern batch's Spark time)."""
    partitions = int(frame.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    return frame.coalesce(partitions).localCheckpoint(eager=True)


def release(frame: DataFrame) -> None:
    """Free the blocks of a ``materialized`` frame now, not when the JVM collects its plan (a
    long-lived session runs many batches). On Spark Connect the server frees a checkpoint once
    the client's DataFrame is gone."""
    from rsp_jobs.spark.session import is_remote

    if not is_remote(frame.sparkSession):
        frame._jdf.queryExecution().logical().rdd().unpersist(False)
