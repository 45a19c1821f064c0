"""DOTR condition push-down: a ``with`` condition that reads one event only (no aggregate) is
tested on that event's facts before they are joined, rather than in the join: fewer candidate
rows, and a small generated predicate per condition instead of one for the whole join."""

from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra.dotr import RulePlan


def push_down_conditions(plan: RulePlan) -> RulePlan:
    return replace(
        plan,
        pushed=tuple(c for c in plan.rule.conditions if len(c.labels) == 1 and not c.aggregates),
    )
