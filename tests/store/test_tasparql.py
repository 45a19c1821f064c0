"""TA-SPARQL one-time queries over stored frames: the TA-RDF paper's kinds of question (a total
over a month, an average, the value at an instant, when a value passed a threshold, the current
value, events within a week of each other) on real data (NOAA DART water heights around the 2011
Tohoku tsunami, CityBench's Aarhus weather), each answer checked against plain Python over the
same samples; every selector, ``?x.t``, implicit grouping, syntax errors with their positions,
and hostile text that must reach the database only as bound parameters. Each test runs on SQLite
and on PostgreSQL (see conftest)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from statistics import fmean

import pytest
from rdflib import Literal, URIRef
from sqlalchemy import func, inspect, select
from sqlalchemy.dialects import postgresql, sqlite

from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.ingest import citybench
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
from rsp_jobs.store.frames import load_batch
from rsp_jobs.store.models import Frame, FrameTriple, Stream
from rsp_jobs.store.tasparql import BELONGS_TO, QueryResult, run_query, translate
from rsp_jobs.terms import XSD, XSD_DATETIME, XSD_DOUBLE, XSD_INTEGER, numeric_value, time_value, to_nt

UTC = timezone.utc
DART = "http://example.org/dart#"
HEIGHT = DART + "height"
QUAKE = datetime(2011, 3, 11, 5, 46, 24, tzinfo=UTC)  # the earthquake's origin time (DART README)
WEEK_MS = 7 * 24 * 3600 * 1000
PREFIXES = f"""PREFIX dart: <{DART}>
PREFIX ssn: <{citybench.SSN}>
PREFIX sao: <{citybench.SAO}>
"""


def dart_stream(station: str) -> str:
    return f"http://example.org/dart/{station}"


def dart_station(station: str) -> str:
    return f"http://www.ndbc.noaa.gov/station_page.php?station={station}"


# ------------------------------------------------------------------------------------- data


def read_dart(path: Path) -> list[tuple[datetime, float]]:
    """(time, height) samples of one NDBC file, in time order. As its README says, 9999.000 is
    missing and rows are unsorted; a time can have rows of several sample types (15-minute,
    1-minute, 15-second): the frame keeps the finest one that is not missing."""
    best: dict[datetime, tuple[int, float]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        year, month, day, hour, minute, second, kind, height = line.split()
        if float(height) >= 9999:
            continue
        ts = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC)
        if ts not in best or int(kind) > best[ts][0]:
            best[ts] = (int(kind), float(height))
    return [(ts, height) for ts, (_, height) in sorted(best.items())]


def dart_batch(station: str, samples: list[tuple[datetime, float]]) -> StreamBatch:
    """One frame per sample: ``<station> dart:height "h"^^xsd:double``."""
    stream = dart_stream(station)
    batch = StreamBatch(stream=stream, source=f"dart/{station}.txt")
    for ts, height in samples:
        value = Literal(repr(height), datatype=URIRef(XSD_DOUBLE))
        batch.elements.append(Element(stream, ts, f"{stream}/frame/{ts:%Y-%m-%dT%H:%M:%SZ}",
                                      f"<{dart_station(station)}>", f"<{HEIGHT}>", to_nt(value),
                                      numeric_value(value), time_value(value)))
    return batch


def frames_batch(stream: str, frames, source: str) -> StreamBatch:
    batch = StreamBatch(stream=stream, source=source)
    for frame in frames:
        batch.elements += [Element(stream, frame.timestamp, str(frame.iri), to_nt(s), to_nt(p), to_nt(o),
                                   numeric_value(o), time_value(o)) for s, p, o in frame.triples]
    return batch


@pytest.fixture(scope="session")
def dart(data_dir: Path) -> dict[str, list[tuple[datetime, float]]]:
    if not (data_dir / "dart" / "21418.txt").is_file():
        pytest.skip(f"DART files not found under {data_dir / 'dart'} (set RSP_DATA_DIR)")
    return {station: read_dart(data_dir / "dart" / f"{station}.txt") for station in ("21401", "21418")}


class Weather:
    """CityBench's AarhusWeatherData0, 2014-08-01 to 2014-09-08, as mapped for the stream lake
    (one frame per reading, one observation per measured property)."""

    def __init__(self, data_dir: Path):
        path = data_dir / "citybench" / "streams" / "AarhusWeatherData0.stream"
        if not path.is_file():
            pytest.skip(f"CityBench weather stream not found at {path} (set RSP_DATA_DIR)")
        stream, self.frames, _ = citybench.map_stream(path, start=datetime(2014, 8, 1), end=datetime(2014, 9, 8))
        self.stream = str(stream)
        properties = citybench.observed_properties(citybench.sensor_repository_path())
        self.property = {cls: str(properties[("AarhusWeatherData0", cls)])
                         for cls in ("Temperature", "Humidity", "WindSpeed")}
        self.batch = frames_batch(self.stream, self.frames, str(path))

    def values(self, cls: str) -> list[tuple[datetime, float]]:
        """(time, value) of one property, straight from the frames' rdflib triples."""
        wanted, out = URIRef(self.property[cls]), []
        for frame in self.frames:
            observed = {s: o for s, p, o in frame.triples if p == citybench.SSN.observedProperty}
            out += [(frame.timestamp, float(o)) for s, p, o in frame.triples
                    if p == citybench.SAO.hasValue and observed.get(s) == wanted]
        return out


@pytest.fixture(scope="session")
def weather(data_dir: Path) -> Weather:
    return Weather(data_dir)


@pytest.fixture
def dart_store(store, dart):
    for station, samples in dart.items():
        load_batch(store, dart_batch(station, samples))
    return store


@pytest.fixture
def full_store(dart_store, weather):
    load_batch(dart_store, weather.batch)
    return dart_store


# ---------------------------------------------------------------------------------- helpers


def value(term: dict):
    """A result term as a Python value: numbers, date-times, else the lexical form or IRI."""
    datatype = term.get("datatype")
    if datatype == XSD_DATETIME:
        return datetime.fromisoformat(term["value"])
    if datatype in (XSD_DOUBLE, XSD_INTEGER, XSD + "decimal"):
        return int(term["value"]) if datatype == XSD_INTEGER else float(term["value"])
    return term["value"]


def rows(result: QueryResult) -> list[tuple]:
    return [tuple(value(row[name]) if name in row else None for name in result.vars) for row in result.rows]


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%SZ")


def time_term(ts: datetime) -> dict:
    return {"type": "literal", "value": iso(ts), "datatype": XSD_DATETIME}


def query(engine, text: str) -> QueryResult:
    return run_query(engine, PREFIXES + text)


# ------------------------------------------------------------------------- paper's questions


def test_value_at_an_instant(dart_store, dart):
    """?x[t]: the frame at exactly t; the time as a typed literal, a plain string, a bare ISO
    time, or with an offset, all naming the same instant."""
    ts = datetime(2011, 3, 11, 6, 19, tzinfo=UTC)  # the tsunami's crest at 21418
    expected = dict(dart["21418"])[ts]
    spellings = [f'"{iso(ts)}"^^xsd:dateTime', f'"{iso(ts)}"', iso(ts), '"2011-03-11T15:19:00+09:00"',
                 "2011-03-11T06:19:00"]  # no offset: UTC
    for spelling in spellings:
        result = query(dart_store, f"""SELECT ?x ?h ?x.t WHERE {{
            ?x[{spelling}] dart:height ?h . ?x dsv:belongsTo <{dart_stream('21418')}> }}""")
        assert result.vars == ["x", "h", "x.t"]
        assert result.rows == [{"x": {"type": "uri", "value": f"{dart_stream('21418')}/frame/{iso(ts)}"},
                                "h": {"type": "literal", "value": repr(expected), "datatype": XSD_DOUBLE},
                                "x.t": time_term(ts)}], spelling
    assert query(dart_store, f"""SELECT ?h WHERE {{ ?x[2011-03-11T06:19:01Z] dart:height ?h .
        ?x dsv:belongsTo <{dart_stream('21418')}> }}""").rows == []


def test_an_instant_without_a_stream_is_looked_up_in_every_stream(dart_store, dart):
    ts = datetime(2011, 3, 12, tzinfo=UTC)
    result = query(dart_store, f"SELECT ?s ?h WHERE {{ ?x[{iso(ts)}] dart:height ?h . ?x dsv:belongsTo ?s }}")
    assert sorted(rows(result)) == sorted((dart_stream(s), dict(samples)[ts]) for s, samples in dart.items())


def test_total_over_a_month(full_store, weather):
    """The paper's "total rain in a month": the data has no rain, so the total of the wind speed
    readings of August 2014, selected by an inclusive range, with GRAPH for the observations'
    own subjects."""
    result = query(full_store, f"""
        SELECT (SUM(?v) AS ?total) (COUNT(*) AS ?n)
        WHERE {{
          ?x dsv:belongsTo <{weather.stream}> .
          GRAPH ?x["2014-08-01T00:00:00Z" .. "2014-08-31T23:59:59Z"] {{
            ?obs ssn:observedProperty <{weather.property['WindSpeed']}> ; sao:hasValue ?v }}
        }}""")
    august = [v for ts, v in weather.values("WindSpeed") if ts.month == 8]
    assert len(august) > 2000
    ((total, n),) = rows(result)
    assert n == len(august)
    assert total == pytest.approx(sum(august), rel=1e-12)
    assert result.rows[0]["total"]["datatype"] == XSD_DOUBLE
    assert result.rows[0]["n"] == {"type": "literal", "value": str(len(august)), "datatype": XSD_INTEGER}


def test_range_bounds_are_inclusive(dart_store, dart):
    samples = dart["21401"]
    start, end = samples[100][0], samples[140][0]
    result = query(dart_store, f"""SELECT (COUNT(*) AS ?n) (SUM(?h) AS ?sum) (MIN(?x.t) AS ?from) (MAX(?x.t) AS ?to)
        WHERE {{ ?x[{iso(start)} .. {iso(end)}] dart:height ?h . ?x dsv:belongsTo <{dart_stream('21401')}> }}""")
    inside = [(ts, h) for ts, h in samples if start <= ts <= end]
    assert rows(result) == [(41, pytest.approx(sum(h for _, h in inside), rel=1e-12), start, end)]
    assert len(inside) == 41
    reversed_range = query(dart_store, f"""SELECT ?h WHERE {{ ?x[{iso(end)} .. {iso(start)}] dart:height ?h }}""")
    assert reversed_range.rows == []


def test_average_temperature(full_store, weather):
    result = query(full_store, f"""SELECT (AVG(?t) AS ?avg) (MIN(?t) AS ?low) (MAX(?t) AS ?high) WHERE {{
        GRAPH ?x[*] {{ ?o ssn:observedProperty <{weather.property['Temperature']}> ; sao:hasValue ?t }} }}""")
    temperatures = [v for _, v in weather.values("Temperature")]
    assert rows(result) == [(pytest.approx(fmean(temperatures), rel=1e-12), min(temperatures), max(temperatures))]


def test_aggregates_group_implicitly_by_the_other_projected_variables(full_store, weather):
    """TA-SPARQL: SELECT ?p (AVG(?v) AS ?avg) needs no GROUP BY; it gives what GROUP BY ?p gives."""
    body = """WHERE { GRAPH ?x["2014-08-10T00:00:00Z" .. "2014-08-16T23:59:59Z"] {
                 ?o ssn:observedProperty ?p ; sao:hasValue ?v } }"""
    implicit = query(full_store, f"SELECT ?p (AVG(?v) AS ?avg) (COUNT(?v) AS ?n) {body}")
    explicit = query(full_store, f"SELECT ?p (AVG(?v) AS ?avg) (COUNT(?v) AS ?n) {body} GROUP BY ?p")
    expected = {}
    for cls, iri in weather.property.items():
        week = [v for ts, v in weather.values(cls)
                if datetime(2014, 8, 10, tzinfo=UTC) <= ts < datetime(2014, 8, 17, tzinfo=UTC)]
        expected[iri] = (pytest.approx(fmean(week), rel=1e-12), len(week))
    for result in (implicit, explicit):
        assert {p: (avg, n) for p, avg, n in rows(result)} == expected


def test_when_a_value_exceeded_a_threshold(dart_store, dart):
    """When did the water column at 21418 first pass 5663 m after the earthquake: the tsunami."""
    threshold = 5663.0
    above = [(ts, h) for ts, h in dart["21418"] if h > threshold and ts > QUAKE]
    assert above and above[0][0] < QUAKE + timedelta(hours=1)
    where = f"""WHERE {{ ?x[*] dart:height ?h . ?x dsv:belongsTo <{dart_stream('21418')}>
                  FILTER(?h > {threshold} && ?x.t > "{iso(QUAKE)}") }}"""
    listed = query(dart_store, f"SELECT ?x.t ?h {where} ORDER BY ?x.t")
    assert rows(listed) == above
    first = query(dart_store, f"SELECT (MIN(?x.t) AS ?first) (MAX(?h) AS ?crest) {where}")
    assert rows(first) == [(above[0][0], max(h for _, h in above))]
    limited = query(dart_store, f"SELECT ?x.t {where} ORDER BY DESC(?h) LIMIT 1")
    assert rows(limited) == [(max(above, key=lambda s: s[1])[0],)]


def test_current_value_is_the_last_frame(full_store, dart, weather):
    """?x[LAST] of a named stream; with no stream named, the last frame of each stream."""
    result = query(full_store, f"SELECT ?h ?x.t WHERE {{ ?x[LAST] dart:height ?h . "
                               f"?x dsv:belongsTo <{dart_stream('21401')}> }}")
    assert rows(result) == [tuple(reversed(dart["21401"][-1]))]
    every_stream = query(full_store, "SELECT ?s ?x.t WHERE { ?x[LAST] dsv:belongsTo ?s }")
    expected = {(dart_stream(s), samples[-1][0]) for s, samples in dart.items()}
    expected.add((weather.stream, weather.frames[-1].timestamp))
    assert set(rows(every_stream)) == expected and len(every_stream.rows) == 3
    # the weather stream's last frame has no dart:height: only the DART streams answer
    heights = query(full_store, "SELECT ?h WHERE { ?x[LAST] dart:height ?h }")
    assert sorted(rows(heights)) == sorted((samples[-1][1],) for samples in dart.values())


def test_first_frame(full_store, dart, weather):
    result = query(full_store, "SELECT ?x ?x.t WHERE { ?x[FIRST] dsv:belongsTo ?s }")
    expected = {(f"{dart_stream(s)}/frame/{iso(samples[0][0])}", samples[0][0]) for s, samples in dart.items()}
    expected.add((str(weather.frames[0].iri), weather.frames[0].timestamp))
    assert set(rows(result)) == expected
    named = query(full_store, f"SELECT ?h WHERE {{ ?x[first] dart:height ?h . "
                              f"?x dsv:belongsTo <{dart_stream('21418')}> }}")
    assert rows(named) == [(dart["21418"][0][1],)]


def test_frames_of_one_stream_joined_by_a_stream_variable(full_store, dart):
    """The change from each DART stream's first height to its last: two frame variables, one
    stream variable shared between them (the weather stream has no heights, so no row)."""
    result = query(full_store, """SELECT ?s (?last - ?first AS ?change) (?last > ?first AS ?rose) WHERE {
        ?x[FIRST] dart:height ?first . ?x dsv:belongsTo ?s .
        ?y[LAST] dart:height ?last . ?y dsv:belongsTo ?s }""")
    expected = {dart_stream(s): (samples[-1][1] - samples[0][1], samples[-1][1] > samples[0][1])
                for s, samples in dart.items()}
    assert {row["s"]["value"]: (float(row["change"]["value"]), row["rose"]["value"] == "true")
            for row in result.rows} == {s: (pytest.approx(change, abs=1e-9), rose)
                                        for s, (change, rose) in expected.items()}
    assert all(row["rose"]["datatype"] == "http://www.w3.org/2001/XMLSchema#boolean" for row in result.rows)


def test_graph_patterns_with_iri_subjects_and_variable_predicates(dart_store, dart):
    station = dart_station("21401")
    result = query(dart_store, f"""SELECT ?p ?h (COUNT(DISTINCT ?x) AS ?frames) WHERE {{
        GRAPH ?x["2011-03-11T05:00:00Z" .. "2011-03-11T05:59:59Z"] {{ <{station}> ?p ?h }} }}""")
    hour = [h for ts, h in dart["21401"] if ts.date() == QUAKE.date() and ts.hour == 5]
    assert sorted(rows(result)) == sorted((HEIGHT, h, hour.count(h)) for h in set(hour))
    assert sum(n for _, _, n in rows(result)) == len(hour)


def test_every_frame_grouped_by_stream(dart_store, dart):
    result = query(dart_store, """SELECT ?s (COUNT(?h) AS ?n) (MAX(?h) AS ?peak) (MIN(?x.t) AS ?from)
        WHERE { ?x[*] dart:height ?h . ?x dsv:belongsTo ?s } ORDER BY ?s""")
    assert rows(result) == [(dart_stream(s), len(samples), max(h for _, h in samples), samples[0][0])
                            for s, samples in sorted(dart.items())]
    # a frame variable with no selector ranges over every frame
    assert rows(query(dart_store, "SELECT (COUNT(*) AS ?n) WHERE { ?x dart:height ?h }")) == [
        (sum(len(samples) for samples in dart.values()),)]


def test_events_within_a_week_of_each_other(full_store, weather):
    """Pairs of events: a gale reading (wind >= 30 km/h) followed within a week by a warm reading
    (>= 23 C), by the difference of the frames' times in milliseconds."""
    result = query(full_store, f"""
        SELECT ?x.t ?y.t ?wind ?temp WHERE {{
          GRAPH ?x[*] {{ ?a ssn:observedProperty <{weather.property['WindSpeed']}> ; sao:hasValue ?wind }}
          GRAPH ?y[*] {{ ?b ssn:observedProperty <{weather.property['Temperature']}> ; sao:hasValue ?temp }}
          FILTER(?wind >= 30 && ?temp >= 23 && ?y.t > ?x.t && ?y.t - ?x.t < {WEEK_MS})
        }} ORDER BY ?x.t ?y.t""")
    gales = [(ts, v) for ts, v in weather.values("WindSpeed") if v >= 30]
    warm = [(ts, v) for ts, v in weather.values("Temperature") if v >= 23]
    expected = [(x, y, w, t) for x, w in gales for y, t in warm if timedelta(0) < y - x < timedelta(weeks=1)]
    assert 0 < len(expected) < len(gales) * len(warm)
    assert rows(result) == sorted(expected)


def test_frame_time_in_arithmetic_and_comparisons(dart_store, dart):
    """?x.t compares with times and strings holding times, and counts in UTC milliseconds."""
    after = [(ts, h) for ts, h in dart["21401"] if QUAKE < ts and (ts - QUAKE) < timedelta(minutes=10)]
    assert after
    for condition in [f'?x.t > "{iso(QUAKE)}" && ?x.t - "{iso(QUAKE)}"^^xsd:dateTime < 600000',
                      f'"{iso(QUAKE)}"^^xsd:dateTime < ?x.t && ?x.t < "2011-03-11T05:56:24Z"',
                      f'?x.t - {QUAKE.timestamp() * 1000:.0f} > 0 && ?x.t - {QUAKE.timestamp() * 1000:.0f} < 600000']:
        result = query(dart_store, f"""SELECT ?x.t ?h ((?x.t - "{iso(QUAKE)}"^^xsd:dateTime) / 1000 AS ?seconds)
            WHERE {{ ?x[*] dart:height ?h . ?x dsv:belongsTo <{dart_stream('21401')}> FILTER({condition}) }}
            ORDER BY ?x.t""")
        assert rows(result) == [(ts, h, (ts - QUAKE).total_seconds()) for ts, h in after], condition


def test_each_part_of_a_time_compiles_to_its_own_sql(store):
    """YEAR, MONTH, ... differ only in the part they read; each must be its own statement, not
    the statement cache's entry of another part (MONTH once answered the year)."""
    stream = "http://example.org/s/parts"
    batch = StreamBatch(stream=stream, source="parts")
    batch.elements.append(Element(stream, datetime(2014, 8, 1, 7, 50, 3, tzinfo=UTC), f"{stream}/f",
                                  "<http://example.org/a>", "<http://example.org/p>", '"x"', None, None))
    load_batch(store, batch)
    parts = {name: run_query(store, f"SELECT ({name}(?x.t) AS ?v) WHERE {{ ?x[*] <http://example.org/p> ?o }}")
             .rows[0]["v"]["value"] for name in ("YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS")}
    assert parts == {"YEAR": "2014", "MONTH": "8", "DAY": "1", "HOURS": "7", "MINUTES": "50", "SECONDS": "3"}


def test_distinct_order_limit_offset(dart_store, dart):
    result = query(dart_store, """SELECT DISTINCT ?s WHERE { ?x[*] dart:height ?h . ?x dsv:belongsTo ?s }
                                   ORDER BY DESC(?s)""")
    assert rows(result) == [(dart_stream("21418"),), (dart_stream("21401"),)]
    heights = sorted(h for _, h in dart["21418"])
    page = query(dart_store, f"""SELECT DISTINCT ?h WHERE {{ ?x[*] dart:height ?h .
        ?x dsv:belongsTo <{dart_stream('21418')}> }} ORDER BY ?h LIMIT 5 OFFSET 3""")
    assert rows(page) == [(h,) for h in sorted(set(heights))[3:8]]
    assert len(heights) > len(set(heights))  # DISTINCT had duplicates to drop


def test_having_and_explicit_group_by_frame_time(dart_store, dart):
    result = query(dart_store, """SELECT ?x.t (COUNT(?h) AS ?n) WHERE { ?x[*] dart:height ?h }
                                  GROUP BY ?x.t HAVING (COUNT(?h) > 1) ORDER BY ?x.t LIMIT 3""")
    both = sorted(set(dict(dart["21401"])) & set(dict(dart["21418"])))
    assert rows(result) == [(ts, 2) for ts in both[:3]]


def test_aggregates_of_nothing(store):
    """SPARQL: the sum and the average of no values are 0, the count 0, MIN unbound."""
    result = run_query(store, "PREFIX dart: <http://example.org/dart#> SELECT (SUM(?h) AS ?s) (AVG(?h) AS ?a) "
                              "(COUNT(*) AS ?n) (MIN(?h) AS ?m) WHERE { ?x[LAST] dart:height ?h }")
    assert rows(result) == [(0.0, 0.0, 0, None)]
    grouped = run_query(store, "SELECT ?s (COUNT(*) AS ?n) WHERE { ?x[*] dsv:belongsTo ?s }")
    assert grouped.rows == []


def test_keywords_are_case_insensitive_and_prefixes_override(dart_store, dart):
    result = run_query(dart_store, f"""prefix d: <{DART}>
        select (count(*) as ?n) where {{ ?x[last] d:height ?h . ?x <{BELONGS_TO}> <{dart_stream('21401')}> }}""")
    assert rows(result) == [(1,)]
    other = run_query(dart_store, """PREFIX dsv: <http://example.org/not-dsv#>
        SELECT ?s WHERE { ?x[LAST] dsv:belongsTo ?s }""")
    assert other.rows == []  # dsv:belongsTo is now an ordinary predicate, in no frame


# ----------------------------------------------------------------------------- hostile text

HOSTILE = [
    "x'; DROP TABLE frames; --",
    'say "hi"; DELETE FROM streams',
    "back\\slash\\'",
    "Zürich ☃ 東京 \U0001F30A",
    "line\nbreak\ttab",
    "%(p_1)s ? :name $1",
]
HOSTILE_STREAM = "http://example.org/s/';DROP%20TABLE%20frames;--"
HOSTILE_P = "http://example.org/p/');--"


def sparql_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def table_counts(engine) -> dict:
    with engine.connect() as conn:
        tables = sorted(inspect(conn).get_table_names())
        counts = {model.__tablename__: conn.execute(select(func.count()).select_from(model)).scalar()
                  for model in (Stream, Frame, FrameTriple)}
        return {"tables": tables, **counts}


@pytest.fixture
def hostile_store(store):
    t0 = datetime(2020, 1, 1, tzinfo=UTC)
    batch = StreamBatch(stream=HOSTILE_STREAM, source="hostile")
    for i, text in enumerate(HOSTILE):
        term = Literal(text)
        batch.elements.append(Element(HOSTILE_STREAM, t0 + timedelta(minutes=i), f"{HOSTILE_STREAM}/f{i}",
                                      f"<http://example.org/thing/{i}>", f"<{HOSTILE_P}>", to_nt(term), None, None))
    load_batch(store, batch)
    return store


def test_hostile_literals_and_iris_are_only_parameters(hostile_store):
    before = table_counts(hostile_store)
    for i, text in enumerate(HOSTILE):
        found = f"""SELECT ?x ?o WHERE {{ ?x[*] <{HOSTILE_P}> ?o . ?x dsv:belongsTo <{HOSTILE_STREAM}>
                    FILTER(?o = {sparql_string(text)}) }}"""
        result = run_query(hostile_store, found)
        assert result.rows == [{"x": {"type": "uri", "value": f"{HOSTILE_STREAM}/f{i}"},
                                "o": {"type": "literal", "value": text}}]
        as_object = run_query(hostile_store, f"SELECT ?x WHERE {{ ?x[*] <{HOSTILE_P}> {sparql_string(text)} }}")
        assert len(as_object.rows) == 1
        statement, params = translate(found)
        for dialect in (sqlite.dialect(), postgresql.dialect()):
            sql = str(statement.compile(dialect=dialect))
            assert "DROP" not in sql and "DELETE" not in sql and "Zürich" not in sql and "slash" not in sql
        assert to_nt(Literal(text)) in params.values()
        # near misses find nothing
        missing = run_query(hostile_store, f"SELECT ?x WHERE {{ ?x[*] <{HOSTILE_P}> {sparql_string(text + ' ')} }}")
        assert missing.rows == []
    assert table_counts(hostile_store) == before


def test_hostile_text_that_matches_nothing_leaves_the_store_untouched(hostile_store):
    before = table_counts(hostile_store)
    queries = [
        "SELECT ?x WHERE { ?x[*] <http://example.org/p/');DROP\\u0020TABLE\\u0020frames;--> ?o }",
        "SELECT ?x WHERE { ?x[LAST] dsv:belongsTo <http://example.org/s/'\\u0020OR\\u0020'1'='1> }",
        "SELECT ?o WHERE { ?x[*] ?p ?o FILTER(?o = \"' OR 1=1; DROP TABLE streams; --\") }",
        "SELECT ?o WHERE { ?x[*] ?p ?o FILTER(?o = <x:'+(SELECT+1)+'>) }",
    ]
    for text in queries:
        assert run_query(hostile_store, text).rows == [], text
    # and a stream IRI with spaces, written with \u escapes, is matched exactly
    spaced = "http://example.org/s/' OR '1'='1"
    load_batch(hostile_store, StreamBatch(spaced, "spaced", [Element(
        spaced, datetime(2020, 1, 1, tzinfo=UTC), "http://example.org/spaced/f", "<http://example.org/a>",
        "<http://example.org/b>", '"c"', None, None)]))
    result = run_query(hostile_store, "SELECT ?o WHERE { ?x[LAST] <http://example.org/b> ?o . "
                                      "?x dsv:belongsTo <http://example.org/s/'\\u0020OR\\u0020'1'='1> }")
    assert result.rows == [{"o": {"type": "literal", "value": "c"}}]
    after = table_counts(hostile_store)
    assert after["tables"] == before["tables"]
    assert (after["streams"], after["frames"], after["frame_triples"]) == (
        before["streams"] + 1, before["frames"] + 1, before["frame_triples"] + 1)


def test_a_hostile_time_is_a_syntax_error(store):
    with pytest.raises(QuerySyntaxError, match="not an ISO 8601 date-time") as err:
        run_query(store, "SELECT ?o WHERE {\n  ?x[\"2011-01-01'; DROP TABLE frames; --\"] ?p ?o }")
    assert (err.value.line, err.value.column) == (2, 6)
    assert "frames" in inspect(store).get_table_names()


# ------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize("text, line, column, message, expected", [
    ("SELECT ?h WHERE {\n  ?x[LAST <p> ?h }", 2, 11, "unexpected '<p>'", {"']'"}),
    ("SELECT ?h WHERE { ?x[NEXT] <p> ?h }", 1, 22, "unexpected 'NEXT",
     {"LAST", "FIRST", "'*'", "date-time", "string"}),
    ("SELECT ?h\nWHERE { ?x[*] <p> ?h \n  FILTER(?h >) }", 3, 14, "unexpected ')'", {"variable", "number"}),
    ("SELECT ?h WHERE { ?x[*] <p> ?h ", 1, 32, "unexpected end of input", {"'}'"}),
    ("SELECT WHERE { ?x[*] <p> ?h }", 1, 8, "unexpected 'WHERE'", {"variable", "frame time (?x.t)"}),
    ("SELECT ?h WHERE { ?x[*] ex:p ?h }", 1, 25, "undeclared prefix 'ex:'", set()),
    ("SELECT ?h WHERE { ?x[2011-13-01T00:00:00Z] <p> ?h }", 1, 22, "not an ISO 8601 date-time", set()),
    ('SELECT ?h WHERE { ?x["2011"^^xsd:gYear] <p> ?h }', 1, 22, "xsd:dateTime", set()),
    ("SELECT ?h WHERE { ?x[LAST] <p> ?h . ?x[FIRST] <q> ?h }", 1, 39, "already has another selector", set()),
    ("SELECT ?h WHERE { <s>[LAST] <p> ?x[*] }", 1, 22, "a statement about two frames", set()),
    ("SELECT ?h WHERE { GRAPH ?x[*] { ?s[LAST] <p> ?h } }", 1, 35, "a selector inside GRAPH", set()),
    ("SELECT ?h ?h WHERE { ?x[*] <p> ?h }", 1, 11, "projected twice", set()),
])
def test_syntax_errors_name_line_and_column(store, text, line, column, message, expected):
    with pytest.raises(QuerySyntaxError) as err:
        run_query(store, text, source="q.tasparql")
    assert (err.value.source, err.value.line, err.value.column) == ("q.tasparql", line, column)
    assert message in str(err.value)
    assert expected <= set(err.value.expected)


@pytest.mark.parametrize("text, line, column, message", [
    ("SELECT ?h WHERE { ?x[*] <p> ?h FILTER(SUM(?h) > 1) }", 1, 39, "SUM is not allowed here"),
    ("SELECT ?x ?h (SUM(?h) AS ?s) WHERE { ?x[*] <p> ?h } GROUP BY ?x", 1, 11, "neither grouped nor aggregated"),
    ("SELECT ?y.t WHERE { ?x[*] <p> ?h }", 1, 8, "?y is not a frame variable"),
    ("SELECT ?z WHERE { ?x[*] <p> ?h }", 1, 8, "not bound by any pattern"),
    ("SELECT ?h WHERE { ?x[*] <p> ?h FILTER(?x > 1) }", 1, 42, "compared by its time"),
    ("SELECT ?h WHERE { ?x[*] <p> ?x }", 1, 29, "?x is a frame"),
    ("SELECT ?h WHERE { ?x[*] <p> ?h FILTER(?h + 1) }", 1, 42, "FILTER needs a comparison"),
    ("SELECT ?h WHERE { ?x[*] <p> ?h FILTER(?h < \"abc\") }", 1, 42, "compares numbers or times"),
    ("SELECT (?h * 2 AS ?d) (COUNT(*) AS ?n) WHERE { ?x[*] <p> ?h }", 1, 8, "are variables"),
    ("SELECT ?x ?h WHERE { ?x[*] dsv:belongsTo \"s\" . ?x[*] <p> ?h }", 1, 22, "stream IRI or a variable"),
    ("SELECT (COUNT(*) AS ?n) WHERE { ?x[*] <p> ?h } HAVING (?h > 1)", 1, 56, "?h is neither grouped"),
    ("SELECT DISTINCT ?x WHERE { ?x[*] <p> ?h } ORDER BY ?h", 1, 52, "with DISTINCT, ORDER BY uses projected"),
])
def test_semantic_errors_name_line_and_column(store, text, line, column, message):
    with pytest.raises(QuerySyntaxError) as err:
        run_query(store, text)
    assert (err.value.line, err.value.column) == (line, column), str(err.value)
    assert message in str(err.value)
