"""Physical plans of DOTR rule sets: an optimized ``RuleSetPlan`` (``compiler.compile_rule_set``)
and the statistics of the slice a batch reads become a ``RulesPlan``, the choices
``rsp_jobs.engine.match_rules`` and ``rsp_jobs.spark.dotr`` execute, written out as named steps
(``rsp explain --physical``).

DOTR (Margara et al., ESWC 2018) reasons per instant first, then in time (section 3, Fig. 2).
What is chosen here, once, before Spark runs anything:

- **how far back a batch reads**: the longest ``bound_us`` of the set's rules;
- **each group's instants** (rules alike in ``algebra.dotr.instants_key``): the entailment
  regime applied per instant, the stronger of the rules' own and the run's (``regime_of``), and
  the Datalog rules closed per instant; then each event SELECT the group evaluates, once however
  many rules and events share it;
- **each set of alike rules' candidates** (``optimize.share_candidates_across_alike_rules``):
  the levels joined in turn, the trigger then every positive event with its ``within`` scope,
  the negations and aggregates tested per full candidate; then each rule's selection (``last``,
  ``first``, ``each``) and what it consumes, on the driver;
- **how expressions run**: interpreted on few partitions below ``RSP_INTERPRETED_BELOW_ROWS``
  stream rows, generated code above (``planner.interpreted``).
"""

from __future__ import annotations

from dataclasses import dataclass

from rsp_jobs.algebra.dotr import FactGroup, RuleSetPlan, SharedEvent
from rsp_jobs.algebra.explain import expr
from rsp_jobs.algebra.patterns import pattern_streams
from rsp_jobs.algebra.regimes import REGIMES, check_regime
from rsp_jobs.language.dotr import Aggregate, Between, Within
from rsp_jobs.physical.planner import Statistics, Step, explain_steps, interpreted, span_text
from rsp_jobs.times import duration_text, from_us


def regime_of(*regimes: str | None) -> str:
    """The strongest of the regimes asked for (a rule's ENTAILMENT, a run's ``--entailment``):
    each entails what the weaker ones do, so applying it alone is applying them all."""
    return max((check_regime(r) for r in regimes if r), key=REGIMES.index, default="simple")


@dataclass(frozen=True)
class Instants:
    """One pass over the instants of a group of rules: ``regime`` entailed per frame, the
    group's Datalog rules closed per instant, then each of ``group.events`` evaluated once."""

    group: FactGroup
    regime: str

    @property
    def events(self) -> tuple[SharedEvent, ...]:
        return self.group.events


@dataclass(frozen=True)
class Level:
    """A level of candidates after the trigger: a positive event, joined to the prefixes before
    it within its scope."""

    label: str
    within: Within


@dataclass(frozen=True)
class Candidates:
    """The candidates of alike rules (``rules``, indices in the set), one plan for them all: the
    ``trigger``'s facts, ``levels`` joined to them in turn, then per full candidate the
    ``negations`` (labels) and the ``aggregates``."""

    rules: tuple[int, ...]
    trigger: str
    levels: tuple[Level, ...]
    negations: tuple[str, ...]
    aggregates: tuple[Aggregate, ...]

    @property
    def order(self) -> list[str]:
        """The labels of the levels: the trigger, then the positive events."""
        return [self.trigger] + [level.label for level in self.levels]


@dataclass(frozen=True)
class RulesPlan:
    """How one batch of a rule set runs: the matches in ``(after, until]`` (µs), over the
    elements from ``start`` (``rows`` of them; None: not read from a lake, the elements are
    given)."""

    rules: RuleSetPlan
    after: int | None
    until: int | None
    start: int | None
    rows: int | None
    interpreted: bool
    instants: tuple[Instants, ...]
    candidates: tuple[Candidates, ...]

    @property
    def streams(self) -> list[str]:
        return sorted({s for r in self.rules.rules for s in pattern_streams(r)})

    @property
    def name(self) -> str:
        return " ".join(r.name for r in self.rules.rules)

    def steps(self) -> tuple[Step, ...]:
        rules = self.rules.rules
        span = span_text(self.start, None if self.until is None else self.until + 1)
        streams = " ".join(f"<{s}>" for s in self.streams) or "the elements given"
        rows = "" if self.rows is None else f", {self.rows:,} stream rows"
        lookback = max(r.bound_us for r in rules)
        steps = [
            Step(
                "Read",
                f"{streams} {span}: the lake's Parquet by stream and hour{rows}, a frame one "
                "graph, cached",
            ),
            Step(
                "Lookback",
                f"{duration_text(lookback // 1000)} before the batch (the longest rule's bound)",
            ),
        ]
        for instants in self.instants:
            names = " ".join(rules[i].name for i in instants.group.rules)
            rule = rules[instants.group.rules[0]]
            program = (
                f"{len(rule.program)} Datalog rule(s) closed per instant"
                if rule.program
                else "no Datalog"
            )
            regime = (
                "simple (no entailment)"
                if instants.regime == "simple"
                else f"{instants.regime}: each frame entailed with the background's closure"
            )
            steps.append(
                Step(
                    f"Instants of {names}",
                    f"{' '.join(f'<{s}>' for s in rule.streams) or 'the elements given'}, "
                    f"{regime}, {program}; one window per instant",
                )
            )
            for event in instants.events:
                uses = [f"{rules[i].name}.{label}" for i, label in event.uses]
                if event.split:
                    uses = [f"{use}={iri}" for use, iri in zip(uses, event.iris)]
                split = f", split by ?{event.split}" if event.split else ""
                steps.append(
                    Step(
                        "Event",
                        f"{' '.join(uses)}: one SELECT per instant by the window evaluator{split}; "
                        "each solution a fact keyed label@ts#sha1(bindings)",
                    )
                )
        steps.append(
            Step(
                "Facts",
                "every group's in one Spark job, computed once (local checkpoint); joins of "
                "per-instant solutions shuffle (no size broadcasts), the background's explicit "
                "broadcasts stay",
            )
        )
        for cands in self.candidates:
            names = " ".join(rules[i].name for i in cands.rules)
            rule = rules[cands.rules[0]]
            steps.append(
                Step(
                    f"Candidates of {names}",
                    f"trigger {cands.trigger} in {span_text(self.after, self.until, True)}"
                    + "".join(
                        f", pushed to {next(iter(c.labels))}: {expr(c.expr)}" for c in rule.pushed
                    ),
                )
            )
            for i, level in enumerate(cands.levels, 1):
                steps.append(
                    Step(
                        f"Level {i}",
                        f"{level.label} {_scope(level.within)}: its facts broadcast, left-joined "
                        "to every prefix (a prefix with no extension kept)",
                    )
                )
            for label in cands.negations:
                steps.append(
                    Step(
                        "Negation",
                        f"not {label} {_scope(rule.predicate(label).scope)}: its facts "
                        "broadcast, a full candidate with a hit fails",
                    )
                )
            for agg in cands.aggregates:
                steps.append(
                    Step(
                        "Aggregate",
                        f"{agg.fn.upper()}({agg.label}.?{agg.var}) {_scope(agg.scope)}: its facts "
                        "broadcast, grouped per full candidate (SPARQL 1.1 §18.5.1)",
                    )
                )
            steps.append(
                Step("Collect", "every candidate as JSON with the other sets', in one job")
            )
            for i in cands.rules:
                r = rules[i]
                policies = ", ".join(
                    f"{p.policy} {p.label}" for p in r.predicates if p.kind == "positive"
                )
                consuming = f"; consuming {' '.join(sorted(r.consumes))}" if r.consumes else ""
                steps.append(
                    Step(
                        f"Select {r.name}",
                        f"on the driver, triggers in time order: {policies}{consuming}",
                    )
                )
        steps += [
            Step(
                "Expressions",
                "interpreted, few shuffle partitions"
                if self.interpreted
                else "Spark's generated code",
            ),
            Step(
                "Results",
                "each match's template instantiated at its trigger's time, per rule",
            ),
        ]
        return tuple(steps)

    def explain(self) -> str:
        return explain_steps(self.name, self.steps())


def plan_rules(
    rules: RuleSetPlan,
    stats: Statistics | None = None,
    after: int | None = None,
    until: int | None = None,
    entailment: str = "simple",
) -> RulesPlan:
    """The physical plan of ``rules``' matches in ``(after, until]`` (µs; None: unbounded) over
    what ``stats`` describes (None: elements given, not read from a lake). ``entailment``: the
    run's regime, applied with each rule's own."""
    lookback = max(r.bound_us for r in rules.rules)
    start = None if after is None else after - lookback
    rows = None
    if stats is not None:
        streams = sorted({s for r in rules.rules for s in pattern_streams(r)})
        rows = stats.rows(
            streams,
            None if start is None else from_us(start),
            None if until is None else from_us(until + 1),
        )
    instants = tuple(
        Instants(
            group,
            regime_of(
                check_regime(
                    rules.rules[group.rules[0]].entailment, rules.rules[group.rules[0]].source
                ),
                entailment,
            ),
        )
        for group in rules.groups
    )
    candidates = []
    for ids in rules.candidates:  # the first rule stands for its alike ones
        rule = rules.rules[ids[0]]
        levels = [
            Level(p.label, _within(p.within)) for p in rule.predicates if p.kind == "positive"
        ]
        negations = tuple(p.label for p in rule.predicates if p.kind == "negative")
        candidates.append(
            Candidates(ids, rule.trigger.label, tuple(levels), negations, tuple(rule.aggregates))
        )
    return RulesPlan(
        rules,
        after,
        until,
        start,
        rows,
        rows is not None and interpreted(rows),
        instants,
        tuple(candidates),
    )


def _within(scope: Within | None) -> Within:
    """A positive event's scope (the grammar gives every positive event one)."""
    if scope is None:
        raise ValueError("a positive DOTR event without a within scope")
    return scope


def _scope(scope: Within | Between | None) -> str:
    if isinstance(scope, Within):
        return f"within {duration_text(scope.us // 1000)} from {scope.ref}"
    if isinstance(scope, Between):
        return f"between {scope.first} and {scope.second}"
    return "anywhere"
