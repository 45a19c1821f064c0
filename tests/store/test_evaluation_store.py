"""`rsp evaluate --store`: window results become frames of the query's output stream, with their
provenance; a re-run over the same interval leaves the same frames and results."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import func, select

from rsp_jobs.cli import main
from rsp_jobs.ingest import csrbench
from rsp_jobs.store import db
from rsp_jobs.store.models import Activity, ActivityGenerated, ActivityUsed, Frame, Stream, StoredResult
from rsp_jobs.results import WindowResult


@pytest.fixture(scope="module")
def csrbench_stream(data_dir, tmp_path_factory):
    return csrbench.write_stream(tmp_path_factory.mktemp("csrbench") / "stream.nq")


def counts(engine):
    with engine.connect() as conn:
        return {t.__tablename__: conn.scalar(select(func.count()).select_from(t))
                for t in (Stream, Frame, StoredResult)}


def test_evaluate_store_persists_results_with_provenance_and_is_idempotent(store_url, csrbench_stream, tmp_path, spark):
    args = ["evaluate", str(csrbench.query_path("q4")), "--stream", f"{csrbench.STREAM}={csrbench_stream}",
            "--store", store_url, "--output", str(tmp_path / "out.jsonl")]
    assert main(args) == 0
    engine = db.engine(store_url)
    first = counts(engine)
    assert main(args) == 0
    assert counts(engine) == first  # same frames and results after a re-run
    assert first["window_results"] == 9 and first["streams"] == 2  # the input and the derived stream
    with engine.connect() as conn:
        stream = conn.execute(select(Stream).where(Stream.kind == "derived")).one()
        assert stream.query_iri == "urn:rsp:query:test" and stream.iri == "urn:rsp:query:test/stream"
        result = conn.execute(select(StoredResult).order_by(StoredResult.window_close.desc()).limit(1)).one()
        assert float(result.payload["bindings"][0]["avg"]["value"]) == 90.0
        evaluations = conn.execute(select(Activity).where(Activity.kind == "window_evaluation")).all()
        # the re-run took over every window: one evaluation activity per window (issue 19)
        assert len(evaluations) == 1 and all(a.status == "success" and a.spark_app_id for a in evaluations)
        assert (evaluations[0].t0, evaluations[0].entailment, evaluations[0].background) == (
            datetime(1970, 1, 1, tzinfo=timezone.utc), "simple", [])
        used = conn.execute(select(ActivityUsed.entity_kind, func.count()).where(
            ActivityUsed.activity_id == evaluations[0].id).group_by(ActivityUsed.entity_kind)).all()
        assert dict(used) == {"frame": 34, "query": 1}  # every input frame the windows saw, and the query
        generated = conn.scalar(select(func.count()).select_from(ActivityGenerated).where(
            ActivityGenerated.activity_id == evaluations[0].id))
        assert generated == 9
        # loading the same file again is the same ingest: each input frame has one generating
        # activity after any number of runs, as the landing ingest loads a content once
        ingests = conn.scalar(select(func.count()).select_from(Activity).where(Activity.kind == "ingest"))
        assert ingests == 1


def test_an_empty_window_is_an_empty_frame_and_describe_results_are_stored(store_url, tmp_path):
    """Tutorial 004, "Stream Registration - Notes": "Every query execution may produce from a
    minimum of zero triples": an empty window is a frame of the derived stream with no triple
    (nothing of it is data downstream); DESCRIBE results are stored as DESCRIBE."""
    from datetime import datetime, timezone

    from rsp_jobs import compiler
    from rsp_jobs.store.frames import frame_parts, frame_triples
    from rsp_jobs.store.results import store_evaluation

    db.upgrade(store_url)
    engine = db.engine(store_url)
    query = compiler.compile("REGISTER STREAM described AS DESCRIBE ?x FROM STREAM <http://ex.org/s> [RANGE 1s STEP 1s] "
                          "WHERE { ?x <http://ex.org/p> ?y }")
    windows = [{"window_open": "2014-08-01T07:50:00Z", "window_close": "2014-08-01T07:50:01Z", "triples": []},
               {"window_open": "2014-08-01T07:50:01Z", "window_close": "2014-08-01T07:50:02Z",
                "triples": ["<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> ."]}]
    store_evaluation(engine, query, [WindowResult.from_json(w, "DESCRIBE") for w in windows], datetime.now(timezone.utc))
    empty, full = (f"urn:rsp:query:described/stream/frame/{w['window_close']}" for w in windows)
    assert frame_triples(engine, empty) == [] and len(frame_triples(engine, full)) == 1
    assert [statements for *_, statements in frame_parts(engine, empty)] == [0]
    with engine.connect() as conn:
        assert set(conn.scalars(select(StoredResult.form))) == {"DESCRIBE"}
        assert conn.scalar(select(Frame.triple_count).where(Frame.frame_iri == empty)) == 0
