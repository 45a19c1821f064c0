"""CityBench CSV -> RSP frames, on the real data: values recomputed here from the CSV rows and
trafficMetaData.csv, property IRIs checked against SensorRepository.n3, and the Q1 join run."""
from __future__ import annotations

import csv
from datetime import datetime, timezone

import pytest
from rdflib import RDF, Dataset, Graph, Literal, URIRef

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.citybench import (CT, PROV, SAO, SES, SSN, export_streams, map_stream,
                                       sensor_repository_path, traffic_metadata_path,
                                       write_nquads, write_trig)
from rsp_jobs.settings import data_dir

STREAMS = data_dir() / "citybench" / "streams"
pytestmark = [
    pytest.mark.data,
    pytest.mark.skipif(not STREAMS.is_dir(),
                       reason=f"CityBench data not found at {STREAMS} (set RSP_DATA_DIR)"),
    # rdflib 7.6's own TriG/N-Quads parsers still use these
    pytest.mark.filterwarnings("ignore:Dataset.default_context is deprecated"),
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated"),
]

# not rdflib's XSD: pytest probes module attributes and that namespace warns on unknown names
XSD_DOUBLE = URIRef("http://www.w3.org/2001/XMLSchema#double")
TRAFFIC_HEADER = ("status,avgMeasuredTime,avgSpeed,extID,medianMeasuredTime,TIMESTAMP,"
                  "vehicleCount,_id,REPORT_ID")


def utc(*args) -> datetime:
    return datetime(*args, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def repository() -> Graph:
    graph = Graph()
    graph.parse(sensor_repository_path(), format="n3")
    return graph


def csv_rows(name: str) -> list[dict[str, str]]:
    with open(STREAMS / f"{name}.stream", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def distance(report_id: str) -> float:
    with open(traffic_metadata_path(), newline="", encoding="utf-8") as handle:
        return next(float(row["DISTANCE_IN_METERS"]) for row in csv.DictReader(handle)
                    if row["REPORT_ID"] == report_id)


def values_by_class(frame, repository: Graph) -> dict[str, float]:
    """{class local name: value} of a frame, classes taken from the repository."""
    graph = Graph()
    for triple in frame.triples:
        graph.add(triple)
    found = {}
    for obs, prop in graph.subject_objects(SSN.observedProperty):
        (cls,) = repository.objects(prop, RDF.type)
        found[str(cls)[len(str(CT)):]] = graph.value(obs, SAO.hasValue).toPython()
    return found


def test_traffic_row_becomes_observations_with_readme_values(repository):
    row = csv_rows("AarhusTrafficData158505")[0]
    stream_iri, frames, report = map_stream(STREAMS / "AarhusTrafficData158505.stream", limit=1)
    (frame,) = frames
    assert row["TIMESTAMP"] == "2014-08-01T07:50:00"
    assert frame.timestamp == utc(2014, 8, 1, 7, 50)
    assert frame.iri == URIRef(f"{stream_iri}/frame/2014-08-01T07:50:00Z")

    meters, count = distance("158505"), float(row["vehicleCount"])
    speed, measured = float(row["avgSpeed"]), float(row["avgMeasuredTime"])
    assert count > 0 and speed > 0
    expected = {"CongestionLevel": count / meters, "EstimatedTime": meters / speed,
                "AvgSpeed": speed, "VehicleCount": count, "MeasureTime": measured}
    sensor = SES.AarhusTrafficData158505
    triples = set(frame.triples)
    for cls, value in expected.items():
        obs = URIRef(f"{sensor}/obs/2014-08-01T07:50:00Z/{cls}")
        prop = next(o for s, p, o in triples if s == obs and p == SSN.observedProperty)
        assert {(obs, RDF.type, SSN.Observation), (obs, SSN.observedBy, sensor)} <= triples
        # the property is the sensor's own one of that class in the repository
        assert (prop, RDF.type, CT[cls]) in repository
        assert (sensor, SSN.observes, prop) in repository
        (literal,) = [o for s, p, o in triples if s == obs and p == SAO.hasValue]
        assert literal.datatype == XSD_DOUBLE and literal.toPython() == pytest.approx(value)
    assert len(triples) == len(frame.triples) == 4 * len(expected)
    assert report.rejected == []


def test_estimated_time_is_minus_one_where_speed_is_zero(repository):
    (row,) = [r for r in csv_rows("AarhusTrafficData158505")
              if r["TIMESTAMP"] == "2014-09-27T05:30:00"]
    assert row["avgSpeed"] == "0"
    _, (frame,), _ = map_stream(STREAMS / "AarhusTrafficData158505.stream",
                                start=datetime(2014, 9, 27, 5, 30), limit=1)
    values = values_by_class(frame, repository)
    assert values["EstimatedTime"] == -1.0
    assert values["CongestionLevel"] == float(row["vehicleCount"]) / distance("158505")


def test_other_kinds(repository):
    pollution = csv_rows("AarhusPollutionData158505")[0]
    _, (frame,), _ = map_stream(STREAMS / "AarhusPollutionData158505.stream", limit=1)
    assert frame.timestamp == utc(2014, 8, 1, 0, 5)
    assert values_by_class(frame, repository) == {"API": max(
        float(pollution[c]) for c in ("ozone", "particullate_matter", "carbon_monoxide",
                                      "sulfure_dioxide", "nitrogen_dioxide"))}

    # the all-garages file: the 8 rows with one update time share one frame, one sensor each
    parking = csv_rows("AarhusParkingData")[:8]
    _, (frame,), _ = map_stream(STREAMS / "AarhusParkingData.stream", limit=1)
    assert frame.timestamp == datetime(2014, 5, 22, 9, 9, 4, 145000, tzinfo=timezone.utc)
    assert frame.iri.endswith("/frame/2014-05-22T09:09:04.145Z")
    graph = Graph()
    for triple in frame.triples:
        graph.add(triple)
    for row in parking:
        sensor = SES[f"AarhusParkingData{row['garagecode']}"]
        (obs,) = graph.subjects(SSN.observedBy, sensor)
        assert graph.value(obs, SAO.hasValue).toPython() == (
            float(row["totalspaces"]) - float(row["vehiclecount"]))

    weather = csv_rows("AarhusWeatherData0")[0]
    _, (frame,), _ = map_stream(STREAMS / "AarhusWeatherData0.stream", limit=1)
    assert values_by_class(frame, repository) == {
        "Temperature": float(weather["tempm"]), "Humidity": float(weather["hum"]),
        "WindSpeed": float(weather["wspdm"])}

    # no times in the file: line n is 2014-08-01T00:00Z + 5 min * (n - 1)
    _, frames, report = map_stream(STREAMS / "UserLocationService.stream")
    assert report.rows_read == len(frames) == 290 and report.rejected == []
    assert frames[1].timestamp == utc(2014, 8, 1, 0, 5)
    graph = Graph()
    for triple in frames[1].triples:
        graph.add(triple)
    (value,) = graph.objects(None, SAO.hasValue)
    second_line = (STREAMS / "UserLocationService.stream").read_text().splitlines()[1]
    user, coordinates = second_line.split("|")
    lat, lng = coordinates.split(",")
    assert graph.value(value, CT.hasLatitude).toPython() == float(lat)
    assert graph.value(value, CT.hasLongitude).toPython() == float(lng)
    assert list(graph.objects(None, SSN.featureOfInterest)) == [URIRef(user)]


def test_missing_weather_values_are_reported_and_the_rest_kept(repository):
    # line 2156 is "86,14,,2014-08-31T05:00:00": no wind speed
    _, (frame,), report = map_stream(STREAMS / "AarhusWeatherData0.stream",
                                     start=datetime(2014, 8, 31, 5), limit=1)
    assert values_by_class(frame, repository) == {"Humidity": 86.0, "Temperature": 14.0}
    (rejection,) = report.rejected
    assert rejection.line == 2156 and "wspdm: missing value" in rejection.reason


@pytest.mark.parametrize("writer, fmt", [(write_trig, "trig"), (write_nquads, "nquads")])
def test_round_trip(tmp_path, writer, fmt):
    stream_iri, frames, _ = map_stream(STREAMS / "AarhusTrafficData182955.stream",
                                       start=datetime(2014, 8, 1, 8), end=datetime(2014, 8, 1, 9))
    assert len(frames) == 12
    path = writer(stream_iri, frames, tmp_path / f"out.{fmt}")
    dataset = Dataset()
    dataset.parse(path, format=fmt)

    named = {graph.identifier: graph for graph in dataset.graphs()
             if graph.identifier != dataset.default_graph.identifier}
    assert set(named) == {frame.iri for frame in frames}
    for frame in frames:
        assert set(named[frame.iri]) == set(frame.triples)
    times = {s: o.toPython() for s, o in
             dataset.default_graph.subject_objects(PROV.generatedAtTime)}
    assert times == {frame.iri: frame.timestamp for frame in frames}
    assert len(dataset.default_graph) == len(frames)


def write_stream(tmp_path, name: str, lines: list[str]):
    path = tmp_path / f"{name}.stream"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_malformed_lines_are_counted_with_file_and_line(tmp_path, repository):
    path = write_stream(tmp_path, "AarhusTrafficData158505", [
        TRAFFIC_HEADER,
        "OK,141,52,616,141,2014-08-01T07:50:00,1,1,158505",     # 2 fine
        "OK,141,52,616,141,2014-08-01T07:55:00,1,2",            # 3 column missing
        "OK,141,52,616,141,2014-08-01T08:00:00,many,3,158505",  # 4 vehicleCount not a number
        "OK,141,,616,141,2014-08-01T08:05:00,4,4,158505",       # 5 avgSpeed missing
        "OK,141,52,616,141,yesterday,1,5,158505",               # 6 bad time
        "OK,141,52,616,141,2014-08-01T07:50:00,1,1,158505",     # 7 copy of line 2
    ])
    _, frames, report = map_stream(path)
    assert report.rows_read == 6 and report.rows_in_range == 4 and report.frames == 3
    by_line = {r.line: r for r in report.rejected}
    assert sorted(by_line) == [3, 4, 5, 6, 7]
    assert all(r.file == str(path) for r in report.rejected)
    assert str(by_line[3]).startswith(f"{path}:3: expected 9 columns, found 8")
    assert "vehicleCount: not a number: 'many'" in by_line[4].reason
    assert "avgSpeed: missing value" in by_line[5].reason
    assert "TIMESTAMP: bad time 'yesterday'" in by_line[6].reason
    assert "duplicate of line 2" in by_line[7].reason

    # the rest of a row with a bad value is kept
    assert set(values_by_class(frames[1], repository)) == {"AvgSpeed", "MeasureTime",
                                                           "EstimatedTime"}
    assert set(values_by_class(frames[2], repository)) == {"VehicleCount", "MeasureTime",
                                                           "CongestionLevel"}


def test_user_location_malformed_line(tmp_path):
    path = write_stream(tmp_path, "UserLocationService", [
        "http://example.org/u|56.1,10.2", "http://example.org/u;56.1;10.2",
        "http://example.org/u|56.1,east"])
    _, frames, report = map_stream(path)
    assert [f.timestamp for f in frames] == [utc(2014, 8, 1)]
    assert [(r.line, r.reason) for r in report.rejected] == [
        (2, "expected user|lat,lng; row skipped"),
        (3, "lng: not a number: 'east' (Location not emitted)")]


def test_unknown_file_name(tmp_path):
    with pytest.raises(InputError, match="not a CityBench stream file"):
        map_stream(write_stream(tmp_path, "Other", ["a,b"]))


def test_time_range_and_limit():
    rows = csv_rows("AarhusTrafficData158505")
    start, end = datetime(2014, 8, 18), datetime(2014, 8, 19)
    expected = sorted({datetime.fromisoformat(r["TIMESTAMP"]).replace(tzinfo=timezone.utc)
                       for r in rows if start <= datetime.fromisoformat(r["TIMESTAMP"]) < end})
    _, frames, report = map_stream(STREAMS / "AarhusTrafficData158505.stream",
                                   start=start, end=end)
    assert [f.timestamp for f in frames] == expected
    assert report.rows_read == len(rows)
    assert report.rows_in_range == sum(start.isoformat() <= r["TIMESTAMP"] < end.isoformat()
                                       for r in rows)
    # that day holds rows repeated later in the file: reported, not mapped twice
    assert report.rows_in_range - len(frames) == len(report.rejected) > 0

    # aware bounds mean the same instants
    _, aware, _ = map_stream(STREAMS / "AarhusTrafficData158505.stream",
                             start=start.replace(tzinfo=timezone.utc),
                             end=end.replace(tzinfo=timezone.utc), limit=5)
    assert [f.timestamp for f in aware] == expected[:5]


def test_export_of_a_day_of_traffic_is_deterministic(tmp_path):
    day = datetime(2014, 8, 2), datetime(2014, 8, 3)
    first = export_streams(["AarhusTrafficData*"], tmp_path / "a", *day)
    second = export_streams(["AarhusTrafficData*"], tmp_path / "b", *day)
    assert len(first) == 33
    assert [iri for iri, _ in first] == [
        SES[path.stem] for path in sorted(STREAMS.glob("AarhusTrafficData*"))]
    for (_, a), (_, b) in zip(first, second):
        assert a.read_bytes() == b.read_bytes()
    for missing in ("NoSuchStream", tmp_path / "AarhusTrafficData1.stream"):
        with pytest.raises(InputError):
            export_streams([missing], tmp_path / "c")


def test_q1_join_with_the_sensor_repository(repository):
    """Q1.txt's first group, over the repository plus one mapped frame."""
    _, frames, _ = map_stream(STREAMS / "AarhusTrafficData182955.stream", limit=1)
    graph = Graph()
    graph += repository
    for triple in frames[0].triples:
        graph.add(triple)
    results = list(graph.query("""
        PREFIX ct: <http://www.insight-centre.org/citytraffic#>
        PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#>
        PREFIX sao: <http://purl.oclc.org/NET/sao/>
        PREFIX ses: <http://www.insight-centre.org/dataset/SampleEventService#>
        SELECT ?obId1 ?v1 WHERE {
            ?p1 a ct:CongestionLevel .
            ?obId1 ssn:observedProperty ?p1 ;
                   sao:hasValue ?v1 ;
                   ssn:observedBy ses:AarhusTrafficData182955 .
        }"""))
    row = csv_rows("AarhusTrafficData182955")[0]
    assert [(str(ob).rsplit("/", 1)[1], v.toPython()) for ob, v in results] == [
        ("CongestionLevel", float(row["vehicleCount"]) / distance("182955"))]
    assert results[0][1] == Literal(repr(float(row["vehicleCount"]) / distance("182955")),
                                    datatype=XSD_DOUBLE)
