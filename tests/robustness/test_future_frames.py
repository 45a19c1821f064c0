"""A frame timestamped past a horizon from now (year 9999, a wrong clock) is quarantined with its
reason, counted, and never moves a stream's watermark; the horizon is ``RSP_FUTURE_HORIZON``
(issue 15, "Nothing jams"). SQLite and PostgreSQL, where the store is involved."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.store.models import Stream
from rsp_jobs.store.provenance import store_ingest
from rsp_jobs.store.tardf import import_stream
from rsp_jobs.times import datetime_lexical

STREAM = "http://ex.org/streams/clock"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"
PAST = datetime(2014, 8, 1, 7, 50, tzinfo=timezone.utc)


def nquads(*times: datetime) -> str:
    return "".join(f'<http://ex.org/f/{i}> {AT} "{datetime_lexical(t)}"^^{DT} .\n'
                   f'<http://ex.org/s> <http://ex.org/v> "{i}" <http://ex.org/f/{i}> .\n'
                   f'<http://ex.org/s> <http://ex.org/w> "{i}" <http://ex.org/f/{i}> .\n' for i, t in enumerate(times))


def test_a_frame_in_year_9999_is_quarantined_with_its_reason_and_the_rest_loads(tmp_path):
    path = tmp_path / "s.nq"
    path.write_text(nquads(PAST, datetime(9999, 12, 31, tzinfo=timezone.utc), PAST + timedelta(seconds=5)))
    batch = read_stream_file(path, STREAM)
    assert batch.frames == 2 and {e.ts for e in batch.elements} == {PAST, PAST + timedelta(seconds=5)}
    (rejection,) = batch.rejections
    assert rejection.line == 5 and rejection.triples == 2
    assert "9999-12-31T00:00:00Z is past the horizon" in rejection.reason and "RSP_FUTURE_HORIZON" in rejection.reason
    assert batch.read_triples == len(batch.elements) + batch.rejected_triples  # counts balance


def test_the_horizon_is_a_setting(tmp_path, monkeypatch):
    now = datetime.now(timezone.utc)
    path = tmp_path / "s.nq"
    path.write_text(nquads(now + timedelta(hours=1), now + timedelta(days=2)))
    assert read_stream_file(path, STREAM).frames == 0  # default: 5 minutes
    monkeypatch.setenv("RSP_FUTURE_HORIZON", "P1D")
    assert read_stream_file(path, STREAM).frames == 1  # an hour ahead is within a day
    monkeypatch.setenv("RSP_FUTURE_HORIZON", "soon")
    with pytest.raises(InputError, match="RSP_FUTURE_HORIZON: not a duration: 'soon'"):
        read_stream_file(path, STREAM)


def test_a_future_frame_never_moves_the_watermark(store, tmp_path):
    path = tmp_path / "s.nq"
    path.write_text(nquads(PAST, datetime(9999, 1, 1, tzinfo=timezone.utc)))
    batch = read_stream_file(path, STREAM)
    store_ingest(store, batch, str(path), datetime.now(timezone.utc))
    with store.connect() as conn:
        assert conn.scalar(select(Stream.watermark).where(Stream.iri == STREAM)) == PAST


def test_a_future_frame_in_a_tardf_import_is_quarantined(store, tmp_path):
    path = tmp_path / "t.trig"
    path.write_text(f'''@prefix dsv: <http://purl.org/dsv#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
<urn:f1> dsv:belongsTo <{STREAM}> ; dsv:hasTimestamp "2014-08-01T07:50:00Z"^^xsd:dateTime ; <urn:v> 1 .
<urn:f2> dsv:belongsTo <{STREAM}> ; dsv:hasTimestamp "9999-01-01T00:00:00Z"^^xsd:dateTime ; <urn:v> 2 .
''')
    report = import_stream(store, path)
    assert (report.frames_written, report.quarantined) == (1, 3)
    with store.connect() as conn:
        assert conn.scalar(select(Stream.watermark).where(Stream.iri == STREAM)) == PAST
