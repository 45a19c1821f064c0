"""The hand-written Spark jobs ``make bench`` times the engine beside, both computing
``queries/citybench/congestion_by_segment.rsp``'s answers: per window close and sensor, the
average, count and maximum of the congestion levels observed in ``[close - RANGE, close)``.

- ``rdf_anchor``: what a PySpark developer would write for this one query over the same lake:
  read the stream's triples, join each observation's property, sensor and value by subject,
  keep the properties the sensor repository types ``ct:CongestionLevel``, window with Spark's
  own ``window()``, aggregate. It joins before windowing, which is right here because an
  observation's triples arrive in one frame (the answers are compared with the engine's, so a
  stream where that fails would show).
- ``typed_floor``: the same aggregation over plain typed columns (time, sensor, level; no RDF,
  no join), read from a Parquet file written once beforehand: the floor of what Spark costs
  on this machine for the windows alone.

Both windows are Spark's sliding windows ``[start, start + RANGE)`` at multiples of STEP from
the epoch, the engine's grid for ``t0 = 0`` (``rsp_jobs.spark.windows``); each job returns
``{(close ms, sensor IRI): (average, count, maximum)}`` for the closes in ``(after, until]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from rdflib import RDF, URIRef

from rsp_jobs.ingest.citybench import CT, SAO, SSN
from rsp_jobs.ingest.lake import Lake, hour_of, stream_key
from rsp_jobs.ingest.rdf_stream import Element
from rsp_jobs.rdf_files import load_rdf_file

Answers = dict[tuple[int, str], tuple[float, int, float]]


def congestion_properties(repository: Path) -> list[str]:
    """The IRIs the sensor repository types ``ct:CongestionLevel`` (the query's background)."""
    graph = load_rdf_file(repository, "sensor repository")
    return sorted(str(p) for p in graph.subjects(RDF.type, CT.CongestionLevel))


def rdf_anchor(
    spark,
    lake: Lake,
    stream: str,
    properties: Iterable[str],
    range_s: int,
    step_s: int,
    after: datetime,
    until: datetime,
) -> Answers:
    from pyspark.sql import functions as F

    start = after - timedelta(seconds=range_s)
    triples = spark.read.parquet(str(lake.root / f"stream_key={stream_key(stream)}")).where(
        (F.col("hour") >= hour_of(start))
        & (F.col("hour") <= hour_of(until))
        & (F.col("ts") >= F.lit(start))
        & (F.col("ts") < F.lit(until))
    )

    def predicate(iri: URIRef, *columns):
        return triples.where(F.col("p") == f"<{iri}>").select(F.col("s").alias("obs"), *columns)

    congestion = spark.createDataFrame([(f"<{p}>",) for p in properties], "property string")
    readings = (
        predicate(SSN.observedProperty, F.col("o").alias("property"))
        .join(F.broadcast(congestion), "property")
        .join(predicate(SSN.observedBy, F.col("o").alias("sensor")), "obs")
        .join(predicate(SAO.hasValue, "ts", F.col("o_num").alias("level")), "obs")
    )
    return _windowed(readings, range_s, step_s, after, until, lambda sensor: sensor[1:-1])


def typed_readings(
    elements: Iterable[Element], properties: Iterable[str]
) -> list[tuple[datetime, str, float]]:
    """The congestion readings of ``elements`` as (ts, sensor, level). An observation's
    triples are in one frame, so a batch of whole frames gives each of its readings whole."""
    congestion = {f"<{p}>" for p in properties}
    by_obs: dict[str, dict] = {}
    for e in elements:
        by_obs.setdefault(e.s, {})[e.p] = e
    return [
        (fields[value].ts, fields[sensor].o[1:-1], fields[value].o_num)
        for fields in by_obs.values()
        for prop, sensor, value in [
            (f"<{SSN.observedProperty}>", f"<{SSN.observedBy}>", f"<{SAO.hasValue}>")
        ]
        if prop in fields and fields[prop].o in congestion and sensor in fields and value in fields
    ]


def write_typed(readings: Sequence[tuple[datetime, str, float]], path: Path) -> Path:
    """The readings as plain columns (ts, sensor, level) for ``typed_floor``."""
    ts, sensors, levels = (list(c) for c in zip(*readings)) if readings else ([], [], [])
    pq.write_table(
        pa.table(
            {
                "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
                "sensor": sensors,
                "level": pa.array(levels, pa.float64()),
            }
        ),
        path,
    )
    return path


def typed_floor(
    spark, path: Path, range_s: int, step_s: int, after: datetime, until: datetime
) -> Answers:
    from pyspark.sql import functions as F

    start = after - timedelta(seconds=range_s)
    readings = spark.read.parquet(str(path)).where(
        (F.col("ts") >= F.lit(start)) & (F.col("ts") < F.lit(until))
    )
    return _windowed(readings, range_s, step_s, after, until, lambda sensor: sensor)


def _windowed(
    readings, range_s: int, step_s: int, after: datetime, until: datetime, sensor_iri
) -> Answers:
    from pyspark.sql import functions as F

    grouped = (
        readings.groupBy(
            F.window("ts", f"{range_s} seconds", f"{step_s} seconds").alias("w"), "sensor"
        )
        .agg(F.avg("level").alias("avg"), F.count("*").alias("n"), F.max("level").alias("peak"))
        .where((F.col("w.end") > F.lit(after)) & (F.col("w.end") <= F.lit(until)))
        .select(F.unix_millis("w.end").alias("close"), "sensor", "avg", "n", "peak")
    )
    return {
        (row.close, sensor_iri(row.sensor)): (row.avg, row.n, row.peak) for row in grouped.collect()
    }


def engine_answers(windows) -> Answers:
    """The engine's congestion_by_segment windows in the anchors' form."""
    return {
        (w.close_us // 1000, b["sensor"]["value"]): (
            float(b["avgCongestion"]["value"]),
            int(b["readings"]["value"]),
            float(b["peak"]["value"]),
        )
        for w in windows
        for b in w.bindings
    }


def same_answers(left: Answers, right: Answers) -> bool:
    """The same windows and sensors, the same counts, averages and maxima to 1e-9."""
    return left.keys() == right.keys() and all(
        left[k][1] == right[k][1]
        and all(
            abs(a - b) <= 1e-9 * max(1.0, abs(a))
            for a, b in ((left[k][0], right[k][0]), (left[k][2], right[k][2]))
        )
        for k in left
    )
