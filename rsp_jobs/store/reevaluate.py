"""Re-evaluate a stored window result from the stored frames it was computed from, with the
query text recorded as its plan, and compare: the last step of ``rsp audit``."""
from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Sequence

from sqlalchemy import Engine, select

from rsp_jobs import settings
from rsp_jobs import compiler
from rsp_jobs.engine import Interval, evaluate
from rsp_jobs.errors import InputError
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
from rsp_jobs.store.models import Frame, FrameTriple, Stream, WindowResult


def reevaluate(engine: Engine, frame_iri: str, query_text: str, query_iri: str,
               background: Sequence[str] = ()) -> tuple[dict, dict]:
    """(stored window, recomputed window) for the result frame ``frame_iri``."""
    with engine.connect() as conn:
        stored = conn.execute(select(WindowResult).join(Frame, Frame.id == WindowResult.frame_id)
                              .where(Frame.frame_iri == frame_iri)).one_or_none()
        if stored is None:
            raise InputError(f"{frame_iri}: not a stored window result")
        query = compiler.compile(query_text, query_iri)
        close = stored.window_close
        lookback = max((getattr(w.window, "range_ms", 0) for w in query.windows), default=0)
        rows = conn.execute(
            select(Stream.iri, Frame.ts, Frame.frame_iri, FrameTriple.id, FrameTriple.s, FrameTriple.p, FrameTriple.o,
                   FrameTriple.o_num, FrameTriple.o_time)
            .join(Frame, Frame.stream_id == Stream.id).join(FrameTriple, FrameTriple.frame_id == Frame.id)
            .where(Stream.iri.in_([w.stream for w in query.windows]), Frame.ts < close,
                   *([Frame.ts >= _minus_ms(close, lookback)] if lookback else []))).all()
    with tempfile.TemporaryDirectory(dir=settings.home_dir()) as scratch:
        lake = Lake(Path(scratch) / "lake")
        for stream in {r.iri for r in rows}:
            batch = StreamBatch(stream, "store")
            # a frame's triples were stored in the order the stream delivered them: that is their position
            batch.elements = [Element(stream, r.ts, r.frame_iri, r.s, r.p, r.o, r.o_num, r.o_time, r.id)
                              for r in rows if r.iri == stream]
            lake.write(batch)
        close_us = _micros(close)
        again = list(evaluate(query, lake, list(background), 0, Interval(close_us - 1, close_us)))
    recomputed = again[0] if again else {}
    return stored.payload, recomputed


def _micros(moment: datetime) -> int:
    delta = moment.astimezone(timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _minus_ms(moment: datetime, ms: int) -> datetime:
    return moment - timedelta(milliseconds=ms)


def same_window(a: dict, b: dict) -> bool:
    """Equal as reported windows: same bounds and the same results as multisets."""
    def rows(window: dict):
        items = window.get("bindings", window.get("triples"))
        return None if items is None else sorted(map(repr, items))

    return (a.get("window_close") == b.get("window_close") and a.get("boolean") == b.get("boolean")
            and rows(a) == rows(b))

