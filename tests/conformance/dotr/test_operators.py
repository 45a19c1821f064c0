"""DOTR's operators one by one (Margara et al., ESWC 2018, §3), each over a small stream built
to exercise it, the answer worked out by hand from §3's definitions (and the decisions
docs/decisions/dotr.md lists) and written beside the case; the engine and the brute-force
evaluator must both give it. Times are minutes; ``:a``, ``:b`` are areas.
"""
from __future__ import annotations

import pytest

from tests.conformance.dotr.support import outputs, rule, run


def temp(name: str, area: str, value: int) -> str:
    return f":{name} rdf:type :Temp. :{name} :area :{area}. :{name} :val {value}. "


def smoke(name: str, area: str) -> str:
    return f":{name} rdf:type :Smoke. :{name} :area :{area}. "


def rain(name: str, area: str) -> str:
    return f":{name} rdf:type :Rain. :{name} :area :{area}. "


SMOKE = "[SELECT ?area WHERE { ?s rdf:type :Smoke. ?s :area ?area }]"
TEMP = "[SELECT ?v ?area WHERE { ?t rdf:type :Temp. ?t :area ?area. ?t :val ?v. FILTER (?area = S.?area) }]"
RAIN = "[SELECT ?area WHERE { ?r rdf:type :Rain. ?r :area ?area. FILTER (?area = S.?area) }]"


def values(matches) -> list[tuple[float, str]]:
    """(time, the value the output graph carries) per match."""
    return [(t, next(line.split(" ")[2].split('"')[1] for line in lines if ":v " in line))
            for t, lines in outputs(matches)]


POLICY = f"""define Out = [dotr_id1 :v ?v]
from S = {SMOKE}
and POLICY T = {TEMP} within 5 min from S
with Out.?v = T.?v
"""


def test_last_first_and_each_select_in_the_five_minutes_before_the_trigger(spark):
    """§3 (TESLA): "The last selection modifier indicates that only the last occurrence [...]
    must be considered. Other selection modifiers include first and each. The latter triggers a
    different composite event for each Temperature event within five minutes before Smoke."
    Smoke in :a at 8; readings of :a at 2 (1), 3 (2), 5 (3) and 8 (6), of :b at 6 (5).
    ``within 5 min from S`` holds [3, 8): the reading at 3 (exactly 5 minutes before) counts,
    the one at 8 (the trigger's own instant, not before it) and the one at 2 do not; :b's is
    filtered out by the event's FILTER. So last → 3, first → 2, each → 2 and 3."""
    stream = {2: temp("t1", "a", 1), 3: temp("t2", "a", 2), 5: temp("t3", "a", 3), 6: temp("t5", "b", 5),
              8: smoke("s1", "a") + temp("t6", "a", 6)}
    found = {policy: values(run(spark, rule(POLICY.replace("POLICY", policy)), stream)[0])
             for policy in ("last", "first", "each")}
    assert found == {"last": [(8, "3")], "first": [(8, "2")], "each": [(8, "2"), (8, "3")]}


NEGATION = f"""define Fire = [dotr_id1 :v ?v]
from S = {SMOKE}
and last T = {TEMP} within 10 min from S
and not R = {RAIN} SCOPE
with Fire.?v = T.?v
"""


def test_negation_within_and_between(spark):
    """§3: "Negations declare events that must *not* occur in the scope". Each smoke in :a takes
    the last reading of :a in the 10 minutes before it (value = its time):
      5: reading 0, rain of :a at 2;           25: reading 20, rain of :a at 25 (with the smoke);
      45: reading 41, rain of :a at 40;        65: reading 60, rain of :b at 62;
      85: reading 80, rain of :a at 80 (with the reading).
    ``not R between T and S`` holds [t_T, t_S): rain at 2 and at 80 block, 25 (the smoke's own
    instant) and 40 (before T) do not, :b's is filtered out → fires at 25, 45, 65.
    ``not R within 3 min from S`` holds [t_S - 3, t_S): rain at 2 blocks (in [2, 5)), 80 is
    not in [82, 85) → fires at 25, 45, 65, 85."""
    stream = {0: temp("t0", "a", 0), 2: rain("r2", "a"), 5: smoke("s5", "a"),
              20: temp("t20", "a", 20), 25: smoke("s25", "a") + rain("r25", "a"),
              40: rain("r40", "a"), 41: temp("t41", "a", 41), 45: smoke("s45", "a"),
              60: temp("t60", "a", 60), 62: rain("r62", "b"), 65: smoke("s65", "a"),
              80: temp("t80", "a", 80) + rain("r80", "a"), 85: smoke("s85", "a")}
    between = run(spark, rule(NEGATION.replace("SCOPE", "between T and S")), stream)[0]
    within = run(spark, rule(NEGATION.replace("SCOPE", "within 3 min from S")), stream)[0]
    assert [t for t, _ in values(between)] == [25, 45, 65]
    assert [t for t, _ in values(within)] == [25, 45, 65, 85]


AGGREGATES = f"""define Hot = [dotr_id1 :avg ?avg; :sum ?sum; :count ?n; :min ?lo; :max ?hi]
from S = {SMOKE}
and first F = {TEMP} within 10 min from S
and H = {TEMP.replace("S.?area", "S.?area && ?v > 30")}
with Hot.?avg = avg(H.?v SCOPE), Hot.?sum = sum(H.?v SCOPE), Hot.?n = count(H.?v SCOPE),
     Hot.?lo = min(H.?v SCOPE), Hot.?hi = max(H.?v SCOPE), avg(H.?v SCOPE) > 50
"""


@pytest.mark.parametrize("scope, expected", [
    # [1, 6) holds 40, 60, 80 (the 20 at 1 fails ?v > 30; :b's 90 fails the area): avg 60 > 50
    ("within 5 min from S", [(6, {"avg": "60.0", "sum": "180", "count": "3", "min": "40", "max": "80"})]),
    # between F (the first reading of :a in [-4, 6): 20 at 1) and S: the same [1, 6); at 14, F
    # is the reading at 4 (the first in [4, 14)) and [4, 14) holds it alone: avg 80 > 50
    ("between F and S", [(6, {"avg": "60.0", "sum": "180", "count": "3", "min": "40", "max": "80"}),
                         (14, {"avg": "80.0", "sum": "80", "count": "1", "min": "80", "max": "80"})]),
], ids=["within", "between"])
def test_aggregates_over_a_scope(spark, scope, expected):
    """§3: "aggregates compute an aggregation function (such as sum or average) considering the
    values of an attribute for all the events that occur in the scope"; "a rule could constrain
    the average val of Temperature events observed in the 5 min before Smoke". Smoke in :a at 6
    and at 14 (within 5 min: nothing of :a in [9, 14), avg 0, not > 50, no Hot). Readings of :a at 1 (20 and
    40), 2 (60), 4 (80); of :b at 5 (90). SPARQL 18.5.1's types: the avg of integers is a
    decimal ("60.0", XSD's canonical form), their sum an integer."""
    stream = {1: temp("t1", "a", 20) + temp("t1b", "a", 40), 2: temp("t2", "a", 60), 4: temp("t4", "a", 80),
              5: temp("t5", "b", 90), 6: smoke("s6", "a"), 14: smoke("s14", "a")}
    matches, _ = run(spark, rule(AGGREGATES.replace("SCOPE", scope)), stream)
    got = [(t, {line.split(" ")[1][1:]: line.split(" ")[2].split('"')[1] for line in lines})
           for t, lines in outputs(matches)]
    assert got == expected


CONSUMING = f"""define Fire = [dotr_id1 :v ?v]
from S = {SMOKE}
and each T = {TEMP} within 10 min from S
with Fire.?v = T.?v
consuming T
"""


def test_consuming_uses_events_up_for_later_triggers_only(spark):
    """§3: "the consuming clause marks events that are consumed by the rule and cannot be used
    in subsequent evaluations of the same rule". Readings of :a at 1 and 3, smoke in :a at 5:
    `each` fires twice (both readings) and consumes both (decision: what the matches of one
    trigger consume is used up once that trigger has been evaluated, so its `each` matches do
    not take each other's). The smoke at 8 finds both used up: nothing; a reading at 9 and a
    smoke at 12: fires once, with it."""
    stream = {1: temp("t1", "a", 1), 3: temp("t3", "a", 3), 5: smoke("s5", "a"), 8: smoke("s8", "a"),
              9: temp("t9", "a", 9), 12: smoke("s12", "a")}
    matches, consumed = run(spark, rule(CONSUMING), stream)
    assert values(matches) == [(5, "1"), (5, "3"), (12, "9")]
    assert len(consumed) == 3


DATALOG = """:partOf(?x, ?z) :- :partOf(?x, ?y), :partOf(?y, ?z).
:Alarm(?x) :- :status(?x, "on").
define Found = [dotr_id1 :found ?x]
from S = [SELECT ?x WHERE { { ?x :partOf :d } UNION { ?x rdf:type :Alarm } }]
with Found.?x = S.?x
"""


def test_datalog_rules_run_to_a_fixpoint_per_instant(spark):
    """§3: "Ontological reasoning takes place at each point in time separately, combining the
    events happening at that time with the background knowledge"; the Datalog rules are closed
    to a least fixpoint (a recursive rule, a unary atom C(x) read as x rdf:type C, a literal).
    Background: :c :partOf :d, which "holds at any point in time" (§3): :c at every instant.
      1: a partOf b, b partOf c: a and b are part of :d too (two rounds: b, then a);
      2: e partOf a alone: a is part of nothing at 2 (the chain of 1 is not in the scope of 2);
      3: k :status "on": k is an :Alarm; m :status "off" is not."""
    stream = {1: ":a :partOf :b. :b :partOf :c.", 2: ":e :partOf :a.", 3: ':k :status "on". :m :status "off".'}
    matches, _ = run(spark, rule(DATALOG), stream, ":c :partOf :d.")
    assert [(t, line.split(" ")[2]) for t, lines in outputs(matches) for line in lines] == \
        [(1, ":a"), (1, ":b"), (1, ":c"), (2, ":c"), (3, ":c"), (3, ":k")]


WITH_RDFS = """ENTAILMENT REGIME
:inRoom(?s, ?r) :- :attachedTo(?s, ?o), :placedIn(?o, ?r).
:watches(?s, ?r) :- :Sensor(?s), :inRoom(?s, ?r).
define W = [dotr_id1 :sensor ?s; :room ?r]
from S = [SELECT ?s ?r WHERE { ?s :watches ?r. ?s :locatedIn ?r. ?s rdf:type :Located }]
with W.?s = S.?s, W.?r = S.?r
"""
ONTOLOGY = (":inRoom rdfs:subPropertyOf :locatedIn. :locatedIn rdfs:domain :Located. "
            ":Thermo rdfs:subClassOf :Sensor. :o1 :placedIn :r1. :o2 :placedIn :r2.")


@pytest.mark.parametrize("regime", ["rdfs", "rdfs++", "simple"])
def test_datalog_and_rdfs_close_together(spark, regime):
    """§3's ontological part with an RDFS regime beside the Datalog rules: one closure. At 1,
    :s1 is a :Thermo attached to :o1 (placed in :r1 in the background): Datalog derives :s1
    :inRoom :r1, RDFS its super-property :locatedIn and the domain's type :Located (what Datalog
    derived is entailed), RDFS makes :s1 a :Sensor and Datalog then derives :s1 :watches :r1
    (what RDFS entailed feeds the rules). :s2 at 2 is no Thermo: no :Sensor, no :watches.
    Without a regime nothing is :Located or a :Sensor: no fact."""
    stream = {1: ":s1 rdf:type :Thermo. :s1 :attachedTo :o1.", 2: ":s2 :attachedTo :o2."}
    matches, _ = run(spark, rule(WITH_RDFS.replace("REGIME", regime)), stream, ONTOLOGY)
    expected = [(1, ["_:new/dotr_id1 :room :r1 .", "_:new/dotr_id1 :sensor :s1 ."])]
    assert outputs(matches) == ([] if regime == "simple" else expected)
