"""``make bench``'s hand-written Spark jobs (``rsp_jobs.bench.anchors``) and the engine give
congestion_by_segment's answers alike, window by window, over three hours of the 33 Aarhus
traffic streams: at RANGE 1h and 15m (solutions go to windows, ``optimize.window_solutions``),
with that rule left out (triples go to windows first), and tumbling both ways. The anchors share no code
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
    typed = anchors.write_typed(batch.elements, properties, work / "typed.parquet")
    return lake, str(repository), properties, typed


@pytest.mark.parametrize("window, skip", [
    ("[RANGE 1h STEP 5m]", ()),
    ("[RANGE 15m STEP 5m]", ()),
    ("[RANGE 1h STEP 5m]", ("window_solutions",)),
    ("[RANGE 5m STEP 5m]", ()),
    ("[RANGE 5m STEP 5m]", ("window_solutions",)),
], ids=["1h-solutions", "15m-solutions", "1h-triples", "tumbling-solutions", "tumbling-triples"])
def test_the_engine_and_the_hand_written_jobs_agree(workload, spark, window, skip):
    lake, repository, properties, typed = workload
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
