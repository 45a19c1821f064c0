"""Provenance export (PROV-O that rdflib parses back) and the audit of a stored result: inputs
unchanged, a tampered input frame detected, and the window re-evaluated to the same answer
(``rsp_jobs.reevaluate``; tests/test_reevaluate.py has a registered query's t0 and entailment)."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import PROV, RDF
from sqlalchemy import select, update

from rsp_jobs.cli import main
from rsp_jobs.ingest import csrbench
from rsp_jobs.reevaluate import reevaluate
from rsp_jobs.store import db
from rsp_jobs.store.lineage import audit, lineage, prov_graph, stored_iri
from rsp_jobs.store.models import Frame, FrameTriple, StoredResult
from rsp_jobs.ingest.rdf_stream import read_stream_file
from rsp_jobs.times import as_utc


@pytest.fixture
def evaluated(store_url, data_dir, tmp_path, spark):
    """CSRBench q1 ([RANGE 10s STEP 10s]) evaluated into the store; its last result frame and
    the stream's frames in that window's scope [close - 10 s, close), read from the stream file."""
    stream = csrbench.write_stream(tmp_path / "stream.nq")
    assert main(["evaluate", str(csrbench.query_path("q1")), "--stream", f"{csrbench.STREAM}={stream}",
                 "--store", store_url, "--output", str(tmp_path / "out.jsonl")]) == 0
    engine = db.engine(store_url)
    with engine.connect() as conn:
        frame, close = conn.execute(select(Frame.frame_iri, StoredResult.window_close)
                                    .join(StoredResult, StoredResult.frame_id == Frame.id)
                                    .order_by(StoredResult.window_close.desc()).limit(1)).one()
    close = as_utc(close)
    parts = read_stream_file(stream, csrbench.STREAM).parts
    scope = {p.frame for p in parts if close - timedelta(seconds=10) <= p.ts < close}
    assert scope and len(scope) < len({p.frame for p in parts})  # the window sees part of the stream
    return engine, frame, scope


def test_provenance_is_prov_o_that_parses_back(evaluated, capsys):
    engine, frame, scope = evaluated
    graph = prov_graph(engine, frame)
    result = URIRef(frame)
    evaluation = graph.value(result, PROV.wasGeneratedBy)
    assert (evaluation, RDF.type, PROV.Activity) in graph
    used = set(graph.objects(evaluation, PROV.used))
    # exactly the frames of its window, not every frame the run read (34)
    assert {str(u) for u in used} == scope and set(graph.objects(result, PROV.wasDerivedFrom)) == used
    plan = graph.value(graph.value(evaluation, PROV.qualifiedAssociation), PROV.hadPlan)
    assert (plan, RDF.type, PROV.Plan) in graph
    ingest = graph.value(next(iter(used)), PROV.wasGeneratedBy)
    assert graph.value(ingest, URIRef("urn:rsp:ns:kind")).toPython() == "ingest"
    assert graph.value(evaluation, PROV.startedAtTime) is not None
    for fmt, parse in (("turtle", "turtle"), ("jsonld", "json-ld")):
        capsys.readouterr()
        assert main(["provenance", frame, "--format", fmt, "--store", str(engine.url.render_as_string(False))]) == 0
        text = capsys.readouterr().out
        assert len(Graph().parse(data=text, format=parse)) == len(graph)


def test_the_default_is_a_summary_of_the_activities_in_time_order_and_depth_limits_it(evaluated, capsys):
    engine, frame, scope = evaluated
    url = str(engine.url.render_as_string(False))
    steps = lineage(engine, frame)
    ingests = [s for s in steps if s.activity.kind == "ingest"]
    assert ingests and len(steps) == len(ingests) + 1
    capsys.readouterr()
    assert main(["provenance", frame, "--store", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{len(steps)} activities ({len(ingests)} ingest, 1 window_evaluation), 1 input file(s)"
    assert len(lines) == 1 + len(steps) and "window_evaluation" in lines[-1]  # the evaluation came last
    assert f"used {len(scope)} frame(s), 1 query(s); generated 1 frame(s)" in lines[-1] and "stream.nq" in lines[1]
    assert [s.activity.kind for s in lineage(engine, frame, depth=1)] == ["window_evaluation"]
    shallow = prov_graph(engine, frame, depth=1)
    assert len(shallow) < len(prov_graph(engine, frame))
    assert not any(shallow.triples((None, URIRef("urn:rsp:ns:kind"), Literal("ingest"))))
    assert main(["provenance", frame, "--store", url, "--depth", "0"]) == 2


def test_audit_finds_unchanged_inputs_then_a_tampered_frame_and_reevaluates(evaluated):
    engine, frame, scope = evaluated
    report = audit(engine, frame)
    assert report.checked == len(scope) and report.inputs_unchanged
    again = reevaluate(engine, report)  # not registered: rsp evaluate's defaults, as it was evaluated
    assert again.same and again.stored["bindings"] and (again.t0_us, again.entailment) == (0, "simple")
    with engine.begin() as conn:
        outside = conn.execute(select(FrameTriple.frame_id, FrameTriple.s, FrameTriple.p).join(
            Frame, Frame.id == FrameTriple.frame_id).where(Frame.frame_iri.not_in(scope), Frame.frame_iri.startswith(csrbench.STREAM)).limit(1)).one()
        conn.execute(update(FrameTriple).where(FrameTriple.frame_id == outside.frame_id, FrameTriple.s == outside.s,
                                               FrameTriple.p == outside.p).values(o='"tampered"'))
    assert audit(engine, frame).inputs_unchanged  # a frame outside the window is not its input
    with engine.begin() as conn:
        victim = conn.execute(select(FrameTriple.frame_id, FrameTriple.s, FrameTriple.p).join(
            Frame, Frame.id == FrameTriple.frame_id).where(Frame.frame_iri.in_(scope)).limit(1)).one()
        conn.execute(update(FrameTriple).where(FrameTriple.frame_id == victim.frame_id, FrameTriple.s == victim.s,
                                               FrameTriple.p == victim.p).values(o='"tampered"'))
    report = audit(engine, frame)
    assert not report.inputs_unchanged and len(report.changed) == 1


def test_a_frame_is_named_by_any_lexical_form_of_its_instant(evaluated, capsys):
    """What every output prints (``…:40Z``), an offset, or milliseconds written out (``….000Z``,
    as result frames were named before): each names the same stored frame for `rsp provenance`
    and `rsp audit`."""
    engine, frame, _ = evaluated
    url = str(engine.url.render_as_string(False))
    stream, _, written = frame.rpartition("/frame/")
    moment = datetime.fromisoformat(written.replace("Z", "+00:00"))
    forms = [moment.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
             (moment.astimezone(timezone(timedelta(hours=2)))).isoformat(),
             moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "+00:00"]
    assert written not in forms
    capsys.readouterr()
    assert main(["provenance", frame, "--store", url]) == 0
    expected = capsys.readouterr().out
    for form in forms:
        assert stored_iri(engine, f"{stream}/frame/{form}") == frame
        assert main(["provenance", f"{stream}/frame/{form}", "--store", url]) == 0
        assert capsys.readouterr().out == expected
        assert main(["audit", f"{stream}/frame/{form}", "--store", url]) == 0
        assert "all unchanged" in capsys.readouterr().out
    assert stored_iri(engine, f"{stream}/frame/not-a-time") == f"{stream}/frame/not-a-time"
    assert main(["provenance", f"{stream}/frame/1999-01-01T00:00:00Z", "--store", url]) == 2
