"""Plan → plan rewrites, between translation and evaluation (sqlglot's optimizer shape): one
rule per module, each a function from a plan to an equivalent plan, applied in the order of
its tuple. Any of them can be left out (``skip``, or ``RSP_OPTIMIZER_SKIP``) and the answers
stay the same; only the cost changes (``tests/algebra`` checks each one's plan, the
differential suites the answers)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TypeVar

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.dotr import RulePlan, RuleSetPlan
from rsp_jobs.algebra.optimize.bound_join_keys import bound_join_keys
from rsp_jobs.algebra.optimize.order_joins import order_joins
from rsp_jobs.algebra.optimize.prune_predicates import prune_predicates
from rsp_jobs.algebra.optimize.push_down_conditions import push_down_conditions
from rsp_jobs.algebra.optimize.rank_extrema import rank_extrema
from rsp_jobs.algebra.optimize.share_candidates_across_alike_rules import (
    share_candidates_across_alike_rules,
)
from rsp_jobs.algebra.optimize.share_event_queries import share_event_queries
from rsp_jobs.algebra.optimize.share_events_across_rules import share_events_across_rules
from rsp_jobs.algebra.optimize.share_events_differing_in_an_iri import (
    share_events_differing_in_an_iri,
)
from rsp_jobs.algebra.optimize.window_solutions import window_solutions

# rules over a window query's or a pattern's plan
QUERY_RULES = (order_joins, bound_join_keys, prune_predicates, window_solutions, rank_extrema)
# rules over a DOTR rule's plan (its event queries get QUERY_RULES too, but window_solutions)
RULE_RULES = (share_event_queries, push_down_conditions)
# rules over a set of DOTR rules evaluated together (each rule gets RULE_RULES first)
SET_RULES = (
    share_events_across_rules,
    share_events_differing_in_an_iri,
    share_candidates_across_alike_rules,
)
RULES = {rule.__name__: rule for rule in QUERY_RULES + RULE_RULES + SET_RULES}


def optimize(plan: P.ContinuousQuery | RulePlan | RuleSetPlan, skip: Iterable[str] = ()):
    """``plan`` with every rule not named in ``skip`` applied."""
    skip = frozenset(skip)
    unknown = skip - RULES.keys()
    if unknown:
        raise ValueError(
            f"unknown optimizer rule(s) {', '.join(sorted(unknown))}; the rules are "
            f"{', '.join(RULES)}"
        )
    if isinstance(plan, RuleSetPlan):  # its rules were optimized when each was compiled
        return _apply(SET_RULES, plan, skip)
    if isinstance(plan, RulePlan):
        # an event's window is nominal (rules.event_queries): instants are never windowed
        events = tuple(
            replace(e, query=optimize(e.query, skip | {"window_solutions"})) for e in plan.events
        )
        return _apply(RULE_RULES, replace(plan, events=events), skip)
    return _apply(QUERY_RULES, plan, skip)


Plan = TypeVar("Plan")


def _apply(rules: Iterable[Callable[[Plan], Plan]], plan: Plan, skip: frozenset[str]) -> Plan:
    for rule in rules:
        if rule.__name__ not in skip:
            plan = rule(plan)
    return plan
