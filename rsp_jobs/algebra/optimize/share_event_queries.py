"""DOTR events with the same SELECT (``last L = [q] ... and first F = [q]``) share one
evaluation per instant: its solutions are labelled once per event."""
from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra.rules import EventQuery, RulePlan


def share_event_queries(plan: RulePlan) -> RulePlan:
    shared: list[EventQuery] = []
    for event in plan.events:
        same = next((i for i, e in enumerate(shared) if e.query.plan == event.query.plan
                     and e.query.variables == event.query.variables), None)
        if same is None:
            shared.append(event)
        else:
            shared[same] = replace(shared[same], labels=shared[same].labels + event.labels)
    return replace(plan, events=tuple(shared))
