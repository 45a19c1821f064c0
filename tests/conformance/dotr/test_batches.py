"""Exactly once across micro-batches, for every operator (DOTR §2, Fig. 2: a sliding window
reports a detection twice, a tumbling one splits and misses it; a rule bounded by its scopes
reports each match once, in the batch that holds its time).

One rule uses every operator of §3 (a Datalog rule, last, first and each within, not between
and within, aggregates between and within, FILTERs reading the trigger, consuming, equal
solutions as distinct facts) over a generated stream, cut into
batches three ways. Each batch reads what a DAG run reads (from its start minus the rule's bound)
and starts from what earlier batches consumed; every batch is checked against the brute force
over the whole stream, and the batches together must give what one run gives.
"""
from __future__ import annotations

import random

import pytest

from tests.conformance.dotr import brute_force as ref
from tests.conformance.dotr.support import at, instants, outputs, rule, run, triples

RULE = """:area(?x, ?a) :- :by(?x, ?s), :in(?s, ?a).
define Alarm = [dotr_id1 :last ?l; :first ?f; :each ?e; :n ?n; :top ?top]
from S = [SELECT ?a WHERE { ?x rdf:type :Smoke. ?x :area ?a }]
and last L = [SELECT ?a ?v WHERE { ?x rdf:type :Temp. ?x :area ?a. ?x :val ?v. FILTER (?a = S.?a && ?v > 45) }]
    within 6 min from S
and first F = [SELECT ?a ?v WHERE { ?x rdf:type :Temp. ?x :area ?a. ?x :val ?v. FILTER (?a = S.?a) }]
    within 8 min from S
and each E = [SELECT ?a ?v WHERE { ?x rdf:type :Temp. ?x :area ?a. ?x :val ?v. FILTER (?a = S.?a && ?v > 45) }]
    within 4 min from S
and not R = [SELECT ?a WHERE { ?x rdf:type :Rain. ?x :area ?a. FILTER (?a = S.?a) }] between F and S
and not Q = [SELECT ?a WHERE { ?x rdf:type :Rain. ?x :area ?a. FILTER (?a != S.?a) }] within 3 min from S
and H = [SELECT ?a ?v WHERE { ?x rdf:type :Temp. ?x :area ?a. ?x :val ?v. FILTER (?a = S.?a) }]
with Alarm.?l = L.?v, Alarm.?f = F.?v, Alarm.?e = E.?v, Alarm.?n = count(H.?v between L and S),
     Alarm.?top = max(H.?v within 3 min from S)
consuming L, E
"""
SENSORS = ":s1 :in :a. :s2 :in :a. :s3 :in :b. :s4 :in :b."


def stream(seed: int = 7, minutes: int = 36) -> dict[float, str]:
    """An instant every minute, one or two observations each, by one of four sensors in two
    areas (the area only through the Datalog rule); then two equal readings of :a at 36 and
    two smokes of :a at 38: equal solutions, distinct facts (§4)."""
    rnd = random.Random(seed)
    out = {}
    for t in range(minutes):
        text = ""
        for i in range(rnd.choice([1, 1, 2])):
            kind = rnd.choice(["Smoke", "Smoke", "Temp", "Temp", "Temp", "Temp", "Temp", "Rain"])
            x = f":x{t}_{i}"
            text += f"{x} rdf:type :{kind}. {x} :by :s{rnd.randint(1, 4)}. "
            if kind == "Temp":
                text += f"{x} :val {rnd.randint(40, 60)}. "
        out[t] = text
    out[36] = ":y1 rdf:type :Temp. :y1 :by :s1. :y1 :val 55. :y2 rdf:type :Temp. :y2 :by :s2. :y2 :val 55."
    out[38] = ":z1 rdf:type :Smoke. :z1 :by :s1. :z2 rdf:type :Smoke. :z2 :by :s2."
    return out


# The one run over (-1, 40] has 14 matches: at 3, 7 (2), 10 (2), 18, 33 (3), 34 and 38 (4); rain
# of the other area blocks a smoke at 14 and one at 27; at 38 the first smoke takes the equal
# readings of 36 and three more (each), the second, equal smoke finds them used up. Without
# consuming there would be 19.
CUTS = {"borders-inside-scopes": [-1, 12.5, 37, 40], "borders-at-matches": [-1, 7, 33, 40]}
_WHOLE: dict = {}


def whole(spark):
    if not _WHOLE:
        _WHOLE["run"] = run(spark, rule(RULE), stream(), SENSORS, after=-1, until=40)
    return _WHOLE["run"]


def test_the_stream_needs_consumption_carried_across_a_border():
    """A guard on the data (brute force only): after the border at 7, a batch that did not
    start from what the first one consumed would match differently."""
    graphs, knowledge, r = instants(stream()), triples(SENSORS), rule(RULE)
    first, consumed = ref.evaluate(r, graphs, knowledge, at(-1), at(7))
    carried, _ = ref.evaluate(r, graphs, knowledge, at(7), at(40), frozenset(consumed))
    alone, _ = ref.evaluate(r, graphs, knowledge, at(7), at(40))
    assert consumed and ref.comparable(carried) != ref.comparable(alone)


@pytest.mark.parametrize("cuts", list(CUTS.values()), ids=list(CUTS))
def test_each_match_once_whatever_the_batches(spark, cuts):
    matches, consumed = whole(spark)
    assert len(matches) == 14 and consumed
    found, used = [], frozenset()
    for after, until in zip(cuts, cuts[1:]):
        batch, newly = run(spark, rule(RULE), stream(), SENSORS, after=after, until=until, consumed=used)
        found += batch
        used = used | newly
    assert outputs(found) == outputs(matches)
    assert sorted(m["facts"].items() for m in found) == sorted(m["facts"].items() for m in matches)
    assert used == consumed
