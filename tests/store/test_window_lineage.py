"""Each stored result frame is derived from exactly the frames its window saw: per stream,
those in ``[close - RANGE, close)`` (one STEP more for ISTREAM and DSTREAM), for ``[TRIPLES n]``
the latest frames that hold the last n triples, and for a pattern's result the frames of its
matches' events. The expected lineage is worked out here from the stream's times and the
window bounds, not read back from the store. No Spark: results are stored as an evaluation
would store them."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from rdflib import URIRef
from rdflib.namespace import PROV
from sqlalchemy import select

from rsp_jobs.compiler import compile
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.results import Match, WindowResult
from rsp_jobs.store.frames import load_batch
from rsp_jobs.store.lineage import audit, lineage, prov_graph
from rsp_jobs.store.models import Derivation
from rsp_jobs.store.results import store_evaluation

S1, S2 = "http://ex.org/s1", "http://ex.org/s2"
SECOND = 1_000_000
# uneven gaps and sizes: (seconds, triples in the frame)
TIMES = {S1: [(0.5, 1), (1.0, 3), (1.2, 1), (2.9, 2), (3.0, 1), (4.5, 4), (6.1, 1)],
         S2: [(0.2, 2), (2.0, 1), (3.5, 1), (5.9, 3)]}


def frame_iri(stream: str, t: float) -> str:
    return f"{stream}/frame/{t}"


@pytest.fixture
def streams(store, tmp_path):
    for stream, frames in TIMES.items():
        path = tmp_path / f"{stream.rsplit('/', 1)[1]}.trig"
        lines = []
        for t, n in frames:
            moment = datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")
            body = " ".join(f"<urn:x{i}> <urn:p> {i} ." for i in range(n))
            lines.append(f"<{frame_iri(stream, t)}> {{ {body} }}\n<{frame_iri(stream, t)}> "
                         f"<http://www.w3.org/ns/prov#generatedAtTime> \"{moment}\"^^"
                         "<http://www.w3.org/2001/XMLSchema#dateTime> .")
        path.write_text("\n".join(lines) + "\n")
        batch = read_stream_file(path, stream)
        assert not batch.rejections
        load_batch(store, batch)
    return store


def in_range(stream: str, start: float, end: float) -> set[str]:
    return {frame_iri(stream, t) for t, _ in TIMES[stream] if start <= t < end}


def last_triples(stream: str, close: float, n: int, inclusive: bool = False) -> set[str]:
    """The frames of the last n triples before ``close`` (at it too: ``inclusive``)."""
    found, held = set(), 0
    for t, count in sorted(TIMES[stream], reverse=True):
        if (t <= close if inclusive else t < close) and held < n:
            found.add(frame_iri(stream, t))
            held += count
    return found


def stored(store, query, closes: list[float]) -> dict[str, set[str]]:
    windows = [WindowResult(int((c - 1) * SECOND), int(c * SECOND), query.form, bindings=({},)) for c in closes]
    store_evaluation(store, query, windows, datetime.now(timezone.utc))
    with store.connect() as conn:
        rows = conn.execute(select(Derivation.entity_iri, Derivation.source_iri)).all()
    out: dict[str, set[str]] = {}
    for entity, source in rows:
        out.setdefault(entity, set()).add(source)
    return out


def result(query, close: float) -> str:
    return f"urn:rsp:query:{query.name}/stream/frame/{WindowResult(0, int(close * SECOND), 'SELECT').window_close}"


ARRIVALS = [t for t, _ in TIMES[S1]]  # a count window alone is evaluated on each arrival
GRID = [1.0, 3.0, 5.0, 7.0]


@pytest.mark.parametrize("window, r2s, every, closes, scope", [
    ("[RANGE 3s STEP 1s]", "", "", GRID, lambda c: in_range(S1, c - 3, c)),
    ("[RANGE 2s TUMBLING]", "", "", [2.0, 4.0, 6.0], lambda c: in_range(S1, c - 2, c)),
    ("[RANGE 3s STEP 1s]", "ISTREAM", "", GRID, lambda c: in_range(S1, c - 4, c)),
    # on arrival the arriving frame is in the window (spark/windows.py); ISTREAM compared with
    # the evaluation at the previous arrival, whose window held the last n triples before c
    ("[TRIPLES 3]", "", "", ARRIVALS, lambda c: last_triples(S1, c, 3, inclusive=True)),
    ("[TRIPLES 5]", "", "", ARRIVALS, lambda c: last_triples(S1, c, 5, inclusive=True)),
    ("[TRIPLES 3]", "ISTREAM", "", ARRIVALS,
     lambda c: last_triples(S1, c, 3, inclusive=True) | last_triples(S1, c, 3)),
    # on a grid (COMPUTED EVERY) what came before the close; ISTREAM: and before the close a STEP earlier
    ("[TRIPLES 3]", "", "COMPUTED EVERY 2s", GRID, lambda c: last_triples(S1, c, 3)),
    ("[TRIPLES 3]", "DSTREAM", "COMPUTED EVERY 2s", GRID,
     lambda c: last_triples(S1, c, 3) | last_triples(S1, c - 2, 3)),
])
def test_a_window_result_is_derived_from_the_frames_in_its_scope(streams, window, r2s, every, closes, scope):
    register = f"REGISTER {r2s}" if r2s else "REGISTER QUERY"
    query = compile(f"{register} q {every} AS SELECT ?x FROM STREAM <{S1}> {window} WHERE {{ ?x <urn:p> ?v }}")
    assert query.r2s == (r2s or "RSTREAM")
    derived = stored(streams, query, closes)
    assert {c: derived.get(result(query, c), set()) for c in closes} == {c: scope(c) for c in closes}
    assert any(scope(c) for c in closes)


def test_two_streams_each_give_their_own_range(streams):
    query = compile(f"REGISTER QUERY two AS SELECT ?x FROM STREAM <{S1}> [RANGE 1s STEP 1s] "
                    f"FROM STREAM <{S2}> [RANGE 4s STEP 1s] WHERE {{ ?x <urn:p> ?v }}")
    derived = stored(streams, query, [3.0, 6.0])
    for c in (3.0, 6.0):
        assert derived[result(query, c)] == in_range(S1, c - 1, c) | in_range(S2, c - 4, c)


def test_prov_and_the_audit_follow_one_windows_inputs_only(streams):
    query = compile(f"REGISTER QUERY one AS SELECT ?x FROM STREAM <{S1}> [RANGE 2s STEP 2s] WHERE {{ ?x <urn:p> ?v }}")
    stored(streams, query, [2.0, 4.0, 6.0])
    frame = result(query, 4.0)
    graph = prov_graph(streams, frame)
    assert {str(o) for o in graph.objects(URIRef(frame), PROV.wasDerivedFrom)} == in_range(S1, 2, 4)
    (evaluation,) = [s for s in lineage(streams, frame) if s.activity.kind == "window_evaluation"]
    assert {u.entity_iri for u in evaluation.used if u.entity_kind == "frame"} == in_range(S1, 2, 4)
    assert [g.entity_iri for g in evaluation.generated] == [frame]
    assert audit(streams, frame).checked == len(in_range(S1, 2, 4))


def test_a_patterns_result_is_derived_from_its_matches_events(streams):
    query = compile(f"REGISTER QUERY p AS SELECT ?a ?b FROM STREAM <{S1}> "
                    "WHERE { { ?a <urn:p> 1 } SEQ { ?b <urn:p> 2 } }")
    f = [frame_iri(S1, t) for t, _ in TIMES[S1]]
    matches = [Match(int(1.0 * SECOND), int(2.9 * SECOND), (f[1], f[3]), bindings={}),
               Match(int(1.2 * SECOND), int(2.9 * SECOND), (f[2], f[3]), bindings={}),
               Match(int(4.5 * SECOND), int(6.1 * SECOND), (f[5], f[6]), bindings={})]
    results = WindowResult.of_matches(matches)
    store_evaluation(streams, query, results, datetime.now(timezone.utc), kind="pattern_match",
                     used_frames=[e for m in matches for e in m.events])
    with streams.connect() as conn:
        rows = conn.execute(select(Derivation.entity_iri, Derivation.source_iri)).all()
    by_result: dict[str, set] = {}
    for entity, source in rows:
        by_result.setdefault(entity.rsplit("/", 1)[1], set()).add(source)
    assert by_result == {results[0].window_close: {f[1], f[2], f[3]}, results[1].window_close: {f[5], f[6]}}


def evaluations(store) -> dict[str, list[str]]:
    """Each evaluation activity's IRI -> the result frames it generated."""
    from rsp_jobs.store.models import Activity, ActivityGenerated

    with store.connect() as conn:
        rows = conn.execute(select(Activity.iri, ActivityGenerated.entity_iri).outerjoin(
            ActivityGenerated, ActivityGenerated.activity_id == Activity.id)
            .where(Activity.kind == "window_evaluation").order_by(Activity.id, ActivityGenerated.entity_iri)).all()
    out: dict[str, list[str]] = {}
    for activity, entity in rows:
        out.setdefault(activity, [])
        if entity:
            out[activity].append(entity)
    return out


def test_a_rerun_leaves_one_evaluation_per_window_and_a_revision_stays_linked(streams):
    """A try that committed and was killed before its task ended, then its retry over the same
    interval: one evaluation activity per window, the latest. A run over an overlapping interval
    takes over only the windows it rewrote. A revision after late data keeps the evaluation it
    revises, linked by prov:wasInformedBy."""
    query = compile(f"REGISTER QUERY r AS SELECT ?x FROM STREAM <{S1}> [RANGE 2s STEP 1s] WHERE {{ ?x <urn:p> ?v }}")

    def run(closes, **kwargs) -> str:
        windows = [WindowResult(int((c - 2) * SECOND), int(c * SECOND), "SELECT", bindings=({},)) for c in closes]
        return store_evaluation(streams, query, windows, datetime.now(timezone.utc), **kwargs).activity_iri

    killed = run([3.0, 4.0])
    retry = run([3.0, 4.0])
    assert evaluations(streams) == {retry: [result(query, 3.0), result(query, 4.0)]}
    assert killed != retry
    for close in (3.0, 4.0):  # the lineage is whole: the retry's window inputs
        (step,) = [s for s in lineage(streams, result(query, close)) if s.activity.kind == "window_evaluation"]
        assert step.activity.iri == retry and step.derived == {result(query, close): in_range(S1, close - 2, close)}

    overlapping = run([4.0, 5.0])
    assert evaluations(streams) == {retry: [result(query, 3.0)], overlapping: [result(query, 4.0), result(query, 5.0)]}

    revision = run([5.0], revision_of=overlapping)
    assert evaluations(streams) == {retry: [result(query, 3.0)], overlapping: [result(query, 4.0), result(query, 5.0)],
                                    revision: [result(query, 5.0)]}
    graph = prov_graph(streams, result(query, 5.0))
    assert (URIRef(revision), PROV.wasInformedBy, URIRef(overlapping)) in graph
    assert audit(streams, result(query, 5.0)).checked > 0


@pytest.mark.parametrize("window, every", [("[TRIPLES 4]", ""), ("[TRIPLES 4]", "COMPUTED EVERY 1s"),
                                           ("[RANGE 2s STEP 1s]", "")])
def test_the_engine_saw_exactly_the_frames_a_result_is_derived_from(tmp_path, spark, window, every):
    """Cross-check with Spark: each triple names its frame, so a window's solutions show which
    frames the engine's window held; they are the frames its stored result is derived from."""
    from rsp_jobs.engine import evaluate
    from rsp_jobs.ingest.lake import Lake
    from rsp_jobs.store import db

    lines = []
    for t, n in TIMES[S1]:
        moment = datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")
        body = " ".join(f"<{frame_iri(S1, t)}#e{i}> <urn:p> {i} ." for i in range(n))
        lines.append(f"<{frame_iri(S1, t)}> {{ {body} }}\n<{frame_iri(S1, t)}> <http://www.w3.org/ns/prov#"
                     f"generatedAtTime> \"{moment}\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .")
    (tmp_path / "s.trig").write_text("\n".join(lines) + "\n")
    batch = read_stream_file(tmp_path / "s.trig", S1)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    db.upgrade(url)
    store = db.engine(url)
    load_batch(store, batch)
    lake = Lake(tmp_path / "lake")
    lake.write(batch)
    query = compile(f"REGISTER QUERY seen {every} AS SELECT ?x FROM STREAM <{S1}> {window} WHERE {{ ?x <urn:p> ?v }}")
    windows = list(evaluate(query, lake))
    assert len(windows) >= 4
    store_evaluation(store, query, windows, datetime.now(timezone.utc))
    with store.connect() as conn:
        derived: dict[str, set] = {}
        for entity, source in conn.execute(select(Derivation.entity_iri, Derivation.source_iri)):
            derived.setdefault(entity, set()).add(source)
    for w in windows:
        seen = {b["x"]["value"].split("#")[0] for b in w.bindings}
        assert derived.get(f"urn:rsp:query:seen/stream/frame/{w.window_close}", set()) == seen, w.window_close


def test_a_chained_querys_result_is_derived_from_the_upstream_results_in_its_window(streams):
    """REGISTER STREAM a over S1; b over a's output stream: b's window closing at 6 s, RANGE 3s,
    holds a's results closing at 3, 4 and 5 s, and through them the S1 frames in their windows."""
    a = compile(f"REGISTER STREAM a AS CONSTRUCT {{ ?x <urn:q> ?v }} FROM STREAM <{S1}> [RANGE 2s STEP 1s] "
                "WHERE { ?x <urn:p> ?v }")
    b = compile("REGISTER QUERY b AS SELECT ?x FROM STREAM <urn:rsp:query:a/stream> [RANGE 3s STEP 3s] "
                "WHERE { ?x <urn:q> ?v }")
    upstream = [WindowResult(int((c - 2) * SECOND), int(c * SECOND), "CONSTRUCT",
                             triples=(f"<urn:x{int(c)}> <urn:q> <urn:v{int(c)}> .",)) for c in range(1, 8)]
    store_evaluation(streams, a, upstream, datetime.now(timezone.utc))
    store_evaluation(streams, b, [WindowResult(3 * SECOND, 6 * SECOND, "SELECT", bindings=({},))],
                     datetime.now(timezone.utc))
    frame = result(b, 6.0)
    inputs = {result(a, c) for c in (3.0, 4.0, 5.0)}
    graph = prov_graph(streams, frame)
    assert {str(o) for o in graph.objects(URIRef(frame), PROV.wasDerivedFrom)} == inputs
    steps = lineage(streams, frame)
    (upstream_step,) = [s for s in steps if s.activity.query_iri == "urn:rsp:query:a"]
    assert upstream_step.derived == {result(a, c): in_range(S1, c - 2, c) for c in (3.0, 4.0, 5.0)}
    assert {g.entity_iri for g in upstream_step.generated} == inputs
    assert audit(streams, frame).checked == len(inputs) + len(in_range(S1, 1, 5))
