"""EP-SPARQL patterns (Anicic, Fodor, Rudolph, Stojanovic, WWW 2011) → Spark DataFrames.

A solution is a row ``_ta, _tw`` (its interval, µs), ``_ev`` (the frame IRIs of the events it
uses, for provenance) and ``v_<var>`` columns (N-Triples text, NULL unbound, as in
``evaluate.py``; ``r2r.INTERVAL``). What the SPARQL operators do is ``r2r``'s, as for windows;
the event operators are ``r2r.join`` with a temporal relation (``RELATIONS``). Section 3.2's
semantics, operator by operator:

- a stream triple is an atomic event over [t, t]; a background triple holds at no particular
  time (NULL interval), meets every temporal condition and leaves the interval of what it joins
  with unchanged;
- every combination μ ⋈ μ' spans [min(tα, t'α), max(tω, t'ω)];
- Join: compatible pairs;  SeqJoin: also tω < t'α;  EqJoin: also the same interval;
- SeqRightJoin (``P1 OPTIONALSEQ P2``, P1 optional and earlier): Filter(F, SeqJoin(P1, P2)), and
  each μ of P2 no compatible μ' of P1 ended before with F true;
- EqLeftJoin (``P1 EQUALSOPTIONAL P2``): Filter(F, EqJoin(P1, P2)), and each μ of P1 no
  compatible μ' of P2 has the same interval with F true;
- LeftJoin (plain OPTIONAL): the combinations with F true and t'ω <= tω, and each μ no such μ'
  exists for. The paper writes t'ω < tω; strict, it contradicts the paper's own downward
  compatibility (over a stream of one time stamp OPTIONAL could never bind), so the condition
  is non-strict (docs/decisions/ep-sparql.md);
- F, in every left-join, sees the interval of the combination (the paper's σ is μ's interval in
  two places and the combination's in a third; docs/decisions/ep-sparql.md says why one is taken);
- Filter sees the interval: getDURATION() = tω − tα, getSTARTTIME() = tα, getENDTIME() = tω.

Each optional part is decided by the time its match ends (LeftJoin, EqLeftJoin) or starts
(SeqRightJoin): an answer over a stream stays an answer over any longer stream (section 3.2's
timewise monotonicity), so a batch needs no event after its end.

Every operator's solutions are a set of ⟨μ, tα, tω⟩ (the same μ over the same interval found
twice is one solution, its provenance the union); SELECT projects that set to a bag, as SPARQL
does, and DISTINCT merges equal rows of equal interval. CONSTRUCT rules close the stream under
their output (the paper's Q-closure): each match's triples are new events over the match's
interval, fed back to the least fixpoint.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rsp_jobs import terms
from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.patterns import PartialMatches
from rsp_jobs.errors import QueryError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.physical.patterns import temporal_join
from rsp_jobs.results import Match
from rsp_jobs.spark import r2r
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.expressions import Scope, compile_expr
from rsp_jobs.spark.local import local_frame, materialized, release
from rsp_jobs.spark.r2r import EV, TA, TW, triple_match, vcol
from rsp_jobs.tree import walk

EVENT_SCHEMA = T.StructType(
    [
        T.StructField("g", T.StringType()),
        T.StructField("s", T.StringType()),
        T.StructField("p", T.StringType()),
        T.StructField("o", T.StringType()),
        T.StructField(TA, T.LongType()),
        T.StructField(TW, T.LongType()),
        T.StructField(EV, T.ArrayType(T.StringType())),
    ]
)


def evaluate_events(
    query: P.ContinuousQuery,
    elements: DataFrame,
    background: Background,
    after_us: int | None = None,
    until_us: int | None = None,
    rules: Sequence[P.ContinuousQuery] = (),
    partials: PartialMatches | None = None,
) -> list[Match]:
    """The matches of ``query`` whose end lies in ``(after_us, until_us]``, sorted by (end,
    start, bindings). With ``rules`` (CONSTRUCT pattern queries) the query reads the stream's
    Q-closure under them (section 3.2), and a match's events are the stream frames behind it.
    With ``partials`` (an unbounded pattern's state, see ``PartialMatches``) ``elements`` holds
    only the events after ``partials.cut_us`` and the earlier ones are read from the state."""
    if partials is not None and rules:
        raise QueryError(
            f"{query.source}: kept partial matches and CONSTRUCT rules in one evaluation; "
            "register the rules as streams instead"
        )
    events = materialized(stream_events(elements, query, rules))
    try:
        if not rules:
            return _matches_per_query(
                [query], events, background, after_us, until_us, partials=partials
            )[0]
        closure = _Closure(events, background, rules)
        current = materialized(events.unionByName(closure.derived_frame()))
        try:
            return _matches(query, current, background, after_us, until_us, closure.sources)
        finally:
            release(current)
    finally:
        release(events)


def stream_events(
    elements: DataFrame, query: P.ContinuousQuery, rules: Sequence[P.ContinuousQuery] = ()
) -> DataFrame:
    """Each stream triple as an event in the graph its FROM clause names: atomic, [ts, ts], or
    over [start, ts] when a pattern derived it (a REGISTER STREAM pattern's match keeps its
    interval, as within one evaluation's Q-closure)."""
    graphs: dict[str, str | None] = {}
    for q in (query, *rules):
        for w in q.windows:
            graphs.setdefault(w.stream, w.graph)
    graph = F.lit(None).cast("string")
    for stream, name in graphs.items():
        if name is not None:
            graph = F.when(F.col("stream") == stream, F.lit(f"<{name}>")).otherwise(graph)
    ts = F.expr("unix_micros(ts)")
    start = F.coalesce(F.expr("unix_micros(start)"), ts) if "start" in elements.columns else ts
    return elements.select(
        graph.alias("g"),
        "s",
        "p",
        "o",
        start.alias(TA),
        ts.alias(TW),
        F.array(F.col("frame")).alias(EV),
    )


class _Closure:
    """closQ(S) of section 3.2: the smallest stream holding S and each rule's output over it,
    reached by naive rounds (every rule over all that is known, in one Spark job a round)
    until a round adds nothing: no fixed number of rounds.

    A rule set can derive without end only by creating terms (a blank node in its template, or a
    value an expression computes) from terms it created itself: over a finite stream every other
    rule set reaches its fixpoint, and a derivation that goes on for ever must, after finitely
    many steps, have a rule create a term over an interval from something that rule created over
    the same interval. Each derived event therefore carries the (rule, interval) pairs of the
    creations behind it, and a creation that repeats one of them stops the closure with an error
    naming the rule (docs/decisions/ep-sparql.md: this also stops a rule that would create a bounded
    number of terms over one interval from its own output, a case the paper never needs)."""

    PREFIX = "urn:rsp:derived:"

    def __init__(
        self, events: DataFrame, background: Background, rules: Sequence[P.ContinuousQuery]
    ):
        for rule in rules:
            if rule.form != "CONSTRUCT" or not rule.pattern:
                raise QueryError(
                    f"{rule.source}: a rule must be an EP-SPARQL CONSTRUCT pattern query"
                )
        self.spark = events.sparkSession
        self.rules = list(rules)
        self.creating = [_creates_terms(r) for r in rules]
        self.derived: dict[tuple, str] = {}  # (s, p, o, ta, tw) -> id
        self.frames: dict[str, frozenset] = {}  # id -> the stream frames behind it
        self.ancestry: dict[str, frozenset] = {}  # id -> the (rule, ta, tw) creations behind it
        while True:
            current = (
                materialized(events.unionByName(self.derived_frame())) if self.derived else events
            )
            try:
                per_rule = _matches_per_query(self.rules, current, background)
            finally:
                if current is not events:
                    release(current)
            if not self._add(per_rule):
                return

    def derived_frame(self) -> DataFrame:
        return local_frame(
            self.spark,
            [(None, s, p, o, ta, tw, [i]) for (s, p, o, ta, tw), i in sorted(self.derived.items())],
            EVENT_SCHEMA,
        )

    def _add(self, per_rule: list[list[Match]]) -> bool:
        new: dict[tuple, tuple[frozenset, frozenset]] = {}
        for i, (rule, matches) in enumerate(zip(self.rules, per_rule)):
            for m in matches:
                used = [e for e in m.events if e.startswith(self.PREFIX)]
                frames = frozenset(e for e in m.events if not e.startswith(self.PREFIX))
                frames = frames.union(*(self.frames[e] for e in used))
                ancestry = frozenset().union(*(self.ancestry[e] for e in used))
                keys = [(*_split_triple(line), m.start_us, m.end_us) for line in m.triples or ()]
                keys = [k for k in keys if k not in self.derived and k not in new]
                if keys and self.creating[i]:
                    creation = (i, m.start_us, m.end_us)
                    if creation in ancestry:
                        raise QueryError(
                            f"rule {rule.name} ({rule.source}) derives without end: over "
                            f"[{m.start}, {m.end}] it creates new terms from terms it created over "
                            "that same interval (a blank node or computed value in its template fed back "
                            "to itself); the Q-closure has no finite fixpoint"
                        )
                    ancestry |= {creation}
                for key in keys:
                    new[key] = (frames, ancestry)
        for key, (frames, ancestry) in new.items():
            ident = self.PREFIX + hashlib.sha1(repr(key).encode()).hexdigest()[:20]
            self.derived[key], self.frames[ident], self.ancestry[ident] = ident, frames, ancestry
        return bool(new)

    def sources(self, events) -> list[str]:
        """A match's events as stream frames: a derived event stands for those behind it."""
        derived = [e for e in events if e.startswith(self.PREFIX)]
        return sorted(
            frozenset(e for e in events if not e.startswith(self.PREFIX)).union(
                *(self.frames[e] for e in derived)
            )
        )


def _creates_terms(rule: P.ContinuousQuery) -> bool:
    """Whether ``rule``'s template can hold a term its input does not: a blank node, or a
    variable an expression binds (BIND, a select expression)."""
    if any(
        isinstance(x, ast.BNode) for t in rule.template for x in (t.subject, t.predicate, t.object)
    ):
        return True
    template_vars = {
        x
        for t in rule.template
        for x in (t.subject, t.predicate, t.object)
        if isinstance(x, ast.Var)
    }
    return any(isinstance(node, P.Extend) and node.var in template_vars for node in walk(rule.plan))


# ------------------------------------------------------------------------------ matches


def _matches(
    query: P.ContinuousQuery,
    events: DataFrame,
    background: Background,
    after_us: int | None,
    until_us: int | None,
    sources=sorted,
) -> list[Match]:
    return _matches_per_query([query], events, background, after_us, until_us, sources)[0]


def _matches_per_query(
    queries: Sequence[P.ContinuousQuery],
    events: DataFrame,
    background: Background,
    after_us: int | None = None,
    until_us: int | None = None,
    sources=sorted,
    partials: PartialMatches | None = None,
) -> list[list[Match]]:
    """The matches of every query in ``queries``, computed in one Spark job (one round trip),
    each query's sorted as ``evaluate_events`` reports them; ``sources`` maps a match's
    events to those it reports."""
    frames, evaluators = [], []
    for i, query in enumerate(queries):
        if query.form not in ("SELECT", "CONSTRUCT"):
            raise UnsupportedConstruct(query.source, f"{query.form} over an EP-SPARQL pattern")
        evaluator = _Evaluator(query, events, background, partials)
        sols = evaluator.evaluate(query.plan)
        evaluators.append(evaluator)
        if partials is not None:
            evaluator.collect_partials(until_us)
        frame = sols.frame.where(F.col(TW).isNotNull())
        if after_us is not None:
            frame = frame.where(F.col(TW) > after_us)
        if until_us is not None:
            frame = frame.where(F.col(TW) <= until_us)
        cols = [vcol(v.name) for v in query.variables]
        rows = frame if sols.bag else _as_set(_Solutions(frame, sols.vars))
        frames.append(
            rows.select(
                F.lit(i).alias("_q"),
                TA,
                TW,
                EV,
                F.array(*[F.col(c) for c in cols]).cast("array<string>").alias("_vals"),
            )
        )
    per_query: list[list] = [[] for _ in queries]
    try:
        for row in functools.reduce(DataFrame.unionByName, frames).collect():
            per_query[row["_q"]].append(row)
    finally:
        for evaluator in evaluators:
            evaluator.release()
    return [_report(query, group, sources) for query, group in zip(queries, per_query)]


def _report(query: P.ContinuousQuery, rows: list, sources=sorted) -> list[Match]:
    names = [v.name for v in query.variables]
    out = []
    for row in rows:
        nt = {n: v for n, v in zip(names, row["_vals"]) if v is not None}
        match = Match(start_us=row[TA], end_us=row[TW], events=tuple(sources(row[EV])))
        if query.form == "CONSTRUCT":
            match = replace(match, triples=tuple(_instantiate(query, row[TA], row[TW], nt)))
        else:
            match = replace(match, bindings={n: terms.nt_to_json(v) for n, v in nt.items()})
        out.append((row[TW], row[TA], sorted(nt.items()), match.events, match))
    out.sort(key=lambda item: item[:4])
    if query.form == "CONSTRUCT":  # a set of matches: the same triples over the same interval once
        merged: dict[tuple, Match] = {}
        for *_, m in out:
            key = (m.end_us, m.start_us, m.triples)
            if key in merged:
                merged[key] = replace(
                    merged[key], events=tuple(sorted(set(merged[key].events) | set(m.events)))
                )
            elif m.triples:
                merged[key] = m
        return list(merged.values())
    return [m for *_, m in out]


def _instantiate(query: P.ContinuousQuery, ta: int, tw: int, nt: dict[str, str]) -> list[str]:
    """The template's triples for one match (SPARQL 16.2): blank nodes fresh per match and the
    same every time that match is found; triples with unbound or ill-typed positions left out."""
    key = "|".join([query.name, str(ta), str(tw), *[f"{k}={v}" for k, v in sorted(nt.items())]])
    stamp = hashlib.sha1(key.encode()).hexdigest()[:16]

    def position(term: ast.Term) -> str | None:
        if isinstance(term, ast.Var):
            return nt.get(term.name)
        if isinstance(term, ast.BNode):
            return f"_:b{stamp}_{term.label}"
        return ast.to_nt(term)

    return terms.template_lines(query.template, position)


def _split_triple(line: str) -> tuple[str, str, str]:
    s, p, rest = line.split(" ", 2)
    return s, p, rest[:-2]


# ------------------------------------------------------------------------------ operators


@dataclass(frozen=True)
class _Solutions:
    frame: DataFrame  # _ta, _tw, _ev, v_<var>...
    vars: tuple[str, ...]
    maybe: frozenset[str] = frozenset()
    bag: bool = False  # rows are a projection's bag, not (possibly repeated) solutions
    key: str = ""  # names the subexpression: what its kept partial matches are stored under

    @property
    def schema(self) -> T.StructType:
        return T.StructType(
            [*EVENT_SCHEMA.fields[4:], *[T.StructField(vcol(v), T.StringType()) for v in self.vars]]
        )


def _key(*parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()


class _Evaluator:
    """One method per algebra operator, as ``evaluate.Evaluator`` has, over interval solutions."""

    def __init__(
        self,
        query: P.ContinuousQuery,
        events: DataFrame,
        background: Background,
        partials: PartialMatches | None = None,
    ):
        self.query = query
        self.events = events
        self.background = background
        self.spark = events.sparkSession
        self.partials = partials
        # with kept partial matches, the events read are those after the cut (NULL: all are)
        self.cut = (
            None
            if partials is None
            else (-(1 << 62) if partials.cut_us is None else partials.cut_us)
        )
        # key -> the new partial matches and their variables
        self.kept: dict[str, tuple[DataFrame, tuple[str, ...]]] = {}
        self.cached: list[DataFrame] = []
        self.feeding = 0  # > 0 while evaluating what a combination (or MINUS) reads whole

    @contextlib.contextmanager
    def _operands(self):
        """Evaluate what a combination reads: with kept partial matches, its old parts as well."""
        self.feeding += 1
        try:
            yield
        finally:
            self.feeding -= 1

    # ---------------------------------------------------------------- kept partial matches

    def _keep(self, sols: _Solutions, materialize: bool = True) -> _Solutions:
        """With kept partial matches, ``sols`` holds the solutions after the cut (and timeless
        ones): add the stored earlier ones, and note the new ones for the store. Only what a
        combination reads is kept: the solutions the query reports (its outermost combination,
        and what lies above it) end after the cut, which is no later than the batch's start, so
        earlier ones would only be filtered out again (for an unbounded SEQ of two readings the
        pairs were most of what a batch stored)."""
        partials, cut = self.partials, self.cut
        if partials is None or cut is None or not self.feeding:  # a cut comes with partials
            return sols
        rows = [
            (r["ta"], r["tw"], list(r["ev"]), *[r["vals"].get(vcol(v)) for v in sols.vars])
            for r in partials.old.get(sols.key, [])
        ]
        frame = sols.frame
        if rows:
            frame = frame.unionByName(local_frame(self.spark, rows, sols.schema))
        # computed once: a combination reads each part up to three times (new x all, old x new,
        # timeless x timeless), and an unshared plan would grow threefold with every level
        if materialize:
            frame = materialized(frame)
            self.cached.append(frame)
        self.kept.setdefault(sols.key, (frame.where(F.col(TW) > cut), sols.vars))
        return replace(sols, frame=frame)

    def collect_partials(self, until_us: int | None) -> None:
        """The partial matches this batch adds (ending in ``(cut, until]``), into
        ``partials.produced``, in one Spark job."""
        partials = self.partials
        if partials is None or not self.kept:  # only kept partial matches fill self.kept
            return
        frames = []
        for key, (frame, vars_) in self.kept.items():
            if until_us is not None:
                frame = frame.where(F.col(TW) <= until_us)
            vals = F.to_json(F.struct(*[F.col(vcol(v)) for v in vars_])) if vars_ else F.lit("{}")
            frames.append(frame.select(F.lit(key).alias("_key"), TA, TW, EV, vals.alias("_vals")))
        # as Arrow columns: an unbounded pattern keeps many partial matches, and a Row each
        # costs more on the driver than the Spark job
        table = functools.reduce(DataFrame.unionByName, frames).toArrow()
        columns = [table.column(c).to_pylist() for c in ("_key", TA, TW, EV, "_vals")]
        for key, ta, tw, ev, vals in zip(*columns):
            partials.produced.setdefault(key, []).append(
                {"ta": ta, "tw": tw, "ev": ev, "vals": json.loads(vals)}
            )

    def release(self) -> None:
        for frame in self.cached:
            release(frame)

    def evaluate(self, node: P.Node) -> _Solutions:
        method = getattr(self, "_" + type(node).__name__.lower().rstrip("_"), None)
        if method is None:
            raise UnsupportedConstruct(
                self.query.source, f"{type(node).__name__} in an EP-SPARQL pattern"
            )
        return method(node)

    # ---------------------------------------------------------------- patterns

    def _bgp(self, node: P.BGP) -> _Solutions:
        if not node.triples:
            unit = self.spark.range(1).select(
                F.lit(None).cast("long").alias(TA),
                F.lit(None).cast("long").alias(TW),
                F.array().cast("array<string>").alias(EV),
            )
            return _Solutions(unit, (), key="unit")
        # in the order written: optimize.order_joins wrote them in the order to join them
        if len(node.triples) == 1:
            return self._pattern(node.triples[0], node.graph)
        # every pattern, and every combination but the last, is read by the next
        with self._operands():
            acc, *rest = [self._pattern(t, node.graph) for t in node.triples]
            for pattern in rest[:-1]:
                acc = self._combine(acc, pattern, "join")
        return self._combine(acc, rest[-1], "join")

    def _pattern(self, triple: ast.TriplePattern, graph) -> _Solutions:
        condition, binds = triple_match(triple, graph)
        columns = [F.col(c).alias(vcol(v)) for v, c in binds.items()]
        frame = self.events.where(condition).select(TA, TW, EV, *columns)
        if self.background.may_match(triple, graph):
            timeless = (
                self.background.frame_for(self.spark, triple, graph)
                .where(condition)
                .select(
                    F.lit(None).cast("long").alias(TA),
                    F.lit(None).cast("long").alias(TW),
                    F.array().cast("array<string>").alias(EV),
                    *columns,
                )
            )
            frame = frame.unionByName(timeless)
        return self._keep(
            _Solutions(frame, tuple(binds), key=_key("triple", triple, graph)), materialize=False
        )

    # ---------------------------------------------------------------- joins

    def _both(self, node) -> tuple[_Solutions, _Solutions]:
        with self._operands():
            return self.evaluate(node.left), self.evaluate(node.right)

    def _temporal(self, node) -> _Solutions:
        """A Join, LeftJoin or EP-SPARQL operator as the physical plan's join for it
        (``physical.patterns.JOINS``): its temporal relation, whether its partner is optional,
        and which operand is kept (OPTIONALSEQ keeps the right one, the optional left earlier)."""
        join = temporal_join(node)
        left, right = self._both(node)
        if join.swapped:
            left, right = right, left
        return self._combine(left, right, join.relation, getattr(node, "expr", None), join.optional)

    _join = _leftjoin = _seqjoin = _eqjoin = _seqrightjoin = _eqleftjoin = _temporal

    def _combine(
        self,
        a: _Solutions,
        b: _Solutions,
        kind: str,
        expr: ast.Expr | None = None,
        optional: bool = False,
    ) -> _Solutions:
        """Compatible pairs of ``a`` and ``b`` meeting ``kind``'s temporal condition: ``join``
        none, ``seq`` a before b, ``after`` b before a, ``eq`` the same interval, ``optional``
        b ending no later than a. With ``optional`` every ``a`` solution no ``b`` one pairs with
        (under ``expr``) stays alone: LeftJoin, SeqRightJoin, EqLeftJoin.

        With kept partial matches only the pairs ending after the cut are computed: a new part
        with any part, or an old (or timeless) part with a new one, or two timeless parts. An
        optional pairing never ends after its mandatory part (LeftJoin t'ω <= tω, EqLeftJoin the
        same interval, SeqRightJoin the optional part earlier), so an old mandatory part is final."""
        key = _key(kind, expr, optional, a.key, b.key)
        if self.cut is None:
            return self._pairs(a, b, kind, expr, optional, key)
        tw, cut = F.col(TW), self.cut
        new, old_or_timeless, timeless = tw > cut, F.coalesce(tw <= cut, F.lit(True)), tw.isNull()

        def part(sols: _Solutions, condition) -> _Solutions:
            return replace(sols, frame=sols.frame.where(condition))

        if optional:
            sols = self._pairs(part(a, new | timeless), b, kind, expr, optional, key)
            return self._keep(part(sols, new | timeless))
        pieces = [
            self._pairs(part(a, new), b, kind, expr, optional, key),
            self._pairs(part(a, old_or_timeless), part(b, new), kind, expr, optional, key),
            self._pairs(part(a, timeless), part(b, timeless), kind, expr, optional, key),
        ]
        frame = functools.reduce(DataFrame.unionByName, [p.frame for p in pieces])
        return self._keep(replace(pieces[0], frame=frame))

    def _pairs(
        self,
        a: _Solutions,
        b: _Solutions,
        kind: str,
        expr: ast.Expr | None,
        optional: bool,
        key: str,
    ) -> _Solutions:
        meeting = r2r.Intervals(RELATIONS[kind])
        frame = r2r.join(
            a.frame,
            b.frame,
            a,
            b,
            meeting,
            "left" if optional else "inner",
            expr,
            self.query.source,
        )
        maybe = r2r.left_join_maybe(a, b) if optional else r2r.join_maybe(a, b)
        return _Solutions(frame, r2r.merged_vars(a, b), maybe, key=key)

    def _minus(self, node: P.Minus) -> _Solutions:
        """SPARQL 18.5 Minus, timeless: removes the left solutions some compatible right one
        shares a bound variable with, wherever in time that one is."""
        a, b = self._both(node)
        if not r2r.shared(a, b):
            return a
        return _Solutions(
            r2r.minus(a.frame, b.frame, a, b, r2r.Unrelated()),
            a.vars,
            a.maybe,
            key=_key("minus", a.key, b.key),
        )

    def _union(self, node: P.Union_) -> _Solutions:
        a, b = self.evaluate(node.left), self.evaluate(node.right)
        names = r2r.merged_vars(a, b)
        frame = r2r.union(
            [r2r.project(sols.frame, sols, names, r2r.INTERVAL.columns) for sols in (a, b)]
        )
        if frame is None:  # both sides are frames here
            raise ValueError("a UNION without its sides' solutions")
        return _Solutions(frame, names, r2r.union_maybe(a, b), key=_key("union", a.key, b.key))

    # ---------------------------------------------------------------- expressions

    def _scope(self, sols: _Solutions) -> Scope:
        return r2r.scope(sols, self.query.source, r2r.INTERVAL)

    def _filter(self, node: P.Filter) -> _Solutions:
        sols = self.evaluate(node.input)
        test = r2r.true(compile_expr(node.expr, self._scope(sols)))
        return _Solutions(
            r2r.filter_(sols.frame, test),
            sols.vars,
            sols.maybe,
            key=_key("filter", node.expr, sols.key),
        )

    def _extend(self, node: P.Extend) -> _Solutions:
        sols = self.evaluate(node.input)
        term = compile_expr(node.expr, self._scope(sols)).term
        return _Solutions(
            r2r.extend(sols.frame, {node.var.name: term}),
            (*sols.vars, node.var.name),
            sols.maybe | {node.var.name},
            key=_key("extend", node.var, node.expr, sols.key),
        )

    # ---------------------------------------------------------------- modifiers

    def _project(self, node: P.Project) -> _Solutions:
        """The set of solutions projected to a bag: one row per ⟨μ, tα, tω⟩."""
        inner = self.evaluate(node.input)
        names = tuple(v.name for v in node.vars)
        frame = r2r.project(_as_set(inner), inner, names, r2r.INTERVAL.columns)
        return _Solutions(
            frame,
            names,
            r2r.project_maybe(inner, names),
            bag=True,
            key=_key("project", names, inner.key),
        )

    def _distinct(self, node: P.Distinct) -> _Solutions:
        """Rows with the same bindings over the same interval, once."""
        inner = self.evaluate(node.input)
        return _Solutions(_as_set(inner), inner.vars, inner.maybe, key=_key("distinct", inner.key))

    def _tomultiset(self, node: P.ToMultiset) -> _Solutions:
        """A subquery's rows join the rest as solutions (a set again, as section 3.2's Ψ are)."""
        inner = self.evaluate(node.input)
        return _Solutions(inner.frame, inner.vars, inner.maybe, key=_key("multiset", inner.key))


def _as_set(sols: _Solutions) -> DataFrame:
    """One row per distinct ⟨μ, tα, tω⟩, its provenance the union of its derivations'."""
    return r2r.distinct(sols.frame, sols, r2r.INTERVAL)


# EP-SPARQL's temporal relations (section 3.2) over (tα, tω) of the left solution and (t'α, t'ω)
# of the right: SeqJoin's, the same flipped (SeqRightJoin keeps the right, later part), EqJoin's,
# and plain OPTIONAL's (the optional part ending no later: docs/decisions/ep-sparql.md); Join has none
RELATIONS: dict[str, r2r.Relation | None] = {
    "join": None,
    "seq": lambda ta1, tw1, ta2, tw2: tw1 < ta2,
    "after": lambda ta1, tw1, ta2, tw2: tw2 < ta1,
    "eq": lambda ta1, tw1, ta2, tw2: (ta1 == ta2) & (tw1 == tw2),
    "optional": lambda ta1, tw1, ta2, tw2: tw2 <= tw1,
}
