"""Rules evaluated together (``engine.match_rules``, ``spark.dotr.evaluate_rules``) give each
rule what it gives alone, by DOTR's definitions: every rule's matches and consumed facts, in
one run and in batches that carry each rule's consumption, are the brute force's for that rule
alone over the whole stream.

The set mixes what one evaluation shares and what it must keep apart: two rules with the same
Datalog program share their instants and two event SELECTs (``share_events_across_rules``),
and both consume; a third rule reads the stream under RDFS entailment, a group of its own, and
declares the same labels (its facts' keys collide with the others' by design: each rule
consumes only for itself, DOTR §3 "subsequent evaluations of the same rule")."""
from __future__ import annotations

import pytest

from rsp_jobs.compiler import compile_rule_set
from rsp_jobs.spark.dotr import evaluate_rules
from tests.conformance.dotr import brute_force as ref
from tests.conformance.dotr.support import at, background, elements, instants, outputs, rule
from tests.conformance.dotr.test_batches import RULE, SENSORS, stream
from tests.support.batches import as_a_batch

PAIR = """:area(?x, ?a) :- :by(?x, ?s), :in(?s, ?a).
define Pair = [dotr_id1 :area ?a; :temp ?v]
from S = [SELECT ?a WHERE { ?x rdf:type :Smoke. ?x :area ?a }]
and each T = [SELECT ?a ?v WHERE { ?x rdf:type :Temp. ?x :area ?a. ?x :val ?v }] within 2 min from S
with S.?a = T.?a, ?a = S.?a, ?v = T.?v
consuming T
"""
RAINY = """ENTAILMENT rdfs
define Wet = [dotr_id1 :sensor ?s]
from S = [SELECT ?s WHERE { ?x rdf:type :Rain. ?x :by ?s }]
and last T = [SELECT ?s WHERE { ?x rdf:type :Temp. ?x :by ?s }] within 5 min from S
with S.?s = T.?s, ?s = S.?s
"""
CUTS = [-1, 7, 20.5, 33, 40]


def rules():
    return [rule(RULE, "all.dotr"), rule(PAIR, "pair.dotr"), rule(RAINY, "rainy.dotr")]


def together(spark, after: float, until: float, consumed) -> list:
    graphs = instants(stream())
    rule_set = compile_rule_set(rules())
    lo, hi = at(after), at(until)
    bound = max(r.bound_us for r in rule_set.rules)
    read = {t: g for t, g in graphs.items() if lo - bound <= t <= hi}
    bg, _ = background(SENSORS)
    with as_a_batch(spark, sum(len(g) for g in read.values())):
        return evaluate_rules(rule_set, elements(spark, read), [bg] * 3, lo, hi, consumed)


def alone(r, after: float, until: float, consumed):
    _, knowledge = background(SENSORS)
    return ref.evaluate(r, instants(stream()), knowledge, at(after), at(until), consumed, regime=r.entailment)


def test_the_set_shares_instants_and_an_event():
    rule_set = compile_rule_set(rules())
    assert [len(g.rules) for g in rule_set.groups] == [2, 1]
    across = [sorted({rule_set.rules[i].name for i, _ in e.uses}) for g in rule_set.groups for e in g.events
              if len({i for i, _ in e.uses}) > 1]
    # the smoke SELECT, and the temperature SELECT of F and H (their FILTERs on S are the
    # rule's conditions) and of Pair's T
    assert across == [["Alarm", "Pair"], ["Alarm", "Pair"]]


def test_each_rule_of_a_set_matches_as_it_does_alone(spark):
    got = together(spark, -1, 40, [frozenset()] * 3)
    for r, (matches, consumed) in zip(rules(), got):
        expected, expected_consumed = alone(r, -1, 40, frozenset())
        assert expected, f"{r.name} matches nothing: the test would not test it"
        assert ref.comparable([m.to_json() for m in matches]) == ref.comparable(expected)
        assert consumed == expected_consumed


def test_a_set_in_batches_carries_each_rules_consumption(spark):
    used = [frozenset()] * 3
    found: list[list] = [[], [], []]
    for after, until in zip(CUTS, CUTS[1:]):
        for i, (matches, newly) in enumerate(together(spark, after, until, used)):
            found[i] += [m.to_json() for m in matches]
            used[i] = used[i] | newly
    for r, matches, consumed in zip(rules(), found, used):
        expected, expected_consumed = alone(r, -1, 40, frozenset())
        assert outputs(matches) == outputs(expected), r.name
        assert consumed == expected_consumed


def test_rules_of_a_set_need_distinct_names():
    with pytest.raises(ValueError, match="Alarm given twice"):
        compile_rule_set([rule(RULE), rule(RULE)])
