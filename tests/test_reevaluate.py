"""``rsp audit --reevaluate`` (``rsp_jobs.reevaluate``): a registered query's stored window is
evaluated again with the t0, entailment regime and background files its DAG run recorded, and
agrees; a tampered stored result and a changed background file are told apart; a pattern's
match is refused, naming the query."""
from __future__ import annotations

import hashlib
import re
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from rdflib import Literal, URIRef
from sqlalchemy import select, update

from rsp_jobs.cli import main
from rsp_jobs.errors import InputError
from rsp_jobs.ingest import csrbench
from rsp_jobs.orchestrate import registry, tasks
from rsp_jobs.orchestrate.ingest import ingest_landing
from rsp_jobs.reevaluate import reevaluate
from rsp_jobs.store import db
from rsp_jobs.store.lineage import RSPNS, audit, prov_graph
from rsp_jobs.store.models import Activity, ActivityUsed, Frame, StoredResult
from rsp_jobs.store.results import store_evaluation
from rsp_jobs.times import iso_ms
from rsp_jobs.results import WindowResult

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
T0 = EPOCH + timedelta(seconds=5)

# CSRBench's q1 with its observations typed by a class of the background schema: answers only
# under RDFS entailment (weather:TemperatureObservation rdfs:subClassOf ex:Reading)
QUERY = """REGISTER QUERY audit_hot_readings AS
PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
PREFIX weather: <http://knoesis.wright.edu/ssw/ont/weather.owl#>
PREFIX ex: <urn:test:audit#>
SELECT ?sensor ?obs
FROM STREAM <http://ex.org/streams/test> [RANGE 10s STEP 10s]
FROM <urn:test:audit:schema>
WHERE { ?obs a ex:Reading ; om-owl:observedProperty weather:_AirTemperature ; om-owl:procedure ?sensor ;
             om-owl:result ?res . ?res om-owl:floatValue ?value . FILTER(?value > 80) }
"""
SCHEMA = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<http://knoesis.wright.edu/ssw/ont/weather.owl#TemperatureObservation> rdfs:subClassOf <urn:test:audit#Reading> .
"""


@pytest.fixture
def registered(home, tmp_path, monkeypatch) -> registry.RegisteredQuery:
    """The query registered with t0 = 5 s and RDFS entailment, its schema a catalog background."""
    queries = tmp_path / "queries"
    (queries / "audit").mkdir(parents=True)
    (tmp_path / "schema.ttl").write_text(SCHEMA)
    (queries / "streams.toml").write_text(f'[background]\n"urn:test:audit:schema" = "{tmp_path / "schema.ttl"}"\n')
    (queries / "audit" / "hot_readings.rsp").write_text(QUERY)
    (queries / "audit" / "hot_readings.toml").write_text(f't0 = "{T0.isoformat()}"\nentailment = "rdfs"\n')
    monkeypatch.setenv("RSP_QUERIES_DIR", str(queries))
    return registry.load_query(queries / "audit" / "hot_readings.rsp")


def test_reevaluation_takes_the_recorded_settings_and_tells_a_tampered_result_and_a_changed_background(
        registered, data_dir, tmp_path, spark, capsys):
    landing = registry.stream_config(csrbench.STREAM).landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    shutil.copy(csrbench.write_stream(tmp_path / "stream.nq"), landing / "stream.nq")
    ingest_landing(csrbench.STREAM)
    run = tasks.evaluate_run(str(registered.path), EPOCH, EPOCH + timedelta(seconds=40))  # as the DAG runs it
    assert run.windows == 3  # closes at 15, 25 and 35 s: t0 + RANGE + k * STEP
    frame = f"{registered.output_stream}/frame/{iso_ms(35_000_000)}"
    engine = db.engine()

    report = audit(engine, frame)
    assert report.inputs_unchanged and report.evaluation_kind == "window_evaluation"
    again = reevaluate(engine, report)
    assert (again.t0_us, again.entailment, again.registered) == (5_000_000, "rdfs", registered.path)
    assert again.same and len(again.stored["bindings"]) == 6
    # what the store's re-evaluation used to assume, t0 at the epoch or simple entailment, differs
    assert not reevaluate(engine, report, t0_us=0).same
    assert not reevaluate(engine, report, entailment="simple").same

    capsys.readouterr()
    assert main(["audit", frame, "--reevaluate"]) == 0
    out = capsys.readouterr().out
    assert "all unchanged" in out and "same result" in out and "entailment rdfs" in out

    # the evaluation recorded what it ran with, the schema file as an entity with its checksum
    schema = tmp_path / "schema.ttl"
    assert (report.t0_us, report.entailment, report.background) == (5_000_000, "rdfs",
                                                                    [f"urn:test:audit:schema={schema}"])
    with engine.connect() as conn:
        used = conn.execute(select(ActivityUsed.entity_iri, ActivityUsed.checksum).join(
            Activity, Activity.id == ActivityUsed.activity_id).where(
            Activity.iri == run.activity, ActivityUsed.entity_kind == "background")).all()
    assert used == [(schema.as_uri(), hashlib.sha256(schema.read_bytes()).hexdigest())]
    # ... and re-evaluates with that, whatever the registered file says now
    registered.path.with_suffix(".toml").write_text('entailment = "simple"\n')
    again = reevaluate(engine, audit(engine, frame))
    assert again.same and again.recorded and (again.t0_us, again.entailment) == (5_000_000, "rdfs")

    # a changed background is reported as such: by the audit of the inputs, and by the re-evaluation
    original = schema.read_text()
    schema.write_text("# emptied\n")
    changed = audit(engine, frame)
    assert not changed.inputs_unchanged and not changed.changed and not changed.missing
    assert changed.background_changed == [(str(schema), used[0][1], hashlib.sha256(b"# emptied\n").hexdigest())]
    assert main(["audit", frame, "--reevaluate"]) == 1
    out = capsys.readouterr().out
    assert f"background changed: {schema}" in out
    assert "DIFFERENT result (with the background as it is now, changed since the evaluation)" in out
    schema.unlink()
    assert main(["audit", frame, "--reevaluate"]) == 2  # nothing to re-evaluate with: named
    assert f"the background file {schema} the evaluation used is gone" in capsys.readouterr().err
    schema.write_text(original)

    with engine.begin() as conn:  # the stored answer loses a row; its input frames stay as they were
        row = conn.execute(select(StoredResult.id, StoredResult.payload).join(Frame, Frame.id == StoredResult.frame_id)
                           .where(Frame.frame_iri == frame)).one()
        payload = dict(row.payload, bindings=row.payload["bindings"][1:])
        conn.execute(update(StoredResult).where(StoredResult.id == row.id).values(payload=payload))
    assert main(["audit", frame, "--reevaluate"]) == 1
    out = capsys.readouterr().out
    assert "all unchanged" in out and "DIFFERENT result" in out


def test_a_pattern_match_is_not_reevaluated_and_the_refusal_names_the_query(tmp_path, capsys):
    """The repository's congestion_rising pattern, with one stored match (no Spark needed)."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    db.upgrade(url)
    engine = db.engine(url)
    rq = registry.load_query(registry.queries_dir() / "traffic" / "congestion_rising.rsp")
    assert rq.kind == "pattern"
    end = iso_ms(1_407_000_000_000_000)
    match = WindowResult.from_json({"window_open": end, "window_close": end,
                                    "triples": ["<urn:test:a> <urn:test:b> <urn:test:c> ."]}, "CONSTRUCT")
    store_evaluation(engine, rq.query, [match], datetime.now(timezone.utc), kind="pattern_match", used_frames=[])
    frame = f"{rq.output_stream}/frame/{end}"
    report = audit(engine, frame)
    assert report.evaluation_kind == "pattern_match" and report.query_iri == rq.iri
    with pytest.raises(InputError, match=f"{rq.iri}: cannot re-evaluate a pattern's match"):
        reevaluate(engine, report)
    capsys.readouterr()
    assert main(["audit", frame, "--store", url, "--reevaluate"]) == 2
    captured = capsys.readouterr()
    assert "0 input frame(s) checked" in captured.out and rq.iri in captured.err


COUNT_QUERY = """REGISTER QUERY audit_reading_counts AS
PREFIX om-owl: <http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#>
SELECT (COUNT(?obs) AS ?n)
FROM STREAM <http://ex.org/streams/test> [RANGE 10s STEP 10s]
WHERE { ?obs om-owl:procedure ?sensor }
"""


def test_a_window_without_data_is_stored_under_every_close_and_reevaluated_alike(
        home, data_dir, tmp_path, monkeypatch, spark):
    """CSRBench's stream without its frames from 10 to 29 s: under ``report = "every-close"`` the
    window [15 s, 25 s) is stored with COUNT 0, the policy is recorded, and the re-evaluation
    reports it too."""
    queries = tmp_path / "queries"
    (queries / "audit").mkdir(parents=True)
    (queries / "audit" / "reading_counts.rsp").write_text(COUNT_QUERY)
    (queries / "audit" / "reading_counts.toml").write_text(f't0 = "{T0.isoformat()}"\nreport = "every-close"\n')
    monkeypatch.setenv("RSP_QUERIES_DIR", str(queries))
    counts = registry.load_query(queries / "audit" / "reading_counts.rsp")
    landing = registry.stream_config(csrbench.STREAM).landing_dir
    landing.mkdir(parents=True, exist_ok=True)
    lines = csrbench.write_stream(tmp_path / "stream.nq").read_text().splitlines(keepends=True)
    gap = re.compile(r"/frame/[12]\d> ")
    (landing / "stream.nq").write_text("".join(line for line in lines if not gap.search(line)))
    ingest_landing(csrbench.STREAM)
    run = tasks.evaluate_run(str(counts.path), EPOCH, EPOCH + timedelta(seconds=35))
    assert run.windows == 3  # closes at 15, 25 and 35 s; the one at 25 s holds no data
    engine = db.engine()
    empty = f"{counts.output_stream}/frame/{iso_ms(25_000_000)}"
    report = audit(engine, empty)
    assert report.report == "every-close"
    exported = prov_graph(engine, empty)
    assert (URIRef(run.activity), RSPNS.report, Literal("every-close")) in exported  # in the PROV-O record
    again = reevaluate(engine, report)
    assert again.same and again.recorded
    assert again.stored["bindings"] == [{"n": {"type": "literal", "value": "0",
                                               "datatype": "http://www.w3.org/2001/XMLSchema#integer"}}]
    # the recorded policy decides: an evaluation recorded before it, C-SPARQL's, reports no window at 25 s
    with engine.begin() as conn:
        conn.execute(update(Activity).where(Activity.iri == run.activity).values(report=None))
    assert not reevaluate(engine, audit(engine, empty)).same
