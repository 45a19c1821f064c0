"""Golden tests of the physical plans of EP-SPARQL patterns and DOTR rules (no Spark): every
pattern query and ``.dotr`` rule under ``queries/`` is planned for the slices of
``test_planner.SLICES`` and the steps must be those in
``tests/fixtures/physical/<application>.<name>.physical``; ``RSP_REGOLD=1`` rewrites them (then
read the diff before committing it). That the evaluators keep their answers executing these plans
is checked by ``tests/conformance/epsparql`` and ``tests/conformance/dotr``."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.dotr import RulePlan
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.compiler import compile, compile_file, compile_rule_set
from rsp_jobs.physical import dotr, patterns
from rsp_jobs.physical.planner import SliceOf
from rsp_jobs.tree import walk

from .test_planner import AFTER, FIXTURES, QUERIES, SLICES, UNTIL

PATTERNS = sorted(p for p in QUERIES.rglob("*.rsp")
                  if isinstance(q := compile_file(p), ContinuousQuery) and q.pattern)
RULES = sorted(QUERIES.rglob("*.dotr"))

UNBOUNDED = """REGISTER QUERY rising AS
PREFIX ex: <http://ex.org/>
SELECT ?s ?a ?b
FROM STREAM <http://ex.org/stream>
WHERE { { ?s ex:level ?a } SEQ { ?s ex:level ?b } EQUALSOPTIONAL { ?s ex:note ?n } }
"""


def physical_plans(path: Path) -> str:
    compiled = compile_file(path)
    if isinstance(compiled, RulePlan):  # as engine.match evaluates it: a set of one
        rules = compile_rule_set([compiled])
        return "".join(f"-- a slice of {rows:,} stream rows\n"
                       + dotr.plan_rules(rules, SliceOf(rows, AFTER), AFTER, UNTIL).explain()
                       for rows in SLICES)
    return "".join(f"-- a slice of {rows:,} stream rows\n"
                   + patterns.plan_pattern(compiled, SliceOf(rows, AFTER), AFTER, UNTIL).explain()
                   for rows in SLICES)


@pytest.mark.parametrize("path", PATTERNS + RULES, ids=lambda p: f"{p.parent.name}.{p.stem}")
def test_the_physical_plan_of_each_registered_pattern_and_rule_is_the_golden_one(path: Path):
    plans = physical_plans(path)
    golden = FIXTURES / f"{path.parent.name}.{path.stem}.physical"
    if os.environ.get("RSP_REGOLD"):
        golden.write_text(plans)
    assert plans == golden.read_text()


def test_a_bounded_pattern_reads_back_its_duration_bound_and_keeps_nothing():
    query = compile_file(QUERIES / "traffic" / "congestion_rising.rsp")
    plan = patterns.plan_pattern(query, SliceOf(2_000, AFTER), AFTER, UNTIL, kept=True, cut_us=AFTER)
    assert (plan.reads, plan.start, plan.kept) == (patterns.BOUNDED, AFTER - query.bound_us, False)
    assert plan.interpreted
    assert not patterns.plan_pattern(query, SliceOf(188_000, AFTER), AFTER, UNTIL).interpreted


def test_an_unbounded_pattern_reads_after_its_kept_partial_matches_or_the_whole_stream():
    query = compile(UNBOUNDED, "rising.rsp")
    kept = patterns.plan_pattern(query, SliceOf(2_000, AFTER), AFTER, UNTIL, kept=True, cut_us=AFTER - 1)
    assert (kept.reads, kept.start, kept.kept) == (patterns.KEPT, AFTER, True)
    assert any(step.name == "Keep" for step in kept.steps())
    whole = patterns.plan_pattern(query, SliceOf(2_000, AFTER), AFTER, UNTIL)
    assert (whole.reads, whole.start, whole.kept) == (patterns.WHOLE, None, False)
    retained = patterns.plan_pattern(query, SliceOf(2_000, AFTER), AFTER, UNTIL, kept=True,
                                     retention_us=600_000_000)
    assert (retained.reads, retained.start, retained.retention) == (patterns.BOUNDED, AFTER - 600_000_000,
                                                                     600_000_000)


def test_each_temporal_operator_is_named_with_the_relation_the_evaluator_joins_under():
    from rsp_jobs.spark.events import RELATIONS  # the relation table only; no Spark session

    query = compile(UNBOUNDED, "rising.rsp")
    joins = [patterns.temporal_join(n) for n in walk(query.plan) if type(n) in patterns.JOINS]
    assert [(j.operator, j.relation, j.optional) for j in joins if j.operator != "Join"] == [
        ("EQUALSOPTIONAL", "eq", True), ("SEQ", "seq", False)]
    assert {j.relation for j in patterns.JOINS.values()} <= set(RELATIONS)
    assert patterns.JOINS[P.SeqRightJoin].swapped and not patterns.JOINS[P.EqLeftJoin].swapped
    steps = [s.detail for s in patterns.plan_pattern(query, SliceOf(2_000, AFTER), AFTER, UNTIL).steps()
             if s.name in ("SEQ", "EQUALSOPTIONAL")]
    assert steps == ["EqLeftJoin: the left part kept, the optional right one over its interval "
                     "(RELATIONS['eq']), on ?s",
                     "SeqJoin: the left part ends before the right starts (RELATIONS['seq']), on ?s"]


def test_a_rule_sets_instants_take_the_stronger_of_the_rules_regime_and_the_runs():
    rule = compile_file(RULES[0])
    rules = compile_rule_set([rule])
    assert [i.regime for i in dotr.plan_rules(rules).instants] == ["simple"]
    assert [i.regime for i in dotr.plan_rules(rules, entailment="rdfs").instants] == ["rdfs"]
    assert dotr.regime_of("rdfs", "rdfs++", None) == "rdfs++"
    assert dotr.regime_of() == "simple"


def test_a_rules_candidates_are_its_trigger_then_its_positive_events_with_their_scopes():
    rules = compile_rule_set([compile_file(QUERIES / "traffic" / "segment_silent.dotr")])
    plan = dotr.plan_rules(rules, SliceOf(2_000, AFTER), AFTER, UNTIL)
    (cands,) = plan.candidates
    assert cands.order == ["S", "T"]
    assert (cands.levels[0].within.us, cands.levels[0].within.ref) == (20 * 60_000_000, "S")
    assert cands.negations == ("R",)
    assert plan.start == AFTER - rules.rules[0].bound_us and plan.rows == 2_000 and plan.interpreted
    # T and R share one SELECT: one event step for both
    assert [s.detail.split(":")[0] for s in plan.steps() if s.name == "Event"] == [
        "segment_silent.S", "segment_silent.T segment_silent.R"]


def test_rsp_explain_prints_the_physical_plan_of_a_pattern_and_of_a_rule(capsys):
    from rsp_jobs.cli import main

    window = ["--physical", "--rows", "2000", "--from", "2014-08-02T06:00:00Z", "--to", "2014-08-02T07:00:00Z"]
    pattern = QUERIES / "traffic" / "congestion_rising.rsp"
    assert main(["explain", str(pattern), *window]) == 0
    assert capsys.readouterr().out.endswith(
        patterns.plan_pattern(compile_file(pattern), SliceOf(2_000), AFTER, UNTIL).explain())
    rule = QUERIES / "traffic" / "segment_silent.dotr"
    assert main(["explain", str(rule), *window]) == 0
    assert dotr.plan_rules(compile_rule_set([compile_file(rule)]), SliceOf(2_000), AFTER,
                           UNTIL).explain() in capsys.readouterr().out

