"""Numbers and nesting past what the platform can run are refused when the text is parsed, with
file:line:col and the limit (docs/operations/limits.md); just under the limits, queries parse and run
(issue 15: deep expressions and groups, values out of Python's or Spark's range)."""
from __future__ import annotations

import pytest

from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language.diagnostics import MAX_DEPTH
from rsp_jobs.language.parser import MAX_COUNT, parse_query
from rsp_jobs.times import MAX_DURATION_MS, parse_duration
from rsp_jobs.language.dotr import parse_rule
from rsp_jobs.language.tasparql import parse as parse_tasparql

HEAD = "REGISTER QUERY q AS\nSELECT ?s\nFROM STREAM <http://ex.org/s> "
WHERE = "\nWHERE { ?s ?p ?o }\n"


@pytest.mark.parametrize("window, token, message", [
    ("[RANGE 99999999999999999999d STEP 1m]", "999", "duration '99999999999999999999d' is longer than the limit of 100 years"),
    ("[RANGE 1m STEP 36600001d]", "366", "longer than the limit of 100 years"),
    ("[RANGE PT999999999999999H STEP 1m]", "PT9", "longer than the limit of 100 years"),
    ("[TRIPLES 100000000000000000000]", "100", f"TRIPLES 100000000000000000000 is over the limit of {MAX_COUNT}"),
])
def test_windows_past_the_limits_are_refused_naming_line_and_column(window, token, message):
    with pytest.raises(QuerySyntaxError, match=message) as err:
        parse_query(HEAD + window + WHERE, "q.rsp")
    line = "FROM STREAM <http://ex.org/s> " + window
    assert (err.value.source, err.value.line, err.value.column) == ("q.rsp", 3, line.index(token) + 1)


def test_the_longest_window_allowed_parses():
    assert parse_duration("36600d") == MAX_DURATION_MS
    query = parse_query(HEAD + "[RANGE 36600d STEP 36600d]" + WHERE + f"LIMIT {MAX_COUNT} OFFSET {MAX_COUNT}\n", "q.rsp")
    assert (query.limit, query.offset) == (MAX_COUNT, MAX_COUNT)


@pytest.mark.parametrize("clause", ["LIMIT", "OFFSET"])
def test_limit_and_offset_past_a_java_int_are_refused(clause):
    with pytest.raises(QuerySyntaxError, match=rf"q.rsp:5:{len(clause) + 2}: {clause} 1{'0' * 30} is over the limit"):
        parse_query(HEAD + "[RANGE 1m STEP 1m]" + WHERE + f"{clause} 1{'0' * 30}\n", "q.rsp")


def test_tasparql_limit_past_64_bits_is_refused_on_every_backend_alike():
    assert parse_tasparql(f"SELECT ?v WHERE {{ ?x[LAST] <urn:p> ?v }} LIMIT {2**63 - 1}").limit == 2**63 - 1
    text = f"SELECT ?v WHERE {{ ?x[LAST] <urn:p> ?v }} LIMIT {2**63}"
    with pytest.raises(QuerySyntaxError, match=rf"<query>:1:{text.index('9223') + 1}: LIMIT {2**63} is over the "
                                               rf"limit of {2**63 - 1}"):
        parse_tasparql(text)


def test_a_dotr_window_past_the_limit_is_refused():
    rule = ("FROM STREAM <http://ex.org/s>\ndefine alarm {{ [] a <urn:Alarm> ; <urn:at> ?s }}\n"
            "from S = [SELECT ?s WHERE {{ ?s a <urn:Smoke> }}]\n"
            "and last T = [SELECT ?s WHERE {{ ?s a <urn:Heat> }}] within {n} min from S\n"
            "with S.?s = T.?s, ?s = S.?s\n")
    parse_rule(rule.format(n=5), "r.dotr")
    with pytest.raises(QuerySyntaxError, match=r"r.dotr:4:\d+: 99999999999999999 min is longer than the limit"):
        parse_rule(rule.format(n=99999999999999999), "r.dotr")


def nested_groups(n: int) -> str:
    return "{" * n + " ?s ?p ?o " + "}" * n


def conjunction(n: int) -> str:
    return " && ".join(["?o > 1"] * n)


DEEP = {
    "C-SPARQL: 300 nested groups": lambda: parse_query(HEAD + "[RANGE 1m STEP 1m]\nWHERE " + nested_groups(300), "q.rsp"),
    "C-SPARQL: 500 && terms": lambda: parse_query(HEAD + "[RANGE 1m STEP 1m]\nWHERE { ?s ?p ?o FILTER("
                                                   + conjunction(500) + ") }", "q.rsp"),
    "TA-SPARQL: 300 nested groups": lambda: parse_tasparql("SELECT ?v WHERE " + nested_groups(300).replace(
        "?s ?p ?o", "?x[LAST] <urn:p> ?o")),
    "TA-SPARQL: 500 || terms": lambda: parse_tasparql("SELECT ?o WHERE { ?x[LAST] <urn:p> ?o FILTER("
                                                      + conjunction(500).replace("&&", "||") + ") }"),
}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_nesting_past_the_limit_is_a_clear_error_not_a_recursion_error(name):
    with pytest.raises(QuerySyntaxError, match=f"nests deeper than the limit of {MAX_DEPTH} levels"):
        DEEP[name]()


def test_nesting_under_the_limit_parses_and_compiles():
    from rsp_jobs import compiler

    compiler.compile(HEAD + "[RANGE 1m STEP 1m]\nWHERE " + nested_groups(90), "q.rsp")
    compiler.compile(HEAD + "[RANGE 1m STEP 1m]\nWHERE { ?s ?p ?o FILTER(" + conjunction(190) + ") }", "q.rsp")
    parse_tasparql("SELECT ?v WHERE " + nested_groups(90).replace("?s ?p ?o", "?x[LAST] <urn:p> ?v"))


def patterns(n: int) -> str:
    return " ".join(f"?s <http://ex.org/p{i}> ?o{i} ." for i in range(n))


def binds(n: int) -> str:
    return "?s <http://ex.org/v> ?o . " + " ".join(f"BIND(?o + {i} AS ?b{i})" for i in range(n))


def test_a_bgp_or_binds_past_what_spark_plans_are_refused_where_the_first_one_past_is_written():
    from rsp_jobs.language.parser import MAX_BINDS, MAX_PATTERNS

    head = HEAD + "[RANGE 1m STEP 1m]\nWHERE { "
    parse_query(head + patterns(MAX_PATTERNS) + " }", "q.rsp")
    parse_query(head + binds(MAX_BINDS) + " }", "q.rsp")
    text = head + patterns(500) + " }"
    with pytest.raises(QuerySyntaxError, match=f"more than {MAX_PATTERNS} triple patterns in one query") as err:
        parse_query(text, "q.rsp")
    assert (err.value.line, err.value.column) == (4, text.split("\n")[3].index(f"?o{MAX_PATTERNS} .") + 1)
    text = head + binds(500) + " }"
    with pytest.raises(QuerySyntaxError, match=f"more than {MAX_BINDS} BINDs in one query") as err:
        parse_query(text, "q.rsp")
    assert err.value.column == text.split("\n")[3].index(f"BIND(?o + {MAX_BINDS} ") + 1


def test_a_tasparql_group_past_sqlites_join_limit_is_refused_on_every_backend():
    from rsp_jobs.store.tasparql import MAX_TABLES, translate

    def query(n: int) -> str:
        return "SELECT ?v0 WHERE { " + " ".join(f"?x[LAST] <urn:p> ?v{i} ." for i in range(n)) + " }"

    translate(query(MAX_TABLES - 1))  # the frame and its 63 patterns
    with pytest.raises(QuerySyntaxError, match=f"joins 501 tables in one group; the limit is {MAX_TABLES}"):
        translate(query(500))


TEN_MB = "x" * 10_000_000


@pytest.mark.slow  # parses 10 MB of query text
def test_a_10mb_literal_in_a_query_is_refused_naming_where_it_starts(monkeypatch):
    text = HEAD + '[RANGE 1m STEP 1m]\nWHERE { ?s ?p "' + TEN_MB + '" }\n'
    with pytest.raises(QuerySyntaxError, match=r"q.rsp:4:15: a string of 10000000 bytes is longer than "
                                               r"RSP_MAX_LITERAL_BYTES \(1048576\)"):
        parse_query(text, "q.rsp")
    with pytest.raises(QuerySyntaxError, match="a string of 10000000 bytes"):
        parse_tasparql('SELECT ?v WHERE { ?x[LAST] <urn:p> ?v FILTER(?v = "' + TEN_MB + '") }')
    monkeypatch.setenv("RSP_MAX_LITERAL_BYTES", str(20_000_000))  # the limit is a setting
    assert parse_query(text, "q.rsp").where is not None


@pytest.mark.slow  # parses 10 MB of stream
def test_a_10mb_literal_in_a_stream_is_quarantined_and_counted(tmp_path, monkeypatch):
    from rsp_jobs.ingest.rdf_stream import read_stream_file

    path = tmp_path / "s.nq"
    at = "<http://www.w3.org/ns/prov#generatedAtTime>"
    path.write_text(f'<http://ex.org/f> {at} "2014-08-01T07:50:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n'
                    f'<http://ex.org/s> <http://ex.org/big> "{TEN_MB}" <http://ex.org/f> .\n'
                    f'<http://ex.org/s> <http://ex.org/small> "ok" <http://ex.org/f> .\n')
    batch = read_stream_file(path, "http://ex.org/streams/big")
    assert [e.p for e in batch.elements] == ["<http://ex.org/small>"]
    (rejection,) = batch.rejections
    assert (rejection.line, rejection.triples) == (2, 1) and len(rejection.text) == 500
    assert rejection.reason == "a literal of 10000000 bytes is longer than RSP_MAX_LITERAL_BYTES (1048576)"
    monkeypatch.setenv("RSP_MAX_LITERAL_BYTES", str(20_000_000))
    assert len(read_stream_file(path, "http://ex.org/streams/big").elements) == 2


@pytest.mark.parametrize("window, after, until, extent, closes", [
    # closes every STEP from t0 + RANGE; data in [0, 1h) reaches the closes of (0, 1h + RANGE]
    ("[RANGE 1s STEP 1ms]", None, None, (0, 3_600_000_000), 3_600_000),
    ("[RANGE 1h STEP 5m]", None, None, (0, 86_400_000_000), 288),
    ("[RANGE 1h STEP 5m]", 3_600_000_000, 7_200_000_000, (0, 86_400_000_000), 12),  # (1h, 2h]
    ("[RANGE 1h STEP 5m]", 30 * 86_400_000_000, None, (0, 86_400_000_000), 0),  # after the data ends
])
def test_the_window_closes_an_evaluation_would_compute_are_counted_before_it_runs(window, after, until, extent, closes):
    from rsp_jobs.algebra.schedule import schedule
    from rsp_jobs.compiler import compile
    from rsp_jobs.errors import InputError
    from rsp_jobs.physical.planner import check_size

    query = compile(HEAD + window + WHERE, "q.rsp")
    sched = schedule(query, 0)
    check_size(query, sched, after, until, extent, 1, closes or 1, 10**12)  # at the limit: runs
    if closes:
        with pytest.raises(InputError, match=f"would compute {closes:,} window closes, from .* more than RSP_MAX_WINDOWS"):
            check_size(query, sched, after, until, extent, 1, closes - 1, 10**12)


def test_window_rows_past_the_limit_are_refused_naming_the_copies():
    from rsp_jobs.algebra.schedule import schedule
    from rsp_jobs.compiler import compile
    from rsp_jobs.errors import InputError
    from rsp_jobs.physical.planner import check_size

    query = compile(HEAD + "[RANGE 1h STEP 1s]" + WHERE, "q.rsp")
    sched = schedule(query, 0)
    check_size(query, sched, None, None, (0, 3_600_000_000), 1000, 10**9, 3_600_000)
    with pytest.raises(InputError, match="copies each of the slice's 1,001 rows into 3,600 windows, 3,603,600 "
                                         "window rows, more than RSP_MAX_WINDOW_ROWS"):
        check_size(query, sched, None, None, (0, 3_600_000_000), 1001, 10**9, 3_600_000)


def test_a_property_path_counts_a_pattern_for_each_iri_it_names():
    """``?s p1/p2/.../pn ?o`` is n triple patterns (SPARQL 1.1 section 18.2.2.4), so a long
    path is refused as a long BGP is, at the object that takes the query past the limit."""
    from rsp_jobs.language.parser import MAX_PATTERNS

    head = HEAD + "[RANGE 1m STEP 1m]\nWHERE { "
    path = "/".join(f"<http://ex.org/p{i}>" for i in range(MAX_PATTERNS - 1))
    parse_query(head + f"?s {path} ?a . ?s <http://ex.org/q>* ?b }}", "q.rsp")
    text = head + f"?s {path}|<http://ex.org/q> ?a, ?b }}"
    with pytest.raises(QuerySyntaxError, match=f"more than {MAX_PATTERNS} triple patterns in one query") as err:
        parse_query(text, "q.rsp")
    assert (err.value.line, err.value.column) == (4, text.split("\n")[3].index("?b") + 1)
