"""No wrong number without an error (issue 15): SPARQL's value semantics for numbers, the same
on Spark (C-SPARQL windows), SQLite and PostgreSQL (TA-SPARQL).

- A SUM or AVG over a term that is not a number (an ill-typed ``"abc"^^xsd:integer``, a string)
  is a type error (SPARQL 1.1 §18.5.1.3, op:numeric-add): unbound, never a silent sum of the rest.
- Every ordering and = comparison with NaN is false, != is true (XPath op:numeric-equal etc.).
- ``NaN``, ``INF``, ``-INF`` keep their XSD lexical forms in results.
- U+0000 in a term is refused alike on every backend.
"""
from __future__ import annotations

import pytest

from rsp_jobs import compiler
from rsp_jobs.engine import evaluate
from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.ingest.lake import Lake, load_files
from rsp_jobs.ingest.rdf_stream import NUL_TERM, read_stream_file
from rsp_jobs.store.tardf import import_stream
from rsp_jobs.store.tasparql import run_query

STREAM = "http://ex.org/streams/n"
AT = "<http://www.w3.org/ns/prov#generatedAtTime>"
XSD = "http://www.w3.org/2001/XMLSchema#"


def stream_file(path, values: dict[str, list[str]]):
    """One frame per second; ``values``: subject -> the objects of its <v> triples, in N-Triples."""
    lines = []
    for second, (subject, objects) in enumerate(values.items()):
        frame = f"<http://ex.org/f/{subject}>"
        lines.append(f'{frame} {AT} "2014-08-01T07:50:0{second}Z"^^<{XSD}dateTime> .')
        lines += [f"<http://ex.org/{subject}> <http://ex.org/v> {o} {frame} ." for o in objects]
    path.write_text("\n".join(lines) + "\n")
    return path


VALUES = {
    "ok": ['"1"^^<%sinteger>' % XSD, '"2"^^<%sinteger>' % XSD],
    "illtyped": ['"1"^^<%sinteger>' % XSD, '"abc"^^<%sinteger>' % XSD],
    "string": ['"1"^^<%sinteger>' % XSD, '"two"'],
    "nan": ['"NaN"^^<%sdouble>' % XSD, '"1"^^<%sinteger>' % XSD],
    "inf": ['"INF"^^<%sdouble>' % XSD, '"1"^^<%sinteger>' % XSD],
}
# by hand: the sum per subject; None is unbound (a type error)
SUMS_TA = {"ok": "3", "illtyped": None, "string": None, "inf": "INF", "nan": None}


def tasparql_sums(store) -> dict:
    result = run_query(store, "SELECT ?s (SUM(?v) AS ?sum) (COUNT(?v) AS ?n) WHERE { "
                              "GRAPH ?f[*] { ?s <http://ex.org/v> ?v } } GROUP BY ?s")
    return {row["s"]["value"].rsplit("/", 1)[1]: (row.get("sum", {}).get("value"), row["n"]["value"])
            for row in result.rows}


def test_tasparql_sums_are_errors_over_non_numbers_on_every_backend(store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", VALUES), STREAM)
    assert tasparql_sums(store) == {s: (SUMS_TA[s], "2") for s in VALUES}


def test_tasparql_comparisons_with_nan_are_false_on_every_backend(store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", VALUES), STREAM)
    for condition in ("?v > 0", "?v < 0", "?v = ?v", "?v >= -1e308"):
        result = run_query(store, f"SELECT ?v WHERE {{ GRAPH ?f[*] {{ <http://ex.org/nan> <http://ex.org/v> ?v }} "
                                  f"FILTER({condition}) }}")
        assert [row["v"]["value"] for row in result.rows] == (["1"] if condition != "?v < 0" else []), condition


def test_a_nul_in_a_tasparql_term_is_refused_alike():
    with pytest.raises(QuerySyntaxError, match=r"1:48: U\+0000 \(NUL\) cannot be in a term"):
        run_query(None, 'SELECT ?v WHERE { ?x[*] <urn:p> ?v FILTER(?v = "a\\u0000b") }')


@pytest.mark.parametrize("escaped", ["\\u0000", "\\U00000000"])
def test_a_nul_in_a_stream_is_quarantined_before_any_backend_sees_it(escaped, tmp_path):
    """(The reader skips the per-term test where the text holds no NUL, raw or escaped: both
    escapes must still be found.)"""
    batch = read_stream_file(stream_file(tmp_path / "n.nq", {"a": [f'"x{escaped}y"', '"fine"']}), STREAM)
    assert [e.o for e in batch.elements] == ['"fine"']
    (rejection,) = batch.rejections
    assert (rejection.line, rejection.reason, rejection.triples) == (2, NUL_TERM, 1)
    assert "\\u0000" in rejection.text and "\x00" not in rejection.text


def test_spark_sums_and_nan_comparisons_follow_sparql(tmp_path, spark):
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(STREAM, stream_file(tmp_path / "n.nq", VALUES))])
    head = f"REGISTER QUERY q AS\nSELECT ?s (SUM(?v) AS ?sum) (COUNT(?v) AS ?n)\nFROM STREAM <{STREAM}> "
    query = compiler.compile(head + "[RANGE 10s STEP 10s]\nWHERE { ?s <http://ex.org/v> ?v } GROUP BY ?s")
    (window,) = [w.to_json() for w in evaluate(query, lake, []) if w.bindings]
    sums = {b["s"]["value"].rsplit("/", 1)[1]: b.get("sum", {}).get("value") for b in window["bindings"]}
    # the lake keeps NaN as a number: Spark's sum with a NaN is NaN, as SPARQL's is
    assert sums == {**SUMS_TA, "nan": "NaN"}

    compare = compiler.compile(f"REGISTER QUERY c AS\nSELECT ?v ?gt ?eq ?ne\nFROM STREAM <{STREAM}> [RANGE 10s STEP 10s]\n"
                            "WHERE { <http://ex.org/nan> <http://ex.org/v> ?v "
                            "BIND(?v > 0 AS ?gt) BIND(?v = ?v AS ?eq) BIND(?v != 1 AS ?ne) }")
    (window,) = [w.to_json() for w in evaluate(compare, lake, []) if w.bindings]
    rows = {b["v"]["value"]: (b["gt"]["value"], b["eq"]["value"], b["ne"]["value"]) for b in window["bindings"]}
    assert rows == {"NaN": ("false", "false", "true"), "1": ("true", "true", "false")}


# ----------------------------------------------------------------------------- aggregates
#
# SPARQL 1.1 §18.5.1.3 (Sum) adds with op:numeric-add, which is a type error on a term that is
# no number, and §18.5.1.4 (Avg) is Sum / Count: one such member makes either an error, and an
# aggregate that is an error leaves its variable unbound (§11.5, agg-err-01). That holds in the
# implicit group of a query without GROUP BY as in any other. An argument *expression* that is
# an error for one solution is such a member too (ListEval keeps the error), also for MIN and
# MAX; an unbound variable is no member (docs/semantics/numbers.md, "Aggregates").

INT = f"<{XSD}integer>"
ILL = {"a": [f'"1"^^{INT}', f'"2"^^{INT}', f'"abc"^^{INT}']}
AGGREGATES = "(SUM({a}) AS ?total) (AVG({a}) AS ?mean) (MIN({a}) AS ?least) (MAX({a}) AS ?most)"
# by hand, per argument: MIN and MAX order every term (ORDER BY's order, §15.1): the ill-typed
# literal is no number, so it sorts before the numbers; SUM and AVG are errors
EXPECTED_ILL = {
    "?v": {"least": ("abc", f"{XSD}integer"), "most": ("2", f"{XSD}integer")},
    "(?v + 0)": {},  # "abc"^^xsd:integer + 0 is an error: every aggregate over it is one
}


def spark_rows(lake, select: str, where: str = "?s <http://ex.org/v> ?v", group: str = "") -> list[dict]:
    query = compiler.compile(f"REGISTER QUERY q AS\nSELECT {select}\nFROM STREAM <{STREAM}> [RANGE 10s STEP 10s]\n"
                             f"WHERE {{ {where} }} {group}")
    (window,) = [w.to_json() for w in evaluate(query, lake, []) if w.bindings]
    return window["bindings"]


def terms_of(row: dict) -> dict:
    return {name: (term["value"], term.get("datatype")) for name, term in row.items()}


@pytest.mark.parametrize("argument", list(EXPECTED_ILL))
@pytest.mark.parametrize("group", ["", "GROUP BY ?s"])
def test_spark_aggregates_over_an_ill_typed_member_follow_sparql_with_and_without_group_by(
        argument, group, tmp_path, spark):
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(STREAM, stream_file(tmp_path / "n.nq", ILL))])
    select = ("?s " if group else "") + AGGREGATES.format(a=argument)
    (row,) = spark_rows(lake, select, group=group)
    row.pop("s", None)
    assert terms_of(row) == EXPECTED_ILL[argument]


def test_spark_implicit_group_without_solutions_keeps_sparqls_defaults(tmp_path, spark):
    """Over no solutions SUM and AVG are 0, COUNT 0, MIN and MAX unbound (§18.5.1): the default
    belongs to the empty group only."""
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(STREAM, stream_file(tmp_path / "n.nq", ILL))])
    (row,) = spark_rows(lake, AGGREGATES.format(a="?v") + " (COUNT(?v) AS ?n)", where="?s <http://ex.org/none> ?v")
    assert terms_of(row) == {"total": ("0", f"{XSD}integer"), "mean": ("0", f"{XSD}integer"),
                             "n": ("0", f"{XSD}integer")}


def tasparql_rows(store, select: str, where: str = "?s <http://ex.org/v> ?v", group: str = "") -> list[dict]:
    return run_query(store, f"SELECT {select} WHERE {{ GRAPH ?f[*] {{ {where} }} }} {group}").rows


@pytest.mark.parametrize("group", ["", "GROUP BY ?s"])
def test_tasparql_sum_and_avg_over_an_ill_typed_member_are_unbound_with_and_without_group_by(
        group, store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", ILL), STREAM)
    for argument in ("?v", "(?v + 0)"):
        select = ("?s " if group else "") + f"(SUM({argument}) AS ?total) (AVG({argument}) AS ?mean)"
        (row,) = tasparql_rows(store, select, group=group)
        row.pop("s", None)
        assert row == {}, argument


BIG = {"huge": [f'"{10**30}"^^{INT}', f'"1"^^{INT}'], "top": [f'"{2**63 - 1}"^^{INT}', f'"1"^^{INT}'],
       "edge": [f'"{10**18 - 2}"^^{INT}', f'"1"^^{INT}'], "past": [f'"{2**53}"^^{INT}', f'"1"^^{INT}']}


def test_spark_integers_are_exact_to_18_digits_and_errors_past_them_never_another_number(tmp_path, spark):
    """Integers and decimals are exact to 18 digits before the point (XSD §3.2.3's minimum):
    a sum, product or comparison that needs more is unbound (an error), never a rounded or
    saturated number; below that bound it is exact, past 2^53 too (docs/semantics/numbers.md)."""
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(STREAM, stream_file(tmp_path / "n.nq", BIG))])
    rows = {r["s"]["value"].rsplit("/", 1)[1]: terms_of(r)
            for r in spark_rows(lake, "?s (SUM(?v) AS ?total) (SUM(?v * 10) AS ?tens)", group="GROUP BY ?s")}
    assert rows["huge"] == {"s": ("http://ex.org/huge", None)}  # 10^30 + 1, and 10^31 + 10: no number
    assert rows["top"] == {"s": ("http://ex.org/top", None)}  # 2^63: not 9223372036854775807
    assert rows["edge"]["total"] == (str(10**18 - 1), f"{XSD}integer")
    assert "tens" not in rows["edge"]  # (10^18 - 1) * 10 has 19 digits
    assert rows["past"]["total"] == (str(2**53 + 1), f"{XSD}integer")  # a double would say 2^53
    assert rows["past"]["tens"] == (str(2**53 * 10 + 10), f"{XSD}integer")
    kept = spark_rows(lake, "?s ?v", where=f"?s <http://ex.org/v> ?v FILTER(?v < {2**53 + 1})")
    assert sorted(r["v"]["value"] for r in kept) == ["1", "1", "1", "1", str(2**53)]  # one double, two integers
    assert not [w for w in evaluate(compiler.compile(  # a constant past the bound is an error where compared
        f"REGISTER QUERY q AS\nSELECT ?v\nFROM STREAM <{STREAM}> [RANGE 10s STEP 10s]\n"
        f"WHERE {{{{ ?s <http://ex.org/v> ?v FILTER(?v != {10**30 + 1}) }}}}"), lake, []) if w.bindings]


DEC = f"<{XSD}decimal>"
DECIMALS = {"tenths": [f'"0.1"^^{DEC}', f'"0.2"^^{DEC}'], "fine": [f'"0.100000000000000001"^^{DEC}'],
            "tiny": [f'"0.000000000000000001"^^{DEC}', f'"-3"^^{INT}'],
            "mixed": [f'"1.5"^^<{XSD}double>', f'"2"^^{INT}']}


def decimal_rows(lake, select: str, where: str = "?s <http://ex.org/v> ?v", group: str = "") -> dict:
    return {r["s"]["value"].rsplit("/", 1)[1]: terms_of(r) for r in spark_rows(lake, select, where, group)}


def test_spark_decimals_are_exact_in_sums_comparisons_and_arithmetic(tmp_path, spark):
    """XSD §3.2.3: decimals exact to at least 18 digits; worked out by hand, where doubles give
    0.30000000000000004, 0.1 + 0.2 != 0.3 and 0.100000000000000001 = 0.1."""
    lake = Lake(tmp_path / "lake")
    load_files(lake, [(STREAM, stream_file(tmp_path / "n.nq", DECIMALS))])
    sums = decimal_rows(lake, "?s (SUM(?v) AS ?t) (AVG(?v) AS ?a) (MAX(?v * 10) AS ?m)", group="GROUP BY ?s")
    d = f"{XSD}decimal"
    assert sums["tenths"] == {"s": sums["tenths"]["s"], "t": ("0.3", d), "a": ("0.15", d), "m": ("2.0", d)}
    assert sums["fine"]["t"] == ("0.100000000000000001", d) and sums["fine"]["m"] == ("1.00000000000000001", d)
    assert sums["tiny"]["t"] == ("-2.999999999999999999", d)
    assert sums["mixed"]["t"] == ("3.5", f"{XSD}double")  # a double member: double arithmetic (§17.3)

    kept = decimal_rows(lake, "?s ?v", where="?s <http://ex.org/v> ?v FILTER(?v + 0.2 = 0.3)")
    assert list(kept) == ["tenths"] and kept["tenths"]["v"] == ("0.1", d)
    above = decimal_rows(lake, "?s ?v", where="?s <http://ex.org/v> ?v FILTER(?v > 0.1 && ?v < 0.2)")
    assert list(above) == ["fine"]

    computed = decimal_rows(lake, "?s (?v * ?v AS ?sq) (?v / 3 AS ?third) (-?v AS ?neg) (?v - 0.3 AS ?less) "
                                  "(?v * 100 AS ?hundred)",
                            where="?s <http://ex.org/v> ?v FILTER(?v = 0.000000000000000001 || ?v = 0.2)")
    assert computed["tiny"] == {"s": computed["tiny"]["s"], "sq": ("0.0", d), "third": ("0.0", d),
                                "neg": ("-0.000000000000000001", d), "less": ("-0.299999999999999999", d),
                                "hundred": ("0.0000000000000001", d)}
    assert computed["tenths"]["sq"] == ("0.04", d) and computed["tenths"]["third"] == ("0.066666666666666667", d)
    assert computed["tenths"]["hundred"] == ("20.0", d)


# --------------------------------------------------------------- TA-SPARQL: exact integers and decimals
#
# XSD 1.0 Part 2 §3.2.3: at least 18 decimal digits; xsd:integer has no bound. SPARQL 1.1 §17.3
# promotes integer < decimal < float < double; a sum of integers is an integer, of decimals a
# decimal (§18.5.1.3), an average a decimal (§18.5.1.4). TA-SPARQL computes xsd:integer and
# xsd:decimal values exactly on SQLite and PostgreSQL; floats and doubles stay doubles. A quotient
# keeps 18 digits after the point, rounded half up (rsp_jobs/store/sql/expressions.py).

DEC, DBL = f"<{XSD}decimal>", f"<{XSD}double>"
EXACT = {
    "tenths": [f'"0.1"^^{DEC}', f'"0.2"^^{DEC}'],
    "huge": [f'"{10**30}"^^{INT}', f'"1"^^{INT}'],
    "fine": [f'"0.100000000000000001"^^{DEC}', f'"0.1"^^{DEC}'],
    "mixed": [f'"1"^^{INT}', f'"0.5"^^{DEC}'],
    "thirds": [f'"1"^^{INT}', f'"2"^^{INT}', f'"4"^^{INT}'],
    "doubles": [f'"0.1"^^{DBL}', f'"0.2"^^{DBL}'],
    "illtyped": [f'"1"^^{INT}', f'"1.5"^^{INT}'],  # "1.5" is no integer: every aggregate is an error
}
I, D, F = f"{XSD}integer", f"{XSD}decimal", f"{XSD}double"
# by hand: (SUM, AVG, MIN, MAX) per subject
EXACT_AGGREGATES = {
    "tenths": (("0.3", D), ("0.15", D), ("0.1", D), ("0.2", D)),
    "huge": ((str(10**30 + 1), I), ("5" + "0" * 29 + ".5", D), ("1", I), (str(10**30), I)),
    "fine": (("0.200000000000000001", D), ("0.100000000000000001", D), ("0.1", D), ("0.100000000000000001", D)),
    "mixed": (("1.5", D), ("0.75", D), ("0.5", D), ("1", I)),
    "thirds": (("7", I), ("2.333333333333333333", D), ("1", I), ("4", I)),
    "illtyped": (None, None, None, None),  # before: MAX was 1.5 written as the integer 2
    "doubles": (("0.30000000000000004", F), ("0.15000000000000002", F), ("0.1", F), ("0.2", F)),
}


def exact_rows(store, select: str, where: str = "?s <http://ex.org/v> ?v", group: str = "") -> dict:
    """The rows' terms by subject name (several rows of one subject: a sorted list of them)."""
    found: dict = {}
    for row in tasparql_rows(store, select, where, group):
        found.setdefault(row.pop("s")["value"].rsplit("/", 1)[1], []).append(terms_of(row))
    return {s: rows[0] if len(rows) == 1 else sorted(rows, key=str) for s, rows in found.items()}


def test_tasparql_sums_averages_and_extremes_of_integers_and_decimals_are_exact(store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", EXACT), STREAM)
    rows = exact_rows(store, "?s (SUM(?v) AS ?sum) (AVG(?v) AS ?avg) (MIN(?v) AS ?min) (MAX(?v) AS ?max)",
                      group="GROUP BY ?s")
    assert {s: tuple(r.get(k) for k in ("sum", "avg", "min", "max")) for s, r in rows.items()} == {
        **EXACT_AGGREGATES}
    # SUM(10^30, 1) is that integer, never 1000000000000000019884624838656; so is each member + 0
    (row,) = tasparql_rows(store, "(SUM(?v + 0) AS ?sum)", where="<http://ex.org/huge> <http://ex.org/v> ?v")
    assert terms_of(row) == {"sum": (str(10**30 + 1), I)}


def test_tasparql_arithmetic_on_integers_and_decimals_is_exact(store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", {k: EXACT[k] for k in ("tenths", "huge", "doubles")}), STREAM)
    rows = exact_rows(store, "?s (?v + 1 AS ?plus) (?v * 10 AS ?times) (?v / 3 AS ?third) (-?v AS ?minus) "
                             "(0.1 + 0.2 AS ?literals)")
    tenths = [{"plus": (f"1.{d}", D), "times": (f"{d}.0", D), "third": (third, D), "minus": (f"-0.{d}", D),
               "literals": ("0.3", D)} for d, third in ((1, "0.0" + "3" * 17), (2, "0.0" + "6" * 16 + "7"))]
    assert rows["tenths"] == sorted(tenths, key=str)
    assert rows["huge"] == sorted([
        {"plus": (str(10**30 + 1), I), "times": (str(10**31), I), "third": ("3" * 30 + "." + "3" * 18, D),
         "minus": (f"-{10**30}", I), "literals": ("0.3", D)},
        {"plus": ("2", I), "times": ("10", I), "third": ("0." + "3" * 18, D), "minus": ("-1", I),
         "literals": ("0.3", D)}], key=str)
    # a double operand keeps double arithmetic (SPARQL 1.1 §17.3)
    assert {r["plus"] for r in rows["doubles"]} == {("1.1", F), ("1.2", F)}


@pytest.mark.parametrize("condition, kept", [
    ("?v + 0.2 = 0.3", ["0.1", "0.1"]),  # as doubles, 0.1 + 0.2 is 0.30000000000000004
    (f'?v > "0.1"^^{DEC}', ["0.100000000000000001", "0.2", "1", str(10**30)]),
    (f'?v != "0.1"^^{DEC} && ?v < "0.100000000000000002"^^{DEC}', ["0.100000000000000001"]),
    (f'?v + 1 = "{10**30 + 1}"^^{INT}', [str(10**30)]),
    (f'?v = "{10**30 + 1}"^^{INT}', []),  # as doubles they are equal
    (f'"0.100000000000000001"^^{DEC} > "0.1"^^{DEC} && ?v = "0.2"^^{DEC}', ["0.2"]),
    (f'?v * 3 = "0.3"^^{DEC}', ["0.1", "0.1"]),
    (f'?v / 3 = "0.066666666666666667"^^{DEC}', ["0.2"]),  # 18 digits after the point, rounded half up
    (f'?v / -3 = "-0.066666666666666667"^^{DEC}', ["0.2"]),  # half up is away from zero
    (f'("0.000000000000000003"^^{DEC} / 2 = "0.000000000000000002"^^{DEC}) && ?v = 1', ["1"]),  # a tie
    ("?v > 0.1 && ?v < 0.100000000000000002", ["0.100000000000000001"]),  # numerals as written, too
    (f"?v + 1 = {10**30 + 1}", [str(10**30)]),
    (f"?v = {10**30 + 1}", []),
])
def test_tasparql_comparisons_of_integers_and_decimals_are_exact(condition, kept, store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", {k: EXACT[k] for k in ("tenths", "huge", "fine")}), STREAM)
    result = run_query(store, f"SELECT ?v WHERE {{ GRAPH ?f[*] {{ ?s <http://ex.org/v> ?v }} FILTER({condition}) }}")
    assert sorted(row["v"]["value"] for row in result.rows) == sorted(kept), condition


def test_tasparql_comparisons_of_doubles_stay_doubles(store, tmp_path):
    import_stream(store, stream_file(tmp_path / "n.nq", {"doubles": EXACT["doubles"]}), STREAM)
    for condition, kept in ((f'?v + "0.2"^^{DBL} = "0.4"^^{DBL}', ["0.2"]),
                            (f'?v + "0.2"^^{DBL} = "0.3"^^{DBL}', [])):  # 0.30000000000000004
        result = run_query(store, f"SELECT ?v WHERE {{ GRAPH ?f[*] {{ ?s <http://ex.org/v> ?v }} FILTER({condition}) }}")
        assert [row["v"]["value"] for row in result.rows] == kept, condition


def test_tasparql_distinct_sums_take_equal_values_once(store, tmp_path):
    """1 and 1.0 are one value (as PostgreSQL's DISTINCT on NUMERIC has them, so SQLite too);
    the sum is a decimal, as one member is."""
    import_stream(store, stream_file(tmp_path / "n.nq", {"same": [f'"1"^^{INT}', f'"1.0"^^{DEC}', f'"2"^^{INT}']}),
                  STREAM)
    (row,) = tasparql_rows(store, "(SUM(DISTINCT ?v) AS ?sum) (AVG(DISTINCT ?v) AS ?avg) (SUM(?v) AS ?all)")
    assert terms_of(row) == {"sum": ("3.0", D), "avg": ("1.5", D), "all": ("4.0", D)}
