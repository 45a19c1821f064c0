"""DART raw files -> SOSA frames, on the real NDBC files: counts, values and rejected lines checked
against a plain count written here from ../shared/data/dart/README.md; the observation triples
read back with rdflib; malformed rows named by file:line; and a raw file dropped in the dart
landing directory loaded into a SQLite store with its rejections quarantined."""
from __future__ import annotations

import math
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from rdflib import Dataset, Graph, Literal, URIRef
from sqlalchemy import select

from rsp_jobs.errors import InputError
from rsp_jobs.ingest import dart
from rsp_jobs.orchestrate import registry
from rsp_jobs.store.provenance import file_checksum

pytestmark = [
    # rdflib 7.6's own TriG parser still uses these
    pytest.mark.filterwarnings("ignore:Dataset.default_context is deprecated"),
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated"),
]

SOSA = "http://www.w3.org/ns/sosa/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDF_TYPE = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
GENERATED_AT = URIRef("http://www.w3.org/ns/prov#generatedAtTime")
TYPE_NAMES = {1: "FifteenMinute", 2: "OneMinute", 3: "FifteenSecond"}  # README: T 1 15-min, 2 1-min, 3 15-s


@dataclass
class Reference:
    """What a file holds by the README, counted without the module: rows are the non-# lines."""

    rows: int = 0
    malformed: set[int] = field(default_factory=set)
    missing: set[int] = field(default_factory=set)
    superseded: dict[int, int] = field(default_factory=dict)  # line -> the line kept instead
    kept: dict[datetime, tuple[int, int, str]] = field(default_factory=dict)  # time -> (line, type, height)
    duplicate_times: int = 0

    @property
    def rejected_lines(self) -> set[int]:
        return self.malformed | self.missing | set(self.superseded)


def reference(path: Path) -> Reference:
    ref = Reference()
    valid = defaultdict(list)
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip() or text.startswith("#"):
            continue
        ref.rows += 1
        parts = text.split()
        try:
            if len(parts) != 8 or int(parts[6]) not in TYPE_NAMES or len(parts[0]) != 4:
                raise ValueError(text)
            time = datetime(*(int(p) for p in parts[:6]), tzinfo=timezone.utc)
            if not math.isfinite(float(parts[7])):
                raise ValueError(text)
        except ValueError:
            ref.malformed.add(number)
            continue
        if parts[7] == "9999.000":
            ref.missing.add(number)
        else:
            valid[time].append((-int(parts[6]), number, parts[7]))  # finest type first, then first line
    for time, rows in valid.items():
        rows.sort()
        (neg_type, line, height), *others = rows
        ref.kept[time] = (line, -neg_type, height)
        ref.superseded.update({other[1]: line for other in others})
        ref.duplicate_times += bool(others)
    return ref


def lexical(time: datetime) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ")


def rejections_by_line(report) -> dict[int, str]:
    lines = [r.line for r in report.rejected]
    assert len(lines) == len(set(lines)), "a row rejected twice"
    return {r.line: r.reason for r in report.rejected}


@pytest.mark.parametrize("station", ["21418", "21401"])
def test_real_station_matches_a_plain_count_of_its_rows(data_dir, station):
    path = data_dir / "dart" / f"{station}.txt"
    ref = reference(path)
    assert ref.missing and ref.superseded and ref.duplicate_times  # the file exercises both rules

    stream, frames, report = dart.map_station(path)
    assert stream == URIRef(dart.stream_iri(station))
    assert report.rows_read == ref.rows == report.rows_in_range
    assert report.rows_read == len(frames) + len(report.rejected)
    assert len(frames) == report.frames == len(ref.kept)
    reasons = rejections_by_line(report)
    assert set(reasons) == ref.rejected_lines
    assert ref.malformed == set()
    assert {n for n, r in reasons.items() if r.startswith("missing value 9999.000")} == ref.missing
    for line, winner in ref.superseded.items():
        w_line, w_type, w_height = next(k for k in ref.kept.values() if k[0] == winner)
        assert reasons[line] == f"superseded by line {w_line} (type {w_type}, value {w_height})"
    assert all(str(r).startswith(f"{path}:{r.line}: ") for r in report.rejected)

    times = [f.timestamp for f in frames]
    assert times == sorted(ref.kept) and len(set(times)) == len(times)  # time order, one per time
    for frame in frames:
        line, sample_type, height = ref.kept[frame.timestamp]
        assert frame.iri == URIRef(f"urn:rsp:stream:dart/{station}/frame/{lexical(frame.timestamp)}")
        values = {p: o for _, p, o in frame.triples}
        assert len(frame.triples) == len(values) == 6
        assert values[URIRef(SOSA + "hasSimpleResult")].toPython() == float(height)
        assert values[URIRef("urn:rsp:ns:dart/sampleType")] == URIRef(f"urn:rsp:ns:dart/{TYPE_NAMES[sample_type]}")


def test_one_known_row_reads_back_as_exactly_its_sosa_triples(data_dir, tmp_path):
    path = data_dir / "dart" / "21418.txt"
    ref = reference(path)
    text = path.read_text(encoding="utf-8").splitlines()
    # a time sent twice whose coarser sample has another value: the finer one must be the result
    time = next(t for t, (line, sample_type, height) in sorted(ref.kept.items())
                if any(w == line and text[n - 1].split()[7] != height for n, w in ref.superseded.items()))
    line, sample_type, height = ref.kept[time]
    start, end = time - timedelta(minutes=30), time + timedelta(minutes=30)
    out = tmp_path / "slice.trig"
    report = dart.write_station_trig(path, out, start=start.replace(tzinfo=None), end=end)

    in_range = {t for t in ref.kept if start <= t < end}
    dataset = Dataset()
    dataset.parse(out, format="trig")
    named = {g.identifier: g for g in dataset.graphs() if g.identifier != dataset.default_graph.identifier}
    assert len(named) == report.frames == len(in_range)
    assert report.rows_in_range == len(in_range) + len(report.rejected) < report.rows_read

    t = lexical(time)
    frame = URIRef(f"urn:rsp:stream:dart/21418/frame/{t}")
    obs = URIRef(f"urn:rsp:dart:21418/obs/{t}")
    expected = {
        (obs, RDF_TYPE, URIRef(SOSA + "Observation")),
        (obs, URIRef(SOSA + "madeBySensor"), URIRef("urn:rsp:dart:21418/bpr")),
        (obs, URIRef(SOSA + "observedProperty"), URIRef("urn:rsp:ns:dart/WaterColumnHeight")),
        (obs, URIRef(SOSA + "hasSimpleResult"), Literal(repr(float(height)), datatype=URIRef(XSD + "double"))),
        (obs, URIRef(SOSA + "resultTime"), Literal(t, datatype=URIRef(XSD + "dateTime"))),
        (obs, URIRef("urn:rsp:ns:dart/sampleType"), URIRef(f"urn:rsp:ns:dart/{TYPE_NAMES[sample_type]}")),
    }
    assert set(named[frame]) == expected
    assert set(dataset.default_graph.objects(frame, GENERATED_AT)) == {
        Literal(t, datatype=URIRef(XSD + "dateTime"))}


BAD_FILE = """\
#YY  MM DD hh mm ss T   HEIGHT
#yr  mo dy hr mn  s -        m
2011 03 11 05 00 00 1 5662.233
2011 03 11 05 01 00 2
2011 03 11 05 02 00 2 56x2.250
2011 02 30 05 03 00 2 5662.251
2011 03 11 05 04 00 5 5662.253
2011 03 11 05 05 00 2 nan
2011 03 11 05 00 00 2 9999.000

2011 03 11 05 00 00 3 5662.240
11 03 11 05 06 00 2 5662.100
"""


def test_malformed_rows_are_rejected_naming_file_and_line(tmp_path):
    path = tmp_path / "21418.txt"
    path.write_text(BAD_FILE, encoding="utf-8")
    stream, frames, report = dart.map_station(path)
    expected = {3: "superseded by line 11 (type 3, value 5662.240)",
                4: "expected 8 fields", 5: "height: not a number: '56x2.250'",
                6: "impossible date or time", 7: "sample type must be 1, 2 or 3",
                8: "height: not a number: 'nan'", 9: "missing value 9999.000 (sample type 2)",
                12: "year: expected 4 digits"}
    assert {r.line for r in report.rejected} == set(expected)
    for rejection in report.rejected:
        assert str(rejection).startswith(f"{path}:{rejection.line}: ")
        assert expected[rejection.line] in rejection.reason
    assert report.rows_read == 9 == len(frames) + len(report.rejected)
    (frame,) = frames  # the 15-second value wins over the 15-minute one; the missing 1-minute one hides nothing
    assert frame.timestamp == datetime(2011, 3, 11, 5, tzinfo=timezone.utc)
    assert {str(o) for _, _, o in frame.triples} >= {"5662.24", "urn:rsp:ns:dart/FifteenSecond"}


def test_station_comes_from_the_file_name_and_notide_files_are_refused(data_dir, tmp_path):
    with pytest.raises(InputError, match="21418_notide.txt.*not a DART stream"):
        dart.map_station(data_dir / "dart" / "21418_notide.txt")
    with pytest.raises(InputError, match="not a raw DART file name"):
        dart.map_station(tmp_path / "heights.txt")
    part = tmp_path / "21401-march.txt"
    part.write_text(BAD_FILE.splitlines()[2] + "\n", encoding="utf-8")
    _, (frame,), _ = dart.map_station(part)
    assert frame.iri == URIRef("urn:rsp:stream:dart/21401/frame/2011-03-11T05:00:00Z")


def test_stations_file_describes_every_station_of_the_data(data_dir):
    found = dart.stations()
    raw = {p.stem for p in (data_dir / "dart").glob("*.txt") if "_" not in p.stem}
    assert set(found) == raw
    graph = Graph().parse(dart.stations_path(), format="turtle")
    for station, (label, lat, lon, platform, sensor) in found.items():
        assert station in label and 0 < lat < 90 and 0 < lon < 180  # NW Pacific: north, east
        assert platform == URIRef(f"https://www.ndbc.noaa.gov/station_page.php?station={station}")
        assert sensor == URIRef(f"urn:rsp:dart:{station}/bpr")
        assert (sensor, URIRef(SOSA + "observes"), URIRef("urn:rsp:ns:dart/WaterColumnHeight")) in graph
        assert (platform, RDF_TYPE, URIRef(SOSA + "Platform")) in graph
        _, frames, _ = dart.map_station(data_dir / "dart" / f"{station}.txt")  # the sensor it names
        assert {o for f in frames for _, p, o in f.triples if p == URIRef(SOSA + "madeBySensor")} == {sensor}


def test_an_unknown_stream_format_is_refused_naming_the_catalog(tmp_path, monkeypatch):
    (tmp_path / "streams.toml").write_text('[streams.x]\niri = "urn:x"\nformat = "xml"\n', encoding="utf-8")
    monkeypatch.setenv("RSP_QUERIES_DIR", str(tmp_path))
    with pytest.raises(InputError, match=r"streams.toml: \[streams.x\].format: format must be one of citybench, csv, dart"):
        registry.streams()


@pytest.fixture
def dart_home(tmp_path, monkeypatch) -> Path:
    """A project home and SQLite store of its own, and the catalog's streams alone: no registered
    queries to compile (they do not change what an ingest loads into an empty store) and no
    background files (they type CityBench properties for the quality ranges; DART has none,
    and parsing SensorRepository.n3 takes seconds)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("RSP_HOME", str(home))
    monkeypatch.setenv("RSP_STORE_URL", f"sqlite:///{home / 'store.sqlite'}")
    catalog = tmp_path / "queries"
    catalog.mkdir()
    streams = registry.catalog_path().read_text(encoding="utf-8").split("\n[background]")[0]
    (catalog / "streams.toml").write_text(streams, encoding="utf-8")
    monkeypatch.setenv("RSP_QUERIES_DIR", str(catalog))
    return home


def test_a_raw_file_in_the_landing_directory_is_mapped_loaded_and_its_rejections_quarantined(
        data_dir, dart_home, tmp_path):
    from rsp_jobs.orchestrate.ingest import ingest_landing
    from rsp_jobs.store import db
    from rsp_jobs.store.models import ActivityUsed, Frame, IngestedFile, QuarantinedInput, Stream

    config = registry.stream_config(dart.stream_iri("21418"))
    assert (config.key, config.format) == ("dart_21418", "dart")
    # three hours around the earthquake (1-minute values, duplicates, missing values) and one bad row
    lines = (data_dir / "dart" / "21418.txt").read_text(encoding="utf-8").splitlines()
    rows = [t for t in lines[2:] if "2011 03 11 04" <= t[:13] < "2011 03 11 07"]
    assert config.landing_dir.is_dir()  # a declared stream's landing folder is there
    landed = config.landing_dir / "21418-quake.txt"
    landed.write_text("\n".join([*lines[:2], *rows, "2011 03 11 07 00 00 2 5662.x"]) + "\n", encoding="utf-8")
    ref = reference(landed)
    assert ref.missing and ref.superseded and len(ref.malformed) == 1
    checksum = file_checksum(landed)

    (report,) = ingest_landing(dart.stream_iri("21418")).files
    assert report.status == "loaded" and report.frames == len(ref.kept)
    assert report.triples == 6 * len(ref.kept) and report.quarantined == len(ref.rejected_lines)
    assert report.mapped == str(config.landing_dir / "mapped" / "21418-quake.trig")
    with db.engine().connect() as conn:
        stream_id = conn.scalar(select(Stream.id).where(Stream.iri == dart.stream_iri("21418")))
        stored = dict(conn.execute(select(Frame.frame_iri, Frame.triple_count).where(Frame.stream_id == stream_id)).all())
        quarantined = conn.execute(select(QuarantinedInput.source_file, QuarantinedInput.line, QuarantinedInput.reason)
                                   .where(QuarantinedInput.stream_id == stream_id)).all()
        ingested = conn.execute(select(IngestedFile.path, IngestedFile.checksum)).all()
        used = conn.execute(select(ActivityUsed.entity_iri, ActivityUsed.checksum)
                            .where(ActivityUsed.entity_kind == "lake_file")).all()
    assert stored == {f"urn:rsp:stream:dart/21418/frame/{lexical(t)}": 6 for t in ref.kept}
    assert {q.source_file for q in quarantined} == {str(landed)}
    assert sorted(q.line for q in quarantined) == sorted(ref.rejected_lines)
    (bad,) = [q for q in quarantined if q.line in ref.malformed]
    assert bad.reason.startswith("malformed row: height: not a number")
    assert ingested == [(str(landed), checksum)]
    assert (f"file://{landed}", checksum) in used  # the ingest used the raw file
    loaded = config.landing_dir / "loaded" / landed.name  # it left the landing directory
    assert not landed.exists() and file_checksum(loaded) == checksum

    shutil.copy(loaded, config.landing_dir / "again.txt")  # delivered again, under another name
    (again,) = ingest_landing(dart.stream_iri("21418")).files  # by the raw file's checksum
    assert again.status == "skipped"


def test_a_file_of_another_station_in_a_landing_directory_is_refused(data_dir, dart_home):
    from rsp_jobs.orchestrate.ingest import ingest_landing

    config = registry.stream_config(dart.stream_iri("21418"))
    assert config.landing_dir.is_dir()  # a declared stream's landing folder is there
    head = (data_dir / "dart" / "21401.txt").read_text(encoding="utf-8").splitlines()[:20]
    (config.landing_dir / "21401.txt").write_text("\n".join(head) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"a file of DART 21401 in the landing directory of <urn:rsp:stream:dart/21418>"):
        ingest_landing(dart.stream_iri("21418"))
