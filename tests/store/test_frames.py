"""Frames in the store: loads are idempotent, atomic and bulk; a frame is replaced only when it
changed; the watermark never goes back; look-ups find frames by time; rejected input is kept
and counted; every term comes back exactly as it went in. Each test runs on SQLite and on
PostgreSQL (see conftest)."""
from __future__ import annotations

import math
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import Element, Rejection, StreamBatch, read_stream_file
from rsp_jobs.store import frames
from rsp_jobs.store.frames import (FrameInfo, first_frame, frame_at, frame_checksum, frame_parts, frame_triples,
                                   frames_in_range, last_frame, load_batch, register_stream)
from rsp_jobs.store.models import Frame, FrameTriple, QuarantinedInput, Stream

STREAM = "http://ex.org/streams/s"
T0 = datetime(2014, 8, 1, 7, 50, tzinfo=timezone.utc)
XSD = "http://www.w3.org/2001/XMLSchema#"


def batch_of(frame_triples_by_time: dict, stream: str = STREAM, source: str = "test.nq") -> StreamBatch:
    """{(frame IRI, ts): [(s, p, o), ...]} as a batch, typed values left empty."""
    batch = StreamBatch(stream=stream, source=source)
    for (iri, ts), triples in frame_triples_by_time.items():
        batch.elements += [Element(stream, ts, iri, s, p, o, None, None) for s, p, o in triples]
    return batch


def sensor_frames(n: int, start: datetime = T0, step: timedelta = timedelta(minutes=5),
                  stream: str = STREAM, name: str = "frame") -> dict:
    return {(f"{stream}/{name}/{i}", start + i * step): [
        (f"<http://ex.org/obs/{i}>", "<http://ex.org/value>", f'"{i}"^^<{XSD}integer>'),
        (f"<http://ex.org/obs/{i}>", "<http://ex.org/sensor>", f"<http://ex.org/sensor/{i % 3}>")]
        for i in range(n)}


def snapshot(engine) -> dict:
    """Every row a load writes, ids included."""
    with engine.connect() as conn:
        return {
            "streams": conn.execute(select(Stream.id, Stream.iri, Stream.kind, Stream.watermark)
                                    .order_by(Stream.id)).all(),
            "frames": conn.execute(select(Frame.id, Frame.stream_id, Frame.ts, Frame.frame_iri, Frame.triple_count,
                                          Frame.checksum).order_by(Frame.id)).all(),
            "triples": conn.execute(select(FrameTriple.id, FrameTriple.frame_id, FrameTriple.s, FrameTriple.p,
                                           FrameTriple.o, FrameTriple.o_num, FrameTriple.o_time)
                                    .order_by(FrameTriple.id)).all(),
            "quarantine": conn.execute(select(QuarantinedInput.source_file, QuarantinedInput.line,
                                              QuarantinedInput.reason, QuarantinedInput.triples)
                                       .order_by(QuarantinedInput.id)).all(),
        }


def count(engine, table) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(table))


def test_the_csrbench_stream_loads_once_and_loading_it_again_changes_nothing(store, csrbench_batch):
    report = load_batch(store, csrbench_batch)
    assert report == frames.LoadReport(frames_written=34, frames_unchanged=0,
                                       triples_written=len(csrbench_batch.elements), quarantined=0)
    before = snapshot(store)
    assert len(before["frames"]) == 34 and len(before["triples"]) == len(csrbench_batch.elements)
    assert sum(f.triple_count for f in before["frames"]) == len(before["triples"])

    again = load_batch(store, csrbench_batch)
    assert again == frames.LoadReport(frames_written=0, frames_unchanged=34, triples_written=0, quarantined=0)
    assert snapshot(store) == before

    by_frame: dict[str, list] = {}
    for e in csrbench_batch.elements:
        by_frame.setdefault(e.frame, []).append((e.s, e.p, e.o))
    for frame in before["frames"]:
        stored = frame_triples(store, frame.frame_iri)
        assert stored == sorted(by_frame[frame.frame_iri])
        assert frame.checksum == frame_checksum(stored)
    typed = {(e.s, e.p, e.o): (e.o_num, e.o_time) for e in csrbench_batch.elements}
    assert {(t.s, t.p, t.o): (t.o_num, t.o_time) for t in before["triples"]} == typed


def test_a_changed_frame_is_replaced_in_place_and_the_others_are_left_alone(store):
    original = sensor_frames(3)
    load_batch(store, batch_of(original))
    before = {f.frame_iri: f for f in snapshot(store)["frames"]}

    changed = dict(original)
    key = (f"{STREAM}/frame/1", T0 + timedelta(minutes=5))
    changed[key] = [("<http://ex.org/obs/1>", "<http://ex.org/value>", '"corrected"'),
                    ("<http://ex.org/obs/1>", "<http://ex.org/note>", '"re-sent"'),
                    ("<http://ex.org/obs/1>", "<http://ex.org/note>", '"re-sent"')]  # a graph: once
    report = load_batch(store, batch_of(changed))
    assert report == frames.LoadReport(frames_written=1, frames_unchanged=2, triples_written=2, quarantined=0,
                                       frames_replaced=1)
    assert report.frames_new == 0

    after = {f.frame_iri: f for f in snapshot(store)["frames"]}
    assert after.keys() == before.keys()
    assert after[key[0]].id == before[key[0]].id  # same row: references to it stay valid
    assert after[key[0]].checksum != before[key[0]].checksum and after[key[0]].triple_count == 2
    assert frame_triples(store, key[0]) == sorted(set(changed[key]))
    for iri in (f"{STREAM}/frame/0", f"{STREAM}/frame/2"):
        assert after[iri] == before[iri]
    assert count(store, FrameTriple) == 2 + 2 + 2


def test_the_watermark_only_moves_forward(store):
    def watermark():
        with store.connect() as conn:
            return conn.scalar(select(Stream.watermark).where(Stream.iri == STREAM))

    load_batch(store, batch_of(sensor_frames(3, start=T0 + timedelta(hours=1))))
    assert watermark() == T0 + timedelta(hours=1, minutes=10)
    load_batch(store, batch_of(sensor_frames(2, start=T0, name="late"), source="late.nq"))
    assert watermark() == T0 + timedelta(hours=1, minutes=10)
    assert count(store, Frame) == 5
    load_batch(store, batch_of(sensor_frames(1, start=T0 + timedelta(days=1), name="next"), source="next.nq"))
    assert watermark() == T0 + timedelta(days=1)


def test_a_stream_has_one_frame_per_timestamp_and_graphs_at_one_time_merge_into_it(store):
    """TA-RDF restriction 2: one frame per stream and time; C-SPARQL §3.1: several graphs may
    share a timestamp. Two frame IRIs at one time in a batch are one frame, the union."""
    clash = {("http://ex.org/f/a", T0): [("<http://ex.org/s>", "<http://ex.org/p>", '"a"')],
             ("http://ex.org/f/b", T0): [("<http://ex.org/s>", "<http://ex.org/p>", '"b"')]}
    report = load_batch(store, batch_of(clash))
    assert (report.frames_written, report.triples_written) == (1, 2)
    assert frame_at(store, STREAM, T0).iri == "http://ex.org/f/a" and frame_at(store, STREAM, T0).triple_count == 2
    assert [(source, graph) for source, graph, _, _ in frame_parts(store, "http://ex.org/f/a")] == [
        ("test.nq", "http://ex.org/f/a"), ("test.nq", "http://ex.org/f/b")]

    load_batch(store, batch_of(sensor_frames(2, start=T0 + timedelta(hours=1))))
    with store.connect() as conn:  # the database itself refuses a second frame at a taken time
        stream_id = conn.scalar(select(Stream.id))
        with pytest.raises(IntegrityError):
            conn.execute(insert(Frame).values(stream_id=stream_id, ts=T0, frame_iri="http://ex.org/f/other",
                                              triple_count=1, checksum="0" * 64))
    # the same time in another stream is another frame
    other = "http://ex.org/streams/other"
    load_batch(store, batch_of(sensor_frames(2, stream=other), stream=other))
    assert frame_at(store, other, T0).iri == f"{other}/frame/0"
    assert frame_at(store, STREAM, T0).iri == "http://ex.org/f/a"


def test_files_that_bring_parts_of_one_time_merge_and_reloading_either_changes_nothing(store, tmp_path):
    """A stream split over files, both with a graph at 07:50: one frame, the union of both, named
    by the first loaded; each file is a part with its line; loading either again is a no-op."""
    at = "<http://www.w3.org/ns/prov#generatedAtTime>"
    dt = "<http://www.w3.org/2001/XMLSchema#dateTime>"
    first, second = tmp_path / "a.nq", tmp_path / "b.nq"
    first.write_text(f"""<http://ex.org/f1> {at} "2014-08-01T07:50:00Z"^^{dt} .
<http://ex.org/s> <http://ex.org/p> "1" <http://ex.org/f1> .
<http://ex.org/s> <http://ex.org/p> "shared" <http://ex.org/f1> .
""")
    second.write_text(f"""<http://ex.org/g1> {at} "2014-08-01T07:50:00Z"^^{dt} .
<http://ex.org/s> <http://ex.org/p> "2" <http://ex.org/g1> .
<http://ex.org/s> <http://ex.org/p> "shared" <http://ex.org/g1> .
<http://ex.org/g2> {at} "2014-08-01T07:51:00Z"^^{dt} .
<http://ex.org/s> <http://ex.org/p> "3" <http://ex.org/g2> .
""")
    load_batch(store, read_stream_file(first, STREAM))
    merged = load_batch(store, read_stream_file(second, STREAM, order=1))
    assert (merged.frames_written, merged.frames_merged, merged.triples_written) == (2, 1, 2)
    union = [("<http://ex.org/s>", "<http://ex.org/p>", f'"{v}"') for v in ("1", "2", "shared")]
    assert frame_triples(store, "http://ex.org/f1") == sorted(union)
    stored = frame_at(store, STREAM, T0)
    assert (stored.iri, stored.triple_count, stored.checksum) == ("http://ex.org/f1", 3, frame_checksum(union))
    assert frame_parts(store, "http://ex.org/f1") == [(str(first), "http://ex.org/f1", 2, 2),
                                                      (str(second), "http://ex.org/g1", 2, 2)]
    before = snapshot(store)
    for path in (first, second):
        again = load_batch(store, read_stream_file(path, STREAM))
        assert again.frames_written == 0 and again.triples_written == 0
    assert snapshot(store) == before


def test_a_changed_part_of_a_merged_frame_is_refused_whole(store):
    """Its earlier triples cannot be told from the other parts', so the load fails with a clear
    message and writes nothing."""
    load_batch(store, batch_of({("http://ex.org/f/a", T0): [("<http://ex.org/s>", "<http://ex.org/p>", '"a"')]},
                               source="a.nq"))
    load_batch(store, batch_of({("http://ex.org/f/b", T0): [("<http://ex.org/s>", "<http://ex.org/p>", '"b"')]},
                               source="b.nq"))
    before = snapshot(store)
    changed = {("http://ex.org/f/b", T0): [("<http://ex.org/s>", "<http://ex.org/p>", '"b2"')]}
    with pytest.raises(InputError, match=r"b\.nq: frame <http://ex.org/f/a> at .* merges parts from a\.nq"):
        load_batch(store, batch_of(changed, source="b.nq"))
    assert snapshot(store) == before


def test_a_frame_iri_names_one_graph_and_reusing_it_at_another_time_fails_whole(store):
    load_batch(store, batch_of(sensor_frames(2)))
    before = snapshot(store)
    moved = {(f"{STREAM}/frame/0", T0 + timedelta(hours=9)): [("<http://ex.org/s>", "<http://ex.org/p>", '"x"')],
             (f"{STREAM}/frame/new", T0 + timedelta(hours=10)): [("<http://ex.org/s>", "<http://ex.org/p>", '"y"')]}
    with pytest.raises(InputError, match=r"moved.nq: frame <.*/frame/0> .* is stored at .*restriction 2\(iii\)"):
        load_batch(store, batch_of(moved, source="moved.nq"))
    assert snapshot(store) == before


def test_first_last_point_and_range_look_ups(store):
    # irregular times with microseconds, given in another time zone, and a second stream in between
    plus_two = timezone(timedelta(hours=2))
    times = [datetime(2014, 8, 1, 9, 50, 0, 123456, tzinfo=plus_two) + timedelta(seconds=s)
             for s in (0, 1, 7, 60, 61, 3600)]
    load_batch(store, batch_of({(f"{STREAM}/frame/{i}", t): [("<http://ex.org/s>", "<http://ex.org/n>", f'"{i}"')]
                                for i, t in enumerate(times)}))
    other = "http://ex.org/streams/other"
    load_batch(store, batch_of(sensor_frames(50, start=T0 - timedelta(hours=1), step=timedelta(minutes=1),
                                             stream=other), stream=other))
    utc = [t.astimezone(timezone.utc) for t in times]

    first, last = first_frame(store, STREAM), last_frame(store, STREAM)
    assert first == FrameInfo(f"{STREAM}/frame/0", utc[0], 1, first.checksum)
    assert first.ts.tzinfo == timezone.utc and first.ts.microsecond == 123456
    assert last.iri == f"{STREAM}/frame/5" and last.ts == utc[5]
    assert frame_at(store, STREAM, utc[2]).iri == f"{STREAM}/frame/2"
    assert frame_at(store, STREAM, times[2]).iri == f"{STREAM}/frame/2"  # same instant, other offset
    assert frame_at(store, STREAM, utc[2] + timedelta(microseconds=1)) is None
    # [start, end): a window's bounds
    assert [f.iri for f in frames_in_range(store, STREAM, utc[1], utc[4])] == [
        f"{STREAM}/frame/{i}" for i in (1, 2, 3)]
    assert [f.iri for f in frames_in_range(store, STREAM, utc[0], utc[5] + timedelta(microseconds=1))] == [
        f"{STREAM}/frame/{i}" for i in range(6)]
    assert frames_in_range(store, STREAM, utc[5] + timedelta(microseconds=1), utc[5] + timedelta(days=1)) == []
    assert first_frame(store, other).ts == T0 - timedelta(hours=1)
    assert last_frame(store, "http://ex.org/streams/none") is None
    assert frames_in_range(store, "http://ex.org/streams/none", utc[0], utc[5]) == []
    assert frame_triples(store, "http://ex.org/no-such-frame") == []
    with pytest.raises(ValueError, match="naive"):
        frame_at(store, STREAM, datetime(2014, 8, 1, 7, 50))


AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
DT = f"<{XSD}dateTime>"
WITH_REJECTS = f"""<http://ex/f1> {AT} "2014-08-01T07:50:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "1"^^<{XSD}integer> <http://ex/f1> .
<http://ex/s> <http://ex/p> this is not rdf <http://ex/f1> .
<http://ex/s> <http://ex/q> <http://ex/o> <http://ex/f1> .
<http://ex/s> <http://ex/p> "3" <http://ex/f3> .
<http://ex/s> <http://ex/p> "4" <http://ex/f3> .
<http://ex/f5> {AT} "2014-08-01T07:50:00Z"^^{DT} .
<http://ex/s> <http://ex/p> "6" <http://ex/f5> .
"""


def test_rejected_input_is_quarantined_counted_and_not_duplicated_on_reload(store, tmp_path):
    path = tmp_path / "s.nq"
    path.write_text(WITH_REJECTS)
    read = sum(1 for line in WITH_REJECTS.splitlines() if AT not in line)  # triple lines in the file
    batch = read_stream_file(path, STREAM)
    assert batch.rejections

    report = load_batch(store, batch)
    assert report.quarantined == batch.rejected_triples
    assert report.triples_written + report.quarantined == read  # accepted + quarantined = read
    rows = snapshot(store)["quarantine"]
    assert sorted((r.source_file, r.line or 0, r.reason, r.triples) for r in rows) == sorted(
        (r.file, r.line or 0, r.reason, r.triples) for r in batch.rejections)
    assert sum(r.triples for r in rows) == report.quarantined
    with store.connect() as conn:
        assert conn.scalar(select(QuarantinedInput.text).where(QuarantinedInput.line == 3)).startswith(
            "<http://ex/s> <http://ex/p> this is not rdf")

    load_batch(store, batch)
    assert snapshot(store)["quarantine"] == rows

    path.write_text("\n".join(WITH_REJECTS.splitlines()[:2] + WITH_REJECTS.splitlines()[3:4]) + "\n")
    assert load_batch(store, read_stream_file(path, STREAM)).quarantined == 0
    assert count(store, QuarantinedInput) == 0  # the fixed source's earlier rejections are gone


def test_a_failure_mid_load_leaves_nothing_behind(store, csrbench_batch, monkeypatch):
    original_rows = frames._triple_rows
    fed = []

    def failing_rows(targets):
        for i, row in enumerate(original_rows(targets)):
            if i == frames.EXECUTEMANY_ROWS + 2000:  # after a whole executemany batch went in
                raise RuntimeError("disk on fire")
            fed.append(row)
            yield row

    monkeypatch.setattr(frames, "_triple_rows", failing_rows)
    with pytest.raises(RuntimeError, match="disk on fire"):
        load_batch(store, csrbench_batch)
    assert len(fed) == frames.EXECUTEMANY_ROWS + 2000
    assert all(count(store, table) == 0 for table in (Stream, Frame, FrameTriple, QuarantinedInput))

    monkeypatch.setattr(frames, "_triple_rows", original_rows)
    load_batch(store, csrbench_batch)
    before = snapshot(store)
    changed = StreamBatch(csrbench_batch.stream, csrbench_batch.source, [
        Element(e.stream, e.ts + timedelta(days=1), e.frame + "/next", e.s, e.p, e.o, e.o_num, e.o_time)
        for e in csrbench_batch.elements])
    fed.clear()
    monkeypatch.setattr(frames, "_triple_rows", failing_rows)
    with pytest.raises(RuntimeError, match="disk on fire"):
        load_batch(store, changed)
    assert snapshot(store) == before  # frames, triples and watermark as they were


def test_triples_go_in_by_the_bulk_path(store, csrbench_batch):
    statements = []

    def spy(conn, cursor, statement, parameters, context, executemany):
        statements.append((statement, executemany, len(parameters) if executemany else 1))

    event.listen(store, "before_cursor_execute", spy)
    try:
        load_batch(store, csrbench_batch)
    finally:
        event.remove(store, "before_cursor_execute", spy)
    n = len(csrbench_batch.elements)
    assert count(store, FrameTriple) == n
    triple_inserts = [s for s in statements if s[0].lstrip().upper().startswith("INSERT INTO FRAME_TRIPLES")]
    if store.dialect.name == "postgresql":
        # nothing went through INSERT: the rows arrived by COPY on the same transaction
        assert triple_inserts == []
        assert not any(s[0].lstrip().upper().startswith("INSERT INTO FRAMES") for s in statements)
    else:
        assert [rows for _, many, rows in triple_inserts if many] == [
            min(frames.EXECUTEMANY_ROWS, n - i) for i in range(0, n, frames.EXECUTEMANY_ROWS)]
        assert all(many for _, many, _ in triple_inserts)
    assert len(statements) < 20  # a handful of statements, not one per frame or triple


HOSTILE_STREAM = "http://ex.org/streams/it's; DROP TABLE frames; --\\"
HOSTILE_TRIPLES = [
    ("<http://ex.org/s'1>", "<http://ex.org/p;x>", '"Robert\'); DROP TABLE frame_triples;--"'),
    ("<http://ex.org/ünï/çødé>", "<http://ex.org/p>", '"quote \\" and backslash \\\\ and \\\\N"'),
    ("_:b0", "<http://ex.org/p>", '"tab\there, newline\nthere, CR\rhere"@en-GB'),
    ("<http://ex.org/s>", "<http://ex.org/p>", '"\\\\."'),  # COPY's text end-of-data marker
    ("<http://ex.org/s>", "<http://ex.org/p>", '"\\N"'),  # COPY's text NULL marker
    ("<http://ex.org/s>", "<http://ex.org/p>", '"😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 عربى 中文 e\u0301"'),
    ("<http://ex.org/s>", "<http://ex.org/p>", '""'),
    ("<http://ex.org/s>", "<http://ex.org/p>", '"' + "long " * 2000 + '"'),
]


def test_hostile_iris_and_literals_round_trip_exactly(store):
    frame = "http://ex.org/frame/\"quoted\";'x'\\y/ü"
    ts = datetime(2014, 8, 1, 7, 50, 0, 1, tzinfo=timezone.utc)
    batch = StreamBatch(HOSTILE_STREAM, "/tmp/it's; a \"file\".nq")
    batch.elements += [Element(HOSTILE_STREAM, ts, frame, s, p, o, None, None) for s, p, o in HOSTILE_TRIPLES]
    batch.elements.append(Element(HOSTILE_STREAM, ts, frame, "<http://ex.org/s>", "<http://ex.org/v>",
                                  f'"-INF"^^<{XSD}double>', -math.inf, None))
    rejection = Rejection(batch.source, 7, "bad 'line'; \\ \"why\" ü", 1, "text\twith\x01control")
    batch.rejections.append(rejection)
    load_batch(store, batch)

    expected = sorted({(s, p, o) for s, p, o in HOSTILE_TRIPLES} | {
        ("<http://ex.org/s>", "<http://ex.org/v>", f'"-INF"^^<{XSD}double>')})
    assert frame_triples(store, frame) == expected
    found = last_frame(store, HOSTILE_STREAM)
    assert found == FrameInfo(frame, ts, len(expected), frame_checksum(expected))
    with store.connect() as conn:
        assert conn.scalar(select(FrameTriple.o_num).where(FrameTriple.p == "<http://ex.org/v>")) == -math.inf
        stored = conn.execute(select(QuarantinedInput.source_file, QuarantinedInput.reason,
                                     QuarantinedInput.text)).one()
    assert tuple(stored) == (rejection.file, rejection.reason, rejection.text)


# any Unicode text but U+0000, which PostgreSQL text cannot hold, and lone surrogates (not UTF-8)
ANY_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(ANY_TEXT, ANY_TEXT), min_size=1, max_size=4))
def test_any_text_round_trips(store, texts):
    stream = f"http://ex.org/streams/{uuid.uuid4()}"  # examples share the store
    triples = [(f"<http://ex.org/{iri}>", "<http://ex.org/p>", f'"{literal}"') for iri, literal in texts]
    load_batch(store, batch_of({(f"{stream}/f", T0): triples}, stream=stream))
    assert frame_triples(store, f"{stream}/f") == sorted(set(triples))


def test_times_are_utc_with_microseconds_and_naive_times_are_refused(store):
    india = timezone(timedelta(hours=5, minutes=30))
    ts = datetime(2014, 8, 1, 13, 20, 0, 999999, tzinfo=india)
    o_time = datetime(2014, 8, 1, 7, 49, 59, 1, tzinfo=india)
    batch = StreamBatch(STREAM, "t.nq", [Element(STREAM, ts, "http://ex.org/f", "<http://ex.org/s>",
                                                 "<http://ex.org/t>", '"2014-08-01T07:49:59.000001+05:30"', None, o_time)])
    load_batch(store, batch)
    found = frame_at(store, STREAM, datetime(2014, 8, 1, 7, 50, 0, 999999, tzinfo=timezone.utc))
    assert found is not None and found.ts == ts and found.ts.tzinfo == timezone.utc
    with store.connect() as conn:
        stored = conn.scalar(select(FrameTriple.o_time))
    assert stored == o_time and stored.utcoffset() == timedelta(0)

    naive = StreamBatch(STREAM, "n.nq", [Element(STREAM, datetime(2014, 8, 1), "http://ex.org/g", "<http://ex.org/s>",
                                                 "<http://ex.org/p>", '"x"', None, None)])
    with pytest.raises(InputError, match="without time zone"):
        load_batch(store, naive)


def test_register_stream_gets_or_creates_and_refuses_a_different_declaration(store):
    derived, query = "http://ex.org/streams/alerts", "http://ex.org/queries/q1"
    with store.begin() as conn:
        first = register_stream(conn, derived, "derived", query)
        assert register_stream(conn, derived, "derived", query) == first
        with pytest.raises(InputError, match="registered as derived"):
            register_stream(conn, derived)
    with Session(store) as session, session.begin():
        assert register_stream(session, derived, "derived", query) == first
    # frames of a derived stream load without re-declaring it
    load_batch(store, batch_of(sensor_frames(1, stream=derived), stream=derived))
    with store.connect() as conn:
        assert conn.execute(select(Stream.kind, Stream.query_iri).where(Stream.iri == derived)).one() == (
            "derived", query)
