"""Golden tests of the optimizer (no Spark): ``tests/fixtures/optimizer/<rule>.txt`` holds the
cases of one rule (the format: ``tests/support/fixtures.py``), each an input and the plan it
compiles to, and says whether the rule fires on it: leaving the rule out must then change the
plan, and must not change it where the rule is to leave the plan alone. So each file pins down
what its rule does and where it must not. A rule of ``optimize.SET_RULES`` reads its case's
DOTR files compiled as one rule set (one file: a rule alone, a set of one); any other rule
reads its case's one file. ``RSP_REGOLD=1`` rewrites the plans from the current compiler, each
file's titles and inputs kept (then read the diff before committing it).

That leaving the rules out keeps the answers is checked against rdflib by
``tests/engine/test_differential.py``, whose every other evaluation runs without them; the
CSRBench, CityBench and paper suites run with them all."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rsp_jobs.algebra.explain import explain
from rsp_jobs.algebra.optimize import RULES, SET_RULES
from rsp_jobs.compiler import compile, compile_rule_set
from tests.support.fixtures import Case, find_case, load_cases, regold

FIXTURES = Path(__file__).parents[1] / "fixtures" / "optimizer"
FILES = sorted(FIXTURES.glob("*.txt"))
CASES = [(path.stem, case) for path in FILES for case in load_cases(path)]
SET_RULE_NAMES = {rule.__name__ for rule in SET_RULES}


def compiled(rule: str, case: Case, skip=()):
    if rule in SET_RULE_NAMES:
        return compile_rule_set([compile(text, name, skip=skip) for name, text in case.files], skip)
    (name, text), = case.files
    return compile(text, name, skip=skip)


def fires(case: Case) -> bool:
    assert case.meta.get("fires") in ("yes", "no"), f"{case}: '# fires: yes' or '# fires: no'"
    return case.meta["fires"] == "yes"


def test_every_rule_has_a_fixture_file():
    assert sorted(p.stem for p in FILES) == sorted(RULES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_rule_has_cases_where_it_fires_and_where_it_must_not(path: Path):
    assert {fires(case) for case in load_cases(path)} == {True, False}


@pytest.mark.parametrize("rule, case", CASES, ids=[f"{rule}: {case.title}" for rule, case in CASES])
def test_optimized_plan_is_the_golden_one(rule: str, case: Case):
    plan = explain(compiled(rule, case))
    if os.environ.get("RSP_REGOLD"):
        regold(case, plan)
        case = find_case(case.path, case.title)
    assert plan == case.plan, str(case)


@pytest.mark.parametrize("rule, case", CASES, ids=[f"{rule}: {case.title}" for rule, case in CASES])
def test_leaving_the_rule_out_changes_the_plan_only_where_it_fires(rule: str, case: Case):
    without = explain(compiled(rule, case, skip=[rule]))
    if fires(case):
        assert without != explain(compiled(rule, case)), f"{case}: {rule} does not fire"
    else:
        assert without == explain(compiled(rule, case)), f"{case}: {rule} fires"


def test_regold_rewrites_a_plan_and_keeps_the_rest(tmp_path):
    fixture = tmp_path / "rule.txt"
    fixture.write_text("# about the file\n\n# title: one\n# fires: yes\n# why\n-- file: a.rsp\nA\n"
                       "# a comment of the input\n-- plan\nold\nplan\n\n# title: two\n-- file: b.dotr\nB\n"
                       "-- file: c.dotr\nC\n\n-- plan\nkept\n")
    one, two = load_cases(fixture)
    assert (one.title, one.meta, one.description, one.files, one.plan) == (
        "one", {"fires": "yes"}, "why", (("a.rsp", "A\n# a comment of the input\n"),), "old\nplan\n")
    assert (two.title, two.files, two.plan) == ("two", (("b.dotr", "B\n"), ("c.dotr", "C\n")), "kept\n")
    regold(one, "new\n")
    assert fixture.read_text() == ("# about the file\n\n# title: one\n# fires: yes\n# why\n-- file: a.rsp\nA\n"
                                   "# a comment of the input\n-- plan\nnew\n\n# title: two\n-- file: b.dotr\nB\n"
                                   "-- file: c.dotr\nC\n\n-- plan\nkept\n")


def test_a_case_without_its_plan_is_named(tmp_path):
    fixture = tmp_path / "rule.txt"
    fixture.write_text("# title: one\n-- file: a.rsp\nA\n")
    with pytest.raises(ValueError, match=r"rule.txt:1: .*'-- plan'"):
        load_cases(fixture)


def test_an_unknown_rule_is_named():
    (name, text), = CASES[0][1].files
    with pytest.raises(ValueError, match="no_such_rule.*order_joins"):
        compile(text, name, skip=["no_such_rule"])


def case_files(rule: str, title: str, directory: Path) -> tuple[Case, list[Path]]:
    """A case and its input files, written to ``directory/rule`` for the CLI to read."""
    case = find_case(FIXTURES / f"{rule}.txt", title)
    return case, case.write_inputs(directory / rule)


def test_rsp_explain_prints_the_plan_and_names_a_wrong_rule(capsys, tmp_path):
    from rsp_jobs.cli import main

    case, (path,) = case_files("order_joins", "most constants first, then always one connected to what is joined",
                               tmp_path)
    assert main(["explain", str(path)]) == 0
    assert capsys.readouterr().out == case.plan
    assert main(["explain", str(path), "--skip", "order_joins"]) == 0
    unordered = capsys.readouterr().out
    assert unordered.index("hasValue> ?v .") < unordered.index("?x <http://example.org/flag>")  # as written
    assert main(["explain", str(path), "--skip", "no_such_rule"]) == 2
    assert "unknown optimizer rule(s) no_such_rule" in capsys.readouterr().err


def test_rsp_explain_of_a_rule_alone_shows_its_events_merged_as_it_runs(capsys, tmp_path):
    """A rule alone runs as a set of one (``engine.match``): where its own SELECTs differ in an
    IRI, explain shows them merged too, after the rule's plan."""
    from rsp_jobs.cli import main

    _, (rule, _) = case_files("share_events_differing_in_an_iri",
                              "SELECTs of two rules differing only in the type are one, split by it", tmp_path)
    assert rule.name == "fire.dotr"
    assert main(["explain", str(rule)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Rule Fire\n") and "As evaluated, a set of one:\nRuleSet Fire\n" in out
    assert "Event Fire.H=<http://example.org/HighTemp> Fire.S=<http://example.org/Smoke> split by ?_iri" in out
    assert main(["explain", str(rule), "--skip", "share_events_differing_in_an_iri"]) == 0
    assert "As evaluated" not in capsys.readouterr().out
    _, (pair,) = case_files("share_event_queries", "two events with the same SELECT are one evaluation", tmp_path)
    assert main(["explain", str(pair)]) == 0
    assert "As evaluated" not in capsys.readouterr().out  # nothing merged: the rule's plan is what runs


def test_rsp_explain_plans_several_rules_as_one_set(capsys, tmp_path):
    from rsp_jobs.cli import main

    case, rules = case_files("share_events_across_rules", "one SELECT of two rules over the same stream is evaluated once",
                             tmp_path)
    assert main(["explain", *map(str, rules)]) == 0
    assert capsys.readouterr().out == case.plan
    _, (pair,) = case_files("share_event_queries", "two events with the same SELECT are one evaluation", tmp_path)
    _, (query,) = case_files("order_joins", "most constants first, then always one connected to what is joined",
                             tmp_path)
    assert main(["explain", str(pair), str(query)]) == 2
    assert "order_joins.rsp: only DOTR rules" in capsys.readouterr().err
    assert main(["explain", str(rules[0]), str(rules[0])]) == 2
    assert "given twice" in capsys.readouterr().err
