"""``make bench``'s hand-written Spark jobs (``rsp_jobs.bench.anchors``) and the engine give
congestion_by_segment's answers alike, window by window, over three hours of the 33 Aarhus
traffic streams: at RANGE 1h and 15m (solutions go to windows, ``optimize.window_solutions``),
with that rule left out (triples go to windows first), and tumbling both ways; on Spark's
interpreted expressions and on its generated code (``session.batch_settings``). The anchors share no code
with the engine's windows or joins, so this is a second reference beside rdflib's."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from rsp_jobs import compiler, settings
from rsp_jobs.bench import anchors
from rsp_jobs.engine import Interval, evaluate
from rsp_jobs.ingest import citybench
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.physical.planner import INTERPRETED_BELOW_ROWS
from rsp_jobs.physical.statistics import LakeStatistics
from rsp_jobs.times import to_us

START = datetime(2014, 8, 2, 5, 0, tzinfo=timezone.utc)
HOURS = 3
QUERY = settings.REPO_ROOT / "queries" / "citybench" / "congestion_by_segment.rsp"


@pytest.fixture(scope="module")
def workload(data_dir, tmp_path_factory, spark):
    work = tmp_path_factory.mktemp("anchors")
    path = citybench.merged_traffic(START, START + timedelta(hours=HOURS), work / "traffic.nq")
    batch = read_stream_file(path, citybench.TRAFFIC)
    lake = Lake(work / "lake")
    lake.write(batch)
    repository = citybench.sensor_repository_path()
    properties = anchors.congestion_properties(repository)
    typed = anchors.write_typed(anchors.typed_readings(batch.elements, properties), work / "typed.parquet")
    return lake, str(repository), properties, typed


@pytest.mark.parametrize("window, skip, compiled", [
    ("[RANGE 1h STEP 5m]", (), False),
    ("[RANGE 1h STEP 5m]", (), True),
    ("[RANGE 15m STEP 5m]", (), False),
    ("[RANGE 1h STEP 5m]", ("window_solutions",), False),
    ("[RANGE 1h STEP 5m]", ("window_solutions",), True),
    ("[RANGE 5m STEP 5m]", (), False),
    ("[RANGE 5m STEP 5m]", ("window_solutions",), False),
], ids=["1h-solutions", "1h-solutions-compiled", "15m-solutions", "1h-triples", "1h-triples-compiled",
        "tumbling-solutions", "tumbling-triples"])
def test_the_engine_and_the_hand_written_jobs_agree(workload, spark, monkeypatch, window, skip, compiled):
    """Three hours are fewer rows than ``session.INTERPRETED_BELOW_ROWS``: the engine runs on
    Spark's interpreted expressions, and ``compiled`` runs it on generated code instead."""
    if compiled:
        monkeypatch.setenv("RSP_INTERPRETED_BELOW_ROWS", "0")
    lake, repository, properties, typed = workload
    assert LakeStatistics(lake).rows([citybench.TRAFFIC]) < INTERPRETED_BELOW_ROWS
    query = compiler.compile(QUERY.read_text().replace("[RANGE 1h STEP 5m]", window), str(QUERY), skip=skip)
    assert query.window_solutions == (not skip)
    spec = query.windows[0].window
    after, until = START + timedelta(hours=1), START + timedelta(hours=HOURS)
    engine = anchors.engine_answers(evaluate(query, lake, [repository], interval=Interval(to_us(after), to_us(until))))
    range_s, step_s = spec.range_ms // 1000, spec.step_ms // 1000
    hand = anchors.rdf_anchor(spark, lake, citybench.TRAFFIC, properties, range_s, step_s, after, until)
    floor = anchors.typed_floor(spark, typed, range_s, step_s, after, until)
    closes = {close for close, _ in engine}
    assert len(closes) == (until - after) // timedelta(seconds=step_s)  # every 5 minutes has readings
    assert len(engine) > 20 * len(closes)  # most sensors report in every window
    assert anchors.same_answers(engine, hand) and anchors.same_answers(engine, floor)
