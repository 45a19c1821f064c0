"""Property paths (SPARQL 1.1 section 9) against rdflib's over the same window contents: on the
generated streams of ``test_differential`` (several graphs at one time, uneven gaps, sliding
and tumbling windows, a background graph), and on two streams shaped as users send them: sensor
observations whose types' classes the background arranges (``rdfs:subClassOf*``), and rooms
whose ``partOf`` edges are split between the stream and the background (``partOf+``). Every
window's answer is rdflib's over that window's triples plus the background."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rdflib import RDF, RDFS, Graph, Literal, URIRef

from rsp_jobs.bench.reference import Elem, WindowSpec, rdflib_answer, window_contents
from rsp_jobs.errors import QueryError
from rsp_jobs.spark import paths
from rsp_jobs.terms import to_nt
from tests.engine.test_differential import (BACKGROUND, EX, PREFIXES, S1, SETTINGS, assert_same,
                                            run_engine, streams, time_windows)
from tests.support.stream_files import in_delivery_order, layouts

PREFIXES_RDFS = PREFIXES + "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"

# Over test_differential's streams: ex:p0-ex:p2 link subjects ex:a0-ex:a4 to each other and to
# literals, in cycles as often as not; the background labels and types some of them. A case is
# (head, body, and the query rdflib answers for reference where it is not the same one):
# - a ``*`` or ``?`` at the top of the pattern is a set (ALP, section 18.4), where rdflib 7.6 gives a
#   term twice if a cycle leads back to where it started (``ex:a0 ex:p0 ex:a0`` makes ``ex:a0
#   ex:p0* ?y`` answer ex:a0 twice): its reference is DISTINCT;
# - rdflib does not parse ``^`` in a negated set: its reference is the translation section
#   18.2.2.3 gives, alt(NPS(forward), inv(NPS(inverse))).
CASES = {
    "one_or_more": ("SELECT ?x ?y", "{ ?x ex:p0+ ?y }", None),
    "zero_or_more_from_a_constant": ("SELECT ?y", "{ ex:a0 (ex:p0|ex:p1)* ?y }", "SELECT DISTINCT ?y"),
    "zero_or_more_to_a_constant": ("SELECT ?x", "{ ?x ex:p1* ex:a2 }", "SELECT DISTINCT ?x"),
    # zero length with both ends variables: every subject and object, the background's too
    "zero_or_more_between_variables": ("SELECT ?x ?y", "{ ?x (ex:p0|^ex:p2)* ?y }", "SELECT DISTINCT ?x ?y"),
    "zero_or_one": ("SELECT ?x ?y", "{ ?x ex:p2? ?y }", "SELECT DISTINCT ?x ?y"),
    "same_variable_at_both_ends": ("SELECT ?x", "{ ?x ex:p0+ ?x }", None),
    "alternative_is_a_multiset": ("SELECT ?x ?y", "{ ?x ex:p0|ex:p1|ex:p0 ?y }", None),
    "sequence_through_a_closure": ("SELECT ?x ?z", "{ ?x ex:p0/ex:p1+/^ex:p2 ?z }", None),
    "negated_set_with_an_inverse_member": ("SELECT ?x ?y", "{ ?x !(ex:p0|rdf:type|^ex:p1) ?y }",
                                           "{ ?x !(ex:p0|rdf:type)|^(!ex:p1) ?y }"),
    "in_a_join_and_a_filter": ("SELECT ?x ?v ?y",
                               "{ ?x ex:val ?v . ?x (ex:p0|ex:p2)+ ?y FILTER(?v > 1) }", None),
    "optional_path": ("SELECT ?x ?y", "{ ?x ex:val ?v OPTIONAL { ?x ex:p1+ ?y } }", None),
    "count_reachable": ("SELECT ?x (COUNT(?y) AS ?n)", "{ ?x ex:p0+ ?y } GROUP BY ?x", None),
    # a path over the background's predicates alone: computed once, in every window
    "background_only": ("SELECT ?x ?k", "{ ?x ex:p0 ?y . ?y (ex:kind|ex:label)+ ?k }", None),
}


# rdflib 7.6 takes a path's end bound to a literal whose Python value is false ("0"^^xsd:integer)
# for an unbound one, and then answers as if it were any term: the streams that rdflib answers
# for reference hold no such literal (the engine compares N-Triples text, no value).
FALSE_LITERAL = to_nt(Literal(0))


def _without_false_literals(elements: list[Elem]) -> list[Elem]:
    return [e for e in elements if e.o != FALSE_LITERAL]


def _reference(head: str, body: str, reference: str | None) -> tuple[str, str]:
    if reference is None:
        return head, body
    return (reference, body) if reference.startswith("SELECT") else (head, reference)


def merged_answer(sparql: str, content: list, backgrounds) -> list[dict]:
    """rdflib's SELECT answer over one graph holding the window's triples and the background's
    (``rdflib_answer``'s ``one_graph``: over a union rdflib's ``*`` gives a term once per graph)."""
    return rdflib_answer(sparql, content, list(backgrounds), one_graph=True)


def check(tmp_path, head, body, elements, specs, window_clause, backgrounds=(), background_files=(),
          layout=None, reference=None):
    dataset = "\n".join(f"FROM STREAM <{s.stream}> {window_clause(s)}" for s in specs)
    dataset += "".join(f"\nFROM <{EX}{f.name}>" for f in background_files)
    prefixes = PREFIXES_RDFS + "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
    rsp = f"REGISTER QUERY q AS {prefixes}{head}\n{dataset}\nWHERE {body}"
    sparql = "{}{}\nWHERE {}".format(prefixes, *_reference(head, body, reference))
    reference = {close: merged_answer(sparql, content, backgrounds)
                 for close, content in window_contents(elements, specs).items()}
    engine = run_engine(tmp_path, rsp, elements, [str(f) for f in background_files], layout=layout)
    assert_same(engine, reference, head.split()[0].upper(), ordered=False)


@pytest.fixture(scope="module")
def background_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("background") / "background.ttl"
    BACKGROUND.serialize(path, format="turtle")
    return path


@pytest.mark.parametrize("case", sorted(CASES))
@SETTINGS
@given(elements=streams().map(_without_false_literals).filter(bool), window=time_windows(), layout=layouts)
def test_paths_over_windows_and_the_background_match_rdflib(case, elements, window, layout,
                                                              tmp_path_factory, background_file, spark):
    range_ms, step_ms = window
    head, body, reference = CASES[case]
    check(tmp_path_factory.mktemp("case"), head, body, elements, [WindowSpec(S1, range_ms, step_ms)],
          lambda s: f"[RANGE {range_ms}ms STEP {step_ms}ms]", [BACKGROUND], [background_file], {S1: layout},
          reference)


# ------------------------------------------------------------------ streams as users send them

SENSORS = EX + "stream/sensors"
# the background's class hierarchy: Thermometer ⊑ TemperatureSensor ⊑ Sensor, Hygrometer ⊑ Sensor,
# Camera unrelated
HIERARCHY = Graph()
for sub, sup in (("Thermometer", "TemperatureSensor"), ("TemperatureSensor", "Sensor"),
                 ("Hygrometer", "Sensor"), ("Camera", "Device")):
    HIERARCHY.add((URIRef(EX + sub), RDFS.subClassOf, URIRef(EX + sup)))


def _iri(name: str) -> str:
    return f"<{EX}{name}>"


def _observations() -> list[Elem]:
    """Observations of four sensors, several frames at one time, gaps uneven (0 to 4.7 s)."""
    kinds = {"t1": "Thermometer", "t2": "TemperatureSensor", "h1": "Hygrometer", "c1": "Camera"}
    rdf_type, made_by = f"<{RDF.type}>", _iri("madeBy")
    elements, number = [], 0
    for t, sensors in ((0, ["t1", "h1"]), (0, ["c1"]), (300, ["t2"]), (300, ["t1", "c1"]),
                       (1100, ["h1"]), (5800, ["t2", "c1"]), (5800, ["h1"]), (6100, ["t1"])):
        graph = f"{SENSORS}/g{number}"
        for sensor in sensors:
            obs = _iri(f"obs{number}_{sensor}")
            elements.append(Elem(SENSORS, t, obs, made_by, _iri(sensor), graph=graph))
            elements.append(Elem(SENSORS, t, _iri(sensor), rdf_type, _iri(kinds[sensor]), graph=graph))
        number += 1
    return in_delivery_order(elements)


@pytest.mark.parametrize("window", [(2000, 500), (3000, 3000), (6000, 1000)])
def test_observations_of_any_kind_of_sensor_by_the_background_hierarchy(window, tmp_path, spark):
    """``?type rdfs:subClassOf* ex:Sensor`` is the background's alone (the stream names no
    rdfs:subClassOf): one closure for every window, joined to each window's observations."""
    background = tmp_path / "hierarchy.ttl"
    HIERARCHY.serialize(background, format="turtle")
    range_ms, step_ms = window
    check(tmp_path, "SELECT ?obs ?sensor ?type",
          "{ ?obs ex:madeBy ?sensor . ?sensor a ?type . ?type rdfs:subClassOf* ex:Sensor }",
          _observations(), [WindowSpec(SENSORS, range_ms, step_ms)],
          lambda s: f"[RANGE {range_ms}ms STEP {step_ms}ms]", [HIERARCHY], [background])


ROOMS = EX + "stream/rooms"
# the background's part of the building: floors of buildings, one room
SITE = Graph()
for part, whole in (("floor1", "buildingA"), ("floor2", "buildingA"), ("floor3", "buildingB"),
                    ("room9", "floor3"), ("wingW", "campus"), ("buildingA", "campus")):
    SITE.add((URIRef(EX + part), URIRef(EX + "partOf"), URIRef(EX + whole)))


def _room_reports() -> list[Elem]:
    """Rooms reported into the site as the stream goes: partOf edges to rooms and floors (the
    rest is the background's), a temperature beside each, some at one time, gaps uneven."""
    part_of, temperature = _iri("partOf"), _iri("temperature")
    reports = [(0, "room1", "floor1"), (0, "room2", "room1"), (250, "room3", "floor3"),
               (250, "desk7", "room2"), (1900, "room4", "wingW"), (2000, "floor2", "buildingB"),
               (4400, "room5", "floor2"), (4400, "room6", "room5"), (4401, "room1", "floor1")]
    elements = []
    for number, (t, part, whole) in enumerate(reports):
        graph = f"{ROOMS}/g{number}"
        elements.append(Elem(ROOMS, t, _iri(part), part_of, _iri(whole), graph=graph))
        elements.append(Elem(ROOMS, t, _iri(part), temperature, f'"{20 + number}"^^<http://www.w3.org/2001/XMLSchema#integer>',
                             graph=graph))
    return in_delivery_order(elements)


@pytest.mark.parametrize("body", [
    "{ ?room ex:temperature ?t . ?room ex:partOf+ ?building }",
    "{ ?room ex:partOf+ ex:campus }",
    "{ ex:room6 ex:partOf* ?whole }",
    "{ ?whole ^ex:partOf+ ?part FILTER(?whole != ex:campus) }",
])
@pytest.mark.parametrize("window", [(2000, 1000), (5000, 2500)])
def test_rooms_in_buildings_by_edges_split_between_stream_and_background(body, window, tmp_path, spark):
    """``partOf+`` walks a window's edges and the background's alike; windows that slide over
    different edges answer differently."""
    background = tmp_path / "site.ttl"
    SITE.serialize(background, format="turtle")
    range_ms, step_ms = window
    head = "SELECT " + " ".join(sorted(set(w for w in body.replace("}", " ").split() if w.startswith("?"))))
    check(tmp_path, head, body, _room_reports(), [WindowSpec(ROOMS, range_ms, step_ms)],
          lambda s: f"[RANGE {range_ms}ms STEP {step_ms}ms]", [SITE], [background],
          reference=head.replace("SELECT", "SELECT DISTINCT"))  # a set: rdflib repeats a term a cycle reaches again


def test_a_background_only_closure_is_computed_once_for_all_windows(tmp_path, spark, monkeypatch):
    """The stream names no rdfs:subClassOf (``Evaluator.vocabulary``): the fixpoint runs once,
    window-independent, not per window."""
    keys_seen = []
    fixpoint = paths._Path._fixpoint

    def counted(self, edges, keys, start):
        keys_seen.append(tuple(keys))
        return fixpoint(self, edges, keys, start)

    monkeypatch.setattr(paths._Path, "_fixpoint", counted)
    test_observations_of_any_kind_of_sensor_by_the_background_hierarchy((2000, 500), tmp_path, spark)
    assert keys_seen == [()]


def test_a_path_longer_than_the_bound_is_refused_naming_it(tmp_path, spark, monkeypatch):
    monkeypatch.setenv("RSP_MAX_PATH_STEPS", "3")
    chain = [Elem(ROOMS, 0, _iri(f"n{i}"), _iri("next"), _iri(f"n{i + 1}"), graph=f"{ROOMS}/g0")
             for i in range(5)]
    query = (f"REGISTER QUERY q AS {PREFIXES}SELECT ?a ?b\nFROM STREAM <{ROOMS}> [RANGE 1s STEP 1s]\n"
             "WHERE {\n  ?a ex:next+ ?b }")
    with pytest.raises(QueryError) as info:
        run_engine(tmp_path, query, in_delivery_order(chain), skip=())
    assert str(info.value).startswith("<query>:7:6: the property path <http://ex.org/next>+ did not "
                                      "reach its fixpoint within 3 steps (RSP_MAX_PATH_STEPS)")
    # a chain as long as the bound is within it
    monkeypatch.setenv("RSP_MAX_PATH_STEPS", "5")
    (window,) = run_engine(tmp_path / "again", query, in_delivery_order(chain), skip=())
    assert len(window["bindings"]) == 5 + 4 + 3 + 2 + 1


@st.composite
def _chains(draw):
    """partOf edges over few nodes: cycles, diamonds and self-loops all occur."""
    nodes = [f"n{i}" for i in range(5)]
    elements = []
    t = 0
    for number in range(draw(st.integers(1, 8))):
        t += draw(st.sampled_from([0, 0, 400, 1000, 2600]))
        for _ in range(draw(st.integers(1, 3))):
            elements.append(Elem(ROOMS, t, _iri(draw(st.sampled_from(nodes))), _iri("partOf"),
                                 _iri(draw(st.sampled_from(nodes))), graph=f"{ROOMS}/g{number}"))
    return in_delivery_order(elements)


@pytest.mark.parametrize("body", ["{ ?a ex:partOf+ ?b }", "{ ?a ex:partOf* ex:n0 }",
                                  "{ ?a (ex:partOf/ex:partOf)+ ?b }"])
@SETTINGS
@given(elements=_chains(), window=time_windows())
def test_closures_over_cycles_and_diamonds_match_rdflib(body, elements, window, tmp_path_factory, spark):
    range_ms, step_ms = window
    head = "SELECT " + " ".join(sorted(set(w for w in body.replace("}", " ").split() if w.startswith("?"))))
    check(tmp_path_factory.mktemp("case"), head, body, elements, [WindowSpec(ROOMS, range_ms, step_ms)],
          lambda s: f"[RANGE {range_ms}ms STEP {step_ms}ms]",
          reference=head.replace("SELECT", "SELECT DISTINCT"))  # a set: rdflib repeats a term a cycle reaches again


S2 = EX + "stream/two"


@pytest.mark.parametrize("body, reference", [
    (f"{{ ?x ex:p0 ?y GRAPH <{S2}> {{ ?y (ex:p1|ex:p2)+ ?z }} }}", None),
    ("{ GRAPH ?g { ?x (ex:p0|^ex:p1)+ ?y } }", None),
    ("{ GRAPH ?g { ex:a0 ex:p1* ?y } }", "SELECT DISTINCT"),
])
@SETTINGS
@given(elements=streams(names=(S1, S2)).map(_without_false_literals).filter(bool), window=time_windows())
def test_paths_in_a_named_window_graph_match_rdflib(body, reference, elements, window, tmp_path_factory, spark):
    """In GRAPH <iri> or GRAPH ?g a path walks that graph's triples alone, each named graph on
    its own (FROM NAMED STREAM: the window of the stream)."""
    range_ms, step_ms = window
    specs = [WindowSpec(S1, range_ms, step_ms), WindowSpec(S2, range_ms, step_ms, graph=S2)]
    head = "SELECT " + " ".join(sorted(set(w for w in body.replace("}", " ").split() if w.startswith("?"))))
    dataset = (f"FROM STREAM <{S1}> [RANGE {range_ms}ms STEP {step_ms}ms]\n"
               f"FROM NAMED STREAM <{S2}> [RANGE {range_ms}ms STEP {step_ms}ms]")
    rsp = f"REGISTER QUERY q AS {PREFIXES}{head}\n{dataset}\nWHERE {body}"
    sparql = f"{PREFIXES}{head.replace('SELECT', reference or 'SELECT')}\nWHERE {body}"
    expected = {close: rdflib_answer(sparql, content) for close, content in window_contents(elements, specs).items()}
    assert_same(run_engine(tmp_path_factory.mktemp("case"), rsp, elements), expected, "SELECT", ordered=False)


@pytest.mark.parametrize("value", ["0", "-1", "many", ""])
def test_the_bound_is_a_positive_number_of_steps(value, monkeypatch):
    from rsp_jobs import settings
    from rsp_jobs.errors import InputError

    monkeypatch.setenv("RSP_MAX_PATH_STEPS", value)
    with pytest.raises(InputError, match="^RSP_MAX_PATH_STEPS: a positive number of steps"):
        settings.max_path_steps()


@pytest.mark.parametrize("case", ["one_or_more", "zero_or_more_from_a_constant", "negated_set_with_an_inverse_member"])
@SETTINGS
@given(elements=streams().map(_without_false_literals).filter(bool), n=st.integers(1, 6))
def test_paths_over_count_windows_match_rdflib(case, elements, n, tmp_path_factory, spark):
    """[TRIPLES n]: a path walks the last n triples (window rows, not solutions before windows)."""
    head, body, reference = CASES[case]
    check(tmp_path_factory.mktemp("case"), head, body, elements, [WindowSpec(S1, triples=n)],
          lambda s: f"[TRIPLES {n}]", reference=reference)


@pytest.mark.parametrize("case", ["one_or_more", "zero_or_more_between_variables"])
@SETTINGS
@given(elements=streams(names=(S1, S2)).map(_without_false_literals).filter(bool), window=time_windows(),
       other_range=st.sampled_from([1, 2]))
def test_paths_over_two_streams_with_different_windows_match_rdflib(case, elements, window, other_range,
                                                                     tmp_path_factory, spark):
    """Two streams' windows merged into the default graph: a path's steps may come from either."""
    range_ms, step_ms = window
    head, body, reference = CASES[case]
    specs = [WindowSpec(S1, range_ms, step_ms), WindowSpec(S2, range_ms + (other_range - 1) * step_ms, step_ms)]
    check(tmp_path_factory.mktemp("case"), head, body, elements, specs,
          lambda s: f"[RANGE {s.range_ms}ms STEP {s.step_ms}ms]", reference=reference)
