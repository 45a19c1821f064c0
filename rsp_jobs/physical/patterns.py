"""Physical plans of EP-SPARQL patterns: an optimized pattern query and the statistics of the
slice a batch reads become a ``PatternPlan``, the choices ``rsp_jobs.engine.match`` and
``rsp_jobs.spark.events`` execute, written out as named steps (``rsp explain --physical``).

What is chosen here, once, before Spark runs anything:

- **how far back a batch reads**: a bounded pattern (or one with a stated retention) the
  events of its duration bound before the batch; an unbounded one given its kept partial
  matches (``algebra.patterns.PartialMatches``, EP-SPARQL §4) only the events after their
  cut, the earlier ones read from the store; without them the whole stream;
- **which temporal join each operator is** (EP-SPARQL §3.2): SEQ a SeqJoin, EQUALS an
  EqJoin, OPTIONALSEQ a SeqRightJoin (the right part kept, the optional left one earlier),
  EQUALSOPTIONAL an EqLeftJoin, OPTIONAL a LeftJoin, each ``r2r.join`` under the relation
  ``spark.events.RELATIONS`` names (``JOINS``);
- **entailment**: the run's regime, the background closed once and each frame entailed;
- **how expressions run**: interpreted on few partitions below ``RSP_INTERPRETED_BELOW_ROWS``
  stream rows, generated code above (``planner.interpreted``).
"""

from __future__ import annotations

from dataclasses import dataclass

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.explain import expr
from rsp_jobs.algebra.patterns import pattern_lookback_us, pattern_streams
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.algebra.regimes import check_regime
from rsp_jobs.physical.planner import Statistics, Step, explain_steps, interpreted, span_text
from rsp_jobs.times import duration_text, from_us
from rsp_jobs.tree import walk

# how a batch reads back
BOUNDED, KEPT, WHOLE = "bounded", "kept partial matches", "whole stream"


@dataclass(frozen=True)
class TemporalJoin:
    """How an operator combines its two parts: ``relation``, the key of the temporal condition
    in ``spark.events.RELATIONS`` (None-valued ``join``: compatibility alone); ``optional``:
    a kept solution no partner pairs with stays alone; ``swapped``: the right operand is the
    kept one (the optional part comes first)."""

    operator: str
    relation: str
    optional: bool
    swapped: bool
    text: str


# EP-SPARQL §3.2's operators over interval solutions, and SPARQL's Join and LeftJoin with the
# interval they must meet (docs/decisions/ep-sparql.md: the optional part ending no later)
JOINS: dict[type, TemporalJoin] = {
    P.Join: TemporalJoin("Join", "join", False, False, "compatible pairs, any interval"),
    P.SeqJoin: TemporalJoin(
        "SEQ", "seq", False, False, "SeqJoin: the left part ends before the right starts"
    ),
    P.EqJoin: TemporalJoin("EQUALS", "eq", False, False, "EqJoin: both parts over one interval"),
    P.LeftJoin: TemporalJoin(
        "OPTIONAL", "optional", True, False, "LeftJoin: the optional right part ending no later"
    ),
    P.SeqRightJoin: TemporalJoin(
        "OPTIONALSEQ",
        "after",
        True,
        True,
        "SeqRightJoin: the right part kept, the optional left one ending before it starts",
    ),
    P.EqLeftJoin: TemporalJoin(
        "EQUALSOPTIONAL",
        "eq",
        True,
        False,
        "EqLeftJoin: the left part kept, the optional right one over its interval",
    ),
}


def temporal_join(node: P.Node) -> TemporalJoin:
    """The join ``node`` (a Join, LeftJoin or one of EP-SPARQL's operators) runs as."""
    return JOINS[type(node)]


@dataclass(frozen=True)
class PatternPlan:
    """How one batch of a pattern runs: the matches ending in ``(after, until]`` (µs), over the
    events of ``[start, until]`` (``start`` None: from the kept partial matches' cut, or the
    start of the stream), read as ``reads`` says."""

    query: ContinuousQuery
    after: int | None
    until: int | None
    start: int | None
    reads: str
    lookback: int | None
    retention: int | None  # matches longer than this are not reported (a stated retention)
    rows: int
    regime: str
    interpreted: bool

    @property
    def streams(self) -> list[str]:
        return pattern_streams(self.query)

    @property
    def kept(self) -> bool:
        """Whether the batch reads and writes kept partial matches."""
        return self.reads == KEPT

    def steps(self) -> tuple[Step, ...]:
        span = span_text(self.start, None if self.until is None else self.until + 1)
        streams = " ".join(f"<{s}>" for s in dict.fromkeys(self.streams))
        steps = [
            Step(
                "Read",
                f"{streams} {span}: the lake's Parquet by stream and hour, {self.rows:,} stream "
                "rows, a frame one graph (a triple two files bring for one time is one event), "
                "cached",
            ),
            Step("Lookback", _lookback_text(self)),
            Step(
                "Entailment",
                "none"
                if self.regime == "simple"
                else f"{self.regime}: the background closed once, each frame entailed with it",
            ),
            Step(
                "Events",
                "each stream triple an atomic event over [ts, ts] (a derived one over its "
                "match's interval) in the graph its FROM names, computed once",
            ),
        ]
        bgps = [n for n in walk(self.query.plan) if isinstance(n, P.BGP)]
        patterns = sum(len(b.triples) for b in bgps)
        steps.append(
            Step(
                "Match",
                f"{patterns} triple pattern(s) in {len(bgps)} BGP(s) over the events, in the "
                "order written (order_joins), and over the background's triples, timeless, "
                "where it may match",
            )
        )
        for node in walk(self.query.plan):
            join = JOINS.get(type(node))
            if join is None:
                continue
            condition = getattr(node, "expr", None)
            shared = sorted(_variables(node.left) & _variables(node.right))
            steps.append(
                Step(
                    join.operator,
                    f"{join.text} (RELATIONS[{join.relation!r}]), on "
                    + (" ".join(f"?{v}" for v in shared) if shared else "no shared variable")
                    + (f", with {expr(condition)}" if condition is not None else ""),
                )
            )
        if self.kept:
            steps.append(
                Step(
                    "Keep",
                    "each combination's parts computed once (local checkpoint) with the stored "
                    "earlier ones; the partial matches ending in the batch written back",
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
                "Broadcasts",
                "by size (Spark's default threshold): the background's selected triples are "
                "local relations, the computed events a checkpoint of known size",
            ),
            Step(
                "Results",
                f"the matches ending in {span_text(self.after, self.until, closes=True)} "
                f"({self.query.form}) in one job, collected to the driver",
            ),
        ]
        return tuple(steps)

    def explain(self) -> str:
        return explain_steps(self.query.name, self.steps())


def plan_pattern(
    query: ContinuousQuery,
    stats: Statistics,
    after: int | None = None,
    until: int | None = None,
    entailment: str = "simple",
    kept: bool = False,
    cut_us: int | None = None,
    retention_us: int | None = None,
) -> PatternPlan:
    """The physical plan of the matches of ``query`` ending in ``(after, until]`` (µs; None:
    unbounded). ``kept``: the run keeps the pattern's partial matches, cut at ``cut_us`` (None:
    none kept yet); they are read only where nothing bounds the lookback (``pattern_lookback_us``)."""
    lookback = pattern_lookback_us(query, retention_us)
    if lookback is None and kept:
        reads, start = KEPT, None if cut_us is None else cut_us + 1
    else:
        start = None if after is None or lookback is None else after - lookback
        reads = BOUNDED if lookback is not None else WHOLE
    begin = None if start is None else from_us(start)
    end = None if until is None else from_us(until + 1)
    rows = stats.rows(pattern_streams(query), begin, end)
    return PatternPlan(
        query,
        after,
        until,
        start,
        reads,
        lookback,
        retention_us,
        rows,
        check_regime(entailment),
        interpreted(rows),
    )


def _variables(node: P.Node) -> set[str]:
    """The variables the triple patterns and BINDs under ``node`` bind (what a join of it with
    another part may be keyed on)."""
    found: set[str] = set()
    for n in walk(node):
        if isinstance(n, P.BGP):
            found.update(v for t in n.triples for v in P.pattern_vars(t))
        elif isinstance(n, P.Extend):
            found.add(n.var.name)
    return found


def _lookback_text(plan: PatternPlan) -> str:
    if plan.reads == KEPT:
        return (
            "unbounded: the events after the kept partial matches' cut, the earlier parts "
            "read from the store"
        )
    if plan.reads == WHOLE:
        return "unbounded, no partial matches kept: the whole stream"
    bound = "its retention" if plan.retention is not None else "the pattern's duration bound"
    return (
        f"the events of {duration_text((plan.lookback or 0) // 1000)} before the batch ({bound}), so "
        "no match across the batch's start is lost"
        + ("; longer matches are not reported" if plan.retention is not None else "")
    )
