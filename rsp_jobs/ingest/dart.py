"""NOAA NDBC DART water-column heights (raw ``#YY MM DD hh mm ss T HEIGHT`` files, see
``../shared/data/dart/README.md``) as RDF streams of W3C SOSA observations.

One stream per station, ``urn:rsp:stream:dart/<station>`` (TA-RDF: a stream has at most one frame
per instant, and two stations sample at the same instants); one frame per sample time,
``urn:rsp:stream:dart/<station>/frame/<time>``, holding exactly one observation of six triples::

    <urn:rsp:dart:21418/obs/2011-03-11T05:48:15Z> a sosa:Observation ;
        sosa:madeBySensor <urn:rsp:dart:21418/bpr> ;
        sosa:observedProperty <urn:rsp:ns:dart/WaterColumnHeight> ;
        sosa:hasSimpleResult "5662.123"^^xsd:double ;
        sosa:resultTime "2011-03-11T05:48:15Z"^^xsd:dateTime ;
        <urn:rsp:ns:dart/sampleType> <urn:rsp:ns:dart/OneMinute> .

Other components query exactly this vocabulary; the stations and their sensors are described in
``ontology/dart-stations.ttl`` (``stations()`` reads it). Decisions, so that a run is
reproducible and nothing is dropped silently (every rejected row is a ``Rejection(file, line,
reason)`` in the ``MappingReport``):

* The station is the file name: ``21418.txt``, or ``21418-<anything>.txt`` for a part of that
  station's series. The ``*_notide.txt`` files are a derived series (seconds since the earthquake
  and detided residuals), not a stream: giving one is an ``InputError``; so is any other name.
* Lines starting with ``#`` are the header; blank lines hold nothing. Every other line is a row
  (``rows_read``).
* A malformed row (not 8 fields, a field that is not a number, a year that is not 4 digits, an
  impossible date or time, a sample type other than 1, 2, 3, a height that is not finite) is
  rejected naming ``file:line``, in range or not.
* ``9999.000`` is NDBC's "missing": the row is rejected as missing, no observation.
* Several rows for one time (NDBC sends 15-minute, 1-minute and 15-second values of the same
  instant): the finest sample type among the rows that have a value is kept (3 over 2 over 1;
  the first line among equal types); each other row with a value is rejected as "superseded by
  line N (type T, value V)". A missing row is rejected as missing even when another row of its
  time has a value, so a missing fine sample never hides a coarse value.
* Rows are sorted by time (the files are not guaranteed to be in order); times are UTC.
* ``start <= time < end`` (naive bounds are UTC) selects rows; rows outside are read but neither
  mapped nor rejected. So ``rows_read == observations + rejections`` without bounds and
  ``rows_in_range + malformed == observations + rejections`` with them.
* Heights are metres as ``xsd:double`` in their shortest round-trip form (``repr(float)``).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from rdflib import RDF, XSD, Graph, Literal, Namespace, URIRef

from rsp_jobs import settings
from rsp_jobs.errors import InputError
from rsp_jobs.ingest.citybench import Frame, MappingReport, write_trig
from rsp_jobs.ingest.rdf_stream import Rejection
from rsp_jobs.textfile import open_text
from rsp_jobs.times import datetime_lexical

STREAM_BASE = "urn:rsp:stream:dart"
SOSA = Namespace("http://www.w3.org/ns/sosa/")
GEO = Namespace("http://www.w3.org/2003/01/geo/wgs84_pos#")
DART = Namespace("urn:rsp:ns:dart/")
WATER_COLUMN_HEIGHT = DART.WaterColumnHeight
SAMPLE_TYPE = DART.sampleType
SAMPLE_TYPES = {1: DART.FifteenMinute, 2: DART.OneMinute, 3: DART.FifteenSecond}  # finer is larger
MISSING = 9999.0
FIELDS = 8  # YY MM DD hh mm ss T HEIGHT

_A, _OBSERVATION = RDF.type, SOSA.Observation
_MADE_BY, _PROPERTY = SOSA.madeBySensor, SOSA.observedProperty
_RESULT, _RESULT_TIME = SOSA.hasSimpleResult, SOSA.resultTime
_STATION_FILE = re.compile(r"(\d{5})(?:-[\w.-]+)?\.txt")
_SENSOR = re.compile(r"urn:rsp:dart:(\d{5})/bpr")


def dart_dir() -> Path:
    return settings.data_dir() / "dart"


def stations_path() -> Path:
    return settings.REPO_ROOT / "ontology" / "dart-stations.ttl"


class Station(NamedTuple):
    label: str
    lat: float
    lon: float
    platform: URIRef
    sensor: URIRef


def station_of_sensor(iri: str) -> str:
    """The station id of a sensor IRI ``urn:rsp:dart:NNNNN/bpr``."""
    match = _SENSOR.fullmatch(str(iri))
    if not match:
        raise InputError(f"<{iri}> is not a DART sensor (expected urn:rsp:dart:NNNNN/bpr)")
    return match.group(1)


def stream_iri(station: str) -> str:
    return f"{STREAM_BASE}/{station}"


def frame_iri(station: str, moment: datetime) -> str:
    return f"{stream_iri(station)}/frame/{datetime_lexical(moment)}"


def sensor_iri(station: str) -> URIRef:
    return URIRef(f"urn:rsp:dart:{station}/bpr")


def station_id(path: str | Path) -> str:
    """The station a raw file holds, from its name (see the module doc)."""
    name = Path(path).name
    if name.endswith("_notide.txt"):
        raise InputError(
            f"{path}: a *_notide.txt file is a derived, detided series (seconds since "
            "the earthquake, residual metres), not a DART stream; give the raw NNNNN.txt"
        )
    match = _STATION_FILE.fullmatch(name)
    if not match:
        raise InputError(
            f"{path}: not a raw DART file name: expected <station>.txt or "
            "<station>-<part>.txt with a 5-digit NDBC station id (21418.txt)"
        )
    return match.group(1)


def _double(text: str) -> Literal:
    return Literal(repr(float(text)), datatype=XSD.double, normalize=False)


def _parse(fields: list[str]) -> tuple[datetime, int, float]:
    """A row's (UTC time, sample type, height); ValueError says what is wrong."""
    if len(fields) != FIELDS:
        raise ValueError(
            f"expected {FIELDS} fields (YY MM DD hh mm ss T HEIGHT), found {len(fields)}"
        )
    names = ("year", "month", "day", "hour", "minute", "second", "sample type")
    numbers = []
    for name, text in zip(names, fields):
        if not text.isdigit():
            raise ValueError(f"{name}: not a whole number: {text!r}")
        numbers.append(int(text))
    if len(fields[0]) != 4:
        raise ValueError(f"year: expected 4 digits, found {fields[0]!r}")
    try:
        year, month, day, hour, minute, second = numbers[:6]
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f"impossible date or time {' '.join(fields[:6])!r} ({exc})") from None
    if numbers[6] not in SAMPLE_TYPES:
        raise ValueError(f"sample type must be 1, 2 or 3, found {fields[6]!r}")
    try:
        height = float(fields[7])
    except ValueError:
        height = math.nan
    if not math.isfinite(height):
        raise ValueError(f"height: not a number: {fields[7]!r}")
    return moment, numbers[6], height


def _utc(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def observation(station: str, moment: datetime, sample_type: int, height_text: str) -> list[tuple]:
    """The six triples of one sample (see the module doc)."""
    time = datetime_lexical(moment)
    obs = URIRef(f"urn:rsp:dart:{station}/obs/{time}")
    return [
        (obs, _A, _OBSERVATION),
        (obs, _MADE_BY, sensor_iri(station)),
        (obs, _PROPERTY, WATER_COLUMN_HEIGHT),
        (obs, _RESULT, _double(height_text)),
        (obs, _RESULT_TIME, Literal(time, datatype=XSD.dateTime, normalize=False)),
        (obs, SAMPLE_TYPE, SAMPLE_TYPES[sample_type]),
    ]


def map_station(
    path: str | Path, *, start: datetime | None = None, end: datetime | None = None
) -> tuple[URIRef, list[Frame], MappingReport]:
    """Map one raw DART file to its frames in time order, one per sample time with
    ``start <= time < end``; every row not mapped is a rejection in the report (module doc)."""
    path = Path(path)
    station = station_id(path)
    if not path.is_file():
        raise InputError(f"{path}: no such DART file")
    start, end = _utc(start), _utc(end)
    report = MappingReport(str(path))

    def reject(line: int, reason: str, text: str) -> None:
        report.rejected.append(Rejection(str(path), line, reason, 1, text))

    rows: dict[datetime, list[tuple[int, int, str, str]]] = {}  # time -> (type, line, height, text)
    with open_text(path, "DART") as handle:
        for line, text in enumerate(handle, start=1):
            row = text.rstrip("\r\n")
            fields = row.split()
            if not fields or fields[0].startswith("#"):
                continue
            report.rows_read += 1
            try:
                moment, sample_type, height = _parse(fields)
            except ValueError as exc:
                reject(line, f"malformed row: {exc}; row skipped", row)
                continue
            if (start is not None and moment < start) or (end is not None and moment >= end):
                continue
            report.rows_in_range += 1
            if height == MISSING:
                reject(
                    line,
                    f"missing value {fields[7]} (sample type {sample_type}); no observation",
                    row,
                )
                continue
            rows.setdefault(moment, []).append((sample_type, line, fields[7], row))

    kept: dict[datetime, tuple[int, int, str, str]] = {}
    for moment, candidates in rows.items():
        winner = kept[moment] = max(candidates, key=lambda c: (c[0], -c[1]))  # finest, then first
        for _type, line, _height, row in candidates:
            if line != winner[1]:
                reject(
                    line,
                    f"superseded by line {winner[1]} (type {winner[0]}, value {winner[2]})",
                    row,
                )

    frames = []
    for moment in sorted(kept):
        sample_type, _, height_text, _ = kept[moment]
        iri = URIRef(frame_iri(station, moment))
        frames.append(Frame(iri, moment, observation(station, moment, sample_type, height_text)))
    report.rejected.sort(key=lambda r: -1 if r.line is None else r.line)
    report.frames = len(frames)
    return URIRef(stream_iri(station)), frames, report


def write_station_trig(
    path: str | Path,
    out_path: str | Path,
    *,
    stream: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> MappingReport:
    """``map_station`` written as a TriG stream file (what the landing directory loads);
    ``stream``: the stream whose landing directory holds the file (another station's file
    there is an error, not a silent mix-up)."""
    if stream is not None and stream != stream_iri(station_id(path)):
        raise InputError(
            f"{path}: a file of DART {station_id(path)} in the landing directory of <{stream}>; "
            f"it belongs to <{stream_iri(station_id(path))}>"
        )
    stream_iri_, frames, report = map_station(path, start=start, end=end)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    write_trig(stream_iri_, frames, out_path)
    return report


def stations(path: str | Path | None = None) -> dict[str, Station]:
    """{station id: (label, lat, lon, platform IRI, sensor IRI)} from ``ontology/dart-stations.ttl``
    (or ``path``): every ``sosa:Sensor`` ``urn:rsp:dart:NNNNN/bpr`` hosted by a platform with
    ``rdfs:label``, ``geo:lat`` and ``geo:long`` (decimal degrees, east positive)."""
    from rdflib import RDFS

    path = Path(path) if path is not None else stations_path()
    if not path.is_file():
        raise InputError(f"{path}: DART station file not found")
    graph = Graph()
    graph.parse(path, format="turtle")
    found = {}
    sensors = (s for s in graph.subjects(RDF.type, SOSA.Sensor) if isinstance(s, URIRef))
    for sensor in sorted(sensors):  # a blank node would not match the sensor IRI pattern
        match = _SENSOR.fullmatch(str(sensor))
        if not match:
            continue
        platform = graph.value(sensor, SOSA.isHostedBy)
        values = {
            name: graph.value(platform, prop) if platform is not None else None
            for name, prop in (
                ("rdfs:label", RDFS.label),
                ("geo:lat", GEO.lat),
                ("geo:long", GEO.long),
            )
        }
        lacking = [name for name, value in values.items() if value is None]
        if platform is None or lacking:
            raise InputError(
                f"{path}: sensor <{sensor}> needs sosa:isHostedBy a platform with "
                f"{', '.join(lacking or ['rdfs:label', 'geo:lat', 'geo:long'])}"
            )
        lat, lon = values["geo:lat"], values["geo:long"]
        if not isinstance(platform, URIRef):
            raise InputError(f"{path}: sensor <{sensor}> is hosted by {platform.n3()}, not an IRI")
        if not isinstance(lat, Literal) or not isinstance(lon, Literal):
            raise InputError(
                f"{path}: platform <{platform}> has a geo:lat or geo:long that is no number"
            )
        found[match.group(1)] = Station(
            str(values["rdfs:label"]), float(lat), float(lon), platform, sensor
        )
    return found
