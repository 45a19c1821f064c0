"""DOTR events with the same SELECT (``last L = [q] ... and first F = [q]``) share one
evaluation per instant: its solutions are labelled once per event."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.dotr import RulePlan


class _Evaluated(Protocol):
    @property
    def query(self) -> P.ContinuousQuery: ...


E = TypeVar("E", bound=_Evaluated)


def share_event_queries(plan: RulePlan) -> RulePlan:
    return replace(
        plan,
        events=merge_equal_queries(
            plan.events, lambda kept, same: replace(kept, labels=kept.labels + same.labels)
        ),
    )


def merge_equal_queries(events: Sequence[E], merge: Callable[[E, E], E]) -> tuple[E, ...]:
    """``events`` (anything with a ``query``) with each one whose query has the plan and the
    projection of an earlier one merged into that one (``merge(kept, same)``), in order."""
    shared: list[E] = []
    for event in events:
        same = next(
            (
                i
                for i, e in enumerate(shared)
                if e.query.plan == event.query.plan and e.query.variables == event.query.variables
            ),
            None,
        )
        if same is None:
            shared.append(event)
        else:
            shared[same] = merge(shared[same], event)
    return tuple(shared)
