"""A CSV file with a declared mapping becomes frames of its stream: the triples worked out by hand,
each bad row rejected with its file:line and reason, a blank value cell leaving out one triple
(docs/ingest.md), and mapping tables that cannot work refused naming the key."""
from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from rdflib import Literal, URIRef

from rsp_jobs.errors import InputError
from rsp_jobs.ingest import sources
from rsp_jobs.ingest.csv_mapping import load_mapping, map_csv, parse_mapping

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "ingest"
STREAM = "http://example.org/streams/rooms"
NS = "http://example.org/ns#"
XSD = "http://www.w3.org/2001/XMLSchema#"


def sensor(name: str) -> URIRef:
    return URIRef(f"http://example.org/sensor/{name}")


def double(text: str) -> Literal:
    return Literal(text, datatype=URIRef(XSD + "double"), normalize=False)


def integer(text: str) -> Literal:
    return Literal(text, datatype=URIRef(XSD + "integer"), normalize=False)


def at(minute: int, second: int = 0) -> datetime:
    return datetime(2024, 3, 1, 10, minute, second, tzinfo=UTC)


def mapping(**overrides):
    table = {
        "subject": "http://example.org/sensor/{sensor}",
        "time": "time",
        "properties": {
            "temperature": {"predicate": NS + "temperature", "datatype": "xsd:double"},
            "humidity": {"predicate": NS + "humidity", "datatype": "xsd:integer"},
            "room": NS + "room",
        },
    } | overrides
    return parse_mapping(table, "test")


def test_the_rooms_fixture_maps_to_the_triples_worked_out_by_hand():
    frames, report = map_csv(FIXTURES / "rooms.csv", load_mapping(FIXTURES / "rooms.toml"), STREAM)
    temp, hum, room = URIRef(NS + "temperature"), URIRef(NS + "humidity"), URIRef(NS + "room")
    t1, t2 = sensor("t1"), sensor("t2")
    assert [(str(f.iri), f.timestamp, f.triples) for f in frames] == [
        (f"{STREAM}/frame/2024-03-01T10:00:00Z", at(0), [
            (t1, temp, double("21.5")), (t1, hum, integer("40")), (t1, room, Literal("kitchen")),
            (t2, temp, double("19.0")), (t2, room, Literal("bedroom")),  # humidity blank: no triple
        ]),
        (f"{STREAM}/frame/2024-03-01T10:00:30Z", at(0, 30), [  # t2's row at 10:00:30 is rejected
            (t1, temp, double("22.0")), (t1, hum, integer("41")), (t1, room, Literal("kitchen")),
        ]),
        (f"{STREAM}/frame/2024-03-01T10:01:00Z", at(1), [
            (t1, temp, double("23.5")), (t1, hum, integer("42")), (t1, room, Literal("kitchen")),
            (t2, temp, double("19.5")), (t2, hum, integer("46")), (t2, room, Literal("bedroom")),
        ]),
    ]
    where = str(FIXTURES / "rooms.csv")
    assert [(r.file, r.line, r.reason, r.triples) for r in report.rejected] == [
        (where, 5, "temperature: not an xsd:double: 'warm'; row skipped", 1),
        (where, 8, "time: bad time 'yesterday' (Invalid isoformat string: 'yesterday'); row skipped", 1),
    ]
    assert report.rejected[0].text == "t2,2024-03-01T10:00:30Z,warm,45,bedroom"
    assert (report.rows_read, report.rows_in_range, report.frames) == (7, 5, 3)


def test_a_blank_value_cell_leaves_out_that_triple_and_a_row_of_blanks_is_no_error(tmp_path):
    csv = tmp_path / "blank.csv"
    csv.write_text("sensor,time,temperature,humidity,room\n"
                   "a,2024-03-01T10:00:00Z,,  ,\n"
                   "b,2024-03-01T10:00:00Z,1e3,,hall\n")
    frames, report = map_csv(csv, mapping(), STREAM)
    assert [f.triples for f in frames] == [[(sensor("b"), URIRef(NS + "temperature"), double("1e3")),
                                            (sensor("b"), URIRef(NS + "room"), Literal("hall"))]]
    assert report.rejected == []


def test_bad_rows_are_rejected_whole_with_their_line_and_every_problem(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text("sensor,time,temperature,humidity,room\n"
                   "a,2024-03-01T10:00:00Z,1.5,4.5,x\n"     # humidity is no integer
                   ",2024-03-01T10:00:00Z,1.5,4,x\n"        # no subject
                   "a,2024-03-01T10:00:00Z,1.5\n"           # short
                   "\n"                                      # a blank line is no row
                   "b,,1,2,x\n"                              # no time
                   "c,2024-03-01T10:00:00+01:00,2,3,y\n"     # fine: 09:00 UTC
                   "c,2024-03-01T09:00:00Z,7,8,z\n"          # c at 09:00 again
                   "d,2024-03-01T10:00:00Z,\"1,5\",\"a\nb\",w\n"  # a quoted newline, still one row
                   "e,2024-03-01T10:00:00Z,NaN,-3,v\n")
    frames, report = map_csv(csv, mapping(), STREAM)
    assert [(r.line, r.reason) for r in report.rejected] == [
        (2, "humidity: not an xsd:integer: '4.5'; row skipped"),
        (3, "sensor: blank, and the subject needs it; row skipped"),
        (4, "expected 5 columns, found 3; row skipped"),
        (6, "time: bad time '' (blank); row skipped"),
        (8, "duplicate of line 7 (same subject <http://example.org/sensor/c> and time "
            "2024-03-01T09:00:00Z); row skipped"),
        (9, "temperature: not an xsd:double: '1,5'; humidity: not an xsd:integer: 'a\\nb'; row skipped"),
    ]
    assert [(f.timestamp, {s for s, _, _ in f.triples}) for f in frames] == [
        (datetime(2024, 3, 1, 9, tzinfo=UTC), {sensor("c")}), (at(0), {sensor("e")})]


def test_times_in_other_formats_and_zones_are_read_as_declared(tmp_path):
    csv = tmp_path / "times.csv"
    csv.write_text("sensor;when;temperature\n"
                   "a;30/03/2024 12:00;1\n"          # CET: 11:00 UTC
                   "a;01/07/2024 12:00;2\n"          # CEST: 10:00 UTC
                   "a;31/03/2024 02:30;3\n"          # skipped by the change to summer time
                   "a;27/10/2024 02:30;4\n")         # repeated by the change back: the first
    frames, report = map_csv(csv, mapping(
        time="when", time_format="%d/%m/%Y %H:%M", timezone="Europe/Copenhagen", delimiter=";",
        properties={"temperature": NS + "temperature"}), STREAM)
    assert [f.timestamp for f in frames] == [datetime(2024, 3, 30, 11, tzinfo=UTC),
                                             datetime(2024, 7, 1, 10, tzinfo=UTC),
                                             datetime(2024, 10, 27, 0, 30, tzinfo=UTC)]
    assert [(r.line, r.reason) for r in report.rejected] == [
        (4, "when: bad time '31/03/2024 02:30' (does not exist in Europe/Copenhagen (skipped by a "
            "change of clocks)); row skipped")]
    epoch = tmp_path / "epoch.csv"
    epoch.write_text("sensor,t,temperature\na,1709287200.5,1\nb,1709287200500,2\n")
    (frame,), report = map_csv(epoch, mapping(time="t", time_format="unix",
                                               properties={"temperature": NS + "temperature"}), STREAM)
    assert [(r.line, r.reason) for r in report.rejected] == [  # milliseconds read as seconds
        (3, "t: bad time '1709287200500' (out of the years 1-9999); row skipped")]
    assert frame.timestamp == datetime(2024, 3, 1, 10, 0, 0, 500000, tzinfo=UTC)
    assert str(frame.iri) == f"{STREAM}/frame/2024-03-01T10:00:00.5Z"


@pytest.mark.parametrize("change, message", [
    ({"subject": "sensor-{id}"}, r"test.subject: not an absolute IRI template"),
    ({"subject": "http://ex.org/s"}, r"test.subject: an IRI template naming at least one column"),
    ({"time_format": "dd/mm/yyyy"}, r"test.time_format: one of iso, unix, unix_ms or a strptime"),
    ({"timezone": "Mars/Olympus"}, r"test.timezone: not a time zone name"),
    ({"properties": {"t": {"predicate": "temperature"}}}, r"test.properties.t.predicate: not an absolute IRI"),
    ({"properties": {"t": {"predicate": NS + "t", "datatype": "double"}}},
     r"test.properties.t.datatype: xsd:NAME, a datatype IRI or 'iri'"),
    ({"colour": "red"}, r"test: unknown key\(s\) colour"),
])
def test_a_mapping_that_cannot_work_is_refused_naming_its_key(change, message):
    with pytest.raises(InputError, match=message):
        mapping(**change)


def test_a_header_without_the_mapped_columns_is_refused_at_line_1(tmp_path):
    csv = tmp_path / "other.csv"
    csv.write_text("id,ts,value\n1,2024-03-01T10:00:00Z,3\n")
    with pytest.raises(InputError, match=r"other.csv:1: header lacks column\(s\) time, sensor, temperature, "
                                         r"humidity, room that the mapping reads \(the header has id, ts, value\)"):
        map_csv(csv, mapping(), STREAM)


def test_an_iri_valued_column_and_a_percent_encoded_subject(tmp_path):
    csv = tmp_path / "iri.csv"
    csv.write_text("sensor,time,place\nroom 1/a,2024-03-01T10:00:00Z,http://example.org/place/1\n"
                   "b,2024-03-01T10:00:00Z,not an iri\n")
    (frame,), report = map_csv(csv, mapping(properties={"place": {"predicate": NS + "at", "datatype": "iri"}}),
                               STREAM)
    assert frame.triples == [(URIRef("http://example.org/sensor/room%201%2Fa"), URIRef(NS + "at"),
                              URIRef("http://example.org/place/1"))]
    assert [(r.line, r.reason) for r in report.rejected] == [
        (3, "place: not an absolute IRI: 'not an iri'; row skipped")]


def test_the_landing_folder_of_a_csv_stream_takes_csv_files():
    assert ".csv" in sources.raw_suffixes("csv")
    with pytest.raises(InputError, match=r"a CSV file needs a mapping"):
        sources.to_stream_file(FIXTURES / "rooms.csv", "csv", STREAM)
