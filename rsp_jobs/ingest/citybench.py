"""CityBench CSV streams as RDF stream files (one named graph per timestamp, its
``prov:generatedAtTime`` in the default graph), mapped as the CityBench README describes so that
the benchmark queries' joins with ``background/SensorRepository.n3`` hold and runs are reproducible:

* Observed properties are the sensor's own property resources in SensorRepository.n3, found by
  sensor and class (``ct:CongestionLevel``, ...; measured time is ``ct:MeasureTime`` there).
* Times are the CSV's Aarhus wall-clock times written as UTC with the same wall-clock value
  ("treated as given", like the benchmark). Frames come out in time order (the files are not).
* IRIs have no random parts: frame ``<stream>/frame/<time>``, observation
  ``<sensor>/obs/<time>/<class local name>``, ``<time>`` as in ``2014-08-01T07:50:00Z``.
* Every ``sao:hasValue`` number is an ``xsd:double`` (the benchmark used Java doubles), in its
  shortest round-trip form; derived values follow the README, -1 where a divisor is 0.
* UserLocationService.stream has no times: line n is stamped LOCATION_START + (n-1)*LOCATION_STEP
  (the traffic streams' 5-minute cadence); its value is a node with ``ct:hasLatitude`` and
  ``ct:hasLongitude`` (as query Q4 reads it), the user its ``ssn:featureOfInterest``.
* Nothing is dropped silently: a malformed row is rejected whole, a missing or non-numeric value
  drops only the observations that need it, a second row for the same sensor and time is rejected
  as a duplicate (the traffic files hold 117 identical copies); each is a Rejection(file, line,
  reason) in the MappingReport.
"""

from __future__ import annotations

import csv
import logging
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache, cached_property
from pathlib import Path

from rdflib import RDF, XSD, Literal, Namespace, URIRef

from rsp_jobs.errors import InputError
from rsp_jobs.ingest.rdf_stream import Rejection
from rsp_jobs.namespaces import CT
from rsp_jobs.rdf_files import load_rdf_file
from rsp_jobs.settings import data_dir
from rsp_jobs.textfile import open_text
from rsp_jobs.times import datetime_lexical

log = logging.getLogger(__name__)

SES = Namespace("http://www.insight-centre.org/dataset/SampleEventService#")
SSN = Namespace("http://purl.oclc.org/NET/ssnx/ssn#")
SAO = Namespace("http://purl.oclc.org/NET/sao/")
PROV = Namespace("http://www.w3.org/ns/prov#")

LOCATION_START = datetime(2014, 8, 1, tzinfo=UTC)
LOCATION_STEP = timedelta(minutes=5)
_LOCATION_START_WALL_CLOCK = LOCATION_START.replace(tzinfo=None)

POLLUTANTS = (
    "ozone",
    "particullate_matter",
    "carbon_monoxide",
    "sulfure_dioxide",
    "nitrogen_dioxide",
)
_A, _OBSERVATION, _OBSERVED_BY = RDF.type, SSN.Observation, SSN.observedBy
_OBSERVED_PROPERTY, _FEATURE, _HAS_VALUE = SSN.observedProperty, SSN.featureOfInterest, SAO.hasValue
_LATITUDE, _LONGITUDE, _GENERATED_AT = CT.hasLatitude, CT.hasLongitude, PROV.generatedAtTime
_IRI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]+")


@dataclass
class MappingReport:
    file: str
    rows_read: int = 0
    rows_in_range: int = 0
    frames: int = 0
    rejected: list[Rejection] = field(default_factory=list)


@dataclass
class Frame:
    iri: URIRef
    timestamp: datetime  # UTC-aware
    triples: list[tuple[URIRef, URIRef, URIRef | Literal]]


@dataclass(frozen=True)
class _Location:
    user: str
    lat: float
    lng: float


class _Stream:
    """What a row mapper may need besides the row: the stream's name (file stem) and, loaded on
    first use, the traffic segment lengths."""

    def __init__(self, name: str):
        self.name = name

    @cached_property
    def distances(self) -> dict[str, float]:
        return traffic_distances(traffic_metadata_path())


# A row mapper gets the row's fields and its stream and appends field problems to the list; it
# returns the sensor's local name and (property class local name, value or None) pairs.
_Value = float | _Location | None
_Mapper = Callable[[dict[str, str], _Stream, list[str]], tuple[str, list[tuple[str, _Value]]]]


@dataclass(frozen=True)
class _Kind:
    columns: tuple[str, ...] | None  # required CSV columns; None: headerless user|lat,lng lines
    time_column: str | None
    mapper: _Mapper


def citybench_dir() -> Path:
    return data_dir() / "citybench"


def sensor_repository_path() -> Path:
    return citybench_dir() / "background" / "SensorRepository.n3"


def traffic_metadata_path() -> Path:
    return citybench_dir() / "background" / "trafficMetaData.csv"


@cache
def observed_properties(repository: Path) -> dict[tuple[str, str], URIRef]:
    """{(sensor local name, property class local name): property IRI} from the repository."""
    if not repository.is_file():
        raise InputError(f"{repository}: sensor repository not found (set RSP_DATA_DIR)")
    graph = load_rdf_file(repository, "sensor repository")  # the background reads it too
    properties: dict[tuple[str, str], URIRef] = {}
    for sensor, prop in graph.subject_objects(SSN.observes):
        if not str(sensor).startswith(str(SES)):
            continue
        for cls in graph.objects(prop, RDF.type):
            if str(cls).startswith(str(CT)):
                if not isinstance(prop, URIRef):  # observations name their property by IRI
                    raise InputError(
                        f"{repository}: {sensor} observes {prop.n3()}, which is not an IRI"
                    )
                key = (str(sensor)[len(SES) :], str(cls)[len(CT) :])
                properties[key] = min(properties.get(key, prop), prop)  # deterministic if several
    return properties


@cache
def traffic_distances(metadata: Path) -> dict[str, float]:
    """{REPORT_ID: DISTANCE_IN_METERS} from trafficMetaData.csv."""
    with open_text(metadata, "CityBench metadata") as handle:
        return {
            row["REPORT_ID"]: float(row["DISTANCE_IN_METERS"]) for row in csv.DictReader(handle)
        }


def _number(fields: dict[str, str], column: str, problems: list[str]) -> float | None:
    text = fields[column].strip()
    if not text:
        problems.append(f"{column}: missing value")
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        problems.append(f"{column}: not a number: {text!r}")
        return None
    return value


def _ratio(numerator: float | None, divisor: float | None) -> float | None:
    if numerator is None or divisor is None:
        return None
    return numerator / divisor if divisor else -1.0


def _traffic(fields: dict[str, str], stream: _Stream, problems: list[str]):
    report_id = fields["REPORT_ID"].strip()
    distance = stream.distances.get(report_id)
    if distance is None:
        problems.append(f"REPORT_ID {report_id!r} is not in trafficMetaData.csv")
    count = _number(fields, "vehicleCount", problems)
    speed = _number(fields, "avgSpeed", problems)
    measured = _number(fields, "avgMeasuredTime", problems)
    return f"AarhusTrafficData{report_id}", [
        ("CongestionLevel", _ratio(count, distance)),
        ("EstimatedTime", _ratio(distance, speed)),
        ("AvgSpeed", speed),
        ("VehicleCount", count),
        ("MeasureTime", measured),
    ]


def _pollution(fields: dict[str, str], stream: _Stream, problems: list[str]):
    levels = [_number(fields, column, problems) for column in POLLUTANTS]
    known = [level for level in levels if level is not None]
    return stream.name, [("API", max(known) if len(known) == len(levels) else None)]


def _parking(fields: dict[str, str], stream: _Stream, problems: list[str]):
    total = _number(fields, "totalspaces", problems)
    count = _number(fields, "vehiclecount", problems)
    vacancy = None if total is None or count is None else total - count
    return f"AarhusParkingData{fields['garagecode'].strip()}", [("ParkingVacancy", vacancy)]


def _weather(fields: dict[str, str], stream: _Stream, problems: list[str]):
    return stream.name, [
        ("Temperature", _number(fields, "tempm", problems)),
        ("Humidity", _number(fields, "hum", problems)),
        ("WindSpeed", _number(fields, "wspdm", problems)),
    ]


def _location(fields: dict[str, str], stream: _Stream, problems: list[str]):
    lat = _number(fields, "lat", problems)
    lng = _number(fields, "lng", problems)
    user = fields["user"].strip()
    user_ok = bool(_IRI.fullmatch(user))
    if not user_ok:
        problems.append(f"user: not an IRI: {user!r}")
    if not user_ok or lat is None or lng is None:
        return stream.name, [("Location", None)]
    return stream.name, [("Location", _Location(user, lat, lng))]


# Stream kind by file-name prefix.
_KINDS: dict[str, _Kind] = {
    "AarhusTrafficData": _Kind(
        ("avgMeasuredTime", "avgSpeed", "TIMESTAMP", "vehicleCount", "REPORT_ID"),
        "TIMESTAMP",
        _traffic,
    ),
    "AarhusPollutionData": _Kind((*POLLUTANTS, "timestamp"), "timestamp", _pollution),
    "AarhusParkingData": _Kind(
        ("vehiclecount", "updatetime", "totalspaces", "garagecode"), "updatetime", _parking
    ),
    "AarhusWeatherData": _Kind(("hum", "tempm", "wspdm", "TIMESTAMP"), "TIMESTAMP", _weather),
    "UserLocationService": _Kind(None, None, _location),
}


def _kind(path: Path) -> _Kind:
    for prefix, kind in _KINDS.items():
        if path.name.startswith(prefix):
            return kind
    raise InputError(
        f"{path}: not a CityBench stream file (expected a name starting with one of "
        f"{', '.join(_KINDS)})"
    )


def _parse_time(text: str) -> datetime:
    """A CSV time as a naive wall-clock datetime (made UTC-aware only for rows in range)."""
    value = datetime.fromisoformat(text.strip())
    if value.tzinfo is not None:
        raise ValueError("has a UTC offset; CityBench times are local wall-clock times")
    return value


def _wall_clock(value: datetime | None) -> datetime | None:
    """A bound as a naive wall-clock time: aware bounds are converted to UTC, naive ones are
    already wall-clock times like the data."""
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(UTC).replace(tzinfo=None)


def _double(value: float) -> Literal:
    return Literal(repr(float(value)), datatype=XSD.double, normalize=False)


def _rows(
    path: Path, kind: _Kind, report: MappingReport, start: datetime | None, end: datetime | None
) -> Iterator[tuple[int, datetime, dict[str, str]]]:
    """Well-formed rows with start <= time < end (naive wall-clock bounds) as (line, UTC time,
    fields); malformed rows, in range or not, go to the report."""

    def reject(line: int, reason: str) -> None:
        report.rejected.append(Rejection(str(path), line, reason))

    def in_range(timestamp: datetime) -> bool:
        return (start is None or timestamp >= start) and (end is None or timestamp < end)

    with open_text(path, "CityBench observation") as handle:
        if kind.columns is None:
            for line, text in enumerate(handle, start=1):
                report.rows_read += 1
                user, bar, coordinates = text.rstrip("\r\n").partition("|")
                lat, comma, lng = coordinates.partition(",")
                if not bar or not comma or "," in lng:
                    reject(line, "expected user|lat,lng; row skipped")
                    continue
                timestamp = _LOCATION_START_WALL_CLOCK + (line - 1) * LOCATION_STEP
                if in_range(timestamp):
                    report.rows_in_range += 1
                    yield (
                        line,
                        timestamp.replace(tzinfo=UTC),
                        {"user": user, "lat": lat, "lng": lng},
                    )
            return
        reader = csv.reader(handle)
        header = next(reader, None) or []
        missing = [column for column in kind.columns if column not in header]
        if missing:
            raise InputError(f"{path}:1: header lacks column(s) {', '.join(missing)}")
        if kind.time_column is None:  # only the headerless kind (read above) has none
            raise ValueError(f"{path}: a CityBench kind with a header names its time column")
        time_index = header.index(kind.time_column)
        for row in reader:
            report.rows_read += 1
            if len(row) != len(header):
                reject(
                    reader.line_num,
                    f"expected {len(header)} columns, found {len(row)}; row skipped",
                )
                continue
            try:
                timestamp = _parse_time(row[time_index])
            except ValueError as error:
                reject(
                    reader.line_num,
                    f"{kind.time_column}: bad time {row[time_index]!r} ({error}); row skipped",
                )
                continue
            if in_range(timestamp):
                report.rows_in_range += 1
                yield (reader.line_num, timestamp.replace(tzinfo=UTC), dict(zip(header, row)))


def _observation(sensor: URIRef, cls: str, time: str, prop: URIRef, value: float | _Location):
    obs = URIRef(f"{sensor}/obs/{time}/{cls}")
    triples: list[tuple[URIRef, URIRef, URIRef | Literal]] = [
        (obs, _A, _OBSERVATION),
        (obs, _OBSERVED_BY, sensor),
        (obs, _OBSERVED_PROPERTY, prop),
    ]
    if isinstance(value, _Location):
        node = URIRef(f"{obs}/value")
        triples += [
            (obs, _FEATURE, URIRef(value.user)),
            (obs, _HAS_VALUE, node),
            (node, _LATITUDE, _double(value.lat)),
            (node, _LONGITUDE, _double(value.lng)),
        ]
    else:
        triples.append((obs, _HAS_VALUE, _double(value)))
    return triples


def map_stream(
    csv_path: str | Path,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int | None = None,
) -> tuple[URIRef, list[Frame], MappingReport]:
    """Map one CityBench stream file to its frames in time order: rows with start <= time < end
    (naive bounds are wall-clock times, like the data), at most ``limit`` frames. Rows out of range
    are only read, not mapped. The stream IRI is ``SampleEventService#<file stem>``."""
    path = Path(csv_path)
    kind = _kind(path)
    if not path.is_file():
        raise InputError(f"{path}: no such stream file")
    properties = observed_properties(sensor_repository_path())
    report = MappingReport(str(path))
    stream_iri, stream = SES[path.stem], _Stream(path.stem)

    by_time: dict[datetime, list[tuple[int, dict[str, str]]]] = {}
    for line, timestamp, fields in _rows(path, kind, report, _wall_clock(start), _wall_clock(end)):
        by_time.setdefault(timestamp, []).append((line, fields))

    frames = []
    for timestamp in sorted(by_time)[:limit]:
        time = datetime_lexical(timestamp)
        first_line: dict[str, tuple[int, dict[str, str]]] = {}
        triples = []
        for line, fields in by_time[timestamp]:
            problems: list[str] = []
            sensor, values = kind.mapper(fields, stream, problems)
            if sensor in first_line:
                earlier, earlier_fields = first_line[sensor]
                same = "identical" if earlier_fields == fields else "different"
                report.rejected.append(
                    Rejection(
                        str(path),
                        line,
                        f"duplicate of line {earlier} (same sensor {sensor} and time "
                        f"{time}, {same} values); row skipped",
                    )
                )
                continue
            first_line[sensor] = (line, fields)
            skipped = []
            for cls, value in values:
                prop = properties.get((sensor, cls))
                if prop is None:
                    problems.append(f"{sensor} has no ct:{cls} property in SensorRepository.n3")
                if value is None or prop is None:
                    skipped.append(cls)
                    continue
                triples += _observation(SES[sensor], cls, time, prop, value)
            if problems:
                report.rejected.append(
                    Rejection(
                        str(path), line, f"{'; '.join(problems)} ({', '.join(skipped)} not emitted)"
                    )
                )
        if triples:
            frames.append(Frame(URIRef(f"{stream_iri}/frame/{time}"), timestamp, triples))
    report.frames = len(frames)
    return stream_iri, frames, report


class _N3(dict):
    """Term -> N-Triples text, memoised: vocabulary, sensor and property terms recur on every row
    and URIRef.n3() re-validates the IRI each time."""

    def __missing__(self, term):
        text = self[term] = term.n3()
        return text


def _generated_at(frame: Frame) -> str:
    return (
        f"{frame.iri.n3()} {_GENERATED_AT.n3()} "
        f"{Literal(datetime_lexical(frame.timestamp), datatype=XSD.dateTime, normalize=False).n3()}"
    )


def write_trig(stream_iri: URIRef, frames: Iterable[Frame], out_path: str | Path) -> Path:
    """One named graph per frame (triples grouped by subject), its time in the default graph."""
    out_path, n3 = Path(out_path), _N3()
    with open(out_path, "w", encoding="utf-8", newline="\n") as out:
        out.write(f"# RSP stream {stream_iri.n3()}\n")
        for frame in frames:
            out.write(f"\n{frame.iri.n3()} {{\n")
            subject = None
            for s, p, o in frame.triples:
                if s == subject:
                    out.write(f" ;\n    {n3[p]} {n3[o]}")
                    continue
                if subject is not None:
                    out.write(" .\n")
                out.write(f"  {n3[s]} {n3[p]} {n3[o]}")
                subject = s
            out.write(f"{' .' if subject is not None else ''}\n}}\n{_generated_at(frame)} .\n")
    return out_path


def write_nquads(stream_iri: URIRef, frames: Iterable[Frame], out_path: str | Path) -> Path:
    """The same content as write_trig, one quad per line."""
    out_path, n3 = Path(out_path), _N3()
    with open(out_path, "w", encoding="utf-8", newline="\n") as out:
        out.write(f"# RSP stream {stream_iri.n3()}\n")
        for frame in frames:
            graph = frame.iri.n3()
            out.writelines(f"{n3[s]} {n3[p]} {n3[o]} {graph} .\n" for s, p, o in frame.triples)
            out.write(_generated_at(frame) + " .\n")
    return out_path


def _stream_files(name_or_path: str | Path) -> list[Path]:
    """A Path, or a string with a "/" or ending in ".stream", is a file; any other string is a
    stream name or glob in the CityBench streams folder."""
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or "/" in text or text.endswith(".stream"):
        if not Path(text).is_file():
            raise InputError(f"{text}: no such stream file")
        return [Path(text)]
    streams = citybench_dir() / "streams"
    matches = sorted(streams.glob(f"{text}.stream"))
    if not matches:
        raise InputError(f"{text}: no CityBench stream of that name in {streams}")
    return matches


def export_streams(
    names_or_paths: Iterable[str | Path],
    out_dir: str | Path,
    start: datetime | None = None,
    end: datetime | None = None,
    *,
    fmt: str = "trig",
) -> list[tuple[URIRef, Path]]:
    """Write each stream (a file path, or a stream name or glob such as ``AarhusTrafficData*``
    under the CityBench streams folder) to ``out_dir/<stem>.trig`` (fmt "trig") or ``.nq``
    ("nquads"). Rejections are logged as warnings, one per file:line."""
    writers = {"trig": (write_trig, ".trig"), "nquads": (write_nquads, ".nq")}
    if fmt not in writers:
        raise ValueError(f"fmt must be one of {', '.join(writers)}, not {fmt!r}")
    write, suffix = writers[fmt]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for item in names_or_paths:
        for path in _stream_files(item):
            stream_iri, frames, report = map_stream(path, start=start, end=end)
            for rejection in report.rejected:
                log.warning("%s", rejection)
            out_path = write(stream_iri, frames, out_dir / f"{path.stem}{suffix}")
            written.append((stream_iri, out_path))
    return written


TRAFFIC = str(SES) + "AarhusTrafficData"


def into_stream(stream_iri: str, frames: Iterable[Frame]) -> list[Frame]:
    """Frames of one or more CityBench files as frames of ``stream_iri``: one per reading time,
    ``<stream>/frame/<time>``, holding every sensor's observations of that time."""
    by_time: dict[datetime, list] = {}
    for frame in frames:
        by_time.setdefault(frame.timestamp, []).extend(frame.triples)
    return [
        Frame(URIRef(f"{stream_iri}/frame/{datetime_lexical(t)}"), t, triples)
        for t, triples in sorted(by_time.items())
    ]


def merged_traffic(start: datetime, end: datetime, out_path: str | Path) -> Path:
    """All 33 traffic streams between ``start`` and ``end`` as one stream ``ses:AarhusTrafficData``
    with one frame per reading time (holding every sensor's observations of that time)."""
    frames = [
        frame
        for path in _stream_files("AarhusTrafficData*")
        for frame in map_stream(path, start=start, end=end)[1]
    ]
    return write_nquads(URIRef(TRAFFIC), into_stream(TRAFFIC, frames), out_path)


def write_stream_trig(
    path: str | Path, out_path: str | Path, *, stream: str | None = None
) -> MappingReport:
    """One CityBench file as a TriG stream file of ``stream`` (default: the file's own stream,
    ``SampleEventService#<stem>``): what a landing directory of format ``citybench`` loads, so
    that the files of several sensors land in one stream, as the benchmark's queries read it."""
    own_iri, frames, report = map_stream(path)
    stream = stream or str(own_iri)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    write_trig(URIRef(stream), into_stream(stream, frames), out_path)
    return report
