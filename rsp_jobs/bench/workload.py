"""The benches' CityBench workload: ``span`` days of the 33 Aarhus traffic streams from ``day``,
mapped into one stream (a frame per 5-minute reading time) and read into a lake of the bench's
own in batches of whole frames, as a large landing file is, so that months of data are never
held whole. What is kept beside the lake: the first day's elements (for rdflib) and the
congestion readings as plain typed columns (the hand-written floor, ``anchors.typed_floor``)."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from rsp_jobs.bench import anchors
from rsp_jobs.bench.reference import Elem
from rsp_jobs.ingest import citybench
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_chunks
from rsp_jobs.times import to_us, us_to_ms

TRAFFIC = citybench.TRAFFIC
# a batch of whole frames of about this size: a day of the 33 streams is some 60 MB, so a batch
# is a few days and most hours are one Parquet file
INGEST_CHUNK_BYTES = 256 << 20


@dataclass
class Traffic:
    lake: Lake
    typed: Path  # the readings as (ts, sensor, level) Parquet
    repository: str  # the sensor repository: the queries' background
    properties: list[str]  # what the repository types ct:CongestionLevel
    triples: int
    frames: int
    first_day: list[Elem]
    mapping_seconds: float
    ingest_seconds: float  # parsing and writing the lake, without what is kept beside it


def load_traffic(day: datetime, span: int, work: Path) -> Traffic:
    """The lake ``work/lake`` (replaced) holding ``span`` days from ``day``, with what is kept."""
    shutil.rmtree(work / "lake", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    stream_file = citybench.merged_traffic(
        day, day + timedelta(days=span), work / f"traffic-{day:%Y-%m-%d}-{span}d.nq"
    )
    mapping_s = time.perf_counter() - t
    repository = citybench.sensor_repository_path()
    properties = anchors.congestion_properties(repository)
    day_end = to_us(day + timedelta(days=1))
    lake = Lake(work / "lake")
    triples = frames = 0
    first_day: list[Elem] = []
    readings: list = []
    kept_s = 0.0
    t = time.perf_counter()
    for number, chunk in enumerate(
        read_stream_chunks(stream_file, TRAFFIC, limit=INGEST_CHUNK_BYTES)
    ):
        lake.write(chunk, batch_id=f"traffic-{day:%Y%m%d}-{number:04d}")
        kept = time.perf_counter()
        triples += len(chunk.elements)
        frames += chunk.frames
        first_day += [
            Elem(TRAFFIC, us_to_ms(to_us(e.ts)), e.s, e.p, e.o)
            for e in chunk.elements
            if to_us(e.ts) < day_end
        ]
        readings += anchors.typed_readings(chunk.elements, properties)
        kept_s += time.perf_counter() - kept
    ingest_s = time.perf_counter() - t - kept_s
    typed = anchors.write_typed(readings, work / "typed.parquet")
    return Traffic(
        lake, typed, str(repository), properties, triples, frames, first_day, mapping_s, ingest_s
    )
