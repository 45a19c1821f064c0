"""Registered patterns run as micro-batches like windowed queries: an EP-SPARQL query and a
DOTR rule with ``consuming`` give the same stored matches whether their stream is evaluated in
one run or in many consecutive runs, consumption surviving between runs in the store; a re-run
rewrites the same; each match's provenance names the frames it used; an unbounded pattern registers and keeps its
partial matches unless its ``.toml`` gives a retention."""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from rsp_jobs.errors import RspError
from rsp_jobs.orchestrate import registry, tasks
from rsp_jobs.orchestrate.ingest import ingest_file
from rsp_jobs.store import db
from rsp_jobs.store.models import Activity, ActivityUsed, ConsumedFact, StoredResult

pytestmark = pytest.mark.spark  # runs patterns on Spark

EX = "http://example.org/alarms#"
STREAM = "http://example.org/alarms/stream"
START = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)
PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
FIRE = PREFIXES + f"""FROM STREAM <{STREAM}>
define Fire {{ [] a :Fire ; :area ?area ; :temperature ?t }}
from S = [SELECT ?area WHERE {{ ?e a :Smoke ; :area ?area }}]
and last T = [SELECT ?area ?v WHERE {{ ?e a :Temperature ; :area ?area ; :value ?v }}] within 40 s from S
with S.?area = T.?area, T.?v > 45, ?area = S.?area, ?t = T.?v
consuming T
"""
RISE = PREFIXES + f"""REGISTER QUERY rise AS
SELECT ?area ?v1 ?v2 FROM STREAM <{STREAM}>
WHERE {{ ?a a :Temperature ; :area ?area ; :value ?v1 }}
SEQ {{ ?b a :Temperature ; :area ?area ; :value ?v2 }}
FILTER (?v2 > ?v1 + 10 && getDURATION() < "PT30S"^^xsd:duration)
"""
UNBOUNDED = PREFIXES + f"""REGISTER QUERY forever AS
SELECT ?area FROM STREAM <{STREAM}>
WHERE {{ ?a a :Smoke ; :area ?area }} SEQ {{ ?b a :Smoke ; :area ?area }}
"""


def stream_file(path, minutes: int = 10, seed: int = 5):
    """A frame every 5 s: temperatures and, now and then, smoke, in three areas."""
    rng = random.Random(seed)
    at = "<http://www.w3.org/ns/prov#generatedAtTime>"
    lines = []
    for k in range(minutes * 12):
        ts = START + timedelta(seconds=5 * k)
        frame = f"<{STREAM}/frame/{k}>"
        lines.append(f'{frame} {at} "{ts.isoformat().replace("+00:00", "Z")}"'
                     '^^<http://www.w3.org/2001/XMLSchema#dateTime> .')
        for i in range(rng.randint(1, 3)):
            e, area = f"<{EX}e{k}_{i}>", f"<{EX}area{rng.randrange(3)}>"
            kind = "Smoke" if rng.random() < 0.3 else "Temperature"
            lines.append(f"{e} <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}{kind}> {frame} .")
            lines.append(f"{e} <{EX}area> {area} {frame} .")
            if kind == "Temperature":
                lines.append(f'{e} <{EX}value> "{rng.randint(20, 70)}"'
                             f"^^<http://www.w3.org/2001/XMLSchema#integer> {frame} .")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def patterns(tmp_path, monkeypatch):
    root = tmp_path / "queries"
    (root / "alarms").mkdir(parents=True)
    (root / "alarms" / "fire.dotr").write_text(FIRE)
    (root / "alarms" / "rise.rsp").write_text(RISE)
    (root / "alarms" / "rise.toml").write_text('batch = "2m"\n')
    (root / "streams.toml").write_text(f'[streams.alarms]\niri = "{STREAM}"\n')
    monkeypatch.setenv("RSP_QUERIES_DIR", str(root))
    return root


def run_in_home(home, monkeypatch, data, intervals) -> dict:
    """Ingest ``data`` into a fresh home, run both patterns over ``intervals``; what is stored."""
    home.mkdir()
    monkeypatch.setenv("RSP_HOME", str(home))
    monkeypatch.setenv("RSP_STORE_URL", f"sqlite:///{home / 'store.sqlite'}")
    db.upgrade()
    ingest_file(data, registry.stream_config(STREAM))
    found = {}
    for rq in registry.discover()[0]:
        for after, until in intervals:
            tasks.evaluate_run(str(rq.path), after, until)
        found[rq.dag_id] = stored(rq.iri)
    return found


def stored(query_iri: str) -> dict:
    with db.engine().connect() as conn:
        results = [r.payload for r in conn.execute(select(StoredResult.payload).where(
            StoredResult.query_iri == query_iri).order_by(StoredResult.window_close))]
        consumed = sorted(r.fact_key for r in conn.execute(select(ConsumedFact.fact_key).where(
            ConsumedFact.query_iri == query_iri)))
    return {"results": results, "consumed": consumed}


def test_patterns_give_the_same_matches_in_one_run_as_in_many_and_consumption_holds_across_runs(
        tmp_path, patterns, monkeypatch, spark):
    data = stream_file(tmp_path / "alarms.nq")
    end = START + timedelta(minutes=10)
    whole = run_in_home(tmp_path / "one", monkeypatch, data, [(START - timedelta(seconds=1), end)])
    cuts = [START - timedelta(seconds=1)] + [START + timedelta(seconds=s) for s in (150, 290)] + [end]
    many = run_in_home(tmp_path / "many", monkeypatch, data, list(zip(cuts, cuts[1:])))

    fires, rises = whole["Fire"], whole["rise"]
    assert len(fires["results"]) >= 3 and len(rises["results"]) >= 3  # the stream exercises both
    fire_matches = sum(t.endswith(f"<{EX}Fire> .") for r in fires["results"] for t in r["triples"])
    assert fire_matches and len(fires["consumed"]) == fire_matches  # each fire consumed its reading
    assert many == whole

    # a re-run of a middle interval forgets and rewrites what its own matches consumed
    rq = next(q for q in registry.discover()[0] if q.kind == "rule")
    tasks.evaluate_run(str(rq.path), cuts[1], cuts[2])
    assert stored(rq.iri) == many["Fire"]

    # each match's activity used exactly the frames of its events
    with db.engine().connect() as conn:
        used = {r.entity_iri for r in conn.execute(
            select(ActivityUsed.entity_iri).join(Activity, Activity.id == ActivityUsed.activity_id)
            .where(Activity.query_iri == rq.iri, Activity.kind == "pattern_match",
                   ActivityUsed.entity_kind == "frame"))}
    assert used and all(iri.startswith(f"{STREAM}/frame/") for iri in used)


def test_an_unbounded_pattern_keeps_partial_matches_and_a_bad_retention_names_its_file(patterns):
    path = patterns / "alarms" / "forever.rsp"
    path.write_text(UNBOUNDED)
    assert registry.load_query(path).keeps_partials
    path.with_suffix(".toml").write_text('retention = "2h"\n')
    rq = registry.load_query(path)
    assert not rq.keeps_partials and rq.range_us == 2 * 3600 * 1_000_000
    path.with_suffix(".toml").write_text('retention = "soon"\n')
    with pytest.raises(RspError, match="retention") as err:
        registry.load_query(path)
    assert "forever.toml" in str(err.value)
    minus = patterns / "alarms" / "minus.rsp"  # MINUS: decided by events at any distance, before or after
    minus.write_text(PREFIXES + f"""REGISTER QUERY minus AS
SELECT ?area FROM STREAM <{STREAM}>
WHERE {{ ?a a :Smoke ; :area ?area MINUS {{ ?b :area ?area ; :value ?v }}
        FILTER (getDURATION() < "PT30S"^^xsd:duration) }}
""")
    with pytest.raises(RspError, match="MINUS in a registered EP-SPARQL pattern"):
        registry.load_query(minus)
    optional = patterns / "alarms" / "optional.rsp"  # OPTIONAL: decided when its match ends (docs/languages/ep-sparql.md)
    optional.write_text(PREFIXES + f"""REGISTER QUERY optional AS
SELECT ?area ?v FROM STREAM <{STREAM}>
WHERE {{ ?a a :Smoke ; :area ?area OPTIONAL {{ ?b :area ?area ; :value ?v }}
        FILTER (getDURATION() < "PT30S"^^xsd:duration) }}
""")
    assert registry.load_query(optional).dag_id == "optional"
    optional.unlink()
    loaded, errors = registry.discover()
    assert {path, minus} <= set(errors) and {q.dag_id for q in loaded} == {"Fire", "rise"}
