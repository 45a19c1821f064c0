"""``Lake.rows``: what a read of a span scans, from the Parquet footers, without Spark (it
chooses between Spark's interpreted and generated code, ``session.batch_settings``)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch

A, B = "http://ex.org/a", "http://ex.org/b"
T0 = datetime(2024, 1, 1, 10, 0, tzinfo=timezone.utc)


def _batch(stream: str, minutes: list[int]) -> StreamBatch:
    batch = StreamBatch(stream=stream, source="generated")
    for m in minutes:
        ts = T0 + timedelta(minutes=m)
        batch.elements.append(Element(stream, ts, f"{stream}/f{m}", f"<{stream}/s{m}>", "<http://ex.org/p>",
                                      f'"{m}"', None, None))
    return batch


def test_rows_counts_the_hours_a_read_touches(tmp_path):
    lake = Lake(tmp_path / "lake")
    lake.write(_batch(A, [0, 10, 50, 70, 130]), batch_id="one")  # hours 10, 10, 10, 11, 12
    lake.write(_batch(A, [75]), batch_id="two")  # a second file in hour 11
    lake.write(_batch(B, [5, 6]), batch_id="one")
    assert lake.rows([A]) == 6 and lake.rows([B]) == 2 and lake.rows([A, B]) == 8
    assert lake.rows([A], T0 + timedelta(minutes=65), T0 + timedelta(minutes=80)) == 2  # hour 11 alone
    assert lake.rows([A], T0 + timedelta(minutes=65)) == 3  # hours 11 and 12
    assert lake.rows([A], None, T0 + timedelta(minutes=5)) == 3  # hour 10 whole: an upper bound
    assert lake.rows(["http://ex.org/none"]) == 0
