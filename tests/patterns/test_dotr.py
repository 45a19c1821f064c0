"""DOTR temporal rules (Margara et al., ESWC 2018): per-instant SELECT facts combined by
TESLA-like selection, negation, aggregates and consumption, checked against the brute-force
evaluator in ``dotr_reference.py`` on generated streams, on the Fire rule, across batches, and
with per-instant RDFS reasoning over a background ontology."""
from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from functools import cache

import pytest

from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.ingest.lake import Lake
from rsp_jobs.ingest.rdf_stream import Element, StreamBatch
from rsp_jobs.physical.statistics import LakeStatistics
from rsp_jobs.compiler import compile, compile_rule_set
from rsp_jobs.language.dotr import parse_rule
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.dotr import evaluate_rule, evaluate_rules
from tests.patterns import dotr_reference as ref
from tests.support.batches import as_a_batch

EX = "http://ex.org/"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
INT = "http://www.w3.org/2001/XMLSchema#integer"
GENERATED, FIRE, ONTO = EX + "stream/generated", EX + "stream/fire", EX + "stream/onto"
TWINS = EX + "stream/twins"
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T0_US = int(T0.timestamp() * 1_000_000)
SEC = 1_000_000
SEEDS = (11, 29)  # two streams, 200 s apart: one Spark job per rule covers both
SEED_SPAN = 200  # seconds between seeds' streams: more than any rule's bound

HEAD = f"PREFIX ex: <{EX}>\nFROM STREAM <{{stream}}>\n"
SMOKE = "[SELECT ?area WHERE { ?e a ex:Smoke ; ex:area ?area }]"
TEMP = "[SELECT ?area ?v WHERE { ?e a ex:Temp ; ex:area ?area ; ex:value ?v }]"
RAIN = "[SELECT ?area WHERE { ?e a ex:Rain ; ex:area ?area }]"


def num(v: int) -> str:
    return f'"{v}"^^<{INT}>'


def us(seconds: float) -> int:
    return T0_US + int(seconds * SEC)


# ------------------------------------------------------------------------------ streams

def generate(seed: int) -> list[tuple[float, list[tuple[str, str, int]]]]:
    """Frames ``(second, [(kind, area, value)])``: tens of events in two areas, some frames
    with two observations so that same-instant ties occur."""
    rnd = random.Random(seed)
    base = SEEDS.index(seed) * SEED_SPAN
    times = sorted(rnd.sample(range(0, 60), 30))
    frames = []
    for t in times:
        n = 2 if rnd.random() < 0.25 else 1
        obs = [(rnd.choice(["Smoke", "Temp", "Temp", "Rain"]), rnd.choice(["a1", "a2"]),
                rnd.randint(40, 60)) for _ in range(n)]
        frames.append((base + t, obs))
    return frames


def elements(stream: str, frames) -> list[Element]:
    out = []
    for t, obs in frames:
        frame = f"{stream}/f{int(t * 1000)}"
        ts = T0 + timedelta(microseconds=int(t * SEC))
        for i, (kind, area, value) in enumerate(obs):
            e = f"<{frame}/o{i}>"
            triples = [(e, RDF_TYPE, f"<{EX}{kind}>"), (e, f"<{EX}area>", f"<{EX}{area}>")]
            if kind == "Temp":
                triples.append((e, f"<{EX}value>", num(value)))
            out += [Element(stream, ts, frame, s, p, o, float(value) if o == num(value) else None, None)
                    for s, p, o in triples]
    return out


def reference_facts(frames) -> list[ref.Fact]:
    """What the rules' SELECTs extract per instant, computed without the engine."""
    facts = []
    for t, obs in frames:
        for kind, area, value in obs:
            a = f"<{EX}{area}>"
            if kind == "Smoke":
                facts.append(ref.fact("S", us(t), area=a))
            elif kind == "Rain":
                facts.append(ref.fact("R", us(t), area=a))
            else:
                facts.append(ref.fact("T", us(t), area=a, v=num(value)))
                facts.append(ref.fact("H", us(t), area=a, v=num(value)))
    return ref.numbered(facts)  # two equal observations of a frame are two facts


@pytest.fixture(scope="module")
def lake(tmp_path_factory, spark):
    lake = Lake(tmp_path_factory.mktemp("dotr") / "lake")
    generated = [f for seed in SEEDS for f in generate(seed)]
    for stream, frames in ((GENERATED, generated), (FIRE, FIRE_FRAMES), (ONTO, ONTO_FRAMES), (TWINS, TWIN_FRAMES)):
        batch = StreamBatch(stream=stream, source="generated")
        batch.elements.extend(elements(stream, frames))
        lake.write(batch, batch_id=stream.rsplit("/", 1)[-1])
    return lake


def run(lake, spark, text, after=None, until=None, consumed=frozenset(), background=None, stream=GENERATED):
    rule = compile(text.replace("{stream}", stream), "rule.dotr")
    start = None if after is None else T0 + timedelta(microseconds=after - rule.bound_us - T0_US)
    end = None if until is None else T0 + timedelta(microseconds=until - T0_US + 1)
    frame = lake.read(spark, rule.streams, start, end)
    with as_a_batch(spark, LakeStatistics(lake).rows(rule.streams, start, end)):
        found, consumed = evaluate_rule(rule, frame, background or Background(), after, until, consumed)
    return [m.to_json() for m in found], consumed  # the shape the brute-force reference gives


# ------------------------------------------------------------------------------ rules

def area(env):
    return env["S"]["area"] == env["T"]["area"]


def hot(env):
    return ref._number(env["T"]["v"]) > 45


def combined_rule(consuming: bool) -> tuple[str, ref.Spec]:
    """``last``, ``first`` and ``each`` in one rule (one Spark job checks all three), each
    with its own bound; with ``consuming`` each selected event is consumed."""
    text = (HEAD + "define Fire { [] a ex:Fire ; ex:area ?area ; ex:last L.?v ; ex:first F.?v }\n"
            f"from S = {SMOKE}\nand last L = {TEMP} within 5 s from S\n"
            f"and first F = {TEMP} within 8 s from S\nand each E = {TEMP} within 3 s from S\n"
            "with S.?area = L.?area, L.?v > 45, S.?area = F.?area, F.?v > 45,\n"
            "     S.?area = E.?area, E.?v > 45, ?area = S.?area\n" + ("consuming L, F, E\n" if consuming else ""))
    conditions = []
    for label in "LFE":
        conditions.append((("S", label), lambda env, l=label: env["S"]["area"] == env[l]["area"]))
        conditions.append(((label,), lambda env, l=label: ref._number(env[l]["v"]) > 45))
    spec = ref.Spec("S", positives=[("L", "last", 5 * SEC, "S"), ("F", "first", 8 * SEC, "S"),
                                    ("E", "each", 3 * SEC, "S")],
                    conditions=conditions, consumes=("L", "F", "E") if consuming else ())
    return text, spec


NEGATION_AGGREGATE = (HEAD + "define Alarm { [] a ex:Alarm ; ex:area S.?area ; ex:mean ?m }\n"
                      f"from S = {SMOKE}\nand each T = {TEMP} within 5 s from S\n"
                      f"and not R = {RAIN} within 3 s from S\nand H = {TEMP}\n"
                      "with S.?area = T.?area, T.?v > 45, R.?area = S.?area,\n"
                      "     ?m = avg(H.?v within 10 s from S), H.?area = S.?area,\n"
                      "     count(H.?v within 10 s from S) >= 2\n")
NEGATION_AGGREGATE_SPEC = ref.Spec(
    "S", positives=[("T", "each", 5 * SEC, "S")], negatives=[("R", 3 * SEC, "S")],
    aggregates=[("avg", "H", "v", 10 * SEC, "S"), ("count", "H", "v", 10 * SEC, "S")],
    conditions=[(("S", "T"), area), (("T",), hot),
                (("R", "S"), lambda env: env["R"]["area"] == env["S"]["area"]),
                (("H", "S"), lambda env: env["H"]["area"] == env["S"]["area"])],
    post=lambda env, values: values[1] >= 2)

CASES = {"policies": combined_rule(False), "policies+consuming": combined_rule(True)}


@cache
def generated_facts() -> tuple:
    facts = reference_facts([f for seed in SEEDS for f in generate(seed)])
    temps = [f for f in facts if f.label == "T"]
    return tuple(facts + [ref.Fact(label, f.t, f.bindings, f.copy) for label in "LFE" for f in temps])


def as_comparable(matches):
    return sorted((m["time_us"], sorted(m["facts"].items())) for m in matches)


_WHOLE: dict = {}


def whole(lake, spark, case):
    if case not in _WHOLE:
        _WHOLE[case] = run(lake, spark, CASES[case][0])
    return _WHOLE[case]


@pytest.mark.parametrize("case", sorted(CASES))
def test_selection_policies_match_brute_force_on_generated_streams(case, lake, spark):
    matches, consumed = whole(lake, spark, case)
    expected, expected_consumed = ref.evaluate(CASES[case][1], list(generated_facts()))
    assert len(expected) >= 5, "the generated streams must exercise the rule"
    assert as_comparable(matches) == sorted((t, sorted(keys.items())) for t, keys, _ in expected)
    assert consumed == expected_consumed
    for m in matches:  # the template is instantiated per match with a fresh node
        fresh = [line for line in m["triples"] if f"<{EX}Fire>" in line]
        assert len(fresh) == 1 and fresh[0].startswith("<urn:rsp:rule:Fire/match/")


def test_generated_streams_tell_the_policies_apart():
    """A guard on the data: each policy alone, with and without consumption, differs."""
    def alone(policy, consuming):
        spec = ref.Spec("S", positives=[("T", policy, 5 * SEC, "S")],
                        conditions=[(("S", "T"), area), (("T",), hot)], consumes=("T",) if consuming else ())
        return [tuple(sorted(k.items())) for _, k, _ in ref.evaluate(spec, list(generated_facts()))[0]]
    assert alone("last", False) != alone("first", False) != alone("each", False)
    assert alone("last", False) != alone("last", True) and alone("each", False) != alone("each", True)


def test_negation_and_aggregate_match_brute_force(lake, spark):
    matches, _ = run(lake, spark, NEGATION_AGGREGATE)
    expected, _ = ref.evaluate(NEGATION_AGGREGATE_SPEC, list(generated_facts()))
    without_negation, _ = ref.evaluate(replace(NEGATION_AGGREGATE_SPEC, negatives=[]), list(generated_facts()))
    assert expected and len(without_negation) > len(expected)
    assert as_comparable(matches) == sorted((t, sorted(keys.items())) for t, keys, _ in expected)
    means = {(t, tuple(sorted(keys.items()))): mean for t, keys, (mean, _) in expected}
    for m in matches:
        (line,) = [l for l in m["triples"] if f"<{EX}mean>" in l]
        assert float(line.split('"')[1]) == pytest.approx(means[(m["time_us"], tuple(sorted(m["facts"].items())))])


SET_RULES_APART = ["share_events_differing_in_an_iri", "share_candidates_across_alike_rules"]


def together_and_apart(lake, spark, texts, stream=GENERATED):
    """The rules' matches and consumed facts evaluated as one optimized set, and with the set
    rules that merge SELECTs and candidates left out; and the optimized set's plan."""
    rules = [compile(HEAD.replace("{stream}", stream) + text, f"rule{i}.dotr") for i, text in enumerate(texts)]
    frame = lake.read(spark, rules[0].streams)
    merged, apart = compile_rule_set(rules), compile_rule_set(rules, skip=SET_RULES_APART)
    with as_a_batch(spark, LakeStatistics(lake).rows(rules[0].streams, None, None)):
        got, want = ([([m.to_json() for m in ms], c)
                      for ms, c in evaluate_rules(plan, frame, [Background()] * len(rules))]
                     for plan in (merged, apart))
    return got, want, merged


def test_selects_differing_in_a_type_and_alike_rules_are_evaluated_once_with_the_same_matches(lake, spark):
    """``optimize.share_events_differing_in_an_iri`` and ``share_candidates_across_alike_rules``:
    three rules whose six events are Smoke, Rain and Temp SELECTs alike but for the type, with
    different policies and consumption, evaluate one SELECT per instant and one candidates plan,
    and every rule's matches and consumed facts are those of the rules evaluated apart (against
    the brute-force reference: ``NEGATION_AGGREGATE`` above, whose S and R are merged so)."""
    plain_temp = "[SELECT ?area WHERE { ?e a ex:Temp ; ex:area ?area }]"
    pairs = [(SMOKE, "last", RAIN, ""), (RAIN, "each", plain_temp, "consuming B\n"), (plain_temp, "first", SMOKE, "")]
    texts = [f"define P{i} {{ [] a ex:Pair ; ex:area ?area }}\nfrom A = {a}\nand {policy} B = {b} within 10 s from A\n"
             f"with A.?area = B.?area, ?area = A.?area\n{tail}" for i, (a, policy, b, tail) in enumerate(pairs)]
    got, want, merged = together_and_apart(lake, spark, texts)
    assert [len(g.events) for g in merged.groups] == [1] and merged.candidates == ((0, 1, 2),)
    assert all(matches for matches, _ in want) and any(consumed for _, consumed in want)
    assert got == want


def test_alike_rules_with_negation_and_aggregates_keep_their_own_candidates(lake, spark):
    """Two rules alike but for which of Smoke and Rain triggers and which is negated: one
    candidates plan; the first is checked against the brute-force reference too."""
    swapped = NEGATION_AGGREGATE.replace(SMOKE, "SMOKE").replace(RAIN, SMOKE).replace("SMOKE", RAIN)
    texts = [t[len(HEAD):] for t in (NEGATION_AGGREGATE, swapped.replace("define Alarm", "define Alarm2"))]
    got, want, merged = together_and_apart(lake, spark, texts)
    assert merged.candidates == ((0, 1),)
    assert got == want and all(matches for matches, _ in got)
    expected, _ = ref.evaluate(NEGATION_AGGREGATE_SPEC, list(generated_facts()))
    assert as_comparable(got[0][0]) == sorted((t, sorted(keys.items())) for t, keys, _ in expected)


# Smoke and Rain in one frame: the two rules below have facts with equal keys (a key names the
# event's label, instant and bindings, not its rule), which one candidates plan must keep apart.
TWIN_FRAMES = [(10, [("Temp", "a1", 50)]), (11, [("Rain", "a1", 0)]), (12, [("Smoke", "a1", 0), ("Rain", "a1", 0)])]


def test_equal_fact_keys_of_alike_rules_do_not_meet_in_one_candidates_plan(lake, spark):
    """Smoke after a reading with no Rain in the 3 s before it, and Rain after one with no
    Smoke before it: the Smoke at 12 s has the Rain at 11 s before it (no match); the Rains at
    11 and 12 s have no Smoke in their scope (two matches), though the 12 s Rain's candidate
    has the same fact keys as the Smoke's, whose negation holds."""
    template = ("define {name} {{ [] a ex:Alone ; ex:area ?area }}\nfrom S = {s}\nand last T = {temp} within 5 s from S\n"
                "and not R = {r} within 3 s from S\nwith S.?area = T.?area, R.?area = S.?area, ?area = S.?area\n")
    texts = [template.format(name="SmokeAlone", s=SMOKE, r=RAIN, temp=TEMP),
             template.format(name="RainAlone", s=RAIN, r=SMOKE, temp=TEMP)]
    got, want, merged = together_and_apart(lake, spark, texts, TWINS)
    assert merged.candidates == ((0, 1),)
    assert [sorted(m["time_us"] for m in matches) for matches, _ in got] == [[], [us(11), us(12)]]
    assert got == want


def test_batches_give_the_same_matches_as_one_interval(lake, spark):
    """A consuming rule run over two consecutive intervals, the first batch's consumed facts
    passed to the second, gives the matches and consumption of one run over both."""
    case = "policies+consuming"
    text, spec = CASES[case]
    all_matches, all_consumed = whole(lake, spark, case)
    cut, end = us(SEED_SPAN + 32), us(2 * SEED_SPAN)
    first, first_consumed = run(lake, spark, text, us(-1), cut)
    second, second_consumed = run(lake, spark, text, cut, end, frozenset(first_consumed))
    assert first and second and all(m["time_us"] <= cut < n["time_us"] for m in first for n in second)
    # The cut lies inside the second stream, where passing the consumed facts along matters:
    # without them the second batch would match differently.
    alone, _ = ref.evaluate(spec, list(generated_facts()), cut, end)
    assert as_comparable(second) != sorted((t, sorted(keys.items())) for t, keys, _ in alone)
    assert first + second == all_matches
    assert first_consumed | second_consumed == all_consumed


# ------------------------------------------------------------------------------ the Fire rule

# The Fire rule of DOTR/TESLA (Margara et al. 2018; Cugola and Margara's TESLA): a fire is
# detected when smoke is observed in an area and, within the 5 minutes before, the temperature
# there was above 45; the last such reading is the one reported, and it is consumed (a reading
# supports one detection only).
FIRE_RULE = (HEAD + "define Fire { [] a ex:Fire ; ex:area ?area ; ex:measuredTemp ?temp }\n"
             f"from S = {SMOKE}\nand last T = {TEMP} within 5 min from S\n"
             "with S.?area = T.?area, T.?v > 45, ?area = S.?area, ?temp = T.?v\n"
             "consuming T\n")
# The stream below is constructed for this rule: the paper's own worked-example data was not
# available. (second, observations): readings in area a1 at 0 and 60 s, a cold one at 120 s, smoke at
# 180 s (fires with the 60 s reading, the last hot one), smoke again at 200 s (the 60 s reading
# is consumed, the 0 s one is still in scope: fires with it), smoke at 240 s (nothing left),
# a reading in a2 at 250 s and smoke in a2 at 600 s (out of the 5 minutes: no fire).
FIRE_FRAMES = [(1000 + t, obs) for t, obs in [
    (0, [("Temp", "a1", 50)]), (60, [("Temp", "a1", 55)]), (120, [("Temp", "a1", 40)]),
    (180, [("Smoke", "a1", 0)]), (200, [("Smoke", "a1", 0)]), (240, [("Smoke", "a1", 0)]),
    (250, [("Temp", "a2", 58)]), (600, [("Smoke", "a2", 0)])]]


FIRE_SPEC = ref.Spec("S", positives=[("T", "last", 300 * SEC, "S")], conditions=[(("S", "T"), area), (("T",), hot)],
                     consumes=("T",))


def test_fire_rule_detects_the_fires_of_a_constructed_stream(lake, spark):
    """The TESLA/DOTR Fire rule over a stream constructed for it (the paper's worked-example
    data was not available): the expected detections are stated by hand and also checked
    against the brute-force reference."""
    matches, consumed = run(lake, spark, FIRE_RULE, stream=FIRE)
    expected, expected_consumed = ref.evaluate(FIRE_SPEC, reference_facts(FIRE_FRAMES))
    assert as_comparable(matches) == sorted((t, sorted(keys.items())) for t, keys, _ in expected)
    assert consumed == expected_consumed
    got = [(m["time_us"], [l for l in m["triples"] if "measuredTemp" in l or "area" in l]) for m in matches]
    assert [t for t, _ in got] == [us(1180), us(1200)]
    assert [l.split(" ")[2] for l in matches[0]["triples"] if "measuredTemp" in l] == [num(55)]
    assert [l.split(" ")[2] for l in matches[1]["triples"] if "measuredTemp" in l] == [num(50)]
    assert all(f"<{EX}area> <{EX}a1>" in " ".join(m["triples"]) for m in matches)
    assert matches[0]["events"] == [f"{FIRE}/f1060000", f"{FIRE}/f1180000"]
    assert consumed == {matches[0]["facts"]["T"], matches[1]["facts"]["T"]}
    assert matches[0]["time"] == "2024-01-01T00:19:40Z"


# ------------------------------------------------------------------------------ background

ONTOLOGY = f"""@prefix ex: <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:Photoelectric rdfs:subClassOf ex:SmokeDetection . ex:Ionization rdfs:subClassOf ex:SmokeDetection .
ex:SmokeDetection rdfs:subClassOf ex:Observation . ex:Thermo rdfs:subClassOf ex:Observation .
ex:Photoelectric rdfs:label "photoelectric" . ex:Ionization rdfs:label "ionization" .
ex:Thermo rdfs:label "thermometer" . ex:area rdfs:domain ex:Observation .
ex:a1 rdfs:label "kitchen" . ex:a2 rdfs:label "hall" .
"""
ONTO_RULE = (f"PREFIX ex: <{EX}>\nFROM STREAM <{{stream}}>\nFROM <{EX}onto.ttl>\nENTAILMENT {{regime}}\n"
             "define Fire { [] a ex:Fire ; ex:room ?room }\n"
             "from S = [SELECT ?area ?room WHERE { ?e a ex:SmokeDetection ; ex:area ?area . ?area rdfs:label ?room }]\n"
             f"and last T = {TEMP} within 1 min from S\n"
             "with S.?area = T.?area, T.?v > 45, ?room = S.?room\n")
ONTO_FRAMES = [(2000, [("Temp", "a1", 50)]), (2010, [("Photoelectric", "a1", 0)]),
               (2020, [("Temp", "a2", 52)]), (2030, [("Ionization", "a2", 0)]), (2040, [("Smoke", "a1", 0)])]


def test_rule_reasons_per_instant_over_a_background_ontology(lake, spark, tmp_path):
    path = tmp_path / "onto.ttl"
    path.write_text(ONTOLOGY.replace("@prefix rdfs", "\n@prefix rdfs"))
    results = {}
    for regime in ("rdfs", "simple"):
        text = ONTO_RULE.replace("{regime}", regime).replace("PREFIX ex:", "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\nPREFIX ex:")
        rule = compile(text.replace("{stream}", ONTO), "onto.dotr")
        background = Background.for_query(rule.graphs, [str(path)], rule.source)
        results[regime] = run(lake, spark, text, background=background, stream=ONTO)[0]
    rooms = [[l for l in m["triples"] if "room" in l][0].split(" ")[2] for m in results["rdfs"]]
    assert rooms == ['"kitchen"', '"hall"']  # subclasses of SmokeDetection, labels from the background
    assert [m["time_us"] for m in results["rdfs"]] == [us(2010), us(2030)]
    assert results["simple"] == []  # without RDFS no event is a SmokeDetection


PATH_RULE = (f"PREFIX ex: <{EX}>\nPREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\nFROM STREAM <{{stream}}>\n"
             f"FROM <{EX}onto.ttl>\ndefine Fire {{{{ [] a ex:Fire ; ex:room ?room }}}}\n"
             "from S = [SELECT ?area ?room WHERE { ?e a/rdfs:subClassOf* ?kind ; ex:area ?area . "
             "?area rdfs:label ?room FILTER(?kind = ex:SmokeDetection) }]\n"
             f"and last T = {TEMP} within 1 min from S\n"
             "with S.?area = T.?area, T.?v > 45, ?room = S.?room\n").replace("{{", "{").replace("}}", "}")


def test_a_property_path_in_an_event_is_evaluated_per_instant_over_the_instant_and_the_background(
        lake, spark, tmp_path):
    """``a/rdfs:subClassOf*`` over each instant's types and the background's hierarchy finds
    the smoke detections RDFS entailment finds, without entailment (DOTR §3: an event's query
    runs over one instant's graph with the background)."""
    path = tmp_path / "onto.ttl"
    path.write_text(ONTOLOGY.replace("@prefix rdfs", "\n@prefix rdfs"))
    rule = compile(PATH_RULE.replace("{stream}", ONTO), "onto.dotr")
    background = Background.for_query(rule.graphs, [str(path)], rule.source)
    by_path = run(lake, spark, PATH_RULE, background=background, stream=ONTO)[0]
    text = ONTO_RULE.replace("{regime}", "rdfs").replace("PREFIX ex:", "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\nPREFIX ex:")
    rule = compile(text.replace("{stream}", ONTO), "onto.dotr")
    by_rdfs = run(lake, spark, text, background=Background.for_query(rule.graphs, [str(path)], rule.source),
                  stream=ONTO)[0]
    assert [(m["time_us"], m["events"]) for m in by_path] == [(m["time_us"], m["events"]) for m in by_rdfs]
    assert [[l for l in m["triples"] if "room" in l][0].split(" ")[2] for m in by_path] == ['"kitchen"', '"hall"']


def test_now_in_an_event_select_is_the_instant_it_is_evaluated_at(lake, spark, tmp_path):
    """An event's SELECT is executed once per instant (DOTR §3): NOW() there is the instant."""
    text = (f"PREFIX ex: <{EX}>\nFROM STREAM <{{stream}}>\n"
            "define Seen { [] a ex:Seen ; ex:at ?at ; ex:area ?area }\n"
            "from S = [SELECT ?area (NOW() AS ?at) WHERE { ?e a ex:Photoelectric ; ex:area ?area }]\n"
            f"and last T = {TEMP} within 1 min from S\n"
            "with S.?area = T.?area, ?at = S.?at, ?area = S.?area\n")
    matches = run(lake, spark, text, stream=ONTO)[0]
    assert [m["time_us"] for m in matches] == [us(2010)]
    stamped = [line.split(" ", 2)[2] for line in matches[0]["triples"] if f"<{EX}at>" in line]
    assert stamped == ['"2024-01-01T00:33:30Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .']


# ------------------------------------------------------------------------------ errors

@pytest.mark.parametrize("text, where, message", [
    (HEAD + "define F { [] a ex:F }\nfrom S = {SMOKE}\nand last T = {TEMP}\nwith S.?area = T.?area\n",
     "5:11", "needs WITHIN"),
    (HEAD + "define F { [] a ex:F }\nfrom S = {SMOKE}\nand last T = {TEMP} within 5 s from S\nwith S.?area = X.?area\n",
     "6:16", "unknown event label 'X'"),
    (HEAD + "define F { [] a ex:F }\nfrom S = [SELECT ?area WHERE { ?e a ex:Smoke ; ex:area ?area . FILTER( }]\n",
     "4:", "unexpected"),
    (HEAD + "define F { [] a ex:F }\nfrom S = {SMOKE}\nand last T = {TEMP} within 5 s from Q\n",
     "5:", "FROM Q"),
    (HEAD + "define F { [] a ex:F }\nfrom S = {SMOKE}\nand last T = {TEMP} within 5 s from S\nwith S.?area = \n",
     "", "unexpected"),
    (HEAD + "define F { [] a ex:F }\nfrom S = {SMOKE}\nand last T = {TEMP} within 5 s from S\nconsuming Q\n",
     "6:11", "unknown event label 'Q'"),
    (HEAD + "define F { [] a ex:F\nfrom S = {SMOKE}\n", "3:", "unexpected"),
])
def test_errors_name_file_line_and_column(text, where, message):
    text = text.replace("{SMOKE}", SMOKE).replace("{TEMP}", TEMP).replace("{stream}", GENERATED)
    with pytest.raises(QuerySyntaxError) as err:
        parse_rule(text, "queries/fire/fire.dotr")
    assert str(err.value).startswith(f"queries/fire/fire.dotr:{where}"), str(err.value)
    assert message in str(err.value)
