"""The query parser: every benchmark query, each construct of the language, and the errors."""
from __future__ import annotations

import re

import pytest

from rsp_jobs.errors import QuerySyntaxError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.language.ast import (IRI, XSD, Aggregate, BinaryOp, Bind, BNode, CountWindow,
                                   Filter, FunctionCall, GraphPattern, GroupCondition,
                                   GroupPattern, In, Literal, MinusPattern, OptionalPattern,
                                   OrderCondition, Position, SelectItem, Timestamp, TimeWindow,
                                   TriplePattern, TriplesBlock, UnaryOp, UnionPattern, Var)
from rsp_jobs.language.parser import parse_query, parse_query_file
from rsp_jobs.times import parse_duration
from rsp_jobs.settings import data_dir

QUERY_GLOBS = {"csrbench/queries/*.rq": 8, "citybench/queries/csparql/*.txt": 19,
               "citybench/queries/rspql/*.txt": 16}
# Upstream's RSP-QL Q9 has a typo, `ssn:observedBy> ses:...`: it must fail, and say where.
BROKEN_QUERY = "citybench/queries/rspql/Q9.txt"

EX = "http://ex.org/"
OM = "http://knoesis.wright.edu/ssw/ont/sensor-observation.owl#"
SSN = "http://purl.oclc.org/NET/ssnx/ssn#"
SAO = "http://purl.oclc.org/NET/sao/"
WEATHER = "http://knoesis.wright.edu/ssw/ont/weather.owl#"
CT = "http://www.insight-centre.org/citytraffic#"
SES = "http://www.insight-centre.org/dataset/SampleEventService#"
INT, DEC, DBL, BOOL = (XSD + t for t in ("integer", "decimal", "double", "boolean"))


def benchmark_queries() -> list[str]:
    """The query files, relative to the data directory; a placeholder when there are none, so
    that the ``data_dir`` fixture skips the test and says why."""
    root = data_dir()
    found = sorted(str(p.relative_to(root)) for pattern in QUERY_GLOBS for p in root.glob(pattern))
    return found or ["(no data directory)"]


def where(body: str, head: str = "PREFIX ex: <http://ex.org/> SELECT *") -> GroupPattern:
    """The WHERE group of a query made of ``head`` and ``{ body }``."""
    return parse_query(f"{head} WHERE {{ {body} }}").where


def triples(body: str) -> tuple[TriplePattern, ...]:
    (block,) = where(body).elements
    return block.triples


def triples_of(query: ast.Query) -> tuple[TriplePattern, ...]:
    return query.where.elements[0].triples


def expr(text: str, head: str = "PREFIX ex: <http://ex.org/> SELECT *") -> ast.Expr:
    """The expression of ``FILTER(text)``."""
    (_, flt) = where(f"?s ?p ?o FILTER({text})", head).elements
    return flt.expr


def lit(lexical: str, datatype: str | None = None, lang: str | None = None) -> Literal:
    return Literal(lexical, datatype, lang)


# ------------------------------------------------------------------------ benchmark queries


def test_benchmark_query_files_are_all_there(data_dir):
    for pattern, count in QUERY_GLOBS.items():
        assert len(list(data_dir.glob(pattern))) == count, pattern


@pytest.mark.parametrize("name", [q for q in benchmark_queries() if q != BROKEN_QUERY])
def test_every_benchmark_query_parses(data_dir, name):
    query = parse_query_file(data_dir / name)
    assert query.source == str(data_dir / name)
    assert query.text == (data_dir / name).read_text()
    assert query.form in ("SELECT", "ASK")
    assert query.streams and all(isinstance(s.window, TimeWindow) for s in query.streams)
    windows = {s.graph for s in query.streams if s.graph}
    named_patterns = {e.name.value for e in query.where.elements if isinstance(e, GraphPattern)
                      and e.name.value in windows}
    assert named_patterns == windows  # every RSP-QL window is used by a WINDOW pattern


def test_the_broken_benchmark_query_is_reported_where_it_breaks(data_dir):
    with pytest.raises(QuerySyntaxError) as info:
        parse_query_file(data_dir / BROKEN_QUERY)
    err = info.value
    assert (err.line, err.column) == (30, 30)
    assert str(err).startswith(f"{data_dir / BROKEN_QUERY}:30:30: unexpected '>'")
    assert {"variable", "IRI", "prefixed name"} <= set(err.expected)


def test_csrbench_q1(data_dir):
    query = parse_query_file(data_dir / "csrbench/queries/q1.rq")
    assert query.registration == ast.Registration("QUERY", "test")
    assert dict(query.prefixes) == {"om-owl": OM, "weather": WEATHER}
    assert query.projection == (SelectItem(Var("sensor")), SelectItem(Var("obs")))
    (stream,) = query.streams
    assert stream.iri == "http://ex.org/streams/test"
    assert stream.window == TimeWindow(10000, 10000) and stream.graph is None
    assert stream.position == Position(1, query.text.index("FROM") + 1)
    block, flt = query.where.elements
    assert [t.predicate.value for t in block.triples] == [
        OM + "observedProperty", OM + "procedure", OM + "result", OM + "floatValue"]
    assert block.triples[0].object == IRI(WEATHER + "_AirTemperature")
    assert flt == Filter(BinaryOp(">", Var("value"), lit("80", INT)))


def test_csrbench_q4_averages(data_dir):
    query = parse_query_file(data_dir / "csrbench/queries/q4.rq")
    assert query.projection == (SelectItem(Var("avg"), Aggregate("avg", Var("value"))),)
    assert query.streams[0].window == TimeWindow(4000, 4000)


def test_csrbench_q6_expands_blank_node_property_lists(data_dir):
    query = parse_query_file(data_dir / "csrbench/queries/q6.rq")
    block = query.where.elements[0]
    result = OM + "result"
    assert [(t.subject, t.object) for t in block.triples if t.predicate.value == result] == [
        (Var("ob1"), BNode("_b0")), (Var("obs"), BNode("_b1"))]
    assert TriplePattern(BNode("_b0"), IRI(OM + "floatValue"), Var("value1")) in block.triples
    assert TriplePattern(BNode("_b1"), IRI(OM + "floatValue"), Var("value")) in block.triples
    assert query.streams[0].window == TimeWindow(5000, 5000)


def test_citybench_csparql_q1(data_dir):
    query = parse_query_file(data_dir / "citybench/queries/csparql/Q1.txt")
    assert query.registration is None and query.prefixes == ()
    assert [s.window for s in query.streams] == [TimeWindow(3000, 1000)] * 2
    assert query.streams[1].iri == SES + "AarhusTrafficData158505"
    assert query.graphs == (
        ast.GraphClause("http://127.0.0.1:9000/WebGlCity/RDF/SensorRepository.rdf"),)
    assert query.graphs[0].position == Position(4, 2)
    top, first, second = query.where.elements
    congestion = IRI(CT + "CongestionLevel")
    assert top.triples[0] == TriplePattern(Var("p1"), IRI(ast.RDF_TYPE), congestion)
    assert isinstance(first, GroupPattern) and isinstance(second, GroupPattern)
    assert first.elements[0].triples[1].predicate == IRI(SAO + "hasValue")


def test_citybench_csparql_q11_asks(data_dir):
    query = parse_query_file(data_dir / "citybench/queries/csparql/Q11.txt")
    assert query.form == "ASK" and query.projection is None
    assert query.where.elements[-1] == Filter(UnaryOp("!", FunctionCall("bound", (Var("obId1"),))))


def test_citybench_csparql_q12_groups(data_dir):
    query = parse_query_file(data_dir / "citybench/queries/csparql/Q12.txt")
    assert query.projection == (SelectItem(Var("obCnt"), Aggregate("count", Var("obId1"))),)
    assert query.where.elements[-1] == Filter(BinaryOp(">=", Var("v1"), lit("-1", INT)))
    assert query.group_by == (GroupCondition(Var("service1")),)
    assert query.having == (BinaryOp(">", Aggregate("count", Var("obId1")), lit("3", INT)),)


def test_citybench_csparql_q3_projects_an_expression(data_dir):
    query = parse_query_file(data_dir / "citybench/queries/csparql/Q3.txt")
    assert query.projection[-1] == SelectItem(
        Var("avgCongest"), BinaryOp("/", BinaryOp("+", Var("v1"), Var("v3")), lit("2", INT)))


def test_citybench_csparql_q5_skips_a_comment_inside_the_select_list(data_dir):
    query = parse_query_file(data_dir / "citybench/queries/csparql/Q5.txt")
    names = [item.var.name for item in query.projection]
    assert names == ["evtId", "title", "obId2", "lat2", "lon2"]


def test_citybench_rspql_q1(data_dir):
    query = parse_query_file(data_dir / "citybench/queries/rspql/Q1.txt")
    assert query.registration == ast.Registration("RSTREAM", "q1")
    assert [(s.iri.rsplit("#")[1], s.graph, s.window) for s in query.streams] == [
        ("AarhusTrafficData182955", "w1", TimeWindow(3000, 1000)),
        ("AarhusTrafficData158505", "w2", TimeWindow(3000, 1000))]
    assert query.streams[0].position == Position(10, 1)
    block, w1, w2 = query.where.elements
    assert len(block.triples) == 2
    assert (w1.name, w2.name) == (IRI("w1"), IRI("w2"))
    assert w1.group.elements[0].triples[2] == TriplePattern(
        Var("obId1"), IRI(SSN + "observedBy"),
        IRI("http://localhost/CityBenchDataStream/SampleEventService#AarhusTrafficData182955"))


# ------------------------------------------------------------------------------ registration


@pytest.mark.parametrize("text, registration", [
    ("REGISTER QUERY test AS", ast.Registration("QUERY", "test")),
    ("register query q_1 computed every 5s as", ast.Registration("QUERY", "q_1", 5000)),
    ("REGISTER STREAM out-1 COMPUTED EVERY PT1M AS", ast.Registration("STREAM", "out-1", 60000)),
    ("REGISTER STREAM <http://ex.org/out> AS", ast.Registration("STREAM", "http://ex.org/out")),
    ("REGISTER RSTREAM <q1> AS", ast.Registration("RSTREAM", "q1")),
    ("REGISTER ISTREAM ex:q AS", ast.Registration("ISTREAM", EX + "q")),
    ("REGISTER DStream <q> AS", ast.Registration("DSTREAM", "q")),
])
def test_registration(text, registration):
    form = "CONSTRUCT WHERE { ?s ?p ?o }" if " STREAM " in text else "SELECT * WHERE { ?s ?p ?o }"
    query = parse_query(f"PREFIX ex: <http://ex.org/> {text} {form}")
    assert query.registration == registration


@pytest.mark.parametrize("form", ["SELECT * WHERE { ?s ?p ?o }", "ASK { ?s ?p ?o }"])
def test_a_stream_is_registered_only_for_a_form_that_yields_triples(form):
    """C-SPARQL §3.3: "only CONSTRUCT and DESCRIBE queries can be registered" as streams."""
    with pytest.raises(QuerySyntaxError, match=r"^q\.rsp:2:1: REGISTER STREAM needs a query that yields triples"):
        parse_query(f"PREFIX ex: <http://ex.org/>\nREGISTER STREAM s AS {form}", "q.rsp")
    for ok in ("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }", "DESCRIBE ?s WHERE { ?s ?p ?o }"):
        assert parse_query(f"REGISTER STREAM s AS {ok}").registration.kind == "STREAM"


def test_prologue_may_come_before_and_after_the_registration():
    query = parse_query("BASE <http://ex.org/> PREFIX a: <a#> REGISTER QUERY q AS PREFIX b: <b#> "
                        "SELECT * WHERE { a:x b:y ?o }")
    assert query.prefixes == (("a", EX + "a#"), ("b", EX + "b#"))
    assert triples_of(query) == (TriplePattern(IRI(EX + "a#x"), IRI(EX + "b#y"), Var("o")),)


# ------------------------------------------------------------------------ prefixes and IRIs


def test_base_resolves_relative_iris_and_keeps_absolute_ones():
    query = parse_query("BASE <http://ex.org/a/b> PREFIX : <ns#> PREFIX o: <http://other.org/ns#> "
                        "SELECT * FROM <g> WHERE { <../c> :p o:q . <#f> <?x> <//h/i> }")
    assert query.base == "http://ex.org/a/b"
    assert query.prefixes == (("", "http://ex.org/a/ns#"), ("o", "http://other.org/ns#"))
    assert query.graphs[0].iri == "http://ex.org/a/g"
    assert triples_of(query) == (
        TriplePattern(IRI(EX + "c"), IRI(EX + "a/ns#p"), IRI("http://other.org/ns#q")),
        TriplePattern(IRI("http://ex.org/a/b#f"), IRI("http://ex.org/a/b?x"), IRI("http://h/i")))


def test_without_base_relative_iris_stay_as_written():
    query = parse_query("SELECT * FROM NAMED WINDOW <w1> ON <s> [RANGE PT1S STEP PT1S] "
                        "WHERE { WINDOW <w1> { ?s ?p ?o } }")
    assert (query.streams[0].iri, query.streams[0].graph) == ("s", "w1")


def test_prefixed_names_expand_with_escapes_and_trailing_dots():
    assert triples("ex:a\\-b ex:p.q ex:_1.") == (
        TriplePattern(IRI(EX + "a-b"), IRI(EX + "p.q"), IRI(EX + "_1")),)
    assert triples("ex: ex:p ex:%20") == (TriplePattern(IRI(EX), IRI(EX + "p"), IRI(EX + "%20")),)


def test_iri_escapes():
    assert triples("<http://ex.org/\\u00E9> ?p ?o")[0].subject == IRI("http://ex.org/é")


def test_undeclared_prefix_is_named_with_its_position():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("SELECT *\nWHERE {\n  ?s rdf:type ?o }", source="q.rq")
    assert str(info.value) == "q.rq:3:6: undeclared prefix 'rdf:' in 'rdf:type'"


def test_csparql_function_prefix_must_be_declared():
    with pytest.raises(QuerySyntaxError, match="undeclared prefix 'f:'"):
        parse_query("SELECT * WHERE { ?s ?p ?o FILTER(f:timestamp(?s, ?p, ?o) > 0) }")


# ----------------------------------------------------------------------- forms and dataset


def test_select_modifiers_and_projection():
    query = parse_query("SELECT DISTINCT ?a $b (?a + 1 AS ?c) WHERE { ?a ?p ?b }")
    assert query.distinct
    assert query.projection == (SelectItem(Var("a")), SelectItem(Var("b")),
                                SelectItem(Var("c"), BinaryOp("+", Var("a"), lit("1", INT))))
    assert parse_query("SELECT REDUCED ?a { ?a ?p ?o }").distinct
    star = parse_query("SELECT * { ?a ?p ?o }")
    assert star.projection is None and not star.distinct


def test_construct_template_gets_fresh_blank_nodes():
    query = parse_query("PREFIX ex: <http://ex.org/> CONSTRUCT { ?s ex:p [ ex:q ?o ] ; ex:r _:x } "
                        "FROM STREAM ex:s [RANGE 1s STEP 1s] WHERE { ?s ex:p ?o }")
    assert query.form == "CONSTRUCT" and query.projection is None
    assert query.template == (
        TriplePattern(Var("s"), IRI(EX + "p"), BNode("_b0")),
        TriplePattern(BNode("_b0"), IRI(EX + "q"), Var("o")),
        TriplePattern(Var("s"), IRI(EX + "r"), BNode("x")))


def test_construct_where_uses_the_pattern_as_template():
    query = parse_query("CONSTRUCT FROM <g> WHERE { ?s ?p ?o . }")
    pattern = (TriplePattern(Var("s"), Var("p"), Var("o")),)
    assert query.template == pattern
    assert query.where == GroupPattern((TriplesBlock(pattern),))
    assert query.graphs == (ast.GraphClause("g"),)


def test_ask():
    query = parse_query("ASK FROM STREAM <s> [RANGE 2s STEP 1s] { ?s ?p ?o }")
    assert query.form == "ASK" and query.streams[0].window == TimeWindow(2000, 1000)


def test_every_dataset_clause():
    text = ("PREFIX ex: <http://ex.org/>\nSELECT *\n"
            "FROM <g1>\n"
            "FROM NAMED ex:g2\n"
            "FROM STREAM <s1> [RANGE 3000ms STEP 1s]\n"
            "  from named stream <s2> [range 1h tumbling]\n"
            "FROM NAMED WINDOW ex:w ON <s3> [RANGE PT10M STEP PT0.5S]\n"
            "FROM STREAM <s4> [TRIPLES 10]\n"
            "FROM STREAM <s5> [RANGE TRIPLES 5]\n"
            "WHERE { ?s ?p ?o }")
    query = parse_query(text)
    assert query.graphs == (ast.GraphClause("g1"), ast.GraphClause(EX + "g2", named=True))
    assert query.streams == (
        ast.StreamClause("s1", TimeWindow(3000, 1000)),
        ast.StreamClause("s2", TimeWindow(3_600_000, 3_600_000), graph="s2"),
        ast.StreamClause("s3", TimeWindow(600_000, 500), graph=EX + "w"),
        ast.StreamClause("s4", CountWindow(10)),
        ast.StreamClause("s5", CountWindow(5)))
    positions = [c.position for c in query.graphs + query.streams]
    assert positions == [Position(3, 1), Position(4, 1), Position(5, 1), Position(6, 3),
                         Position(7, 1), Position(8, 1), Position(9, 1)]


@pytest.mark.parametrize("window, message", [
    ("[RANGE 0s STEP 1s]", "duration '0s' must be positive"),
    ("[RANGE 1s STEP PT0S]", "duration 'PT0S' must be positive"),
    ("[RANGE P1Y STEP 1s]", "not a duration: 'P1Y'"),
    ("[RANGE PT0.0001S STEP 1s]", "not a whole number of milliseconds"),
    ("[TRIPLES 0]", "at least one triple"),
    ("[RANGE 3sec STEP 1s]", "unexpected '3'; expected one of: TRIPLES, duration"),
    ("[RANGE 5s]", "unexpected ']'; expected one of: STEP, TUMBLING"),
])
def test_bad_windows(window, message):
    with pytest.raises(QuerySyntaxError, match=r"^<query>:1:\d+: .*" + re.escape(message)):
        parse_query(f"SELECT * FROM STREAM <s> {window} WHERE {{ ?s ?p ?o }}")


@pytest.mark.parametrize("text, ms", [
    ("3000ms", 3000), ("1s", 1000), ("10m", 600_000), ("1h", 3_600_000), ("2d", 172_800_000),
    ("1S", 1000), ("PT3S", 3000), ("PT0.5S", 500), ("PT10M", 600_000), ("PT1H", 3_600_000),
    ("P1D", 86_400_000), ("P1W", 604_800_000), ("P1DT1H1M1.25S", 90_061_250), ("pt3s", 3000),
    ("PT0S", 0),
])
def test_parse_duration(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["", "3", "1.5s", "3 s", "P", "PT", "P1Y", "P1M", "PT1.5", "1D2"])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError):
        parse_duration(text)


# --------------------------------------------------------------------------------- triples


def test_predicate_object_lists():
    assert triples("ex:s a ex:C ; ex:p 1, 2 ; ex:q ?o ; . ?x ?y ?z") == (
        TriplePattern(IRI(EX + "s"), IRI(ast.RDF_TYPE), IRI(EX + "C")),
        TriplePattern(IRI(EX + "s"), IRI(EX + "p"), lit("1", INT)),
        TriplePattern(IRI(EX + "s"), IRI(EX + "p"), lit("2", INT)),
        TriplePattern(IRI(EX + "s"), IRI(EX + "q"), Var("o")),
        TriplePattern(Var("x"), Var("y"), Var("z")))


def test_blank_nodes():
    assert triples("[ ex:p [ ex:q 1 ] ] ex:r [] . _:a ex:s [ ex:t ?o ] . [ ex:u 2 ]") == (
        TriplePattern(BNode("_b1"), IRI(EX + "p"), BNode("_b0")),
        TriplePattern(BNode("_b0"), IRI(EX + "q"), lit("1", INT)),
        TriplePattern(BNode("_b1"), IRI(EX + "r"), BNode("_b2")),
        TriplePattern(BNode("a"), IRI(EX + "s"), BNode("_b3")),
        TriplePattern(BNode("_b3"), IRI(EX + "t"), Var("o")),
        TriplePattern(BNode("_b4"), IRI(EX + "u"), lit("2", INT)))


def test_fresh_blank_nodes_avoid_labels_the_query_uses():
    assert triples("?s ex:p [ ex:q _:_b0 ]") == (
        TriplePattern(Var("s"), IRI(EX + "p"), BNode("_b1")),
        TriplePattern(BNode("_b1"), IRI(EX + "q"), BNode("_b0")))


@pytest.mark.parametrize("text, literal", [
    ('"plain"', lit("plain")),
    ("'single'", lit("single")),
    ('"tab\\tquote\\"nl\\n\\u00e9\\U0001F600\\\\"', lit('tab\tquote"nl\né\U0001F600\\')),
    ("'''long 'one'\nline\\t'''", lit("long 'one'\nline\t")),
    ('"""long "two" ""x"""', lit('long "two" ""x')),
    ('""', lit("")),
    ('"chat"@fr', lit("chat", lang="fr")),
    ('"colour"@en-GB', lit("colour", lang="en-GB")),
    ('"5"^^<http://www.w3.org/2001/XMLSchema#int>', lit("5", XSD + "int")),
    ('"5"^^xsd:short', lit("5", XSD + "short")),
    ('"s"^^xsd:string', lit("s")),
    ("80", lit("80", INT)),
    ("-5", lit("-5", INT)),
    ("+5", lit("+5", INT)),
    ("1.5", lit("1.5", DEC)),
    (".5", lit(".5", DEC)),
    ("-0.25", lit("-0.25", DEC)),
    ("1e3", lit("1e3", DBL)),
    ("1.5E-3", lit("1.5E-3", DBL)),
    ("-2e+2", lit("-2e+2", DBL)),
    ("true", lit("true", BOOL)),
    ("FALSE", lit("false", BOOL)),
])
def test_literals(text, literal):
    head = "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> SELECT *"
    assert where(f"?s ?p {text} .", head).elements[0].triples[0].object == literal


def test_integer_object_before_the_final_dot():
    assert triples("?s ?p 80.")[0].object == lit("80", INT)


# -------------------------------------------------------------------------------- patterns


def test_group_elements_stay_in_source_order():
    group = where("?a ?b ?c . FILTER(?c > 1) ?d ?e ?f . "
                  "OPTIONAL { ?a ex:o ?x } "
                  "{ ?a ex:u 1 } UNION { ?a ex:u 2 } UNION { ?a ex:u 3 } "
                  "MINUS { ?a ex:m ?m } "
                  "GRAPH ?g { ?a ex:g ?y } . "
                  "GRAPH ex:G { ?a ex:g ?y } "
                  "WINDOW ex:w { ?a ex:w ?z } "
                  "{ ?n ?e ?s } "
                  "BIND(?c * 2 AS ?c2) "
                  "?z ?z ?z")
    kinds = [type(e).__name__ for e in group.elements]
    assert kinds == ["TriplesBlock", "Filter", "TriplesBlock", "OptionalPattern", "UnionPattern",
                     "MinusPattern", "GraphPattern", "GraphPattern", "GraphPattern", "GroupPattern",
                     "Bind", "TriplesBlock"]
    assert len(group.elements[4].alternatives) == 3
    assert group.elements[6].name == Var("g")
    assert group.elements[7].name == IRI(EX + "G")
    assert group.elements[8].name == IRI(EX + "w")
    assert group.elements[10] == Bind(BinaryOp("*", Var("c"), lit("2", INT)), Var("c2"))
    assert isinstance(group.elements[3], OptionalPattern)
    assert isinstance(group.elements[5], MinusPattern)
    assert isinstance(group.elements[4], UnionPattern)


def test_empty_groups():
    assert where("") == GroupPattern(())
    assert where("{}") == GroupPattern((GroupPattern(()),))


# ----------------------------------------------------------------------------- expressions


@pytest.mark.parametrize("text, expected", [
    ("?a || ?b && ?c", BinaryOp("||", Var("a"), BinaryOp("&&", Var("b"), Var("c")))),
    ("?a = 1 && ?b != 2", BinaryOp("&&", BinaryOp("=", Var("a"), lit("1", INT)),
                                   BinaryOp("!=", Var("b"), lit("2", INT)))),
    ("?a + ?b * ?c - ?d", BinaryOp("-", BinaryOp("+", Var("a"), BinaryOp("*", Var("b"), Var("c"))),
                                   Var("d"))),
    ("(?a + ?b) / 2", BinaryOp("/", BinaryOp("+", Var("a"), Var("b")), lit("2", INT))),
    ("?a<10&&?b>5", BinaryOp("&&", BinaryOp("<", Var("a"), lit("10", INT)),
                             BinaryOp(">", Var("b"), lit("5", INT)))),
    ("?a<=?b||?a>=?b", BinaryOp("||", BinaryOp("<=", Var("a"), Var("b")),
                                BinaryOp(">=", Var("a"), Var("b")))),
    ("?a-1 > -1", BinaryOp(">", BinaryOp("-", Var("a"), lit("1", INT)), lit("-1", INT))),
    ("?a - -1.5 = +2", BinaryOp("=", BinaryOp("-", Var("a"), lit("-1.5", DEC)), lit("+2", INT))),
    ("-?a < 0", BinaryOp("<", UnaryOp("-", Var("a")), lit("0", INT))),
    ("!(?a && ?b)", UnaryOp("!", BinaryOp("&&", Var("a"), Var("b")))),
    ("?a IN (1, ex:x)", In(Var("a"), (lit("1", INT), IRI(EX + "x")))),
    ("?a not in ()", In(Var("a"), (), negated=True)),
    ("?a = true", BinaryOp("=", Var("a"), lit("true", BOOL))),
    ("?a = 'x'@en", BinaryOp("=", Var("a"), lit("x", lang="en"))),
])
def test_expressions(text, expected):
    assert expr(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("BOUND(?a)", FunctionCall("bound", (Var("a"),))),
    ("regex(?a, 'x')", FunctionCall("regex", (Var("a"), lit("x")))),
    ("REGEX(STR(?a), '^x', 'i')", FunctionCall("regex", (FunctionCall("str", (Var("a"),)),
                                                         lit("^x"), lit("i")))),
    ("isIRI(?a)", FunctionCall("isiri", (Var("a"),))),
    ("langMatches(lang(?a), 'en')", FunctionCall("langmatches", (FunctionCall("lang", (Var("a"),)),
                                                                 lit("en")))),
    ("sameTerm(?a, ?b)", FunctionCall("sameterm", (Var("a"), Var("b")))),
    ("IF(?a, 1, 2)", FunctionCall("if", (Var("a"), lit("1", INT), lit("2", INT)))),
    ("COALESCE(?a, ?b, 0)", FunctionCall("coalesce", (Var("a"), Var("b"), lit("0", INT)))),
    ("concat()", FunctionCall("concat", ())),
    ("NOW()", FunctionCall("now", ())),
    ("substr(?a, 1, 2)", FunctionCall("substr", (Var("a"), lit("1", INT), lit("2", INT)))),
    ("year(?d)", FunctionCall("year", (Var("d"),))),
    ("xsd:double(?a)", FunctionCall(XSD + "double", (Var("a"),))),
    ("<http://ex.org/f>(?a, 1)", FunctionCall(EX + "f", (Var("a"), lit("1", INT)))),
    ("timestamp(?s, ex:p, ?o)", Timestamp(Var("s"), IRI(EX + "p"), Var("o"))),
    ("f:timestamp(?s, ?p, 'x')", Timestamp(Var("s"), Var("p"), lit("x"))),
    ("<http://larkc.eu/csparql/sparql/jena/ext#timestamp>(?s, ?p, ?o)",
     Timestamp(Var("s"), Var("p"), Var("o"))),
])
def test_function_calls(text, expected):
    head = ("PREFIX ex: <http://ex.org/> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> "
            "PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#> SELECT *")
    assert expr(f"{text} = ?z", head) == BinaryOp("=", expected, Var("z"))


def test_filter_without_brackets_takes_a_call():
    assert where("?s ?p ?o FILTER regex(?o, 'a')").elements[1] == Filter(
        FunctionCall("regex", (Var("o"), lit("a"))))


@pytest.mark.parametrize("text, aggregate", [
    ("COUNT(*)", Aggregate("count", None)),
    ("count(distinct *)", Aggregate("count", None, distinct=True)),
    ("COUNT(DISTINCT ?a)", Aggregate("count", Var("a"), distinct=True)),
    ("SUM(?a * 2)", Aggregate("sum", BinaryOp("*", Var("a"), lit("2", INT)))),
    ("Avg(?a)", Aggregate("avg", Var("a"))),
    ("MIN(?a)", Aggregate("min", Var("a"))),
    ("MAX(?a)", Aggregate("max", Var("a"))),
    ("SAMPLE(?a)", Aggregate("sample", Var("a"))),
    ("GROUP_CONCAT(?a)", Aggregate("group_concat", Var("a"))),
    ("group_concat(DISTINCT ?a; SEPARATOR=', ')", Aggregate("group_concat", Var("a"), True, ", ")),
])
def test_aggregates(text, aggregate):
    query = parse_query(f"SELECT ({text} AS ?x) WHERE {{ ?s ?p ?a }}")
    assert query.projection == (SelectItem(Var("x"), aggregate),)


@pytest.mark.parametrize("text, message", [
    ("foo(?a)", "<query>:2:25: unknown function 'foo'"),
    ("regex(?a)", "<query>:2:25: regex() takes 2 or 3 argument(s), not 1"),
    ("now(?a)", "now() takes 0 argument(s), not 1"),
    ("bound(1)", "bound() takes a variable"),
    ("timestamp(?s, ?p)", "timestamp() takes 3 argument(s), not 2"),
    ("timestamp(?s, ?p, ?o + 1)", "timestamp()'s object must be a variable or an IRI or a blank node or a literal"),
    ("timestamp(?s, [], ?o)", "timestamp()'s predicate must be a variable or an IRI"),
    ("timestamp(1, ?p, ?o)", "timestamp()'s subject must be a variable or an IRI or a blank node"),
    ("str(_:b)", "a blank node can stand in an expression only as an argument of timestamp()"),
    ("f:timestamp(?s)", "timestamp() takes 3 argument(s), not 1"),
    ("SUM(?a; SEPARATOR='x')", "only GROUP_CONCAT takes a SEPARATOR"),
])
def test_bad_calls(text, message):
    with pytest.raises(QuerySyntaxError, match=re.escape(message)):
        parse_query("PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>\n"
                    f"SELECT * WHERE {{ FILTER({text}) }}")


# ---------------------------------------------------------------------- solution modifiers


def test_group_having_order_limit_offset():
    query = parse_query("PREFIX ex: <http://ex.org/> SELECT ?g (COUNT(?s) AS ?n) "
                        "WHERE { ?s ?p ?o } "
                        "GROUP BY ?g str(?o) (?o + 1) (ex:f(?o) AS ?h) ex:f(?s) "
                        "HAVING (COUNT(?s) > 1) (?g != 2) "
                        "ORDER BY ?g DESC(?n) ASC(?g) str(?o) "
                        "OFFSET 5 LIMIT 10")
    assert query.group_by == (
        GroupCondition(Var("g")),
        GroupCondition(FunctionCall("str", (Var("o"),))),
        GroupCondition(BinaryOp("+", Var("o"), lit("1", INT))),
        GroupCondition(FunctionCall(EX + "f", (Var("o"),)), Var("h")),
        GroupCondition(FunctionCall(EX + "f", (Var("s"),))))
    assert query.having == (BinaryOp(">", Aggregate("count", Var("s")), lit("1", INT)),
                            BinaryOp("!=", Var("g"), lit("2", INT)))
    assert query.order_by == (OrderCondition(Var("g")), OrderCondition(Var("n"), descending=True),
                              OrderCondition(Var("g")),
                              OrderCondition(FunctionCall("str", (Var("o"),))))
    assert (query.limit, query.offset) == (10, 5)


@pytest.mark.parametrize("tail, limit, offset", [
    ("LIMIT 3", 3, None), ("OFFSET 2", None, 2), ("LIMIT 3 OFFSET 2", 3, 2),
    ("offset 2 limit 3", 3, 2), ("", None, None),
])
def test_limit_and_offset_in_any_order(tail, limit, offset):
    query = parse_query(f"SELECT * {{ ?s ?p ?o }} {tail}")
    assert (query.limit, query.offset) == (limit, offset)


# --------------------------------------------------------------- lexical: case and comments


def test_keywords_are_case_insensitive():
    lower = parse_query("prefix ex: <http://ex.org/> register query q as select distinct ?s "
                        "from stream <s> [range 3000ms step 1s] "
                        "where { ?s a ex:C optional { ?s ?p ?o } filter(bound(?o)) } "
                        "group by ?s order by desc(?s) limit 1")
    mixed = parse_query("Prefix ex: <http://ex.org/> Register Query q As Select Distinct ?s "
                        "From Stream <s> [Range 3000MS Step 1S] "
                        "Where { ?s a ex:C Optional { ?s ?p ?o } Filter(Bound(?o)) } "
                        "Group By ?s Order By Desc(?s) Limit 1")
    assert lower == mixed
    assert lower.streams[0].window == TimeWindow(3000, 1000)


def test_comments():
    query = parse_query("### header comment\n"
                        "PREFIX ex: <http://ex.org/#> # trailing comment\n"
                        "select ?a #?b ?c\n\n?d # more\n"
                        "where { ?a ex:p \"# not a comment\" . # comment\n"
                        "#?x ?y ?z .\n"
                        "?d <http://ex.org/#frag> ?a }\n# final")
    assert [i.var.name for i in query.projection] == ["a", "d"]
    assert triples_of(query) == (
        TriplePattern(Var("a"), IRI("http://ex.org/#p"), lit("# not a comment")),
        TriplePattern(Var("d"), IRI("http://ex.org/#frag"), Var("a")))


# ---------------------------------------------------------------------------------- errors


def test_syntax_error_names_file_line_column_token_and_expected():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("SELECT ?s\nWHERE { ?s ?p ?o ", source="queries/q.rq")
    err = info.value
    assert (err.source, err.line, err.column) == ("queries/q.rq", 2, 18)
    assert str(err).startswith("queries/q.rq:2:18: unexpected end of input; expected one of: ")
    assert {"'}'", "'.'", "FILTER", "OPTIONAL"} <= set(err.expected)


def test_syntax_error_on_a_misplaced_keyword():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("SELECT ?s FROM STREAM <s> [RANGE 1s] WHERE { ?s ?p ?o }")
    err = info.value
    assert (err.line, err.column) == (1, 36)
    assert "unexpected ']'" in str(err) and err.expected == ["STEP", "TUMBLING"]


def test_syntax_error_on_an_unknown_character():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("SELECT ?s WHERE { ?s ?p ?o . ~~~ }")
    assert str(info.value).startswith("<query>:1:30: unexpected '~~~'")
    assert "variable" in info.value.expected


def test_syntax_error_on_a_no_break_space():
    """A no-break space is no separator of the grammar, but a space to Python's regexes: the
    error shows it alone rather than failing to find the word it starts."""
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("SELECT\xa0* WHERE { ?s ?p ?o }", source="q.rq")
    assert str(info.value).startswith("q.rq:1:7: unexpected '\\xa0'; expected one of: ")


def test_empty_query():
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("  # nothing\n")
    assert (info.value.line, info.value.column) == (2, 1)
    assert {"SELECT", "CONSTRUCT", "ASK", "REGISTER", "PREFIX"} <= set(info.value.expected)


# ---------------------------------------------------------------------------- property paths

P, Q, R = IRI(EX + "p"), IRI(EX + "q"), IRI(EX + "r")


@pytest.mark.parametrize("body, expected", [
    # SPARQL 1.1 section 18.2.2.4: an IRI is a triple pattern, ^iri one reversed
    ("?s ex:p ?o", (TriplePattern(Var("s"), P, Var("o")),)),
    ("?s ^ex:p ?o", (TriplePattern(Var("o"), P, Var("s")),)),
    ("?s ^(^ex:p) ?o", (TriplePattern(Var("s"), P, Var("o")),)),
    # a sequence: triples joined through fresh, non-distinguished variables (blank nodes)
    ("?s ex:p/ex:q ?o", (TriplePattern(Var("s"), P, BNode("_b0")),
                         TriplePattern(BNode("_b0"), Q, Var("o")))),
    # inv(seq(P, Q)) is seq(inv(Q), inv(P)): triples too
    ("?s ^(ex:p/ex:q) ?o", (TriplePattern(BNode("_b0"), Q, Var("s")),
                            TriplePattern(Var("o"), P, BNode("_b0")))),
    ("?s ex:p/ex:q* ?o", (TriplePattern(Var("s"), P, BNode("_b0")),
                          ast.PathPattern(BNode("_b0"), ast.PathZeroOrMore(Q), Var("o")))),
    # precedence: | below /, below ^, below the modifiers
    ("?s ex:p|ex:q/ex:r ?o", (ast.PathPattern(Var("s"), ast.PathAlternative(
        (P, ast.PathSequence((Q, R)))), Var("o")),)),
    ("?s ^ex:p+ ?o", (ast.PathPattern(Var("s"), ast.PathOneOrMore(ast.PathInverse(P)),
                                      Var("o")),)),
    ("?s (ex:p|^ex:q)? ?o", (ast.PathPattern(Var("s"), ast.PathZeroOrOne(
        ast.PathAlternative((P, ast.PathInverse(Q)))), Var("o")),)),
    ("?s ((ex:p)*)* ?o", (ast.PathPattern(Var("s"), ast.PathZeroOrMore(ast.PathZeroOrMore(P)),
                                          Var("o")),)),
    # rules [95]-[96]: negated property sets, with inverse members
    ("?s !ex:p ?o", (ast.PathPattern(Var("s"), ast.PathNegated((P,)), Var("o")),)),
    ("?s !a ?o", (ast.PathPattern(Var("s"), ast.PathNegated((IRI(ast.RDF_TYPE),)), Var("o")),)),
    ("?s !^ex:p ?o", (ast.PathPattern(Var("s"), ast.PathNegated((), (P,)), Var("o")),)),
    ("?s !(^ex:p) ?o", (ast.PathPattern(Var("s"), ast.PathNegated((), (P,)), Var("o")),)),
    ("?s !(ex:p|^ex:q|a) ?o", (ast.PathPattern(
        Var("s"), ast.PathNegated((P, IRI(ast.RDF_TYPE)), (Q,)), Var("o")),)),
    ("?s !() ?o", (ast.PathPattern(Var("s"), ast.PathNegated(()), Var("o")),)),
    # inv(NPS) swaps its forward and inverse members
    ("?s ^!(ex:p|^ex:q) ?o", (ast.PathPattern(Var("s"), ast.PathNegated((Q,), (P,)),
                                              Var("o")),)),
    # object lists and predicate lists repeat the path
    ("?s ex:p+ ?a, ?b ; ex:q ?c", (ast.PathPattern(Var("s"), ast.PathOneOrMore(P), Var("a")),
                                   ast.PathPattern(Var("s"), ast.PathOneOrMore(P), Var("b")),
                                   TriplePattern(Var("s"), Q, Var("c")))),
])
def test_property_paths(body, expected):
    assert triples(body) == expected


def test_a_path_pattern_knows_where_it_is_written():
    block = triples("?s\n  ex:p* ?o . ?s ex:q/ex:r+ ?o")
    assert [t.position for t in block if isinstance(t, ast.PathPattern)] == [
        Position(2, 3), Position(2, 17)]


def test_fresh_path_variables_are_not_selected_by_star():
    query = parse_query("PREFIX ex: <http://ex.org/> SELECT * FROM STREAM <s> [RANGE 1s STEP 1s] "
                        "WHERE { ?s ex:p/ex:q/ex:r ?o }")
    from rsp_jobs.algebra.translate import translate
    assert [v.name for v in translate(query).variables] == ["o", "s"]


@pytest.mark.parametrize("body, column", [
    ("?s !(ex:p/ex:q) ?o", "/"),  # a negated set holds IRIs only
    ("?s !(ex:p*) ?o", "*"),
    ("?s ex:p** ?o", "*"),  # one modifier a step (rule [91] PathElt)
    ("?s ex:p|?o", "?o"),
])
def test_bad_paths_are_syntax_errors_where_they_go_wrong(body, column):
    head = "PREFIX ex: <http://ex.org/> SELECT *"
    with pytest.raises(QuerySyntaxError) as info:
        where(body, head)
    assert info.value.column == len(f"{head} WHERE {{ ") + body.rindex(column) + 1


@pytest.mark.parametrize("query, column", [
    ("CONSTRUCT { ?s ex:p/ex:q ?o } WHERE { ?s ex:p ?o }", 16),
    ("CONSTRUCT WHERE { ?s ex:p* ?o }", 22),
])
def test_a_construct_template_takes_no_path(query, column):
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("PREFIX ex: <http://ex.org/>\n" + query)
    assert (info.value.line, info.value.column) == (2, column)
    assert "a property path cannot stand in a CONSTRUCT template" in str(info.value)


@pytest.mark.parametrize("body, construct, start", [
    ("?s ?p ?o SERVICE <http://ex.org/sparql> { ?s ?p ?o }", "SERVICE", "SERVICE"),
])
def test_unsupported_constructs(body, construct, start):
    head = "PREFIX ex: <http://ex.org/> SELECT *"
    with pytest.raises(UnsupportedConstruct) as info:
        where(body, head)
    column = len(f"{head} WHERE {{ ") + body.index(start) + 1
    assert info.value.construct == construct
    assert str(info.value) == f"<query>:1:{column}: unsupported construct: {construct}"


def test_values_inline_trailing_and_in_a_subquery():
    q = parse_query(
        "PREFIX ex: <http://ex.org/> SELECT * { VALUES (?s ?n) { (ex:a 1) (UNDEF -2.5) } "
        "?s ?p ?o { SELECT ?o { ?s ?p ?o } VALUES ?o { \"x\"@en } } } VALUES ?p { ex:p }"
    )
    inline, _, sub = q.where.elements
    assert inline == ast.InlineData(
        (ast.Var("s"), ast.Var("n")),
        (
            (ast.IRI("http://ex.org/a"), ast.Literal("1", ast.XSD + "integer")),
            (None, ast.Literal("-2.5", ast.XSD + "decimal")),
        ),
        ast.Position(1, 40),
    )
    assert sub.query.values.rows == ((ast.Literal("x", lang="en"),),)
    assert q.values.vars == (ast.Var("p"),)
    assert q.values.rows == ((ast.IRI("http://ex.org/p"),),)


def test_collections_are_rdf_lists_of_fresh_blank_nodes():
    rdf = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
    (block,) = parse_query("SELECT * { ?s <urn:p> (1 [ <urn:q> ?x ] ()) }").where.elements
    first, rest = IRI(rdf + "first"), IRI(rdf + "rest")
    one = Literal("1", XSD + "integer")
    s = block.triples[0].object
    assert block.triples[0] == TriplePattern(Var("s"), IRI("urn:p"), s) and isinstance(s, BNode)
    by_subject = {}
    for t in block.triples[1:]:
        by_subject.setdefault(t.subject, {})[t.predicate] = t.object
    assert by_subject[s][first] == one
    second = by_subject[s][rest]
    member = by_subject[second][first]
    assert isinstance(member, BNode) and by_subject[member] == {IRI("urn:q"): Var("x")}
    third = by_subject[second][rest]
    assert by_subject[third] == {first: IRI(rdf + "nil"), rest: IRI(rdf + "nil")}
    assert len({s, second, member, third}) == 4


def test_exists_and_not_exists_hold_their_group():
    text = ("SELECT * { ?s ?p ?o FILTER(NOT EXISTS { ?o ?q 1 } || EXISTS { SELECT ?s {} }) "
            "BIND(EXISTS { ?s ?p 2 } AS ?b) }")
    q = parse_query(text)
    test = q.where.elements[1].expr
    assert test.left == ast.Exists(
        ast.GroupPattern((ast.TriplesBlock((TriplePattern(Var("o"), Var("q"), Literal("1", XSD + "integer")),)),)),
        negated=True, position=ast.Position(1, text.index("NOT") + 1))
    assert isinstance(test.right.group.elements[0], ast.SubSelect) and not test.right.negated
    assert q.where.elements[2].expr.position == ast.Position(1, text.index("EXISTS { ?s ?p 2") + 1)


@pytest.mark.parametrize("text, message", [
    ("SELECT * { VALUES (?a ?b) { (1 2) (3) } }", "<query>:1:35: this VALUES row has 1 value(s) for 2 variable(s)"),
    ("SELECT * { ?s ?p ?o } VALUES (?s ?s) { (1 1) }", "<query>:1:23: VALUES names ?s twice"),
])
def test_values_rows_must_fit_their_variables(text, message):
    with pytest.raises(QuerySyntaxError) as info:
        parse_query(text)
    assert str(info.value) == message


def test_parse_query_file_names_the_file(tmp_path):
    path = tmp_path / "bad.rq"
    path.write_text("SELECT * WHERE {\n ?s ?p }\n")
    with pytest.raises(QuerySyntaxError, match="^" + re.escape(f"{path}:2:8: unexpected '}}'")):
        parse_query_file(path)


def test_any_cut_of_a_query_fails_cleanly(data_dir):
    """Truncated or damaged text gives a QuerySyntaxError, never an internal error."""
    text = (data_dir / "csrbench/queries/q6.rq").read_text()
    damaged = [text[:cut] for cut in range(len(text))]
    damaged += [text[:cut] + text[cut + 1:] for cut in range(0, len(text), 4)]
    for variant in damaged:
        try:
            parse_query(variant)
        except QuerySyntaxError:
            pass


def test_long_offending_text_is_cut_short():
    excerpt = '"' + "x" * 29 + "..."
    with pytest.raises(QuerySyntaxError, match=re.escape(f"unexpected '{excerpt}'")):
        parse_query(f'SELECT * WHERE {{ ?s ?p ?o "{"x" * 100}" }}')


@pytest.mark.parametrize("grammar", ["rsp.lark", "dotr.lark", "tasparql.lark"])
def test_grammar_has_no_lalr_conflicts(caplog, grammar):
    """lark resolves shift/reduce conflicts silently (as shift); a grammar edit must not add one.
    The three grammars share sparql_terminals.lark."""
    from lark import Lark

    from rsp_jobs.language.parser import _GRAMMAR

    with caplog.at_level("DEBUG", logger="lark"):
        Lark.open(str(_GRAMMAR.with_name(grammar)), parser="lalr", debug=True)
    assert not [r for r in caplog.records if "conflict" in r.getMessage().lower()]
    assert "%import .sparql_terminals" in _GRAMMAR.with_name(grammar).read_text()


# ------------------------------------------------------------------ C-SPARQL's own syntax


def test_the_aggregate_clause_as_the_paper_prints_it():
    """C-SPARQL §3.3: AggregateClause → ('AGGREGATE { (' var ',' Fun ',' Group ')' [Filter] '}')*,
    Group → var | '{' var (',' var)* '}'; several clauses in one query."""
    query = parse_query("PREFIX sioc: <http://rdfs.org/sioc/ns#>\nSELECT DISTINCT ?topic ?number WHERE "
                        "{ ?post sioc:topic ?topic ; sioc:has_creator ?who . }\n"
                        "AGGREGATE {(?number , COUNT , {?topic })}\n"
                        "AGGREGATE { (?people, COUNT(DISTINCT ?who), ?topic) FILTER(?people > 1) }")
    first, second = query.aggregates
    assert first == ast.AggregateClause(Var("number"), ast.Aggregate("count", None), (Var("topic"),))
    assert first.position == ast.Position(3, 1)
    assert second.aggregate == ast.Aggregate("count", Var("who"), True) and second.group == (Var("topic"),)
    assert isinstance(second.filter, ast.BinaryOp)


def test_an_aggregate_clause_without_the_variable_it_sums_is_refused():
    with pytest.raises(QuerySyntaxError, match=r"1:47: AVG in an AGGREGATE clause needs the variable it aggregates"):
        parse_query("SELECT ?x WHERE { ?x ?p ?v } AGGREGATE { (?a, AVG, {?x}) }")


def test_describe_names_variables_and_resources_and_may_omit_where():
    query = parse_query("PREFIX ex: <http://ex.org/> DESCRIBE ?x ex:a WHERE { ?x ex:p ?y }")
    assert (query.form, query.described) == ("DESCRIBE", (Var("x"), IRI(EX + "a")))
    bare = parse_query("DESCRIBE <http://ex.org/a>")
    assert bare.described == (IRI(EX + "a"),) and bare.where == ast.GroupPattern(())
    assert parse_query("DESCRIBE * WHERE { ?s ?p ?o }").described is None


def test_a_subquery_is_a_select_of_its_own():
    query = parse_query("SELECT ?s ?n WHERE { ?s ?p ?o { SELECT ?o (COUNT(*) AS ?n) WHERE { ?o ?q ?r } GROUP BY ?o } }")
    (sub,) = [e for e in query.where.elements if isinstance(e, ast.SubSelect)]
    assert sub.query.form == "SELECT" and [i.var for i in sub.query.projection] == [Var("o"), Var("n")]
    assert sub.query.group_by == (ast.GroupCondition(Var("o")),)


@pytest.mark.parametrize("call, subject, obj", [
    ("f:timestamp(_:b, ex:p, ?o)", ast.BNode("b"), Var("o")),
    ("f:timestamp(?s, ex:p, [])", Var("s"), ast.BNode("_b0")),
    ("timestamp(ex:a, ?p, \"v\")", IRI(EX + "a"), ast.Literal("v")),
])
def test_timestamp_takes_blank_nodes_as_the_tutorial_grammar_allows(call, subject, obj):
    """Tutorial 004: timestamp(variable|IRI|bn, variable|IRI, variable|IRI|bn|literal)."""
    query = parse_query("PREFIX ex: <http://ex.org/> PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#> "
                        f"SELECT ?t WHERE {{ ?s ?p ?o BIND({call} AS ?t) }}")
    (bind,) = [e for e in query.where.elements if isinstance(e, ast.Bind)]
    assert (bind.expr.subject, bind.expr.object) == (subject, obj)


# ------------------------------------------------------------------ EP-SPARQL's own syntax


def test_bare_names_are_names_in_the_default_namespace():
    """EP-SPARQL 3.1 writes `?company hasStockPrice ?price1`: a bare name in a triple is
    `:hasStockPrice`; keywords stay keywords, `a` stays rdf:type, prefixed names stay whole."""
    query = parse_query("PREFIX : <http://ex.org/> PREFIX ex: <http://other.org/>\n"
                        "SELECT * WHERE { ?c hasStockPrice ?p ; a Company . ?c ex:p x FILTER(bound(?p)) }")
    triples = query.where.elements[0].triples
    assert [t.predicate for t in triples] == [IRI("http://ex.org/hasStockPrice"), IRI(ast.RDF_TYPE),
                                              IRI("http://other.org/p")]
    assert [t.object for t in triples][1:] == [IRI("http://ex.org/Company"), IRI("http://ex.org/x")]
    with pytest.raises(QuerySyntaxError, match=r"q.rsp:1:15: the bare name 'hasStockPrice'.*PREFIX :"):
        parse_query("SELECT * { ?c hasStockPrice ?p }", "q.rsp")


def test_unbracketed_select_expressions_in_either_order():
    """Examples (5) and (6): `?count AS ?prevcount + 1` names first, `?sum / ?count AS ?average`
    names last; * and / bind tighter than + and -."""
    query = parse_query("SELECT ?count AS ?prevcount + 1 ?sum AS ?prevsum + ?price ?a - ?b * 2 AS ?c ?d "
                        "WHERE { ?s ?p ?o }")
    items = [(i.var.name, i.expr) for i in query.projection]
    assert items == [
        ("count", BinaryOp("+", Var("prevcount"), Literal("1", XSD + "integer"))),
        ("sum", BinaryOp("+", Var("prevsum"), Var("price"))),
        ("c", BinaryOp("-", Var("a"), BinaryOp("*", Var("b"), Literal("2", XSD + "integer")))),
        ("d", None)]


def test_a_construct_template_without_braces_and_a_where_that_is_a_subquery():
    """Example (4): `CONSTRUCT ?company downratedby ?ratingagency WHERE ...`; example (5): the
    template followed by `{ SELECT ... }`, the WHERE keyword left out."""
    query = parse_query("PREFIX : <http://ex.org/> CONSTRUCT ?c downratedby ?a . _:x :n ?c WHERE { ?c :p ?a }")
    assert [t.predicate for t in query.template] == [IRI("http://ex.org/downratedby"), IRI("http://ex.org/n")]
    sub = parse_query("PREFIX : <http://ex.org/> CONSTRUCT _:b :n ?n . { SELECT ?n AS ?m + 1 WHERE { ?s :m ?m } }")
    (element,) = sub.where.elements
    assert isinstance(element, ast.SubSelect) and element.query.projection[0].var == Var("n")


@pytest.mark.parametrize("body", [
    "{ ?s :q ?o } OPTIONAL { SELECT ?s WHERE { ?s :p ?o } }",
    "{ ?s :q ?o } MINUS { SELECT ?s WHERE { ?s :p ?o } }",
    "{ SELECT ?s WHERE { ?s :p ?o } } UNION { ?s :q ?o }",
    "{ ?s :q ?o } UNION { SELECT ?s WHERE { ?s :p ?o } }",
])
def test_a_subquery_after_optional_minus_or_union_is_a_group_holding_it(body):
    """SPARQL 1.1 §12: ``{ SELECT ... }`` is a GroupGraphPattern wherever one stands."""
    query = parse_query(f"PREFIX : <http://ex/> SELECT * WHERE {{ {body} }}")
    groups = [n for n in ast_walk(query.where) if isinstance(n, ast.GroupPattern)
              and any(isinstance(e, ast.SubSelect) for e in n.elements)]
    assert groups, "the subquery is not held by a group"
    for node in ast_walk(query.where):
        for field in ("group",):
            if hasattr(node, field) and not isinstance(node, ast.SubSelect):
                assert isinstance(getattr(node, field), ast.GroupPattern)
        if isinstance(node, ast.UnionPattern):
            assert all(isinstance(a, ast.GroupPattern) for a in node.alternatives)


def ast_walk(node):
    from rsp_jobs.tree import walk
    return walk(node)


@pytest.mark.parametrize("literal", [r"'\uD800'", r"'a\udfff'", r"'''\U0000DBFF'''"])
def test_an_escape_of_half_a_surrogate_pair_is_refused(literal):
    with pytest.raises(QuerySyntaxError, match=r"^<query>:1:23: .* names half of a UTF-16 surrogate pair"):
        parse_query(f"SELECT * {{ ?s <urn:p> {literal} }}")
