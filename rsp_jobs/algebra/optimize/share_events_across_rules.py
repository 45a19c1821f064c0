"""Rules evaluated together (``RuleSetPlan``) whose instants are alike share one evaluation of
each distinct event SELECT: its facts go to every rule and label that asked for it (ten
sequence rules over eleven event types evaluate eleven SELECTs, not twenty). DOTR §5 does the
same for its benchmark, merging "SPARQL queries that differ only for their FILTER part"; here
an event's FILTER that reads another event is already a rule condition (``language.dotr``),
so such queries are equal."""

from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra.dotr import RuleSetPlan
from rsp_jobs.algebra.optimize.share_event_queries import merge_equal_queries


def share_events_across_rules(plan: RuleSetPlan) -> RuleSetPlan:
    merged = [
        replace(
            group,
            events=merge_equal_queries(
                group.events, lambda kept, same: replace(kept, uses=kept.uses + same.uses)
            ),
        )
        for group in plan.groups
    ]
    return replace(plan, groups=tuple(merged))
