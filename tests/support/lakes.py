"""A lake written from a few frames of N-Triples terms, for tests of what the engine does with
them (``Lake.write`` of one batch, as ingest writes a file's)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch

STREAM = "http://example.org/t/stream"


def small_lake(root: Path, frames: list[tuple[int, list[tuple[str, str, str]]]], stream: str = STREAM) -> Lake:
    """``frames``: (second since the epoch, its triples as N-Triples terms)."""
    lake = Lake(root)
    batch = StreamBatch(stream=stream, source="engine-probe")
    for second, triples in frames:
        ts = datetime.fromtimestamp(second, tz=timezone.utc)
        for s, p, o in triples:
            batch.elements.append(Element(stream, ts, f"{stream}/frame/{second}", s, p, o, None, None))
    lake.write(batch, batch_id="probe")
    return lake
