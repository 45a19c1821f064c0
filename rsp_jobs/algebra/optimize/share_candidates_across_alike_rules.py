"""Rules of a set that combine their events alike (the same labels, kinds and scopes, the same
conditions, assignments and aggregates; names, templates, SELECTs, selection policies and
consumption may differ) have their candidates computed by one plan over their facts, the rule
a fact belongs to part of every join: DOTR's ten benchmark rules, each "an E(i+1) after an Ei
in the same area within 30 s", are one join of trigger facts with the facts before them, where
each rule alone was a plan, a broadcast and a Spark job of its own. Which candidates a rule
selects and what it consumes stay its own (``spark/dotr._select``, DOTR §3)."""

from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan


def share_candidates_across_alike_rules(plan: RuleSetPlan) -> RuleSetPlan:
    alike: dict[tuple, list[int]] = {}
    for i, rule in enumerate(plan.rules):
        alike.setdefault(candidates_key(rule), []).append(i)
    return replace(plan, candidates=tuple(tuple(ids) for ids in alike.values()))


def candidates_key(rule: RulePlan) -> tuple:
    """What ``spark/dotr._candidates`` reads of a rule (where a condition stands in the text
    does not matter)."""
    return (
        tuple((p.label, p.kind, p.within, p.between) for p in rule.predicates),
        tuple((c.expr, c.labels, c.aggregates) for c in rule.conditions),
        tuple((c.expr, c.labels) for c in rule.pushed),
        rule.aggregates,
        tuple((a.var, a.expr) for a in rule.assignments),
    )
