"""Files that are not UTF-8 text, or not text at all, wherever a user can put one: a stream file,
a landing file, a query, a rule, the stream catalog. Each is one clear error naming the file, the
line and the byte; a landing file is moved to ``rejected/`` with its reason and the stream's next
files still load (issue 15, "Nothing jams")."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.language.parser import parse_query_file
from rsp_jobs.language.dotr import parse_rule_file
from rsp_jobs.orchestrate import registry
from rsp_jobs.orchestrate.ingest import ingest_landing
from rsp_jobs.store import db
from rsp_jobs.store.frames import frame_at

STREAM = "http://ex.org/streams/robust"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = "<http://www.w3.org/2001/XMLSchema#dateTime>"
JUNK = bytes(range(256)) * 4  # binary: line 2 starts after byte 10 (\n), 0x80 (byte 128) cannot start UTF-8
LATIN1 = 'REGISTER QUERY q AS\nSELECT ?s\nFROM STREAM <http://ex.org/s> [RANGE 1m STEP 1m]\nWHERE { ?s ?p "café" }\n'.encode("latin-1")


def frame(name: str, second: int, value: int) -> str:
    return (f'<http://ex.org/f/{name}> {AT} "2014-08-01T07:50:{second:02d}Z"^^{DT} .\n'
            f'<http://ex.org/s> <http://ex.org/v> "{value}" <http://ex.org/f/{name}> .\n')


@pytest.mark.parametrize("content, line, byte", [(JUNK, 2, 128), (LATIN1, 4, LATIN1.index(b"\xe9"))])
def test_a_stream_file_that_is_not_utf8_names_file_line_and_byte(tmp_path, content, line, byte):
    path = tmp_path / "bad.nq"
    path.write_bytes(content)
    with pytest.raises(InputError, match=rf"^{path}:{line}: the stream file is not UTF-8 text \(byte {byte}: "):
        read_stream_file(path, STREAM)


def test_query_and_rule_files_that_are_not_utf8_are_input_errors(tmp_path):
    query, rule = tmp_path / "q.rsp", tmp_path / "r.dotr"
    query.write_bytes(LATIN1)
    rule.write_bytes(JUNK)
    with pytest.raises(InputError, match=rf"^{query}:4: the query file is not UTF-8"):
        parse_query_file(query)
    with pytest.raises(InputError, match=rf"^{rule}:2: the rule file is not UTF-8"):
        parse_rule_file(rule)


@pytest.mark.gx  # the loaded files pass the input gate
def test_a_junk_landing_file_is_rejected_with_its_reason_and_the_next_files_load(home, data_dir):
    landing = registry.stream_config(STREAM).landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    (landing / "a-0001.nq").write_text(frame("a", 0, 1))
    (landing / "a-0002.nq").write_bytes(JUNK)
    (landing / "a-0003.nq").write_text(frame("c", 10, 3))

    with pytest.raises(InputError, match="a-0002.nq:2: the stream file is not UTF-8 text"):
        ingest_landing(STREAM)
    assert not (landing / "a-0002.nq").exists()  # nothing left to jam the stream
    rejected = landing / "rejected"
    assert (rejected / "a-0002.nq").read_bytes() == JUNK
    assert "not UTF-8 text (byte 128" in (rejected / "a-0002.nq.reason").read_text()
    engine = db.engine()
    for second, name in ((0, "a"), (10, "c")):  # the files before and after it loaded
        found = frame_at(engine, STREAM, datetime(2014, 8, 1, 7, 50, second, tzinfo=timezone.utc))
        assert found is not None and found.iri == f"http://ex.org/f/{name}"

    # the loaded files left for loaded/; the next run finds nothing and does not fail again; a
    # second junk file of the same name keeps the first one's evidence
    assert sorted(p.name for p in (landing / "loaded").iterdir()) == ["a-0001.nq", "a-0003.nq"]
    assert ingest_landing(STREAM).files == []
    (landing / "a-0002.nq").write_bytes(JUNK[::-1])
    with pytest.raises(InputError):
        ingest_landing(STREAM)
    assert sorted(p.name for p in rejected.iterdir()) == ["a-0002.1.nq", "a-0002.1.nq.reason", "a-0002.nq",
                                                          "a-0002.nq.reason"]


def test_a_query_file_that_is_not_utf8_loses_only_its_own_dag(tmp_path):
    root = tmp_path / "queries"
    (root / "app").mkdir(parents=True)
    good = "REGISTER QUERY good AS\nSELECT ?s\nFROM STREAM <http://ex.org/s> [RANGE 1m STEP 1m]\nWHERE { ?s ?p ?o }\n"
    (root / "app" / "good.rsp").write_text(good)
    (root / "app" / "bad.rsp").write_bytes(LATIN1)
    loaded, errors = registry.discover(root)
    assert [rq.path.name for rq in loaded] == ["good.rsp"]
    byte = LATIN1.index("é".encode("latin-1"))
    assert [str(e) for e in errors.values()] == [f"{root / 'app' / 'bad.rsp'}:4: the query file is not UTF-8 text "
                                                 f"(byte {byte}: b'\\xe9')"]


BROKEN_TRIG = '''@prefix ex: <http://ex.org/> .
@prefix prov: <http://www.w3.org/ns/prov#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
# a comment with { and } and . in it
ex:g1 { ex:s ex:v "a { b } c. d" ; ex:w 1.5 . }
ex:g1 prov:generatedAtTime "2014-08-01T07:50:00Z"^^xsd:dateTime .
ex:g2 { ex:s ex:v "broken ; ex:w 2 . }
ex:g2 prov:generatedAtTime "2014-08-01T07:50:01Z"^^xsd:dateTime .
PREFIX ey: <http://ey.org/>
ex:g3 { ex:s ey:v ex:o , """long
string with } and ." """ . }
ex:g3 prov:generatedAtTime "2014-08-01T07:50:02Z"^^xsd:dateTime .
ex:g4 { ex:s ex:v ex:o ex:extra . }
ex:g4 prov:generatedAtTime "2014-08-01T07:50:03Z"^^xsd:dateTime .
'''


def test_a_malformed_part_of_a_trig_file_rejects_that_part_with_its_line(tmp_path):
    path = tmp_path / "s.trig"
    path.write_text(BROKEN_TRIG)
    batch = read_stream_file(path, STREAM)
    assert sorted({e.frame for e in batch.elements}) == ["http://ex.org/g1", "http://ex.org/g3"]
    assert [e.o for e in batch.elements if e.frame.endswith("g3")] == ["<http://ex.org/o>",
                                                                        '"long\\nstring with } and .\\" "']
    assert [(r.line, r.triples) for r in batch.rejections] == [(7, 1), (13, 1)]
    assert all(r.reason.startswith("malformed TriG: ") for r in batch.rejections)
    assert batch.rejections[0].text.startswith('ex:g2 { ex:s ex:v "broken')
    assert batch.read_triples == len(batch.elements) + batch.rejected_triples


def test_a_file_of_which_no_part_is_trig_is_an_input_error(tmp_path):
    path = tmp_path / "s.trig"
    path.write_text("this is { not TriG\nat all }\n")
    with pytest.raises(InputError, match=rf"^{path}:\d+: not valid TriG"):
        read_stream_file(path, STREAM)


def test_a_background_file_that_is_not_utf8_names_file_line_and_byte(tmp_path):
    from rsp_jobs.spark.background import load_graph

    path = tmp_path / "background.ttl"
    path.write_bytes('@prefix ex: <http://ex.org/> .\nex:s ex:label "café" .\n'.encode("latin-1"))
    with pytest.raises(InputError, match=rf"^{path}:2: the background file is not UTF-8 text \(byte \d+: b'\\xe9'\)"):
        load_graph(path)
