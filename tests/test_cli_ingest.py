"""`rsp ingest` as a user runs it: a declared stream's files into the lake and the store (then
`rsp query` and `rsp quarantine` show them) or into its landing folder (written under a name the
ingest ignores, then renamed), with errors naming the file, the line or the declared streams.
Landing folders exist as soon as their stream is declared."""
from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from rsp_jobs.cli import main
from rsp_jobs.orchestrate import registry

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ingest"
ROOMS = "http://example.org/streams/rooms"
CATALOG = f"""
[streams.rooms]
iri = "{ROOMS}"
format = "csv"

[streams.rooms.mapping]
subject = "http://example.org/sensor/{{sensor}}"
time = "time"

[streams.rooms.mapping.properties]
temperature = {{ predicate = "http://example.org/ns#temperature", datatype = "xsd:double" }}
humidity = {{ predicate = "http://example.org/ns#humidity", datatype = "xsd:integer" }}
room = "http://example.org/ns#room"

[streams.plain]
iri = "http://example.org/streams/plain"
"""


@pytest.fixture
def catalog(home, tmp_path, monkeypatch) -> Path:
    """A queries folder of its own: the catalog above and no registered query to compile."""
    queries = tmp_path / "queries"
    queries.mkdir()
    (queries / "streams.toml").write_text(CATALOG, encoding="utf-8")
    monkeypatch.setenv("RSP_QUERIES_DIR", str(queries))
    return queries


def ingest(*args) -> int:
    return main(["ingest", *map(str, args)])


def test_every_declared_stream_has_its_landing_folder_once_the_catalog_is_read(catalog, home):
    assert not (home / "landing").exists()
    configs = registry.streams()
    for key in ("rooms", "plain"):
        folder = home / "landing" / key
        assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {c.key: c.landing_dir for c in configs.values()} == {
        "rooms": home / "landing" / "rooms", "plain": home / "landing" / "plain"}


@pytest.mark.airflow  # imports Airflow to build the DAGs
def test_the_dag_file_makes_the_landing_folders_of_the_streams_it_reads(catalog, home):
    from rsp_jobs.orchestrate.dag_factory import build

    dags, errors = build()
    assert {"ingest_rooms", "ingest_plain"} <= set(dags) and not errors
    assert sorted(p.name for p in (home / "landing").iterdir()) == ["plain", "rooms"]


def test_an_undeclared_stream_is_refused_listing_the_declared_ones(catalog, home, capsys):
    assert ingest("--stream", "kitchen", FIXTURES / "rooms.csv") == 2
    err = capsys.readouterr().err
    assert f"kitchen: not a stream declared in {catalog / 'streams.toml'}" in err
    assert f"  rooms  <{ROOMS}>\n  plain  <http://example.org/streams/plain>" in err
    assert (home / "landing" / "rooms").is_dir()  # the CLI read the catalog


@pytest.mark.parametrize("args, message", [
    (["--stream", "plain", FIXTURES / "rooms.csv"], "rooms.csv: cannot tell its format from its name; give --format"),
    (["--stream", "plain", "--format", "csv", FIXTURES / "rooms.csv"],
     "rooms.csv: a CSV file needs a mapping: declare [streams.plain.mapping] in"),
    (["--stream", "rooms", "--format", "trig", FIXTURES / "rooms.csv"], "rooms.csv: a trig file's name ends in .trig"),
    (["--stream", "rooms", FIXTURES / "absent.csv"], "absent.csv: no such file"),
    (["--stream", "plain", "--mapping", FIXTURES / "rooms.csv", FIXTURES / "rooms.csv"], "rooms.csv: Expected"),
])
def test_input_that_cannot_be_ingested_is_refused_naming_the_file(catalog, args, message, capsys):
    assert ingest(*args) == 2
    assert message in capsys.readouterr().err


def test_to_landing_puts_the_raw_csv_in_the_folder_under_a_temporary_name_then_renames_it(
        catalog, home, capsys, monkeypatch):
    from rsp_jobs.orchestrate import ingest as landing

    written = []
    copy = shutil.copyfile
    monkeypatch.setattr(landing.shutil, "copyfile", lambda src, dst: written.append(Path(dst).name) or copy(src, dst))
    folder = home / "landing" / "rooms"
    assert ingest("--stream", "rooms", "--to", "landing", FIXTURES / "rooms.csv") == 0
    assert ingest("--stream", ROOMS, "--to", "landing", FIXTURES / "rooms.csv") == 0  # not loaded yet: kept
    assert written == [".rooms.csv.part", ".rooms.1.csv.part"]  # names the ingest never takes
    assert sorted(p.name for p in folder.iterdir() if p.is_file()) == ["rooms.1.csv", "rooms.csv"]
    assert (folder / "rooms.csv").read_bytes() == (FIXTURES / "rooms.csv").read_bytes()
    out = capsys.readouterr().out
    assert f"rooms.csv (csv): 3 frames mapped, landed as {folder / 'rooms.csv'}" in out
    assert "2 row(s) rejected (the ingest DAG quarantines them):" in out
    assert f"{FIXTURES / 'rooms.csv'}:5: temperature: not an xsd:double: 'warm'; row skipped" in out


def test_to_landing_with_a_mapping_file_lands_the_mapped_trig(catalog, home, capsys):
    folder = home / "landing" / "plain"
    assert ingest("--stream", "plain", "--to", "landing", "--mapping", FIXTURES / "rooms.toml",
                  FIXTURES / "rooms.csv") == 0
    (landed,) = [p for p in folder.iterdir() if p.is_file()]
    assert landed.name == "rooms.trig"
    text = landed.read_text(encoding="utf-8")
    assert text.count("<http://www.w3.org/ns/prov#generatedAtTime>") == 3
    assert "<http://example.org/streams/plain/frame/2024-03-01T10:01:00Z> {" in text
    assert "not in the deployment's quarantine" in capsys.readouterr().out


@pytest.mark.gx  # every file loaded passes the input quality gate
def test_to_lake_loads_the_frames_query_finds_them_and_the_rejected_rows_are_quarantined(catalog, home, capsys):
    source = FIXTURES / "rooms.csv"
    assert ingest("--stream", "rooms", source) == 0
    out = capsys.readouterr().out
    assert f"{source} (csv): 3 frames, 14 triples accepted, 2 quarantined; watermark 2024-03-01T10:01:00+00:00" in out
    assert f"see them with `rsp quarantine --stream {ROOMS}`" in out
    assert source.is_file()  # loaded from where it is, left there

    assert main(["query", "SELECT ?sensor ?temperature WHERE { GRAPH ?f[LAST] { "
                          "?sensor <http://example.org/ns#temperature> ?temperature } }"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]["bindings"]
    assert sorted((r["sensor"]["value"], r["temperature"]["value"]) for r in rows) == [
        ("http://example.org/sensor/t1", "23.5"), ("http://example.org/sensor/t2", "19.5")]

    assert main(["quarantine", "--stream", ROOMS]) == 0
    listed = capsys.readouterr().out
    assert f"{source}:5  1 triple(s): temperature: not an xsd:double: 'warm'; row skipped" in listed
    assert f"{source}:8  1 triple(s): time: bad time 'yesterday'" in listed

    assert ingest("--stream", "rooms", source) == 0
    assert "skipped, loaded before (same content)" in capsys.readouterr().out


@pytest.mark.gx
def test_what_lands_is_loaded_by_the_ingest_dag_with_its_rows_quarantined(catalog, home):
    from rsp_jobs.orchestrate.ingest import ingest_landing

    assert ingest("--stream", "rooms", "--to", "landing", FIXTURES / "rooms.csv") == 0
    (report,) = ingest_landing(ROOMS).files  # what the ingest DAG's task does
    assert (report.status, report.frames, report.triples, report.quarantined) == ("loaded", 3, 14, 2)


def real_catalog(queries: Path) -> None:
    """The repository's streams, without the background (parsing it takes seconds)."""
    text = (Path(__file__).resolve().parent.parent / "queries" / "streams.toml").read_text(encoding="utf-8")
    (queries / "streams.toml").write_text(text.split("\n[background]")[0], encoding="utf-8")


@pytest.mark.gx
def test_citybench_files_of_two_sensors_load_into_the_traffic_stream(catalog, data_dir, tmp_path, capsys):
    real_catalog(catalog)
    files = []
    for sensor in ("158505", "158324"):  # the first hour of each (a header and 12 rows)
        lines = (data_dir / "citybench" / "streams" / f"AarhusTrafficData{sensor}.stream").read_text().splitlines()
        files.append(tmp_path / f"AarhusTrafficData{sensor}.stream")
        files[-1].write_text("\n".join(lines[:13]) + "\n")
    assert ingest("--stream", "aarhus_traffic", *files) == 0
    out = capsys.readouterr().out.splitlines()
    # each row: 5 observations of 4 triples; the second sensor's frames merge into the first's
    assert out[0] == f"{files[0]} (citybench): 12 frames, 240 triples accepted, 0 quarantined; watermark 2014-08-01T08:45:00+00:00"
    assert out[1].startswith(f"{files[1]} (citybench): 12 frames, 240 triples accepted, 0 quarantined")
    assert main(["query", "SELECT ?obs WHERE { GRAPH ?f[LAST] { ?obs a <http://purl.oclc.org/NET/ssnx/ssn#Observation> } }"]) == 0
    assert len(json.loads(capsys.readouterr().out)["results"]["bindings"]) == 10  # both sensors' 5


@pytest.mark.gx
def test_a_dart_slice_loads_with_its_missing_and_superseded_rows_quarantined(catalog, data_dir, tmp_path, capsys):
    real_catalog(catalog)
    lines = (data_dir / "dart" / "21418.txt").read_text().splitlines()
    raw = tmp_path / "21418-slice.txt"
    raw.write_text("\n".join(lines[:140]) + "\n")
    assert ingest("--stream", "dart_21418", raw) == 0
    from rsp_jobs.ingest import dart

    _, frames, report = dart.map_station(raw)
    out = capsys.readouterr().out
    assert (f"{raw} (dart): {len(frames)} frames, {6 * len(frames)} triples accepted, "
            f"{len(report.rejected)} quarantined") in out
    assert report.rejected and any("missing value" in r.reason for r in report.rejected)


def test_a_dart_file_lands_raw_for_the_landing_folder_to_map(catalog, data_dir, home, capsys):
    real_catalog(catalog)
    assert ingest("--stream", "urn:rsp:stream:dart/21418", "--to", "landing", data_dir / "dart" / "21418.txt") == 0
    assert (home / "landing" / "dart_21418" / "21418.txt").read_bytes() == (data_dir / "dart" / "21418.txt").read_bytes()
    assert "(the ingest DAG quarantines them)" in capsys.readouterr().out
    assert ingest("--stream", "dart_21401", "--to", "landing", data_dir / "dart" / "21418.txt") == 2
    assert "a file of DART 21418 in the landing directory of <urn:rsp:stream:dart/21401>" in capsys.readouterr().err


def test_the_readme_declares_the_stream_these_tests_and_the_mapping_file_declare():
    import re
    import tomllib

    from rsp_jobs.ingest.csv_mapping import load_mapping, parse_mapping

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Add your own stream"):]
    (block,) = re.findall(r"```toml\n(.*?)```", section[:section.index("\n## ", 5)], re.S)
    declared = tomllib.loads(block)["streams"]["rooms"]
    assert declared == tomllib.loads(CATALOG)["streams"]["rooms"]
    assert parse_mapping(declared["mapping"], "README") == load_mapping(FIXTURES / "rooms.toml")


NQ = """<http://example.org/f/1> <http://www.w3.org/ns/prov#generatedAtTime> "2024-03-01T10:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .
<http://example.org/sensor/t1> <http://example.org/ns#temperature> "21.5" <http://example.org/f/1> .
not a quad
"""


def test_a_stream_file_lands_as_it_is(catalog, home, tmp_path):
    (tmp_path / "readings.nq").write_text(NQ)
    assert ingest("--stream", "plain", "--to", "landing", tmp_path / "readings.nq") == 0
    assert (home / "landing" / "plain" / "readings.nq").read_text() == NQ


@pytest.mark.gx
def test_a_stream_file_loads_as_it_is_with_its_malformed_line_quarantined(catalog, home, tmp_path, capsys):
    (tmp_path / "readings.nq").write_text(NQ)
    assert ingest("--stream", "plain", tmp_path / "readings.nq") == 0
    assert f"{tmp_path / 'readings.nq'} (nquads): 1 frames, 1 triples accepted, 1 quarantined" in capsys.readouterr().out
