"""The tsunami detection chain of queries/tsunami/ (NDBC's DART algorithm, fixed in its
README.md) on real DART data, checked sample by sample against the plain-Python reference
``tests/tsunami/reference.py``, and one prediction window against rdflib.

The chain runs as the DAGs run it: each stage is ``rsp_jobs.engine.evaluate`` over a lake, and a
``REGISTER STREAM`` stage's windows become its derived stream through
``rsp_jobs.store.results.result_batch``, written into the lake for the next stage (here as one
part per stage rather than one per window close, which is all that differs from
``tasks._write_derived``). One lake holds 21418 (all of it, 2011-03-11..14) and 21401 from
2011-03-08 08:40 (12:00 minus the 3 h 20 min lookback) to 03-12 00:00, loaded the way ingest
loads them (mapped, written as TriG, read back).
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from rsp_jobs.alerts.build import solutions
from rsp_jobs.bench.reference import Elem, WindowSpec, plain_sparql, rdflib_answer, window_contents
from rsp_jobs import compiler
from rsp_jobs.results import WindowResult
from rsp_jobs.engine import Interval, evaluate
from rsp_jobs.ingest import dart
from rsp_jobs.ingest.citybench import write_trig
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import Element, read_stream_file
from rsp_jobs.orchestrate.registry import load_query, queries_dir
from rsp_jobs.times import to_us
from rsp_jobs.spark import windows
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.evaluate import WIN, Evaluator
from rsp_jobs.store.results import result_batch
from tests.support.lakes import STREAM, small_lake
from tests.tsunami import reference

CHAIN = ("dart_mean10", "dart_prediction", "dart_pairs", "tsunami_detection")
UTC = timezone.utc
STATIONS = {  # station: the span of its file that is loaded, [start, end)
    "21418": (None, None),
    "21401": (datetime(2011, 3, 8, 8, 40, tzinfo=UTC), datetime(2011, 3, 12, tzinfo=UTC)),
}
AFTER = datetime(2011, 3, 8, 8, 40, tzinfo=UTC)  # every stage evaluates the closes in (AFTER, UNTIL]
UNTIL = datetime(2011, 3, 15, 1, 0, tzinfo=UTC)  # past 21418's last sample (03-14 23:45) + 15 min
EARTHQUAKE = datetime(2011, 3, 11, 5, 46, 24, tzinfo=UTC)
FORESHOCK = datetime(2011, 3, 9, 2, 45, tzinfo=UTC)
CHECKED_CLOSE = "2011-03-11T05:50:00Z"  # 21418's first exceedances (15 s samples) and 21401


def ms(moment: datetime | None) -> int | None:
    return None if moment is None else to_us(moment) // 1000


def iso(ms_value: int) -> str:
    return datetime.fromtimestamp(ms_value / 1000, tz=UTC).isoformat()


def sensor(station: str) -> str:
    return f"urn:rsp:dart:{station}/bpr"


@pytest.fixture(scope="module")
def chain(data_dir, tmp_path_factory, spark):
    """Every stage's reported windows, its engine time, and the elements of every stream."""
    work = tmp_path_factory.mktemp("tsunami")
    lake = Lake(work / "lake")
    elements: dict[str, list[Element]] = {}
    for station, (start, end) in STATIONS.items():
        stream, frames, report = dart.map_station(data_dir / "dart" / f"{station}.txt", start=start, end=end)
        batch = read_stream_file(write_trig(stream, frames, work / f"{station}.trig"), str(stream))
        assert not batch.rejections and len(batch.elements) == 6 * report.frames
        lake.write(batch, batch_id=station)
        elements.setdefault(str(stream), []).extend(batch.elements)
    reported, seconds = {}, {}
    for name in CHAIN:
        registered = load_query(queries_dir() / "tsunami" / f"{name}.rsp")
        started = time.perf_counter()
        reported[name] = list(evaluate(registered.query, lake, registered.background, registered.t0_us,
                                      Interval(to_us(AFTER), to_us(UNTIL))))
        seconds[name] = round(time.perf_counter() - started, 1)
        derived, _ = result_batch(registered.query, reported[name])
        lake.write(derived, batch_id=name)
        elements[derived.stream] = derived.elements
    print("\nengine seconds per stage:", seconds)
    return {"windows": reported, "seconds": seconds, "elements": elements}


@pytest.fixture(scope="module")
def expected(data_dir):
    """The reference's predictions, pairs and events per sensor, from the raw files."""
    out = {}
    for station, (start, end) in STATIONS.items():
        samples = reference.read_samples(data_dir / "dart" / f"{station}.txt", ms(start), ms(end))
        predictions = reference.predict(samples)
        out[sensor(station)] = (samples, predictions, reference.pairs(predictions), reference.events(predictions))
    return out


def rows(chain, name: str) -> dict[tuple[str, int], dict]:
    """A stage's results (resources with var:NAME triples) keyed by (sensor, sample ms); each
    key must be reported once."""
    out = {}
    for window in chain["windows"][name]:
        for row in solutions(window):
            key = (row["sensor"], int(row["ms"]))
            assert key not in out, f"{name} reported {key} twice"
            out[key] = row
    return out


def test_every_sample_is_predicted_as_the_reference_predicts_it(chain, expected):
    engine = rows(chain, "dart_prediction")
    for sensor_iri, (samples, predictions, _, _) in expected.items():
        mine = {k[1]: v for k, v in engine.items() if k[0] == sensor_iri}
        assert set(mine) == {p.ms for p in predictions}, sensor_iri
        assert len(predictions) > len(samples) / 2  # the comparison covers most samples
        for p in predictions:
            row = mine[p.ms]
            assert float(row["height"]) == p.height
            assert [float(row[f"h{i}"]) for i in range(4)] == pytest.approx(p.means, abs=1e-9, rel=0)
            assert abs(float(row["prediction"]) - p.prediction) < 1e-9, (sensor_iri, iso(p.ms))
            assert abs(float(row["residual"]) - p.residual) < 1e-9
            if abs(abs(p.residual) - reference.THRESHOLD) > 1e-9:  # not a rounding tie
                assert (row["exceeds"] == "true") == p.exceeds, (sensor_iri, iso(p.ms), p.residual)
        assert any(p.exceeds for p in predictions) and not all(p.exceeds for p in predictions)


def test_pairs_and_events_are_the_references(chain, expected):
    pairs, events = rows(chain, "dart_pairs"), rows(chain, "tsunami_detection")
    for sensor_iri, (_, predictions, ref_pairs, ref_events) in expected.items():
        mine = {k[1]: v for k, v in pairs.items() if k[0] == sensor_iri}
        assert {s: int(row["earlier_ms"]) for s, row in mine.items()} == ref_pairs, sensor_iri
        detected = {k[1]: v for k, v in events.items() if k[0] == sensor_iri}
        assert sorted(detected) == [e.ms for e in ref_events], sensor_iri
        for event in ref_events:
            row = detected[event.ms]
            assert int(row["earlier_ms"]) == event.earlier_ms
            assert row["time"].startswith(iso(event.ms)[:19]) and row["earlier_time"].startswith(iso(event.earlier_ms)[:19])
            assert abs(float(row["residual"]) - event.residual) < 1e-9
            assert abs(float(row["prediction"]) - event.prediction) < 1e-9 and float(row["height"]) == event.height


def test_21418_detects_the_tohoku_tsunami_within_15_minutes_of_the_earthquake(chain):
    events = sorted(k[1] for k in rows(chain, "tsunami_detection") if k[0] == sensor("21418"))
    first = events[0]
    assert ms(EARTHQUAKE) < first <= ms(EARTHQUAKE) + 15 * reference.MINUTE, iso(first)


def test_21401_detects_the_foreshock_and_the_main_shock(chain):
    events = sorted(k[1] for k in rows(chain, "tsunami_detection") if k[0] == sensor("21401"))
    print("\n21401 events:", [iso(e) for e in events])
    assert any(ms(FORESHOCK) < e <= ms(FORESHOCK) + 15 * reference.MINUTE for e in events)
    assert any(ms(EARTHQUAKE) < e <= ms(EARTHQUAKE) + 15 * reference.MINUTE for e in events)


def test_a_prediction_window_matches_rdflib_over_the_same_window_contents(chain):
    """rdflib evaluates the query body over the window's two named graphs (WINDOW as GRAPH),
    with C-SPARQL's timestamp() over the same contents: the computed join keys must meet as equal
    terms in both engines."""
    path = queries_dir() / "tsunami" / "dart_prediction.rsp"
    text = path.read_text()
    query = compiler.compile(text, str(path))
    close = to_us(datetime.fromisoformat(CHECKED_CLOSE.replace("Z", "+00:00"))) // 1000
    specs = [WindowSpec(w.stream, w.window.range_ms, w.window.step_ms, graph=w.graph) for w in query.windows]
    longest = max(s.range_ms for s in specs)
    near = [Elem(e.stream, ms(e.ts), e.s, e.p, e.o) for spec in specs for e in chain["elements"][spec.stream]
            if close - longest <= ms(e.ts) < close]
    content = window_contents(near, specs)[close]
    sparql = plain_sparql(text).replace("WINDOW <", "GRAPH <")
    theirs = results(solutions(WindowResult(0, 0, "CONSTRUCT", triples=tuple(rdflib_answer(sparql, content)))))
    ours = results(solutions(next(w for w in chain["windows"]["dart_prediction"] if w.window_close == CHECKED_CLOSE)))
    assert len(theirs) >= 10 and {r["sensor"] for r in theirs} == {sensor("21401"), sensor("21418")}
    assert any(r["exceeds"] == "true" for r in theirs)
    assert len(ours) == len(theirs)
    for mine, other in zip(ours, theirs):
        assert mine.keys() == other.keys() and all(
            mine[k] == pytest.approx(other[k], abs=1e-12) if isinstance(mine[k], float) else mine[k] == other[k]
            for k in mine), (mine, other)


def results(rows: list[dict]) -> list[dict]:
    """Constructed results without their blank node, in a stable order."""
    return sorted(({k: v for k, v in r.items() if k != "resource"} for r in rows),
                  key=lambda r: (r["sensor"], r["ms"]))


# ---------------------------------------------------------------- engine behaviour relied on

EX = "http://example.org/t#"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"


def test_window_contents_stay_sets_and_windows_with_only_unused_triples_still_report(tmp_path, spark):
    """Window assignment drops triples no pattern can match and de-duplicates only repeated
    triples (rsp_jobs/spark/windows.py): a triple that arrives twice is in a window once, stamped
    with its latest arrival; a window whose triples are all of a predicate the query never names
    is still reported, with no solutions."""
    a, p, q, other = f"<{EX}a>", f"<{EX}p>", f"<{EX}q>", f"<{EX}other>"
    lake = small_lake(tmp_path / "lake", [
        (1, [(a, p, f"<{EX}x>")]), (2, [(a, p, f"<{EX}x>"), (a, q, f"<{EX}y>")]),  # x twice
        (12, [(a, other, f"<{EX}z>")]),  # only a predicate the query does not use
    ])
    text = (f"PREFIX : <{EX}>\nPREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>\n"
            f"SELECT ?o (f:timestamp(?s, :p, ?o) AS ?t) FROM STREAM <{STREAM}> [RANGE 5s STEP 5s] "
            "WHERE { ?s :p ?o }")
    query = compiler.compile(text)
    assert query.predicates == frozenset({p})  # optimize.prune_predicates
    got = [(w.window_close, [(b["o"]["value"], b["t"]["value"]) for b in w.bindings]) for w in evaluate(query, lake)]
    assert got == [("1970-01-01T00:00:05Z", [(f"{EX}x", "2000")]), ("1970-01-01T00:00:15Z", [])]
    variable = compiler.compile(f"SELECT ?s ?p FROM STREAM <{STREAM}> [RANGE 5s STEP 5s] WHERE {{ ?s ?p ?o }}")
    assert variable.predicates is None
    assert [len(w.bindings) for w in evaluate(variable, lake)] == [2, 1]


def test_filter_bound_makes_a_computed_key_a_join_key(tmp_path, spark):
    """BIND may leave a variable unbound, so a join on it must accept unbound partners (an
    OR-condition over the pairs of each window); FILTER(bound(?k)) in the same group rules that
    out and makes ?k an ordinary equi-join key (optimize.bound_join_keys). Same answers."""
    lake = small_lake(tmp_path / "lake", [(n, [(f"<{EX}e{n}>", f"<{EX}v>", f'"{n}"^^<{XSD_INTEGER}>')])
                                          for n in range(1, 9)])
    answers, maybe, conditions = [], [], []
    for guard in ("", "FILTER(bound(?k))"):
        query = compiler.compile(f"PREFIX : <{EX}>\nSELECT ?x ?y FROM STREAM <{STREAM}> [RANGE 10s STEP 10s] WHERE {{ "
                              f"{{ ?a :v ?x . BIND(?x + 2 AS ?k) {guard} }} {{ ?b :v ?y . BIND(?y AS ?k) {guard} }} }}")
        answers.append([sorted((b["x"]["value"], b["y"]["value"]) for b in w.bindings) for w in evaluate(query, lake)])
        rows_ = windows.assign(lake.read(spark, [STREAM]), query, windows.schedule(query, 0), None, None)
        active = rows_.groupBy(WIN).agg(F.min("_open").alias("_open"))
        evaluator = Evaluator(query, rows_, active, Background.for_query((), (), "<probe>"))
        join = query.plan.input
        maybe.append(("k" in evaluator.evaluate(join.left).maybe, "k" in evaluator.evaluate(join.right).maybe))
        conditions.append(evaluator.evaluate(join).dep._jdf.queryExecution().optimizedPlan().toString())
    assert answers[0] == answers[1] == [[(str(n), str(n + 2)) for n in range(1, 7)]]
    assert maybe == [(True, True), (False, False)]
    assert "isnull(v_k" in conditions[0] and "isnull(v_k" not in conditions[1]


def test_a_stream_two_windows_read_holds_each_triple_once(tmp_path, spark):
    """Two windows over one stream both hold a recent triple: the window's graph holds it once
    (a slice without repeats skips the de-duplication only when no stream is read twice)."""
    p = f"<{EX}p>"
    lake = small_lake(tmp_path / "lake", [(n, [(f"<{EX}e{n}>", p, f"<{EX}x>")]) for n in range(1, 9)])
    text = (f"SELECT ?s FROM STREAM <{STREAM}> [RANGE 4s STEP 2s] FROM STREAM <{STREAM}> [RANGE 2s STEP 2s] "
            f"WHERE {{ ?s {p} ?o }}")
    got = {w.close_us // 1_000_000: sorted(b["s"]["value"] for b in w.bindings)
           for w in evaluate(compiler.compile(text), lake)}
    assert {4, 6, 8} <= set(got)
    assert got == {close: sorted(f"{EX}e{n}" for n in range(max(1, close - 4), min(close, 9))) for close in got}
