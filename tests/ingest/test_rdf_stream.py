"""Stream files in the RSP data model: frames from named graphs, times from the default graph;
whatever is malformed is rejected with its file and line, counted and quarantined, never lost."""
from __future__ import annotations

import json

import pytest

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file

AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"
GOOD = f"""<http://ex/f1> {AT} "2014-08-01T07:50:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> <http://ex/f1> .
<http://ex/s> <http://ex/q> <http://ex/o> <http://ex/f1> .
<http://ex/f2> {AT} "2014-08-01T07:55:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "2.5"^^<http://www.w3.org/2001/XMLSchema#double> <http://ex/f2> .
"""


def test_frames_become_elements_with_their_times_and_typed_values(tmp_path):
    path = tmp_path / "s.nq"
    path.write_text(GOOD)
    batch = read_stream_file(path, "http://ex/stream")
    assert not batch.rejections
    assert batch.frames == 2 and len(batch.elements) == 3
    by_frame = {e.frame: e for e in batch.elements if e.p == "<http://ex/p>"}
    assert by_frame["http://ex/f1"].ts.isoformat() == "2014-08-01T07:50:00+00:00"
    assert by_frame["http://ex/f1"].o_num == 1.0 and by_frame["http://ex/f2"].o_num == 2.5


def test_frames_leave_in_time_order_whatever_their_iris_sort_as(tmp_path):
    lines = []
    for second in (9, 10, 2, 30):  # frame/10 sorts before frame/2 and frame/9 as text
        lines.append(f'<http://ex/frame/{second}> {AT} "2014-08-01T07:50:{second:02d}Z"^^{DT} .')
        lines.append(f"<http://ex/s> <http://ex/p> <http://ex/o{second}> <http://ex/frame/{second}> .")
    path = tmp_path / "s.nq"
    path.write_text("\n".join(lines) + "\n")
    batch = read_stream_file(path, "http://ex/stream")
    assert [e.frame for e in batch.elements] == [f"http://ex/frame/{s}" for s in (2, 9, 10, 30)]


def test_a_malformed_nquads_line_is_rejected_with_its_line_and_the_rest_kept(tmp_path):
    path = tmp_path / "s.nq"
    lines = GOOD.splitlines()
    lines.insert(2, "<http://ex/s> <http://ex/p> this is not rdf <http://ex/f1> .")
    path.write_text("\n".join(lines) + "\n")
    batch = read_stream_file(path, "http://ex/stream")
    assert len(batch.elements) == 3
    assert [(r.file, r.line) for r in batch.rejections] == [(str(path), 3)]
    assert "malformed N-Quads" in str(batch.rejections[0]) and f"{path}:3" in str(batch.rejections[0])
    assert len(batch.elements) + batch.rejected_triples == 4  # read = accepted + rejected


def test_frames_without_a_valid_time_or_with_a_taken_time_are_rejected_and_counted(tmp_path):
    path = tmp_path / "s.nq"
    path.write_text(GOOD + f"""<http://ex/s> <http://ex/p> "3" <http://ex/f3> .
<http://ex/s> <http://ex/p> "4" <http://ex/f3> .
<http://ex/f4> {AT} "yesterday" .
<http://ex/s> <http://ex/p> "5" <http://ex/f4> .
<http://ex/f5> {AT} "2014-08-01T07:50:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "6" <http://ex/f5> .
""")
    batch = read_stream_file(path, "http://ex/stream")
    reasons = {r.reason.split(" has ")[0]: r for r in batch.rejections}
    assert reasons["frame <http://ex/f3>"].triples == 2 and "no prov:generatedAtTime" in reasons["frame <http://ex/f3>"].reason
    assert "not an xsd:dateTime" in reasons["frame <http://ex/f4>"].reason
    assert "same timestamp" in reasons["frame <http://ex/f5>"].reason
    assert len(batch.elements) + batch.rejected_triples == 3 + 4


def test_a_trig_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "s.trig"
    path.write_text("@prefix ex: <http://ex/> .\nex:f1 { ex:s ex:p ; }\n")
    with pytest.raises(InputError, match=rf"{path}:2: not valid TriG"):
        read_stream_file(path, "http://ex/stream")


def test_trig_frames_are_read_like_nquads(tmp_path):
    path = tmp_path / "s.trig"
    path.write_text(f"""@prefix ex: <http://ex/> .
ex:f1 {AT} "2014-08-01T07:50:00Z"^^{DT} .
ex:f1 {{ ex:s ex:p 1 ; ex:q ex:o . }}
""")
    batch = read_stream_file(path, "http://ex/stream")
    assert batch.frames == 1 and len(batch.elements) == 2 and not batch.rejections


def test_unknown_file_types_and_missing_files_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="unknown stream file type '.csv'"):
        (tmp_path / "s.csv").write_text("x")
        read_stream_file(tmp_path / "s.csv", "http://ex/stream")
    with pytest.raises(InputError, match="not found"):
        read_stream_file(tmp_path / "missing.nq", "http://ex/stream")


def test_loading_a_batch_twice_replaces_it_and_rejections_are_quarantined(tmp_path, spark):
    path = tmp_path / "s.nq"
    path.write_text(GOOD + "garbage line\n")
    batch = read_stream_file(path, "http://ex/stream")
    lake = Lake(tmp_path / "lake")
    assert lake.write(batch) == 3
    assert lake.write(batch) == 3
    assert lake.read(spark, ["http://ex/stream"]).count() == 3
    quarantined = [json.loads(line) for f in (tmp_path / "quarantine").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert [(q["line"], q["text"]) for q in quarantined] == [(6, "garbage line")]
