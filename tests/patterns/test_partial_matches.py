"""Unbounded EP-SPARQL patterns across micro-batches: the partial matches that can still
complete are kept in the store (EP-SPARQL §4: ETALIS keeps its goals "over a period of time"
and computes complex events incrementally), read and updated by each batch, and the matches
of any cutting of the stream, re-runs and out-of-order runs included, are those one
evaluation over the whole stream gives. The reference is the brute-force evaluator written
from §3.2 (``tests/conformance/epsparql/brute_force.py``), not the engine's algebra."""
from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from rsp_jobs.algebra.patterns import PartialMatches
from rsp_jobs import compiler
from rsp_jobs.engine import Interval, match
from rsp_jobs.ingest.lake import Lake, hour_of, stream_key
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
from rsp_jobs.store import db
from rsp_jobs.store.partials import load_partials, save_partials
from tests.conformance.epsparql import brute_force as ref
from tests.conformance.epsparql.support import EPOCH, EPOCH_US, PREFIXES, STREAM, at, stream

IRI = "urn:test:query"

# Readings of :x1..:x3 (kind A, a level) and alarms (kind B) spread over a week, several at one
# time, so that every operator's matches span batch borders.
EVENTS = stream(
    (0, ":x1", ":kind", ":A"), (0.5, ":x1", ":level", 3), (1, ":y1", ":kind", ":B"), (1, ":x1", ":level", 5),
    (2, ":x2", ":kind", ":A"), (2, ":x2", ":level", 7), (3.5, ":y2", ":kind", ":B"), (4, ":x1", ":kind", ":B"),
    (5, ":x3", ":kind", ":A"), (5, ":x3", ":level", 1), (6, ":y3", ":kind", ":B"), (6, ":x2", ":kind", ":B"),
    (6, ":x2", ":level", 8))

PATTERNS = {  # none has a duration bound
    "seq": "SELECT ?x ?y WHERE { ?x :kind :A } SEQ { ?y :kind :B }",
    "seq-seq": "SELECT ?x ?l ?y WHERE { ?x :kind :A } SEQ { ?x :level ?l } SEQ { ?y :kind :B }",
    "join-over-time": """SELECT ?x ?l WHERE { ?x :kind :A . ?x :level ?l
                         FILTER (getDURATION() >= "PT0S"^^xsd:duration) }""",
    "equals": "SELECT ?x ?l WHERE { ?x :kind :A } EQUALS { ?x :level ?l }",
    "optionalseq": "SELECT ?x ?y WHERE { ?x :kind :A } OPTIONALSEQ { ?y :kind :B }",
    "equalsoptional": "SELECT ?x ?l WHERE { ?x :kind ?k } EQUALSOPTIONAL { ?x :level ?l }",
    "optional": """SELECT ?x ?l WHERE { ?x :kind :B OPTIONAL { ?x :level ?l }
                   FILTER (getDURATION() >= "PT0S"^^xsd:duration) }""",
    "union-filter": """SELECT ?x WHERE { { ?x :kind :A } UNION { ?x :level ?l } } SEQ { ?y :kind :B }
                       FILTER (getDURATION() > "P1D"^^xsd:duration)""",
}

CUTTINGS = {  # batches (after, until] in days, run in this order
    "one-run": [(-1, 7)],
    "two-daily": [(d - 2, d) for d in range(1, 8, 2)],
    "uneven": [(-1, 0.5), (0.5, 1), (1, 3.9), (3.9, 4), (4, 7)],
    "re-run": [(-1, 2), (2, 4), (-1, 2), (2, 4), (4, 7)],
    "out-of-order": [(-1, 2), (4, 7), (2, 4)],
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    lake = Lake(tmp_path_factory.mktemp("partials") / "lake")
    lake.write(as_batch(EVENTS), batch_id="week")
    return lake


def as_batch(events) -> StreamBatch:
    batch = StreamBatch(stream=STREAM, source="partials")
    for e in events:
        batch.elements.append(Element(STREAM, EPOCH + timedelta(microseconds=e.t - EPOCH_US), e.frame,
                                      e.s, e.p, e.o, None, None))
    return batch


@pytest.fixture
def store(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    db.upgrade(url)
    return db.engine(url)


def run_batches(query, lake, store, cutting) -> list[dict]:
    """The matches each batch of ``cutting`` reports (a re-run replaces the earlier report of
    its interval), as the DAG task runs them: partial matches loaded, evaluated, stored."""
    reported: dict[tuple, list[dict]] = {}
    for after, until in cutting:
        partials = PartialMatches(*load_partials(store, IRI, "v1", at(after)))
        found, _ = match(query, lake, interval=Interval(at(after), at(until)), partials=partials)
        with store.begin() as conn:
            save_partials(conn, IRI, "v1", partials.cut_us, partials.produced, at(until))
        reported[(after, until)] = [m.to_json() for m in found]  # as the reference reports them
    return sorted((m for found in reported.values() for m in found), key=_order)


def _order(m: dict) -> tuple:
    return m["end_us"], m["start_us"], sorted((k, v["value"]) for k, v in m["bindings"].items()), m["events"]


def expected(query) -> list[dict]:
    got = ref.evaluate(query, EVENTS)
    return sorted(got, key=_order)


def comparable(matches: list[dict]) -> list[tuple]:
    return [_order(m) for m in matches]


CASES = [(name, "uneven") for name in PATTERNS] + [("seq-seq", c) for c in CUTTINGS if c != "uneven"] + [
    ("optionalseq", "out-of-order"), ("optional", "re-run")]


@pytest.mark.parametrize("name, cutting", CASES, ids=[f"{n}-{c}" for n, c in CASES])
def test_every_cutting_reports_what_one_evaluation_gives(spark, lake, store, name, cutting):
    """Every operator over an uneven cutting; one nested pattern over every cutting."""
    query = compiler.compile(PREFIXES + PATTERNS[name].replace("WHERE", f"FROM STREAM <{STREAM}> WHERE", 1), "q.rsp")
    assert query.bound_us is None
    want = comparable(expected(query))
    assert want, f"{name}: the stream should give the pattern some matches"
    assert comparable(run_batches(query, lake, store, CUTTINGS[cutting])) == want


def test_a_batch_reads_only_the_events_after_the_cut(spark, lake, store, tmp_path):
    """After the first batch, the lake's earlier hours are deleted: the later batches still
    find the matches whose first part lies there, from the kept partial matches alone."""
    query = compiler.compile(PREFIXES + PATTERNS["seq-seq"].replace("WHERE", f"FROM STREAM <{STREAM}> WHERE", 1))
    shutil.copytree(lake.root, tmp_path / "lake")
    copy = Lake(tmp_path / "lake")
    first = run_batches(query, copy, store, [(-1, 2.5)])
    for part in (copy.root / f"stream_key={stream_key(STREAM)}").iterdir():
        if part.name < f"hour={hour_of(EPOCH + timedelta(days=2.5))}":
            shutil.rmtree(part)
    assert copy.read(spark, [STREAM], end=EPOCH + timedelta(days=2.5)).count() == 0
    rest = run_batches(query, copy, store, [(2.5, 4), (4, 7)])
    assert comparable(first + rest) == comparable(expected(query))
    assert any(m["start_us"] < at(2.5) < m["end_us"] for m in rest)  # spans the deleted hours


def test_kept_partial_matches_belong_to_one_version_of_the_query(spark, lake, store):
    """Another version of the query (another plan key) starts over from the whole stream."""
    query = compiler.compile(PREFIXES + PATTERNS["seq"].replace("WHERE", f"FROM STREAM <{STREAM}> WHERE", 1))
    run_batches(query, lake, store, [(-1, 3)])
    assert load_partials(store, IRI, "v1", at(3))[0] == at(3)
    assert load_partials(store, IRI, "v2", at(3)) == (None, {})
    assert load_partials(store, IRI, "v1", at(1))[0] == at(1)  # a re-run reads only what it may
