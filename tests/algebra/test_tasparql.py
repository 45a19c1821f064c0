"""The TA-SPARQL plan, with no store: each ``tests/fixtures/tasparql/<name>.tasparql`` (the
paper's §6 queries as printed, Table 2's translations, a query with every modifier) plans to
the ``<name>.plan`` beside it, which ``rsp explain`` prints; the syntax tree and the plan are
frozen all the way down; semantic errors are found when planning, before any SQL, naming line
and column; and each comparison's SPARQL operator is decided in the plan. ``RSP_REGOLD=1``
rewrites the ``.plan`` files (then read the diff before committing it)."""
from __future__ import annotations

import dataclasses
import os
from datetime import datetime
from pathlib import Path

import pytest

from rsp_jobs.algebra.explain import explain
from rsp_jobs.algebra.tasparql import OneTimeQuery, plan
from rsp_jobs.compiler import compile, compile_file
from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language.tasparql import parse
from rsp_jobs.textfile import read_text

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tasparql"
CASES = sorted(FIXTURES.glob("*.tasparql"))


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_the_plan_is_the_golden_one(case: Path):
    compiled = compile_file(case)
    assert isinstance(compiled, OneTimeQuery)
    golden = case.with_suffix(".plan")
    if os.environ.get("RSP_REGOLD"):
        golden.write_text(explain(compiled))
    assert explain(compiled) == golden.read_text()


def test_rsp_explain_prints_a_tasparql_querys_logical_plan(capsys):
    from rsp_jobs.cli import main

    case = FIXTURES / "q5_current_value.tasparql"
    assert main(["explain", str(case)]) == 0
    assert capsys.readouterr().out == case.with_suffix(".plan").read_text()


def frozen_all_the_way_down(node, path: str = "") -> list[str]:
    """What in a tree is not a frozen dataclass, a tuple or a plain value: where and what."""
    if isinstance(node, (list, dict, set)):
        return [f"{path}: a {type(node).__name__}"]
    if isinstance(node, tuple):
        return [found for i, item in enumerate(node) for found in frozen_all_the_way_down(item, f"{path}[{i}]")]
    if not dataclasses.is_dataclass(node):
        return []
    found = [] if type(node).__dataclass_params__.frozen else [f"{path}: {type(node).__name__} is not frozen"]
    for field in dataclasses.fields(node):
        found += frozen_all_the_way_down(getattr(node, field.name), f"{path}.{field.name}")
    return found


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_the_syntax_tree_and_the_plan_are_frozen_all_the_way_down(case: Path):
    tree = parse(read_text(case, "query"), str(case))
    assert frozen_all_the_way_down(tree) == []
    assert frozen_all_the_way_down(plan(tree)) == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        tree.where.elements[0].triples = ()


@pytest.mark.parametrize("text, line, column, message", [
    ("SELECT ?h WHERE { ?x[*] <p> ?x }", 1, 29, "?x is a frame; it can only be a subject"),
    ("SELECT ?z WHERE { ?x[*] <p> ?h }", 1, 8, "?z is not bound by any pattern"),
    ("SELECT ?h WHERE { ?x[*] <p> ?h FILTER(?h + 1) }", 1, 42, "FILTER needs a comparison"),
    ("SELECT ?h WHERE { ?x[*] <p> ?h ; dsv:belongsTo ?s FILTER(?s < 5) }", 1, 61, "'<' compares numbers or times"),
    ("SELECT ?t WHERE { { ?x[LAST] dsv:hasTimestamp ?t } UNION { ?y[LAST] <p> ?t } }", 1, 1,
     "?t is a time in one branch of a UNION and a term in another"),
    ("SELECT ?v WHERE { ?x[LAST] <p> ?v OPTIONAL { ?y[LAST] <q> ?w FILTER(?y > 1) } }", 1, 72,
     "a frame variable is compared by its time"),
])
def test_semantic_errors_are_found_when_planning(text, line, column, message):
    with pytest.raises(QuerySyntaxError) as err:
        compile(text, "q.tasparql")
    assert (err.value.source, err.value.line, err.value.column) == ("q.tasparql", line, column), str(err.value)
    assert message in str(err.value)


@pytest.mark.parametrize("condition, by", [
    ("?h > 5663.0", "term-number"),            # a stored term by its number
    ('?x.t > "2011-03-11T05:46:24Z"', "term-time"),  # a plain string holding a time, as a time
    ("?x.t > 1299822384000", "epoch"),         # a time as its UTC milliseconds
    ("?h = ?g", "terms"),                      # by number, by time, else by RDF term equality
    ("?s = 5", "never"),                       # a stream's IRI holds no number: never equal
    ("?x.t < ?y.t", "time"),
    ("1 < 2", "numeric"),
])
def test_each_comparison_is_typed_in_the_plan(condition, by):
    compiled = compile(f"SELECT ?h WHERE {{ ?x[*] <urn:h> ?h ; <urn:g> ?g ; dsv:belongsTo ?s . ?y[LAST] <urn:h> ?k "
                       f"FILTER({condition}) }}", "q.tasparql")
    assert compiled.filters[0].by == by


def test_a_selector_is_one_operator_with_its_times_in_utc():
    compiled = compile('SELECT ?h WHERE { ?x["2008-07-20T05:34:00Z-06:00"^^xsd:dateTime] <urn:h> ?h }', "q.tasparql")
    (scan,) = compiled.where.scans
    moment = datetime.fromisoformat("2008-07-20T11:34:00+00:00")
    assert (type(scan.selector).__name__, scan.selector.start, scan.selector.end) == ("At", moment, moment)
