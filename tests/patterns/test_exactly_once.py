"""Patterns report each match exactly once, whatever the micro-batches (DOTR, Margara et al.
2018, Fig. 2): a sliding window reports the pair ``x@8, y@9`` in two windows, a tumbling
window splits it and misses it, a pattern bounded by its duration reports it once, in the batch
that holds its end, however the batches are cut."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from rsp_jobs import compiler
from rsp_jobs.engine import Interval, evaluate, match
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch

EX = "http://example.org/fig2#"
STREAM = "http://example.org/fig2/stream"
S = 1_000_000  # µs per second
# x@2 and y@9 are 7 s apart, x@8 and y@14 6 s: only x@8, y@9 is a pair within 3 s.
EVENTS = [(2, "x2", "X"), (8, "x8", "X"), (9, "y9", "Y"), (14, "y14", "Y")]
PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    lake = Lake(tmp_path_factory.mktemp("fig2") / "lake")
    batch = StreamBatch(stream=STREAM, source="fig2")
    for second, name, kind in EVENTS:
        ts = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=second)
        batch.elements.append(Element(STREAM, ts, f"{STREAM}/frame/{second}", f"<{EX}{name}>",
                                      "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", f"<{EX}{kind}>",
                                      None, None))
    lake.write(batch, batch_id="fig2")
    return lake


def pairs_per_window(lake: Lake, window: str) -> list[tuple[str, list]]:
    query = compiler.compile(PREFIXES + f"SELECT ?x ?y FROM STREAM <{STREAM}> {window} "
                                     "WHERE { ?x a :X . ?y a :Y }")
    return [(w.window_close, [(b["x"]["value"], b["y"]["value"]) for b in w.bindings])
            for w in evaluate(query, lake) if w.bindings]


def test_a_sliding_window_reports_the_pair_twice_and_a_tumbling_one_misses_it(lake, spark):
    sliding = pairs_per_window(lake, "[RANGE 3s STEP 1s]")
    assert [pairs for _, pairs in sliding] == [[(EX + "x8", EX + "y9")]] * 2
    assert [close for close, _ in sliding] == ["1970-01-01T00:00:10Z", "1970-01-01T00:00:11Z"]
    assert pairs_per_window(lake, "[RANGE 3s TUMBLING]") == []


SEQ = PREFIXES + f"""REGISTER QUERY pair AS
SELECT ?x ?y FROM STREAM <{STREAM}>
WHERE {{ ?x a :X }} SEQ {{ ?y a :Y }} FILTER (getDURATION() < "PT3S"^^xsd:duration)"""
RULE = PREFIXES + f"""FROM STREAM <{STREAM}>
define Pair {{ [] a :Pair ; :x ?x ; :y ?y }}
from Y = [SELECT ?y WHERE {{ ?y a :Y }}]
and last X = [SELECT ?x WHERE {{ ?x a :X }}] within 3 s from Y
with ?x = X.?x, ?y = Y.?y
"""


def pairs(matches) -> list[tuple]:
    """(x, y, end) of EP-SPARQL bindings or of a rule's output triples."""
    out = []
    for m in matches:
        if m.bindings is not None:
            out.append((m.bindings["x"]["value"], m.bindings["y"]["value"], m.end))
        else:
            x = next(t.split(" ")[2] for t in m.triples if f"<{EX}x>" in t)
            y = next(t.split(" ")[2] for t in m.triples if f"<{EX}y>" in t)
            out.append((x.strip("<>"), y.strip("<>"), m.time))
    return out


@pytest.mark.parametrize("language", ["ep-sparql", "dotr"])
@pytest.mark.parametrize("cuts", [
    [0, 20],                      # one batch
    [0, 4, 8.5, 12.5, 16.5, 20],  # a border between the pair's two events
    [0, 9, 20],                   # a border exactly at the pair's end
], ids=["one-batch", "border-inside-the-pair", "border-at-its-end"])
def test_a_pattern_reports_the_pair_exactly_once_however_the_batches_are_cut(lake, spark, cuts, language):
    pattern = compiler.compile(SEQ) if language == "ep-sparql" else compiler.compile(RULE, "<fig2 rule>", "dotr")
    assert pattern.bound_us == 3 * S
    found = []
    for after, until in zip(cuts, cuts[1:]):
        found += pairs(match(pattern, lake, interval=Interval(int(after * S), int(until * S)))[0])
    assert found == [(EX + "x8", EX + "y9", "1970-01-01T00:00:09Z")]
