"""A DOTR rule → its plan: each event's SELECT becomes a continuous query over the rule's
streams and background graphs, to be evaluated once per time instant (DOTR, Margara et al.
2018, section 3: the ontological scope of an event is one instant), and the ``with``
conditions are placed where the temporal combination tests them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.translate import translate
from rsp_jobs.language import ast
from rsp_jobs.language.dotr import Condition, Rule


@dataclass(frozen=True)
class EventQuery:
    """The plan of an event's SELECT; ``labels``: the events it gives facts to (several when
    they share one SELECT: ``optimize.share_event_queries``)."""

    labels: tuple[str, ...]
    query: P.ContinuousQuery


@dataclass(frozen=True)
class RulePlan:
    """A compiled DOTR rule. ``pushed``: the conditions on one event alone that are tested on
    that event's facts before any join (``optimize.push_down_conditions``); every other
    condition is tested where the combination first binds all its events.

    A compiled rule stands where its rule does (the registry, the store, the DAG factory read
    its name, streams, template and bounds), so the rule's attributes are read through it."""

    rule: Rule
    events: tuple[EventQuery, ...]
    pushed: tuple[Condition, ...] = ()

    def __getattr__(self, name):
        if name.startswith("__") or name == "rule":  # not while unpickling or copying
            raise AttributeError(name)
        return getattr(self.rule, name)

    # what the store reads of any query (``store.results.StoredQuery``), said where type
    # checkers see it
    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def form(self) -> str:
        return self.rule.form

    @property
    def text(self) -> str:
        return self.rule.text


def plan_rule(rule: Rule) -> RulePlan:
    """The rule as written: one query per event (SPARQL 18.2 translation, unchanged)."""
    return RulePlan(
        rule, tuple(EventQuery((label,), query) for label, query in event_queries(rule).items())
    )


def event_queries(rule: Rule) -> dict[str, P.ContinuousQuery]:
    """Label → the plan of that event's SELECT."""
    # The window is nominal (translate wants one on a C-SPARQL stream): rows are grouped by
    # instant, never windowed, when a rule is evaluated.
    # A rule without FROM STREAM (as the paper prints them) reads the elements it is given: a
    # nominal stream stands in, as the instants' rows carry no stream.
    streams = tuple(
        ast.StreamClause(iri, ast.TimeWindow(1, 1), None, None)
        for iri in rule.streams or ("urn:rsp:dotr:given-stream",)
    )
    return {
        p.label: translate(
            replace(p.query, streams=streams, graphs=rule.graphs, source=rule.source)
        )
        for p in rule.predicates
    }


@dataclass(frozen=True)
class SharedEvent:
    """An event SELECT evaluated once per instant for a rule set: ``uses`` are the
    ``(rule index, label)`` pairs its facts go to."""

    uses: tuple[tuple[int, str], ...]
    query: P.ContinuousQuery
    # ``optimize.share_events_differing_in_an_iri``: the variable standing where the merged
    # SELECTs had different IRIs, and per use the IRI (N-Triples) its solutions hold there
    split: str | None = None
    iris: tuple[str, ...] = ()


@dataclass(frozen=True)
class FactGroup:
    """Rules whose instants are alike (``instants_key``): their events are evaluated over one
    pass of those instants."""

    rules: tuple[int, ...]
    events: tuple[SharedEvent, ...]


@dataclass(frozen=True)
class RuleSetPlan:
    """Several DOTR rules evaluated together (the issue's "all rules over one stream in one
    evaluation"): one job computes the facts of every group, one collect the candidates of
    every rule, and each rule's selection and consumption stay its own (DOTR §3: a rule consumes
    only for "subsequent evaluations of the same rule")."""

    rules: tuple[RulePlan, ...]
    groups: tuple[FactGroup, ...]
    # the rules whose candidates one plan combines, the rule part of every join key
    # (``optimize.share_candidates_across_alike_rules``); as planned, each rule alone
    candidates: tuple[tuple[int, ...], ...] = ()


def instants_key(rule: RulePlan) -> tuple:
    """What a rule's instants depend on (``spark/dotr.facts_frame``): its streams, entailment
    regime, Datalog program and background graphs. Rules alike in all four read the same
    instant graphs."""
    return (
        rule.streams,
        rule.entailment,
        tuple((r.head, r.body) for r in rule.program),
        rule.graphs,
    )


def plan_rule_set(rules: Sequence[RulePlan]) -> RuleSetPlan:
    """The rules grouped by ``instants_key``, each rule's events as written (its own
    ``share_event_queries`` applied or not)."""
    keys: list[tuple] = []
    members: list[list[int]] = []
    for i, rule in enumerate(rules):
        key = instants_key(rule)
        if key not in keys:
            keys.append(key)
            members.append([])
        members[keys.index(key)].append(i)
    groups = tuple(
        FactGroup(
            tuple(ids),
            tuple(
                SharedEvent(tuple((i, label) for label in e.labels), e.query)
                for i in ids
                for e in rules[i].events
            ),
        )
        for ids in members
    )
    return RuleSetPlan(tuple(rules), groups, tuple((i,) for i in range(len(rules))))
