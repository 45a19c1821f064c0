"""Unbounded EP-SPARQL patterns across micro-batches: the partial matches that can still
complete are kept in the store (EP-SPARQL §4: ETALIS keeps its goals "over a period of time"
and computes complex events incrementally), read and updated by each batch, and the matches
of any cutting of the stream, re-runs and out-of-order runs included, are those one
evaluation over the whole stream gives. The reference is the brute-force evaluator written
from §3.2 (``tests/conformance/epsparql/brute_force.py``), not the engine's algebra."""
from __future__ import annotations

import os
import shutil
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# ------------------------------------------------------------- bounded patterns, random cuttings

SECOND = 1 / 86_400  # in days, the unit of ``stream`` and ``at``
BOUND = 'FILTER (getDURATION() < "PT10S"^^xsd:duration)'
BOUNDED = {  # "within 10 s", every operator
    "seq": f"SELECT ?c ?w ?v WHERE {{ ?c :q ?w }} SEQ {{ ?c :p ?v }} {BOUND}",
    "equals": f"SELECT ?c ?w ?v WHERE {{ ?c :q ?w }} EQUALS {{ ?c :p ?v }} {BOUND}",
    "optionalseq": f"SELECT ?c ?w ?v WHERE {{ ?c :q ?w }} OPTIONALSEQ {{ ?c :p ?v }} {BOUND}",
    "equalsoptional": f"SELECT ?c ?w ?v WHERE {{ ?c :q ?w }} EQUALSOPTIONAL {{ ?c :p ?v }} {BOUND}",
    "optional": f"SELECT ?c ?w ?v WHERE {{ ?c :q ?w OPTIONAL {{ ?c :p ?v }} {BOUND} }}",
    "join-union": f"SELECT ?c ?w ?v WHERE {{ {{ ?c :q ?w . ?c :p ?v }} UNION {{ ?c :r ?w }} {BOUND} }}",
}


@st.composite
def readings(draw):
    """Readings of two things at uneven seconds, several at one time, some gaps longer than the
    bound (an optional part then lies beyond it), each reading its own value."""
    rows, t = [], 0
    for value in range(draw(st.integers(3, 12))):
        t += draw(st.sampled_from([0, 0, 1, 4, 9, 15, 40]))
        rows.append((t * SECOND, draw(st.sampled_from([":c1", ":c2"])), draw(st.sampled_from([":p", ":q", ":r"])),
                     value))
    return stream(*rows)


@st.composite
def cuttings(draw, events):
    """Consecutive batches (after, until] over the stream, cut at random seconds."""
    last = round((max(e.t for e in events) - at(0)) / (SECOND * DAY_US)) + 1
    cuts = sorted(set(draw(st.lists(st.integers(0, last), max_size=5))))
    borders = [-1, *cuts, last]
    return [(a * SECOND, b * SECOND) for a, b in zip(borders, borders[1:]) if a < b]


DAY_US = 86_400_000_000


@pytest.mark.parametrize("name", sorted(BOUNDED))
@settings(max_examples=int(os.environ.get("RSP_STRESS", 3)), deadline=None, derandomize=not os.environ.get("RSP_STRESS"),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_a_bounded_pattern_reports_in_batches_what_one_run_gives(spark, tmp_path_factory, name, data):
    """EP-SPARQL 3.2: OPTIONALSEQ reports a right-hand part alone only if no compatible left part
    ended before it, however long before (the duration bound filters the combined match, it does
    not make an older left part absent); OPTIONAL likewise. A batch reading back only the bound
    would report such a part alone; any cutting must give what one run gives."""
    events = data.draw(readings())
    cutting = data.draw(cuttings(events))
    tmp = tmp_path_factory.mktemp("bounded")
    lake = Lake(tmp / "lake")
    lake.write(as_batch(events), batch_id="all")
    url = f"sqlite:///{tmp / 'store.sqlite'}"
    db.upgrade(url)
    query = compiler.compile(PREFIXES + BOUNDED[name].replace("WHERE", f"FROM STREAM <{STREAM}> WHERE", 1), "q.rsp")
    assert query.bound_us == 10_000_000
    want = comparable(sorted(ref.evaluate(query, events), key=_order))
    assert comparable(run_batches(query, lake, db.engine(url), cutting)) == want


@pytest.mark.parametrize("name", ["optionalseq", "optional"])
def test_a_left_part_beyond_the_bound_keeps_its_partner_from_being_reported_alone(spark, lake, store, tmp_path, name):
    """The reading at 0 s and its partner at 25 s make a match of 25 s, over the bound: one run
    reports nothing (the partner has a left part, so it is not alone). A batch from 20 s reads
    back only the bound, to 10 s, so without the kept partial matches it reported the partner
    alone."""
    events = stream((0, ":c1", ":q", 0), (25 * SECOND, ":c1", ":p", 1)) if name == "optionalseq" else \
        stream((0, ":c1", ":p", 0), (25 * SECOND, ":c1", ":q", 1))
    own = Lake(tmp_path / "lake")
    own.write(as_batch(events), batch_id="all")
    query = compiler.compile(PREFIXES + BOUNDED[name].replace("WHERE", f"FROM STREAM <{STREAM}> WHERE", 1), "q.rsp")
    assert ref.evaluate(query, events) == []
    assert run_batches(query, own, store, [(-1, 20 * SECOND), (20 * SECOND, 30 * SECOND)]) == []
