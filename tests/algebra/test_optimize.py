"""Golden tests of the optimizer (no Spark): each ``tests/fixtures/algebra/<rule>.rsp`` (or
``.dotr``, or a directory of ``.dotr`` files compiled as one rule set) compiles to the plan
written beside it in ``<rule>.plan``, and leaving ``<rule>`` out changes that plan, so each
file pins down what its rule does. ``RSP_REGOLD=1`` rewrites
the ``.plan`` files from the current compiler (then read the diff before committing it).

That leaving the rules out keeps the answers is checked against rdflib by
``tests/engine/test_differential.py``, whose every other evaluation runs without them; the
CSRBench, CityBench and paper suites run with them all."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rsp_jobs.algebra.explain import explain
from rsp_jobs.algebra.optimize import RULES
from rsp_jobs.compiler import compile_file, compile_rule_set

FIXTURES = Path(__file__).parents[1] / "fixtures" / "algebra"
CASES = sorted(p for p in FIXTURES.iterdir() if p.suffix in (".rsp", ".dotr") or p.is_dir())


def compiled(case: Path, skip=()):
    if case.is_dir():
        return compile_rule_set([compile_file(p, skip=skip) for p in sorted(case.glob("*.dotr"))], skip)
    return compile_file(case, skip=skip)


def test_every_rule_has_a_golden_file():
    assert sorted(p.stem for p in CASES) == sorted(RULES)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_optimized_plan_is_the_golden_one(case: Path):
    plan = explain(compiled(case))
    golden = case.parent / f"{case.stem}.plan"
    if os.environ.get("RSP_REGOLD"):
        golden.write_text(plan)
    assert plan == golden.read_text()


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_leaving_the_rule_out_changes_its_plan(case: Path):
    assert explain(compiled(case, skip=[case.stem])) != explain(compiled(case))


def test_an_unknown_rule_is_named():
    with pytest.raises(ValueError, match="no_such_rule.*order_joins"):
        compile_file(CASES[0], skip=["no_such_rule"])


def test_rsp_explain_prints_the_plan_and_names_a_wrong_rule(capsys):
    from rsp_jobs.cli import main

    case = FIXTURES / "order_joins.rsp"
    assert main(["explain", str(case)]) == 0
    assert capsys.readouterr().out == case.with_suffix(".plan").read_text()
    assert main(["explain", str(case), "--skip", "order_joins"]) == 0
    unordered = capsys.readouterr().out
    assert unordered.index("hasValue> ?v .") < unordered.index("?x <http://example.org/flag>")  # as written
    assert main(["explain", str(case), "--skip", "no_such_rule"]) == 2
    assert "unknown optimizer rule(s) no_such_rule" in capsys.readouterr().err


def test_rsp_explain_of_a_rule_alone_shows_its_events_merged_as_it_runs(capsys):
    """A rule alone runs as a set of one (``engine.match``): where its own SELECTs differ in an
    IRI, explain shows them merged too, after the rule's plan."""
    from rsp_jobs.cli import main

    rule = FIXTURES / "share_events_differing_in_an_iri" / "fire.dotr"
    assert main(["explain", str(rule)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Rule Fire\n") and "As evaluated, a set of one:\nRuleSet Fire\n" in out
    assert "Event Fire.H=<http://example.org/HighTemp> Fire.S=<http://example.org/Smoke> split by ?_iri" in out
    assert main(["explain", str(rule), "--skip", "share_events_differing_in_an_iri"]) == 0
    assert "As evaluated" not in capsys.readouterr().out
    assert main(["explain", str(FIXTURES / "share_event_queries.dotr")]) == 0
    assert "As evaluated" not in capsys.readouterr().out  # nothing merged: the rule's plan is what runs


def test_rsp_explain_plans_several_rules_as_one_set(capsys):
    from rsp_jobs.cli import main

    case = FIXTURES / "share_events_across_rules"
    assert main(["explain", *map(str, sorted(case.glob("*.dotr")))]) == 0
    assert capsys.readouterr().out == (FIXTURES / "share_events_across_rules.plan").read_text()
    assert main(["explain", str(FIXTURES / "share_event_queries.dotr"), str(FIXTURES / "order_joins.rsp")]) == 2
    assert "order_joins.rsp: only DOTR rules" in capsys.readouterr().err
    rule = str(next(case.glob("*.dotr")))
    assert main(["explain", rule, rule]) == 2
    assert "given twice" in capsys.readouterr().err


@pytest.mark.parametrize("window, chosen", [
    ("[RANGE 1h STEP 5m]", True), ("[RANGE 5m STEP 5m]", True), ("[RANGE 1m STEP 5m]", False),
    ("[TRIPLES 10]", False)])
def test_window_solutions_takes_sliding_and_tumbling_windows_only(window, chosen):
    from rsp_jobs.compiler import compile as compile_text

    text = (FIXTURES / "window_solutions.rsp").read_text().replace("[RANGE 1h STEP 5m]", window)
    assert compile_text(text, "window_solutions.rsp").window_solutions is chosen


def test_a_rules_events_are_not_windowed_so_window_solutions_leaves_them_alone():
    rule = compiled(FIXTURES / "push_down_conditions.dotr")
    assert not any(event.query.window_solutions for event in rule.events)
