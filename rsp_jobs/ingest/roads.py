"""The Aarhus road graph (CityBench ``trafficMetaData.csv``) as background RDF, so that queries
and the traffic alert step can reason about where a congested segment leads and how to go round
it (the EP-SPARQL paper's delivery scenario; see ``rsp_jobs.reasoning.routes``).

Each CSV row is one directed road segment from ``POINT_1_NAME`` to ``POINT_2_NAME`` (numeric node
ids) watched by one traffic sensor, ``ses:AarhusTrafficData<REPORT_ID>``. IRIs line up with the
CityBench background where it has them, so the graph joins with ``SensorRepository.n3`` and
``city.n3``:

* A segment's IRI is its sensor's feature of interest in SensorRepository.n3 (the resource its
  observed properties are ``ssn:isPropertyOf``, which carries the segment's start and end
  coordinates there); it is typed ``ssn:FeatureOfInterest`` as there and ``roads:Segment``. A
  sensor the repository does not describe gets ``urn:rsp:roads:segment/<REPORT_ID>``, counted in
  ``RoadReport.segments_without_feature``.
* Segment to node: ``ct:hasFirstNode`` and ``ct:hasSecondNode`` (city.n3). Nodes are
  ``urn:rsp:roads:node/<id>``, typed ``ct:Node``, with ``geo:lat``/``geo:long`` (W3C WGS84) and
  the same values under city.n3's ``ct:hasLat``/``ct:hasLon``, all ``xsd:double``. The CSV gives
  most nodes several slightly different positions (one per segment end, up to about 34 m apart):
  a node's position is their mean (``RoadReport.max_node_spread_m`` gives the largest spread);
  a node none of whose positions is valid has none.
  The segment's own endpoint coordinates are not repeated: the repository has them on the same
  IRI, and for two segments (171572, 172602) they disagree with the CSV's nodes.

The ``roads:`` vocabulary (``urn:rsp:ns:roads/``, ``rsp_jobs.namespaces.ROADS``) covers what
neither file has; its terms carry an ``rdfs:comment`` in the graph itself:

- ``roads:Segment``: a directed road segment watched by one traffic sensor;
- ``roads:sensor``: segment -> its traffic sensor (``ses:AarhusTrafficData<REPORT_ID>``);
- ``roads:reportId``: segment -> REPORT_ID (string);
- ``roads:lengthInMetres``: DISTANCE_IN_METERS (``xsd:double``, > 0);
- ``roads:durationInSeconds``: DURATION_IN_SEC, normal driving time (``xsd:double``);
- ``roads:normalSpeedKmh``: NDT_IN_KMH, normal driving speed (``xsd:double``);
- ``roads:roadType``: ROAD_TYPE (string: MAJOR_ROAD, ROAD, STREET);
- ``roads:startStreet``, ``roads:endStreet``: POINT_1_STREET, POINT_2_STREET (omitted if empty);
- ``roads:nodeId``: node -> its numeric id in the CSV (string).

Nothing is dropped silently. A row without a usable start or end node, REPORT_ID or length
(missing, non-numeric, not > 0), with the wrong number of columns, starting and ending at the same
node, or repeating an earlier REPORT_ID is rejected whole; a bad duration, speed or coordinate
drops only that value. Each is a ``Rejection(file, line, reason)`` in the ``RoadReport``
(``rejected``: rows skipped, so ``segments + len(rejected) == rows_read``; ``values_dropped``:
rows kept without a value), and ``road_graph`` logs them as warnings.
"""

from __future__ import annotations

import csv
import logging
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import fmean

from rdflib import RDF, RDFS, XSD, Graph, Literal, Namespace, URIRef
from rdflib.term import Node

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.citybench import SES, SSN, sensor_repository_path, traffic_metadata_path
from rsp_jobs.ingest.rdf_stream import Rejection
from rsp_jobs.namespaces import CT, ROADS
from rsp_jobs.textfile import open_text

log = logging.getLogger(__name__)

GEO = Namespace("http://www.w3.org/2003/01/geo/wgs84_pos#")
NODE_PREFIX = "urn:rsp:roads:node/"
SEGMENT_PREFIX = "urn:rsp:roads:segment/"

PREFIXES = {
    "rdf": Namespace(str(RDF)),
    "rdfs": Namespace(str(RDFS)),
    "xsd": Namespace(str(XSD)),
    "ssn": SSN,
    "ct": CT,
    "ses": SES,
    "geo": GEO,
    "roads": ROADS,
}

REQUIRED_COLUMNS = ("POINT_1_NAME", "POINT_2_NAME", "REPORT_ID", "DISTANCE_IN_METERS")
OPTIONAL_NUMBERS = (
    ("DURATION_IN_SEC", ROADS.durationInSeconds),
    ("NDT_IN_KMH", ROADS.normalSpeedKmh),
)
_OTHER_COLUMNS = (
    "POINT_1_LAT",
    "POINT_1_LNG",
    "POINT_2_LAT",
    "POINT_2_LNG",
    "POINT_1_STREET",
    "POINT_2_STREET",
    "ROAD_TYPE",
)

VOCABULARY = {
    ROADS.Segment: "A directed road segment from its ct:hasFirstNode to its ct:hasSecondNode, "
    "watched by one traffic sensor (a row of CityBench trafficMetaData.csv).",
    ROADS.sensor: "The traffic sensor that reports on the segment (ses:AarhusTrafficData<REPORT_ID>).",
    ROADS.reportId: "The segment's REPORT_ID in trafficMetaData.csv.",
    ROADS.lengthInMetres: "Length of the segment in metres (DISTANCE_IN_METERS).",
    ROADS.durationInSeconds: "Normal driving time over the segment in seconds (DURATION_IN_SEC).",
    ROADS.normalSpeedKmh: "Normal driving speed on the segment in km/h (NDT_IN_KMH).",
    ROADS.roadType: "Road type of the segment (ROAD_TYPE: MAJOR_ROAD, ROAD, STREET).",
    ROADS.startStreet: "Street name at the segment's first node (POINT_1_STREET).",
    ROADS.endStreet: "Street name at the segment's second node (POINT_2_STREET).",
    ROADS.nodeId: "A road node's numeric id in trafficMetaData.csv (POINT_1_NAME, POINT_2_NAME).",
}


@dataclass
class RoadReport:
    file: str
    rows_read: int = 0
    segments: int = 0
    nodes: int = 0
    segments_without_feature: int = 0
    max_node_spread_m: float = 0.0
    rejected: list[Rejection] = field(default_factory=list)  # rows skipped whole
    values_dropped: list[Rejection] = field(default_factory=list)  # segment kept, a value not


def node_iri(node_id: str) -> URIRef:
    return URIRef(f"{NODE_PREFIX}{node_id}")


def sensor_iri(report_id: str) -> URIRef:
    return SES[f"AarhusTrafficData{report_id}"]


@cache
def features_of_interest(repository: Path) -> dict[URIRef, URIRef]:
    """``sensor_features`` of the repository file, parsed once per path (about two seconds)."""
    if not repository.is_file():
        raise InputError(f"{repository}: sensor repository not found (set RSP_DATA_DIR)")
    return sensor_features(Graph().parse(repository, format="n3"))


def sensor_features(repository: Graph) -> dict[URIRef, URIRef]:
    """{sensor: its feature of interest} for the sensors whose observed properties all belong to
    one feature (every traffic sensor in CityBench's repository), both IRIs: the feature names
    a road segment."""
    features: dict[Node, set[Node]] = {}
    for sensor, prop in repository.subject_objects(SSN.observes):
        features.setdefault(sensor, set()).update(repository.objects(prop, SSN.isPropertyOf))
    out: dict[URIRef, URIRef] = {}
    for sensor, found in features.items():
        feature = next(iter(found)) if len(found) == 1 else None
        if isinstance(sensor, URIRef) and isinstance(feature, URIRef):
            out[sensor] = feature
    return out


def _double(value: float) -> Literal:
    return Literal(repr(float(value)), datatype=XSD.double, normalize=False)


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _node_id(text: str) -> str | None:
    text = text.strip()
    return text if text.isdigit() else None


def _distance_m(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Haversine distance between two (lat, long) points in metres."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * 6_371_000 * math.asin(math.sqrt(h))


Repository = str | Path | Graph | None


def read_roads(
    metadata_path: str | Path | None = None, repository: Repository = None
) -> tuple[Graph, RoadReport]:
    """The road graph of ``metadata_path`` (default: CityBench's trafficMetaData.csv) with what was
    rejected. Segment IRIs come from ``repository``, a parsed graph or a file (default:
    CityBench's SensorRepository.n3), which must exist."""
    path = Path(metadata_path) if metadata_path is not None else traffic_metadata_path()
    if not path.is_file():
        raise InputError(f"{path}: traffic metadata not found (set RSP_DATA_DIR)")
    if isinstance(repository, Graph):
        features = sensor_features(repository)
    else:
        features = features_of_interest(
            Path(repository) if repository is not None else sensor_repository_path()
        )
    report = RoadReport(str(path))
    graph = Graph()
    for prefix, namespace in PREFIXES.items():  # replace rdflib's own geo: and ssn: bindings
        graph.bind(prefix, namespace, override=True, replace=True)
    for term, comment in VOCABULARY.items():
        graph.add((term, RDFS.comment, Literal(comment)))
        graph.add((term, RDF.type, RDFS.Class if term == ROADS.Segment else RDF.Property))

    positions: dict[str, list[tuple[float, float]]] = {}
    first_line: dict[str, int] = {}

    def reject(line: int, reason: str) -> None:
        report.rejected.append(Rejection(str(path), line, reason))

    with open_text(path, "road network") as handle:
        reader = csv.reader(handle)
        header = next(reader, None) or []
        missing = [
            c
            for c in REQUIRED_COLUMNS + tuple(c for c, _ in OPTIONAL_NUMBERS) + _OTHER_COLUMNS
            if c not in header
        ]
        if missing:
            raise InputError(f"{path}:1: header lacks column(s) {', '.join(missing)}")
        for row in reader:
            line = reader.line_num
            report.rows_read += 1
            if len(row) != len(header):
                reject(line, f"expected {len(header)} columns, found {len(row)}; row skipped")
                continue
            fields = dict(zip(header, row))
            problems = []
            start, end = _node_id(fields["POINT_1_NAME"]), _node_id(fields["POINT_2_NAME"])
            for column, node in (("POINT_1_NAME", start), ("POINT_2_NAME", end)):
                if node is None:
                    problems.append(f"{column}: missing or non-numeric node id {fields[column]!r}")
            report_id = fields["REPORT_ID"].strip()
            if not report_id.isdigit():
                problems.append(f"REPORT_ID: missing or non-numeric {report_id!r}")
            length = _number(fields["DISTANCE_IN_METERS"])
            if length is None or length <= 0:
                problems.append(
                    f"DISTANCE_IN_METERS: not a positive number: {fields['DISTANCE_IN_METERS']!r}"
                )
            if start is not None and start == end:
                problems.append(f"starts and ends at node {start}")
            if not problems and report_id in first_line:
                problems.append(
                    f"duplicate of line {first_line[report_id]} (same REPORT_ID {report_id})"
                )
            if problems or start is None or end is None or length is None:  # None: a problem
                reject(line, "; ".join(problems) + "; row skipped")
                continue
            first_line[report_id] = line

            sensor = sensor_iri(report_id)
            segment = features.get(sensor)
            if segment is None:
                segment = URIRef(f"{SEGMENT_PREFIX}{report_id}")
                report.segments_without_feature += 1
            report.segments += 1
            graph.add((segment, RDF.type, ROADS.Segment))
            graph.add((segment, RDF.type, SSN.FeatureOfInterest))
            graph.add((segment, CT.hasFirstNode, node_iri(start)))
            graph.add((segment, CT.hasSecondNode, node_iri(end)))
            graph.add((segment, ROADS.sensor, sensor))
            graph.add((segment, ROADS.reportId, Literal(report_id)))
            graph.add((segment, ROADS.lengthInMetres, _double(length)))
            dropped = []
            for column, prop in OPTIONAL_NUMBERS:
                value = _number(fields[column])
                if value is None:
                    dropped.append(f"{column}: not a number: {fields[column]!r}")
                else:
                    graph.add((segment, prop, _double(value)))
            for column, prop in (
                ("ROAD_TYPE", ROADS.roadType),
                ("POINT_1_STREET", ROADS.startStreet),
                ("POINT_2_STREET", ROADS.endStreet),
            ):
                if fields[column].strip():
                    graph.add((segment, prop, Literal(fields[column].strip())))
            for node, point in ((start, "POINT_1"), (end, "POINT_2")):
                positions.setdefault(node, [])
                lat, lng = _number(fields[f"{point}_LAT"]), _number(fields[f"{point}_LNG"])
                if lat is None or lng is None or not -90 <= lat <= 90 or not -180 <= lng <= 180:
                    dropped.append(
                        f"{point}_LAT/{point}_LNG: not a position: "
                        f"{fields[f'{point}_LAT']!r}, {fields[f'{point}_LNG']!r}"
                    )
                else:
                    positions[node].append((lat, lng))
            if dropped:
                report.values_dropped.append(
                    Rejection(
                        str(path), line, "; ".join(dropped) + " (value not emitted; segment kept)"
                    )
                )

    for node, points in positions.items():
        iri = node_iri(node)
        graph.add((iri, RDF.type, CT.Node))
        graph.add((iri, ROADS.nodeId, Literal(node)))
        if not points:
            continue
        # the mean, kept within the points' range (a float mean of equal values can leave it)
        lat, lng = (min(max(fmean(axis), min(axis)), max(axis)) for axis in zip(*points))
        report.max_node_spread_m = max(
            [report.max_node_spread_m] + [_distance_m(a, b) for a in points for b in points]
        )
        for prop in (GEO.lat, CT.hasLat):
            graph.add((iri, prop, _double(lat)))
        for prop in (GEO.long, CT.hasLon):
            graph.add((iri, prop, _double(lng)))
    report.nodes = len(positions)
    return graph, report


def road_graph(metadata_path: str | Path | None = None, repository: Repository = None) -> Graph:
    """The road graph (see the module docstring); each rejection is logged as a warning."""
    graph, report = read_roads(metadata_path, repository)
    for rejection in report.rejected + report.values_dropped:
        log.warning("%s", rejection)
    log.info(
        "%s: %d segments, %d nodes, %d rows rejected, %d kept without a value",
        report.file,
        report.segments,
        report.nodes,
        len(report.rejected),
        len(report.values_dropped),
    )
    return graph


def turtle(graph: Graph) -> str:
    """The graph as Turtle, subjects, predicates and objects sorted, literals in full
    ``"lexical"^^datatype`` form. Not rdflib's serializer: it writes doubles as ``5.618959e+01``
    (seven significant digits), which would move a node by up to 5 m and change the literals."""
    names = graph.namespace_manager

    def text(term) -> str:
        return term.n3(names)

    lines = [f"@prefix {prefix}: <{namespace}> ." for prefix, namespace in PREFIXES.items()]
    for subject in sorted(set(graph.subjects()), key=text):
        by_predicate: dict = {}
        for predicate, obj in graph.predicate_objects(subject):
            by_predicate.setdefault(text(predicate), []).append(text(obj))
        body = " ;\n    ".join(
            f"{'a' if predicate == 'rdf:type' else predicate} {', '.join(sorted(objects))}"
            for predicate, objects in sorted(by_predicate.items())
        )
        lines.append(f"\n{text(subject)}\n    {body} .")
    return "\n".join(lines) + "\n"


def write_road_graph(
    out_path: str | Path, metadata_path: str | Path | None = None, repository: Repository = None
) -> Path:
    """Write the road graph as Turtle (the background file for queries and the alert step; it is
    generated from the data directory, never committed). Same input, same bytes."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(
        turtle(road_graph(metadata_path, repository)), encoding="utf-8", newline="\n"
    )
    return out_path
