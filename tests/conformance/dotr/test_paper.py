"""DOTR (Margara, Cugola, Collavini, Dell'Aglio, ESWC 2018): the rules the paper prints, as
printed, over the data it describes, with the answers worked out by hand from §3's
definitions and written beside each case; the engine and the brute-force evaluator
(``brute_force.py``) must both give them.

"As printed" is the text copied from the paper; before it go only the PREFIX lines the paper
leaves out (``support.PREFIXES``). Datalog rules go in the rule file's header, before
``define`` (``language/datalog.py``). The paper's instants are plain numbers (``@ 10``); read as
minutes here (§3's rule speaks of "5 min"), as seconds for §5's benchmark ("one graph per
second", "within 30s").
"""
from __future__ import annotations

import pytest

from rsp_jobs.errors import QuerySyntaxError
from tests.conformance.dotr.support import SECOND, at, outputs, rule, run

# §3, "The DOTR Data and Rule Model": Rule R as printed.
RULE_R = """Rule R
define Fire = [dotr_id1 rdf:type :Fire. dotr_id1 :at_room ?room ]
from Smoke = [SELECT ?read1 ?room1 WHERE
{ ?read1 rdf:type :Smoke. ?read1 :is_from_sensor ?sens1.
?sens1 :is_in_room ?room1 }
] and last HighTemp = [SELECT ?read2 ?room2 WHERE
{ ?read2 rdf:type :Temp. ?read2 :is_from_sensor ?sens2.
?sens2 :is_in_room ?room2. ?read2 :has_val ?v.
FILTER (?v > 60 && ?room2 = Smoke.?room1). }
] within 5 min from Smoke
with Fire.?room = Smoke.?room1
consuming HighTemp
"""
# §3, the worked example: the inference rule and the background knowledge, as printed.
DATALOG_R = ":is_in_room(?A,?B) :- :is_at_location(?A,?C), :is_in_room(?C,?B).\n"
KNOWLEDGE_R = ":locA :is_in_room :roomA. :locB :is_in_room :roomA."
EXAMPLE_R = {
    10: ":r1 rdf:type :Temp. :r1 :has_val 70. :r1 :is_from_sensor :s1. :s1 :is_at_location :locA.",
    12: ":r2 rdf:type :Smoke. :r2 :is_from_sensor :s2. :s2 :is_at_location :locB.",
}
FIRE_AT_ROOM_A = ["_:new/dotr_id1 :at_room :roomA .", "_:new/dotr_id1 rdf:type :Fire ."]


def test_rule_r_derives_fire_at_12_in_room_a_with_its_datalog_rule_as_printed(spark):
    """§3: "DOTR combines it with the background knowledge to derive: :s1 :is_in_room :roomA.
    Thus the HighTemp SPARQL query produces one result with ?read2=:r1 and ?room2=:roomA [...]
    DOTR derives: :s2 :is_in_room :roomA. Thus the Smoke SPARQL query produces one result with
    ?read1=:r2 and ?room1=:roomA. These two facts, derived at time 10 and 12, satisfy all the
    constraints in Rule R [...] { dotr:id1234 rdf:type :Fire. dotr:id1234 :at_room :roomA } @ 12".
    The room comes from the Datalog rule (the sensors' locations are in the stream, the rooms
    of locations in the background), not from RDFS. HighTemp is consumed. (§4 names the two
    events `Smoke@10(read1=':r1',...)` and `HighTemp@12(read2=':r2',...)`, swapping §3's: the
    paper contradicts itself; §3's reading is the one its queries give, :r1 being a :Temp.)"""
    matches, consumed = run(spark, rule(DATALOG_R + RULE_R), EXAMPLE_R, KNOWLEDGE_R)
    assert outputs(matches) == [(12, FIRE_AT_ROOM_A)]
    assert [m["facts"]["HighTemp"] for m in matches] == sorted(consumed) and len(consumed) == 1
    assert consumed.pop().startswith("HighTemp@")
    # without the inference rule no sensor is in a room: neither query has a solution
    assert run(spark, rule(RULE_R), EXAMPLE_R, KNOWLEDGE_R) == ([], set())


def test_rule_r_consumes_high_temp_and_its_filter_relates_the_rooms(spark):
    """Rule R over a longer stream (§3: "the consuming clause marks events that are consumed by
    the rule and cannot be used in subsequent evaluations of the same rule"; HighTemp's FILTER
    requires ?v > 60 and its room to be Smoke's). Worked by hand, times in minutes:
    12: fires with :r1 (70, roomA, at 10) and consumes it;
    13: smoke in roomA, :r1 is used up: nothing;
    15: smoke in roomA, the only other reading (:r4 at 14) is in roomB: nothing;
    16: smoke in roomB: fires with :r4;
    18: smoke in roomA, :r7 (55 at 17) fails ?v > 60: nothing;
    25: smoke in roomA: :r9 (61 at 19) is 6 minutes before, :r11 (62 at 20) exactly 5 (within 5
        min holds t >= t_Smoke - 5 min): fires with :r11, the last one in scope;
    26: smoke in roomA: :r11 is used up, :r9 out of scope: nothing.
    Each output graph has its own fresh dotr_id1."""
    stream = {**EXAMPLE_R,
              13: ":r3 rdf:type :Smoke. :r3 :is_from_sensor :s2. :s2 :is_at_location :locB.",
              14: ":r4 rdf:type :Temp. :r4 :has_val 65. :r4 :is_from_sensor :s3. :s3 :is_at_location :locC.",
              15: ":r5 rdf:type :Smoke. :r5 :is_from_sensor :s2. :s2 :is_at_location :locB.",
              16: ":r6 rdf:type :Smoke. :r6 :is_from_sensor :s4. :s4 :is_at_location :locC.",
              17: ":r7 rdf:type :Temp. :r7 :has_val 55. :r7 :is_from_sensor :s1. :s1 :is_at_location :locA.",
              18: ":r8 rdf:type :Smoke. :r8 :is_from_sensor :s2. :s2 :is_at_location :locB.",
              19: ":r9 rdf:type :Temp. :r9 :has_val 61. :r9 :is_from_sensor :s1. :s1 :is_at_location :locA.",
              20: ":r11 rdf:type :Temp. :r11 :has_val 62. :r11 :is_from_sensor :s1. :s1 :is_at_location :locA.",
              25: ":r10 rdf:type :Smoke. :r10 :is_from_sensor :s2. :s2 :is_at_location :locB.",
              26: ":r12 rdf:type :Smoke. :r12 :is_from_sensor :s2. :s2 :is_at_location :locB."}
    matches, consumed = run(spark, rule(DATALOG_R + RULE_R), stream, KNOWLEDGE_R + " :locC :is_in_room :roomB.")
    assert outputs(matches) == [(12, FIRE_AT_ROOM_A), (16, ["_:new/dotr_id1 :at_room :roomB .",
                                                            "_:new/dotr_id1 rdf:type :Fire ."]),
                                (25, FIRE_AT_ROOM_A)]
    used = [dict(m["facts"])["HighTemp"] for m in matches]
    assert sorted(used) == sorted(consumed) and len(set(used)) == 3
    fresh = {line.split(" ")[0] for m in matches for line in m["triples"]}
    assert len(fresh) == 3 and all(f.startswith("<urn:rsp:rule:Fire/match/") and f.endswith("/dotr_id1>")
                                   for f in fresh)


# §5, "Default Scenario": the benchmark rule as printed; X is the value "used in the FILTER
# clause" that differs between the ten rules (here 50).
BENCHMARK = """define CE = [dotr_id1 :has_val ?num.]
from A = [SELECT ?sensorA ?valA ?roomA WHERE
          { ?sensorA :read_valA ?valA. ?sensorA :is_in_room ?roomA.
            FILTER(?valA>X) } ] and last
      B = [SELECT ?sensorB ?valB ?roomB WHERE
          { ?sensorB :read_valB ?valB. ?sensorB :is_in_room ?roomB.
            FILTER(?valB>X && ?roomB=A.?roomA) } ] within 30s from A
with CE.?num = A.?valA
"""
# §5: "Datalog rule `:is_in_room(?S, ?R) :- :equips(?S, ?O), :placed_in(?O, ?R).` determines
# the room each sensor is in"; the background has ":sensorS :equips :objectO . :objectO
# :placed_in :roomX . :roomR :number R", five rooms, two objects per room. Here sensor K equips
# object K, placed in room ceil(K/2).
DATALOG_5 = ":is_in_room(?S, ?R) :- :equips(?S, ?O), :placed_in(?O, ?R).\n"
KNOWLEDGE_5 = " ".join(f":sensor{k} :equips :object{k} . :object{k} :placed_in :room{(k + 1) // 2} ."
                       for k in range(1, 11)) + " " + " ".join(f":room{r} :number {r} ." for r in range(1, 6))


def test_the_benchmark_rule_of_section_5_as_printed(spark):
    """One triple per graph, one graph per second (§5). A fires on a :read_valA above 50 and
    takes the last :read_valB above 50 of the same room in the 30 s before it. By hand:
    10 s: sensor2 (room1) reads 80; the last B of room1 in [-20, 10) is sensor1's 60 at 0: CE 80;
    20 s: sensor4 (room2) reads 90; B of room2 in [-10, 20): sensor3 at 5: CE 90;
    40 s: sensor1 (room1) reads 85; B of room1 in [10, 40): sensor2 at 31, sensor1 at 33,
          the last is at 33: CE 85;
    45 s: sensor5 (room3), no B of room3: nothing; 50 s: sensor4 reads 40, not above 50: no A;
    62 s: sensor5 (room3) reads 66; sensor6's 45 at 60 is not above 50: nothing;
    71 s: sensor3 (room2) reads 55; room2's last B was at 5: nothing."""
    stream = {0: ":sensor1 :read_valB 60.", 5: ":sensor3 :read_valB 70.", 10: ":sensor2 :read_valA 80.",
              20: ":sensor4 :read_valA 90.", 31: ":sensor2 :read_valB 65.", 33: ":sensor1 :read_valB 75.",
              40: ":sensor1 :read_valA 85.", 45: ":sensor5 :read_valA 95.", 50: ":sensor4 :read_valA 40.",
              60: ":sensor6 :read_valB 45.", 62: ":sensor5 :read_valA 66.", 71: ":sensor3 :read_valA 55."}
    r = rule(DATALOG_5 + BENCHMARK.replace("X", "50"), "benchmark.dotr")
    assert r.bound_us == 30 * SECOND
    matches, _ = run(spark, r, stream, KNOWLEDGE_5, unit=SECOND)
    assert outputs(matches, SECOND) == [(t, [f"_:new/dotr_id1 :has_val \"{v}\"^^xsd:integer ."])
                                        for t, v in ((10, 80), (20, 90), (40, 85))]
    assert [m["facts"]["B"].split("#")[0] for m in matches] == [f"B@{at(t, SECOND)}" for t in (0, 5, 33)]


SOLUTIONS = """define Alarm = [dotr_id1 rdf:type :Alarm. dotr_id1 :in ?room ]
from S = [SELECT SMOKE_PROJECTION WHERE { ?s rdf:type :Smoke. ?s :in ?room }]
and last T = [SELECT TEMP_PROJECTION WHERE { ?t rdf:type :Temp. ?t :in ?room }] within 5 min from S
with Alarm.?room = S.?room, S.?room = T.?room
consuming T
"""


@pytest.mark.parametrize("distinct", [False, True], ids=["bag", "distinct"])
def test_each_solution_of_an_instant_is_a_fact_unless_the_query_says_distinct(spark, distinct):
    """§4: "For each query RDFox generates zero, one, or more facts of interests. [...] Each
    fact of interest f gives rise to a new TESLA event"; §3: each solution mapping produced at
    t is "a logic predicate that is true at time t". Two smoke readings in roomA at 2 are two
    solutions ?room = :roomA, so two facts and two Alarms; two temperature readings in roomA at
    1 are two facts, and the second smoke (the `last` of its instant after the first consumed
    its T) takes the other one. SELECT DISTINCT merges them: one smoke fact, one Alarm."""
    projection = "DISTINCT ?room" if distinct else "?room"
    text = SOLUTIONS.replace("SMOKE_PROJECTION", projection).replace("TEMP_PROJECTION", projection)
    stream = {1: ":t1 rdf:type :Temp. :t1 :in :roomA. :t2 rdf:type :Temp. :t2 :in :roomA.",
              2: ":s1 rdf:type :Smoke. :s1 :in :roomA. :s2 rdf:type :Smoke. :s2 :in :roomA."}
    matches, consumed = run(spark, rule(text), stream)
    alarm = ["_:new/dotr_id1 :in :roomA .", "_:new/dotr_id1 rdf:type :Alarm ."]
    assert outputs(matches) == [(2, alarm)] * (1 if distinct else 2)
    assert len(consumed) == (1 if distinct else 2)
    if not distinct:  # equal solutions, distinct facts: the second copy's key says so
        assert sorted(k.rsplit("#", 1)[1].count(".") for k in consumed) == [0, 1]


RAIN = "[SELECT ?r WHERE { ?r rdf:type :Rain }]"


@pytest.mark.parametrize("text, where, message", [
    (":is_in_room(?A, ?B) :- :is_at_location(?A, ?C).\n" + RULE_R, "5:17", "?B of the head occurs in no body atom"),
    (RULE_R.replace("?v > 60 && ?room2", "?v > 60 || ?room2"), "13:9", "?v is not selected by HighTemp"),
    (RULE_R.replace("?sens2 :is_in_room ?room2.",
                    "OPTIONAL { ?sens2 :is_in_room ?room2 FILTER (?room2 = Smoke.?room1) }"),
     "12:", "only in a FILTER of the event's top-level group"),
    (RULE_R.replace("consuming HighTemp", f"and not Rain = {RAIN} between Rain and Smoke"),
     "", "unexpected"),  # `and` after `with`: negations come before `with`
    (RULE_R.replace("from Smoke\n", f"from Smoke\nand not Rain = {RAIN} between HighTemp and Fire\n"),
     "", "no selected event (the trigger, LAST, FIRST or EACH) is labelled 'Fire'"),
    # Rule T is TESLA's own syntax (attribute-value events), which DOTR replaces (§3)
    ("define Fire(room: string)\nfrom Smoke() and last Temperature(val>60, room=Smoke.room) within 5 min. from Smoke\n",
     "5:12", "unexpected"),
], ids=["unsafe-datalog", "filter-reads-unselected", "reference-outside-filter", "negation-after-with",
        "between-unknown", "tesla-rule-t"])
def test_errors_name_file_line_and_column(text, where, message):
    with pytest.raises(QuerySyntaxError) as err:
        rule(text, "queries/fire/fire.dotr")
    assert str(err.value).startswith(f"queries/fire/fire.dotr:{where}"), str(err.value)
    assert message in str(err.value), str(err.value)


def test_the_rule_grammar_has_no_lalr_conflicts(caplog):
    """The paper's syntax beside the older one (bracketed templates, captions, Datalog rules,
    `between`): lark would resolve a shift/reduce conflict silently, as a shift."""
    from lark import Lark

    from rsp_jobs.language.dotr import _GRAMMAR

    with caplog.at_level("DEBUG", logger="lark"):
        Lark.open(str(_GRAMMAR), parser="lalr", debug=True)
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]
