"""The road graph against the CSV and SensorRepository.n3 read independently here (csv module,
rdflib SPARQL), and malformed rows in a temporary copy of the metadata."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
from rdflib import RDF, Graph, Literal, URIRef

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.roads import read_roads, road_graph, write_road_graph

SES = "http://www.insight-centre.org/dataset/SampleEventService#"
CT = "http://www.insight-centre.org/citytraffic#"
GEO = "http://www.w3.org/2003/01/geo/wgs84_pos#"
ROADS = "urn:rsp:ns:roads/"


def node(node_id: str) -> URIRef:
    return URIRef(f"urn:rsp:roads:node/{node_id}")


@pytest.fixture(scope="module")
def background(data_dir) -> Path:
    return data_dir / "citybench" / "background"


@pytest.fixture(scope="module")
def rows(background) -> list[dict[str, str]]:
    with open(background / "trafficMetaData.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def repository(background) -> Graph:
    """Parsed once for the module (two seconds): the code maps sensors to features with its own
    triple walk, the tests check that with a SPARQL property path."""
    return Graph().parse(background / "SensorRepository.n3", format="n3")


@pytest.fixture(scope="module")
def roads(background, repository):
    return read_roads(background / "trafficMetaData.csv", repository)


def the(graph: Graph, subject, predicate: str):
    values = list(graph.objects(subject, URIRef(predicate)))
    assert len(values) == 1, (subject, predicate, values)
    return values[0]


def test_every_row_is_one_segment_with_its_fields(roads, rows):
    graph, report = roads
    assert (report.rows_read, report.segments, report.rejected, report.values_dropped) == \
        (len(rows), len(rows), [], [])
    by_report = {str(o): s for s, o in graph.subject_objects(URIRef(ROADS + "reportId"))}
    assert len(by_report) == len(rows) == len(set(graph.subjects(RDF.type,
                                                                 URIRef(ROADS + "Segment"))))
    for row in rows:
        segment = by_report[row["REPORT_ID"]]
        assert the(graph, segment, CT + "hasFirstNode") == node(row["POINT_1_NAME"])
        assert the(graph, segment, CT + "hasSecondNode") == node(row["POINT_2_NAME"])
        assert the(graph, segment, ROADS + "sensor") == \
            URIRef(f"{SES}AarhusTrafficData{row['REPORT_ID']}")
        assert the(graph, segment, ROADS + "lengthInMetres").toPython() == \
            float(row["DISTANCE_IN_METERS"])
        assert the(graph, segment, ROADS + "durationInSeconds").toPython() == \
            float(row["DURATION_IN_SEC"])
        assert str(the(graph, segment, ROADS + "roadType")) == row["ROAD_TYPE"]
        for column, prop in (("POINT_1_STREET", "startStreet"), ("POINT_2_STREET", "endStreet")):
            assert [str(s) for s in graph.objects(segment, URIRef(ROADS + prop))] == \
                ([row[column]] if row[column] else [])


def test_segments_are_the_sensors_features_of_interest(roads, repository):
    """Segment IRIs line up with SensorRepository.n3: each is the feature of interest of its
    sensor's observed properties there."""
    graph, report = roads
    features: dict = {}
    for sensor, feature in repository.query(
            "PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#> "
            "SELECT DISTINCT ?sensor ?foi WHERE { ?sensor ssn:observes/ssn:isPropertyOf ?foi }"):
        features.setdefault(sensor, set()).add(feature)
    assert report.segments_without_feature == 0
    for segment, sensor in graph.subject_objects(URIRef(ROADS + "sensor")):
        assert features[sensor] == {segment}


def test_nodes_have_a_position_among_the_csv_ones(roads, rows):
    graph, report = roads
    positions: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        for point in ("POINT_1", "POINT_2"):
            positions.setdefault(row[f"{point}_NAME"], []).append(
                (float(row[f"{point}_LAT"]), float(row[f"{point}_LNG"])))
    nodes = set(graph.subjects(RDF.type, URIRef(CT + "Node")))
    assert nodes == {node(n) for n in positions} and report.nodes == len(positions)
    for node_id, points in positions.items():
        lat = the(graph, node(node_id), GEO + "lat")
        lng = the(graph, node(node_id), GEO + "long")
        assert (the(graph, node(node_id), CT + "hasLat"), the(graph, node(node_id), CT + "hasLon")) \
            == (lat, lng)
        assert min(p[0] for p in points) <= lat.toPython() <= max(p[0] for p in points)
        assert min(p[1] for p in points) <= lng.toPython() <= max(p[1] for p in points)
    assert 0 < report.max_node_spread_m < 100


def test_turtle_file_is_exact_and_reproducible(roads, background, repository, tmp_path):
    paths = [write_road_graph(tmp_path / f"roads{i}.ttl", background / "trafficMetaData.csv",
                              repository) for i in (1, 2)]
    assert paths[0].read_bytes() == paths[1].read_bytes()
    parsed = Graph().parse(paths[0], format="turtle")
    assert set(parsed) == set(roads[0])  # same lexical forms: no doubles rounded on the way


def test_malformed_rows_are_rejected_with_file_and_line(rows, background, repository, tmp_path,
                                                        caplog):
    with open(background / "trafficMetaData.csv", newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    good = [dict(row) for row in rows[:3]]

    def variant(**changes):
        row = dict(rows[3])
        row.update(changes)
        return row

    bad = {  # CSV line -> (row or raw cells, what the reason must mention)
        5: (variant(POINT_1_NAME=""), "POINT_1_NAME"),
        6: (variant(POINT_2_NAME="x12"), "POINT_2_NAME"),
        7: (variant(DISTANCE_IN_METERS="abc"), "DISTANCE_IN_METERS"),
        8: (variant(DISTANCE_IN_METERS="0"), "DISTANCE_IN_METERS"),
        9: (dict(rows[0]), "duplicate of line 2"),
        10: (["1", "2", "3"], "columns"),
        11: (variant(POINT_2_NAME=rows[3]["POINT_1_NAME"]), "starts and ends"),
        12: (variant(REPORT_ID="12a"), "REPORT_ID"),
    }
    trimmed = variant(REPORT_ID="999999999", DURATION_IN_SEC="n/a")  # line 13, kept
    path = tmp_path / "meta.csv"
    with open(path, "w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(header)
        for row in good:
            writer.writerow([row[c] for c in header])
        for line in sorted(bad):
            row = bad[line][0]
            writer.writerow(row if isinstance(row, list) else [row[c] for c in header])
        writer.writerow([trimmed[c] for c in header])

    graph, report = read_roads(path, repository)
    assert sorted(r.line for r in report.rejected) == sorted(bad)
    for rejection in report.rejected:
        assert str(rejection).startswith(f"{path}:{rejection.line}: ")
        assert bad[rejection.line][1] in rejection.reason
    assert [str(r).split(": ")[0] for r in report.values_dropped] == [f"{path}:13"]
    assert "DURATION_IN_SEC" in report.values_dropped[0].reason
    assert report.rows_read == 3 + len(bad) + 1
    assert report.segments + len(report.rejected) == report.rows_read
    ids = {str(o) for o in graph.objects(None, URIRef(ROADS + "reportId"))}
    assert ids == {row["REPORT_ID"] for row in good} | {"999999999"}
    fallback = URIRef("urn:rsp:roads:segment/999999999")
    assert report.segments_without_feature == 1
    assert list(graph.objects(fallback, URIRef(ROADS + "lengthInMetres"))) == \
        [Literal(repr(float(trimmed["DISTANCE_IN_METERS"])), datatype=URIRef(
            "http://www.w3.org/2001/XMLSchema#double"))]
    assert list(graph.objects(fallback, URIRef(ROADS + "durationInSeconds"))) == []

    caplog.set_level("WARNING", logger="rsp_jobs.ingest.roads")
    road_graph(path, repository)
    logged = [r.getMessage() for r in caplog.records]
    assert all(any(m.startswith(f"{path}:{line}: ") for m in logged) for line in [*bad, 13])


def test_missing_column_names_the_header(repository, tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text("POINT_1_NAME,POINT_2_NAME,REPORT_ID\n1,2,3\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"{path}:1: header lacks column\(s\) .*DISTANCE_IN_METERS"):
        read_roads(path, repository)
