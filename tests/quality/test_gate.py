"""The quality gate, with real Great Expectations runs on real CityBench batches: good batches
pass; a batch that breaks one expectation fails exactly that one, the error names it, the whole
batch is quarantined (rows = accepted + quarantined) and the check is in the store and in the
Data Docs; output batches are checked against their query's schedule."""
from __future__ import annotations

import shutil
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select

from rsp_jobs.ingest.citybench import map_stream, sensor_repository_path, write_nquads
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.quality import (QualityGateError, check_input_batch, check_output_batch, lake_rows,
                              require)
from rsp_jobs.quality.ranges import load_ranges, range_column
from rsp_jobs.settings import data_dir
from rsp_jobs.store import db
from rsp_jobs.store.models import Activity, QualityResult, QuarantinedInput
from tests.store.conftest import empty_store_url, pg_admin, store, store_url  # noqa: F401 (fixtures)

STREAMS = data_dir() / "citybench" / "streams"
pytestmark = [
    pytest.mark.data,
    pytest.mark.gx,
    pytest.mark.skipif(not STREAMS.is_dir(), reason=f"CityBench data not found at {STREAMS} (set RSP_DATA_DIR)"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # GX 1.x and rdflib's parsers
]

UTC = timezone.utc
START = datetime(2014, 8, 1, 8, tzinfo=UTC)
END = START + timedelta(hours=1)
HAS_VALUE = "<http://purl.oclc.org/NET/sao/hasValue>"
RANGE = "expect_column_values_to_be_between(o_num where range_property == urn:rsp:quality:{})"


def citybench(name: str, tmp: Path, start: datetime = START, end: datetime = END):
    """A real CityBench stream slice as the ingest path reads it: mapped, written as N-Quads,
    read back; returns (stream IRI, source file, lake rows)."""
    iri, frames, _ = map_stream(STREAMS / f"{name}.stream", start=start, end=end)
    path = write_nquads(iri, frames, tmp / f"{name}.nq")
    batch = read_stream_file(path, str(iri))
    return batch.stream, batch.source, lake_rows(batch.elements)


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory, request):
    with empty_store_url("sqlite", tmp_path_factory.mktemp("store"), request) as url:
        db.upgrade(url)
        yield db.engine(url)


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    """One hour of road segment 158505: 12 frames of 5 observations."""
    return citybench("AarhusTrafficData158505", tmp_path_factory.mktemp("traffic"))


def check(rows: pd.DataFrame, stream: str, source: str, batch_id: str, engine=None, **kwargs):
    return check_input_batch(rows, stream=stream, source=source, interval=(START, END), engine=engine,
                             batch_id=batch_id, background=[sensor_repository_path()], **kwargs)


def frames_of(rows: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(rows["frame"]))


def in_frame(rows: pd.DataFrame, index: int) -> pd.Series:
    return rows["frame"] == frames_of(rows)[index]


def malformed_term(rows):
    rows.loc[rows.index[0], "s"] = "<http://example.org/a space>"


def ts_outside_interval(rows):
    rows.loc[in_frame(rows, -1), "ts"] = END  # the interval is [START, END)


def decreasing_frame_times(rows):
    first, second = (rows.loc[in_frame(rows, i), "ts"].iloc[0] for i in (0, 1))
    rows.loc[in_frame(rows, 0), "ts"], rows.loc[in_frame(rows, 1), "ts"] = second, first


def two_frames_at_one_time(rows):
    rows.loc[in_frame(rows, 1), "ts"] = rows.loc[in_frame(rows, 0), "ts"].iloc[0]


def one_frame_at_two_times(rows):
    rows.loc[in_frame(rows, 1), "frame"] = frames_of(rows)[0]


def out_of_range_speed(rows):
    speed = rows.index[(rows["p"] == HAS_VALUE) & rows["s"].str.endswith("/AvgSpeed>")][0]
    rows.loc[speed, ["o", "o_num"]] = ['"999.0"^^<http://www.w3.org/2001/XMLSchema#double>', 999.0]


def null_object(rows):
    rows.loc[rows.index[0], "o"] = None


BREAKS = {  # how a batch is broken: (the one expectation that must fail, a value its error shows)
    malformed_term: ("expect_column_values_to_match_regex(s)", "a space"),
    ts_outside_interval: ("expect_column_values_to_be_between(ts)", "2014-08-01T09:00:00+00:00"),
    decreasing_frame_times: ("expect_column_values_to_be_increasing(ts where frame_head)", "2014-08-01T08:00:00+00:00"),
    two_frames_at_one_time: ("expect_compound_columns_to_be_unique(stream, ts where frame_head)",
                             "ts=2014-08-01T08:00:00+00:00"),
    one_frame_at_two_times: ("expect_column_values_to_be_unique(frame where frame_head)", "frame/2014-08-01T08:00:00Z"),
    out_of_range_speed: (RANGE.format("AvgSpeed"), "999.0"),
    null_object: ("expect_column_values_to_not_be_null(o)", "1 of 240 unexpected"),
}


def stored(engine, activity_iri: str):
    """(activity, quality results, quarantined rows) of one check."""
    with engine.connect() as conn:
        activity = conn.execute(select(Activity).where(Activity.iri == activity_iri)).one()
        results = conn.execute(select(QualityResult).where(QualityResult.activity_id == activity.id)).all()
        quarantined = conn.execute(select(QuarantinedInput)
                                   .where(QuarantinedInput.activity_id == activity.id)).all()
    return activity, results, quarantined


def validation_pages(docs: Path, run_name: str) -> list[Path]:
    """The Data Docs pages of the runs named ``run_name``, which the index must list too."""
    pages = list((docs.parent / "validations").glob(f"*/{run_name}/**/*.html"))
    return pages if f"'run_name': '{run_name}'" in docs.read_text() else []


def test_ranges_are_declared_for_every_reading_citybench_emits():
    ranges = {r.shape.rsplit(":", 1)[1]: r for r in load_ranges()}
    assert set(ranges) == {"AvgSpeed", "VehicleCount", "MeasureTime", "EstimatedTime", "CongestionLevel",
                           "AirQualityIndex", "ParkingVacancy", "Temperature", "Humidity", "WindSpeed",
                           "Latitude", "Longitude"}
    speed = ranges["AvgSpeed"]
    assert (speed.path, speed.observed, speed.minimum, speed.maximum) == (
        HAS_VALUE, "<http://www.insight-centre.org/citytraffic#AvgSpeed>", 0, 300)
    assert ranges["EstimatedTime"].undefined == -1 and ranges["VehicleCount"].maximum is None
    assert ranges["Latitude"].observed is None  # a plain predicate: every ct:hasLatitude value


def test_a_range_applies_to_observations_of_its_property_class_in_the_same_frame(tmp_path):
    background = tmp_path / "sensors.ttl"
    background.write_text("<urn:x:speed-1> a <http://www.insight-centre.org/citytraffic#AvgSpeed> .\n")
    observed = "<http://purl.oclc.org/NET/ssnx/ssn#observedProperty>"
    latitude = "<http://www.insight-centre.org/citytraffic#hasLatitude>"
    rows = pd.DataFrame([("f1", "<o>", observed, "<urn:x:speed-1>"), ("f1", "<o>", HAS_VALUE, '"1"'),
                         ("f2", "<o>", HAS_VALUE, '"2"'),  # no observed property in this frame
                         ("f2", "<p>", latitude, '"3"'),
                         ("f1", "<q>", observed, "<urn:x:untyped>"), ("f1", "<q>", HAS_VALUE, '"4"')],
                        columns=["frame", "s", "p", "o"])
    column = range_column(rows, load_ranges(), [background])
    assert column.tolist() == [None, "urn:rsp:quality:AvgSpeed", None, "urn:rsp:quality:Latitude", None, None]


@pytest.mark.parametrize("name, checked", [
    ("AarhusTrafficData158505", ("AvgSpeed", "VehicleCount", "MeasureTime", "EstimatedTime", "CongestionLevel")),
    ("AarhusWeatherData0", ("Temperature", "Humidity", "WindSpeed")),
    ("AarhusPollutionData158505", ("AirQualityIndex",)),
    ("UserLocationService", ("Latitude", "Longitude")),
])
def test_a_good_citybench_batch_passes_with_its_readings_range_checked(name, checked, tmp_path, sqlite_store):
    stream, source, rows = citybench(name, tmp_path)
    outcome = require(check(rows, stream, source, f"good-{name}", sqlite_store))
    assert (outcome.rows, outcome.accepted_rows, outcome.quarantined_rows) == (len(rows), len(rows), 0)
    ranges = {c.label: c.element_count for c in outcome.expectations if "range_property" in c.label}
    assert set(ranges) == {RANGE.format(r) for r in checked} and all(ranges.values())
    activity, results, quarantined = stored(sqlite_store, outcome.activity)
    assert (activity.kind, activity.status, activity.window_open, activity.window_close) == (
        "quality_check", "success", START, END)
    assert len(results) == len(outcome.expectations) and all(r.success for r in results)
    assert not quarantined
    # listed under the file it came from (the batch id is the store's: key and checksum)
    assert outcome.docs.is_file() and validation_pages(outcome.docs, Path(source).name)


@pytest.mark.parametrize("breaks", BREAKS, ids=lambda f: f.__name__)
def test_a_batch_that_breaks_one_expectation_fails_it_and_is_quarantined_whole(breaks, traffic, sqlite_store):
    stream, source, good = traffic
    rows = good.copy()
    breaks(rows)
    expectation, example = BREAKS[breaks]
    batch_id = f"broken-{breaks.__name__}"
    outcome = check(rows, stream, source, batch_id, sqlite_store)

    assert [c.label for c in outcome.failed] == [expectation]
    with pytest.raises(QualityGateError) as error:
        require(outcome)
    assert expectation in str(error.value) and example in str(error.value) and batch_id in str(error.value)
    assert (outcome.rows, outcome.accepted_rows, outcome.quarantined_rows) == (240, 0, 240)

    activity, results, quarantined = stored(sqlite_store, outcome.activity)
    assert activity.status == "failed"
    assert sorted((r.expectation, r.success) for r in results) == sorted(
        (c.label, c.success) for c in outcome.expectations)
    assert sum(q.triples for q in quarantined) == len(rows)
    assert {q.source_file for q in quarantined} == {source} and expectation in quarantined[0].reason
    assert validation_pages(outcome.docs, Path(source).name)


def test_a_missing_column_fails_its_existence_and_every_check_that_reads_it(traffic):
    stream, source, good = traffic
    outcome = check(good.drop(columns="frame"), stream, source, "missing-frame")
    assert outcome.failed[0].label == "expect_column_to_exist(frame)"
    assert all("frame" in c.label for c in outcome.failed)
    assert outcome.accepted_rows + outcome.quarantined_rows == outcome.rows == 240
    with pytest.raises(QualityGateError, match=r"expect_column_to_exist\(frame\)"):
        require(outcome)


def test_real_parking_data_with_more_cars_than_spaces_fails_the_vacancy_range(tmp_path):
    """BUSGADEHUSET reports 144 cars in its 130 spaces at 2014-05-22 10:40:24.706."""
    start = datetime(2014, 5, 22, 9, tzinfo=UTC)
    stream, source, rows = citybench("AarhusParkingDataBUSGADEHUSET", tmp_path, start, start + timedelta(hours=2))
    outcome = check_input_batch(rows, stream=stream, source=source, batch_id="parking", interval=None,
                                background=[sensor_repository_path()])
    assert [(c.label, c.examples) for c in outcome.failed] == [(RANGE.format("ParkingVacancy"), ("-14.0",))]


def test_checks_are_recorded_on_both_backends_and_a_batch_that_passes_later_leaves_quarantine(store, traffic):
    stream, source, good = traffic
    broken = good.copy()
    out_of_range_speed(broken)
    failed = check(broken, stream, source, "fixed-later", store)
    assert sum(q.triples for q in stored(store, failed.activity)[2]) == len(broken)
    passed = check(good, stream, source, "fixed-later", store)
    assert passed.success and stored(store, failed.activity)[2] == []  # the batch is accepted now
    with store.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(QuarantinedInput)) == 0
        assert conn.scalar(select(func.count()).select_from(QualityResult)) == (
            len(failed.expectations) + len(passed.expectations))
        assert conn.execute(select(Activity.status).order_by(Activity.id)).scalars().all() == ["failed", "success"]


def renamed(source: str, folder: Path, name: str) -> str:
    """A copy of the file ``source`` named ``name``: a check is listed under its file's name."""
    folder.mkdir(parents=True, exist_ok=True)
    return shutil.copy(source, folder / name)


def test_concurrent_checks_under_one_home_share_one_data_docs_site(traffic, tmp_path):
    stream, source, rows = traffic
    outcomes = {}

    def run(name):
        outcomes[name] = check(rows, stream, renamed(source, tmp_path, name), f"batch-{name}")

    threads = [threading.Thread(target=run, args=(f"concurrent-{i}.nq",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(o.success for o in outcomes.values()) and len(outcomes) == 2
    (index,) = {o.docs for o in outcomes.values()}
    assert all(f"'run_name': '{name}'" in index.read_text() for name in outcomes)


# --- output batches ----------------------------------------------------------------------------

QUERY = "urn:rsp:query:congestion"
T0_US = int(START.timestamp() * 1_000_000)
RANGE_US, STEP_US = 15 * 60 * 1_000_000, 5 * 60 * 1_000_000
AFTER, UNTIL = START + timedelta(minutes=15), START + timedelta(hours=1)


def windows() -> pd.DataFrame:
    """The closes in (AFTER, UNTIL] of a 15-minute window sliding every 5 minutes from START."""
    closes = pd.date_range(AFTER + timedelta(minutes=5), UNTIL, freq="5min")
    return pd.DataFrame({"query_iri": QUERY, "window_open": closes - timedelta(minutes=15),
                         "window_close": closes, "row_count": range(len(closes))})


def check_windows(frame: pd.DataFrame, batch_id: str, engine=None):
    return check_output_batch(frame, query_iri=QUERY, first_close_us=T0_US + RANGE_US, step_us=STEP_US,
                              interval=(AFTER, UNTIL), engine=engine, batch_id=batch_id)


def off_schedule(w):
    w.loc[3, "window_close"] += timedelta(seconds=1)


def negative_count(w):
    w.loc[2, "row_count"] = -1


def duplicate_close(w):
    w.loc[4, "window_close"] = w.loc[3, "window_close"]


def close_outside_interval(w):
    w.loc[0, "window_close"] = AFTER  # the interval is (AFTER, UNTIL]


def test_windows_on_the_schedule_pass(sqlite_store):
    outcome = require(check_windows(windows(), "windows-good", sqlite_store))
    assert (outcome.rows, outcome.accepted_rows) == (9, 9)
    activity, results, _ = stored(sqlite_store, outcome.activity)
    assert (activity.query_iri, activity.status, len(results)) == (QUERY, "success", len(outcome.expectations))


@pytest.mark.parametrize("breaks, expectation, example", [
    (off_schedule, "expect_column_values_to_be_between(close_off_schedule_us)", "1000000"),
    (negative_count, "expect_column_values_to_be_between(row_count)", "-1"),
    (duplicate_close, "expect_compound_columns_to_be_unique(query_iri, window_close)", "2014-08-01T08:35:00+00:00"),
    (close_outside_interval, "expect_column_values_to_be_between(window_close)", "2014-08-01T08:15:00+00:00"),
], ids=lambda v: getattr(v, "__name__", None))
def test_windows_that_break_one_expectation_fail_it(breaks, expectation, example, sqlite_store):
    frame = windows()
    breaks(frame)
    outcome = check_windows(frame, f"windows-{breaks.__name__}", sqlite_store)
    assert [c.label for c in outcome.failed] == [expectation]
    with pytest.raises(QualityGateError) as error:
        require(outcome)
    assert expectation in str(error.value) and example in str(error.value)
    assert (outcome.accepted_rows, outcome.quarantined_rows) == (0, 9)
    assert stored(sqlite_store, outcome.activity)[0].status == "failed"


def test_old_validation_results_and_their_data_docs_pages_are_pruned(traffic, tmp_path, monkeypatch):
    """Data Docs do not grow without bound: results older than RSP_QUALITY_RETENTION go, with
    their pages and their line in the index (issue 15)."""
    monkeypatch.setenv("RSP_HOME", str(tmp_path / "home"))
    stream, source, rows = traffic
    check(rows, stream, renamed(source, tmp_path, "retention-first.nq"), "retention-first")
    root = tmp_path / "home" / "gx" / "uncommitted"
    assert list((root / "validations").glob("*/retention-first.nq/*"))
    assert list((root / "data_docs" / "local_site" / "validations").glob("*/retention-first.nq/*"))
    monkeypatch.setenv("RSP_QUALITY_RETENTION", "1ms")
    time.sleep(0.01)
    second = check(rows, stream, renamed(source, tmp_path, "retention-second.nq"), "retention-second")
    assert not list(root.glob("**/retention-first.nq"))  # results and pages
    assert list((root / "validations").glob("*/retention-second.nq/*"))  # the run that pruned stays
    index = second.docs.read_text()
    assert "retention-second" in index and "retention-first" not in index
