"""EP-SPARQL patterns as DAG runs over real CityBench traffic: consecutive micro-batches, with
late data under the ``reevaluate`` policy, store what one evaluation over the whole range
reports, for a bounded pattern (reading back its bound) and an unbounded one (its partial
matches kept in the store between runs)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from rsp_jobs.engine import Interval, match
from rsp_jobs.orchestrate import registry, tasks
from rsp_jobs.orchestrate.ingest import ingest_landing
from rsp_jobs.store import db
from rsp_jobs.store.models import LateArrival, PartialMatch
from rsp_jobs.results import WindowResult
from rsp_jobs.times import from_us, to_us
from tests.orchestrate.conftest import DAY, TRAFFIC, land
from tests.orchestrate.test_micro_batches import stored_results

# Two readings of one segment above the 95th percentile of congestion, the second later.
PATTERN = """REGISTER QUERY {name} AS
PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#>
PREFIX sao: <http://purl.oclc.org/NET/sao/>
PREFIX ct:  <http://www.insight-centre.org/citytraffic#>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
SELECT ?sensor ?c1 ?c2
FROM STREAM <http://www.insight-centre.org/dataset/SampleEventService#AarhusTrafficData>
FROM <http://www.insight-centre.org/dataset/SensorRepository.n3>
WHERE {{
  {{ ?o1 ssn:observedBy ?sensor ; ssn:observedProperty ?p1 ; sao:hasValue ?c1 . ?p1 a ct:CongestionLevel
     FILTER (?c1 > 0.01) }}
  SEQ
  {{ ?o2 ssn:observedBy ?sensor ; ssn:observedProperty ?p2 ; sao:hasValue ?c2 . ?p2 a ct:CongestionLevel
     FILTER (?c2 > 0.01) }}
  {bound}
}}
"""


@pytest.mark.parametrize("bound", ['FILTER (getDURATION() < "PT30M"^^xsd:duration)', ""],
                         ids=["bounded", "unbounded"])
def test_pattern_runs_with_late_data_reevaluated_report_what_one_evaluation_gives(
        home, queries, traffic, spark, bound):
    name = "high_twice_" + ("bounded" if bound else "unbounded")
    path = queries / "traffic" / f"{name}.rsp"
    path.write_text(PATTERN.format(name=name, bound=bound))
    path.with_suffix(".toml").write_text('batch = "15m"\n')
    land(traffic(15, 45))  # from 06:15: SEQ's first reading may precede the first batch
    land(traffic(60, 105))  # to 07:45, the last batch's end
    ingest_landing(TRAFFIC)
    rq = registry.load_query(path)
    assert rq.keeps_partials == (not bound)
    after, size = DAY + timedelta(minutes=30), timedelta(minutes=15)
    for i in range(4):  # 06:30 .. 07:30, without the readings of 06:45-07:00
        tasks.evaluate_run(str(path), after + i * size, after + (i + 1) * size)
    land(traffic(45, 60), name="straggler.nq")
    straggler = next(f for f in ingest_landing(TRAFFIC).files if f.path.endswith("straggler.nq"))
    assert straggler.late_frames > 0 and straggler.triples > 0  # loaded: late_policy reevaluate
    summary = tasks.evaluate_run(str(path), after + 4 * size, after + 5 * size)
    assert summary.revised_windows > 0

    until = after + 5 * size
    whole, _ = match(rq.query, tasks.lake(), rq.background, Interval(to_us(after), to_us(until)))
    late = range(to_us(DAY + timedelta(minutes=45)), to_us(DAY + timedelta(minutes=60)))
    assert any(m.start_us in late or m.end_us in late for m in whole)  # the straggler matters
    assert stored_results(rq.iri) == [w.to_json() for w in WindowResult.of_matches(whole)]
    with db.engine().connect() as conn:
        assert {s for (s,) in conn.execute(select(LateArrival.status).where(LateArrival.query_iri == rq.iri))} \
            == {"revised"}
        kept = conn.scalar(select(func.count()).select_from(PartialMatch).where(PartialMatch.query_iri == rq.iri))
    assert (kept > 0) == (not bound)


def test_a_derived_streams_run_reports_its_events_intervals_for_the_asset_event(home, queries, spark):
    """The run summary (the asset event's ``extra``) names each derived event's [start, end]."""
    from rsp_jobs.times import iso_ms
    from tests.conformance.epsparql.support import at
    from tests.patterns.test_derived_intervals import EVENTS, UPSTREAM
    from tests.patterns.test_partial_matches import as_batch

    path = queries / "traffic" / "rose.rsp"
    path.write_text(UPSTREAM)
    tasks.lake().write(as_batch(EVENTS), batch_id="readings")
    summary = tasks.evaluate_run(str(path), from_us(at(-2)), from_us(at(3)))
    assert summary.intervals == ((iso_ms(at(0)), iso_ms(at(2))),)
    assert summary.as_dict()["intervals"] == summary.intervals
