"""A frame IRI names one frame of one stream (TA-RDF restriction 2): reusing it in another
stream, or re-delivering it at another time, is a clear error naming the file, the frame and
the streams, and nothing of the file is written (issue 15, "Clean up and tell")."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import func, select

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.store.models import Frame
from rsp_jobs.store.provenance import store_ingest

AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"
S1, S2 = "http://ex.org/streams/one", "http://ex.org/streams/two"


def load(store, tmp_path, name: str, stream: str, frames: dict[str, int]):
    path = tmp_path / name
    path.write_text("".join(f'<http://ex.org/{f}> {AT} "2014-08-01T07:50:{s:02d}Z"^^{DT} .\n'
                            f'<http://ex.org/s> <http://ex.org/v> "{s}" <http://ex.org/{f}> .\n'
                            for f, s in frames.items()))
    store_ingest(store, read_stream_file(path, stream), str(path), datetime.now(timezone.utc))
    return path


def frame_count(store) -> int:
    with store.connect() as conn:
        return conn.scalar(select(func.count()).select_from(Frame))


def test_a_frame_iri_of_another_stream_is_refused_naming_file_frame_and_streams(store, tmp_path):
    load(store, tmp_path, "a.nq", S1, {"f1": 0})
    with pytest.raises(InputError) as err:
        load(store, tmp_path, "b.nq", S2, {"g1": 1, "f1": 2})
    message = str(err.value)
    assert message.startswith(f"{tmp_path / 'b.nq'}: frame <http://ex.org/f1> belongs to stream <{S1}>")
    assert f"frame of <{S2}>" in message and "Nothing of this file was loaded" in message
    assert frame_count(store) == 1  # g1 was not written either


def test_a_frame_iri_redelivered_at_another_time_is_refused(store, tmp_path):
    load(store, tmp_path, "a.nq", S1, {"f1": 0})
    with pytest.raises(InputError, match=r"frame <http://ex.org/f1> of <.*one> is stored at 2014-08-01T07:50:00"
                                         r"\+00:00; it cannot also be the frame at 2014-08-01T07:50:05"):
        load(store, tmp_path, "b.nq", S1, {"f1": 5})
    assert frame_count(store) == 1
