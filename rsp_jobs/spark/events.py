"""EP-SPARQL patterns (Anicic, Fodor, Rudolph, Stojanovic, WWW 2011) → Spark DataFrames.

A solution is a row ``_ta, _tw`` (its interval, µs), ``_ev`` (the frame IRIs of the events it
uses, for provenance) and ``v_<var>`` columns (N-Triples text, NULL unbound, as in
``evaluate.py``). Section 3.2's semantics, operator by operator:

- a stream triple is an atomic event over [t, t]; a background triple holds at no particular
  time (NULL interval) and leaves the interval of what it joins with unchanged;
- Join: compatible μ1 ∪ μ2 over [min ta, max tw];
- SeqJoin: also tw1 < ta2, over [ta1, tw2];  EqJoin: also ta1 = ta2 and tw1 = tw2;
- the optional variants (OPTIONALSEQ, EQUALSOPTIONAL) are Filter(expr, SeqJoin/EqJoin) ∪ Diff:
  μ1 stays alone when no compatible μ2 meets the temporal condition with expr true, as
  LeftJoin does for Join — restricted, for streams, as below;
- Filter sees the interval: getDURATION() = tw − ta, getSTARTTIME() = ta, getENDTIME() = tw.

Bounded optional parts, a deliberate restriction of the paper's semantics for streams: in
OPTIONALSEQ and EQUALSOPTIONAL a right solution μ2 counts, in the joined branch and in the Diff
test alike, only if the combined interval lasts at most the pattern's bound
(``ContinuousQuery.bound_us``, from the top-level ``getDURATION() < d`` conjunct): the optional
part must fall within the pattern's bound. As the paper defines Diff, "μ1 stays alone" depends on
events arbitrarily far in the future, so no finite batch could decide it; bounded, the absence of
the optional part is decided once the bound has passed after μ1 started, and a batch over
(after, until] reads events up to until + bound (``engine.pattern_lookahead_us``). A μ2 past the
bound could only have made a match the top-level duration filter drops anyway, so the joined
branch loses nothing; what changes is that such a μ2 no longer suppresses μ1 alone. Without a
bound (a query that cannot be registered) the optional parts are the paper's, unrestricted.

CONSTRUCT rules close the stream under their output (the paper's Q-closure, section 3.2):
each match's triples are new events over the match's interval, fed back until a fixpoint.
"""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Optional, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rsp_jobs import terms
from rsp_jobs.algebra import plan as P
from rsp_jobs.errors import QueryError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.evaluate import _constants, _join_order, joined_columns, triple_match, vcol
from rsp_jobs.spark.expressions import Scope, compile_expr
from rsp_jobs.terms import iso_ms

TA, TW, EV = "_ta", "_tw", "_ev"
EVENT_SCHEMA = T.StructType([
    T.StructField("g", T.StringType()), T.StructField("s", T.StringType()),
    T.StructField("p", T.StringType()), T.StructField("o", T.StringType()),
    T.StructField(TA, T.LongType()), T.StructField(TW, T.LongType()),
    T.StructField(EV, T.ArrayType(T.StringType())),
])


def evaluate_events(query: P.ContinuousQuery, elements: DataFrame, background: Background,
                    after_us: Optional[int] = None, until_us: Optional[int] = None,
                    rules: Sequence[P.ContinuousQuery] = (), max_iterations: int = 8) -> list[dict]:
    """The matches of ``query`` whose end lies in ``(after_us, until_us]``, sorted by (end,
    start, bindings). ``rules`` (CONSTRUCT pattern queries) first derive events from the stream
    and from each other until nothing new comes (at most ``max_iterations`` rounds)."""
    events = _materialized(stream_events(elements, query, rules))
    try:
        if rules:
            derived = close_under_rules(events, background, rules, max_iterations)
            current = _materialized(events.unionByName(derived))
            try:
                return _matches(query, current, background, after_us, until_us)
            finally:
                current.unpersist()
        return _matches(query, events, background, after_us, until_us)
    finally:
        events.unpersist()


def _materialized(frame: DataFrame) -> DataFrame:
    """``frame`` cached and computed once: every triple pattern scans the events, and a cached
    relation of known (small) size lets the planner broadcast it instead of shuffling both sides
    of every join."""
    frame = frame.cache()
    frame.count()
    return frame


def stream_events(elements: DataFrame, query: P.ContinuousQuery,
                  rules: Sequence[P.ContinuousQuery] = ()) -> DataFrame:
    """Each stream triple as an atomic event [ts, ts], in the graph its FROM clause names."""
    graphs: dict[str, Optional[str]] = {}
    for q in (query, *rules):
        for w in q.windows:
            graphs.setdefault(w.stream, w.graph)
    graph = F.lit(None).cast("string")
    for stream, name in graphs.items():
        if name is not None:
            graph = F.when(F.col("stream") == stream, F.lit(f"<{name}>")).otherwise(graph)
    ts = F.expr("unix_micros(ts)")
    return elements.select(graph.alias("g"), "s", "p", "o", ts.alias(TA), ts.alias(TW),
                           F.array(F.col("frame")).alias(EV))


def close_under_rules(events: DataFrame, background: Background, rules: Sequence[P.ContinuousQuery],
                      max_iterations: int) -> DataFrame:
    """The events the CONSTRUCT ``rules`` derive, to a fixpoint: each round evaluates every rule
    (all in one Spark job) over the stream plus what earlier rounds derived; blank nodes are
    fresh per match but the same for the same match, so a round that finds no new match adds
    nothing."""
    spark = events.sparkSession
    for rule in rules:
        if rule.form != "CONSTRUCT" or not rule.pattern:
            raise QueryError(f"{rule.source}: a rule must be an EP-SPARQL CONSTRUCT pattern query")

    def frame_of(derived: dict[tuple, set]) -> DataFrame:
        return spark.createDataFrame(
            [(None, s, p, o, ta, tw, sorted(ev)) for (s, p, o, ta, tw), ev in sorted(derived.items())],
            EVENT_SCHEMA)

    derived: dict[tuple, set] = {}
    for _ in range(max_iterations):
        current = _materialized(events.unionByName(frame_of(derived))) if derived else events
        try:
            found: dict[tuple, set] = {}
            for m in _matches_of_all(rules, current, background):
                for line in m["triples"]:
                    s, p, o = _split_triple(line)
                    found.setdefault((s, p, o, m["start_us"], m["end_us"]), set()).update(m["events"])
        finally:
            if current is not events:
                current.unpersist()
        grew = any(key not in derived or not found[key] <= derived[key] for key in found)
        for key, ev in found.items():
            derived.setdefault(key, set()).update(ev)
        if not grew:
            return frame_of(derived)
    names = ", ".join(f"{r.name} ({r.source})" for r in rules)
    raise QueryError(f"rules {names} reached no fixpoint in {max_iterations} iterations: they keep deriving "
                     "new events (a rule that matches its own output with fresh blank nodes never stops)")


# ------------------------------------------------------------------------------ matches

def _matches(query: P.ContinuousQuery, events: DataFrame, background: Background,
             after_us: Optional[int], until_us: Optional[int]) -> list[dict]:
    return _matches_of_all([query], events, background, after_us, until_us)


def _matches_of_all(queries: Sequence[P.ContinuousQuery], events: DataFrame, background: Background,
                    after_us: Optional[int] = None, until_us: Optional[int] = None) -> list[dict]:
    """The matches of every query in ``queries``, computed in one Spark job (one round trip),
    each query's sorted and merged as ``evaluate_events`` reports them, one query after another."""
    frames = []
    for i, query in enumerate(queries):
        if query.form not in ("SELECT", "CONSTRUCT"):
            raise UnsupportedConstruct(query.source, f"{query.form} over an EP-SPARQL pattern")
        sols = _Evaluator(query, events, background).evaluate(query.plan)
        frame = sols.frame.where(F.col(TW).isNotNull())
        if after_us is not None:
            frame = frame.where(F.col(TW) > after_us)
        if until_us is not None:
            frame = frame.where(F.col(TW) <= until_us)
        cols = [vcol(v.name) for v in query.variables]
        grouped = frame.groupBy(TA, TW, *cols).agg(
            F.sort_array(F.array_distinct(F.flatten(F.collect_list(EV)))).alias(EV))
        frames.append(grouped.select(F.lit(i).alias("_q"), TA, TW, EV,
                                     F.array(*[F.col(c) for c in cols]).cast("array<string>").alias("_vals")))
    rows: list[list] = [[] for _ in queries]
    for row in functools.reduce(DataFrame.unionByName, frames).collect():
        rows[row["_q"]].append(row)
    return [m for query, group in zip(queries, rows) for m in _report(query, group)]


def _report(query: P.ContinuousQuery, rows: list) -> list[dict]:
    names = [v.name for v in query.variables]
    out = []
    for row in rows:
        match = {"start": iso_ms(row[TA]), "end": iso_ms(row[TW]), "start_us": row[TA], "end_us": row[TW],
                 "events": list(row[EV])}
        nt = {n: v for n, v in zip(names, row["_vals"]) if v is not None}
        if query.form == "CONSTRUCT":
            match["triples"] = _instantiate(query, row[TA], row[TW], nt)
        else:
            match["bindings"] = {n: terms.nt_to_json(v) for n, v in nt.items()}
        out.append((row[TW], row[TA], sorted(nt.items()), match))
    out.sort(key=lambda item: item[:3])
    if query.form == "CONSTRUCT":  # a set of matches: the same triples over the same interval once
        merged: dict[tuple, dict] = {}
        for *_, m in out:
            key = (m["end_us"], m["start_us"], tuple(m["triples"]))
            if key in merged:
                merged[key]["events"] = sorted(set(merged[key]["events"]) | set(m["events"]))
            elif m["triples"]:
                merged[key] = m
        return list(merged.values())
    return [m for *_, m in out]


def _instantiate(query: P.ContinuousQuery, ta: int, tw: int, nt: dict[str, str]) -> list[str]:
    """The template's triples for one match (SPARQL 16.2): blank nodes fresh per match and the
    same every time that match is found; triples with unbound or ill-typed positions left out."""
    key = "|".join([query.name, str(ta), str(tw), *[f"{k}={v}" for k, v in sorted(nt.items())]])
    stamp = hashlib.sha1(key.encode()).hexdigest()[:16]

    def position(term: ast.Term) -> Optional[str]:
        if isinstance(term, ast.Var):
            return nt.get(term.name)
        if isinstance(term, ast.BNode):
            return f"_:b{stamp}_{term.label}"
        return terms.ast_to_nt(term)

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


class _Evaluator:
    """One method per algebra operator, as ``evaluate.Evaluator`` has, over interval solutions."""

    def __init__(self, query: P.ContinuousQuery, events: DataFrame, background: Background):
        self.query = query
        self.events = events
        self.background = background
        self.spark = events.sparkSession

    def evaluate(self, node: P.Node) -> _Solutions:
        method = getattr(self, "_" + type(node).__name__.lower().rstrip("_"), None)
        if method is None:
            raise UnsupportedConstruct(self.query.source, f"{type(node).__name__} in an EP-SPARQL pattern")
        return method(node)

    # ---------------------------------------------------------------- patterns

    def _bgp(self, node: P.BGP) -> _Solutions:
        if not node.triples:
            unit = self.spark.range(1).select(F.lit(None).cast("long").alias(TA), F.lit(None).cast("long").alias(TW),
                                              F.array().cast("array<string>").alias(EV))
            return _Solutions(unit, ())
        patterns = [self._pattern(t, node.graph) for t in node.triples]
        order = _join_order([set(p.vars) for p in patterns], [_constants(t) for t in node.triples])
        acc = patterns[order[0]]
        for i in order[1:]:
            acc = self._combine(acc, patterns[i], "join")
        return acc

    def _pattern(self, triple: ast.TriplePattern, graph) -> _Solutions:
        condition, binds = triple_match(triple, graph)
        columns = [F.col(c).alias(vcol(v)) for v, c in binds.items()]
        frame = self.events.where(condition).select(TA, TW, EV, *columns)
        if self.background.may_match(triple, graph):
            timeless = self.background.frame(self.spark).where(condition).select(
                F.lit(None).cast("long").alias(TA), F.lit(None).cast("long").alias(TW),
                F.array().cast("array<string>").alias(EV), *columns)
            frame = frame.unionByName(timeless)
        return _Solutions(frame, tuple(binds))

    # ---------------------------------------------------------------- joins

    def _join(self, node: P.Join) -> _Solutions:
        return self._combine(self.evaluate(node.left), self.evaluate(node.right), "join")

    def _seqjoin(self, node: P.SeqJoin) -> _Solutions:
        return self._combine(self.evaluate(node.left), self.evaluate(node.right), "seq")

    def _eqjoin(self, node: P.EqJoin) -> _Solutions:
        return self._combine(self.evaluate(node.left), self.evaluate(node.right), "eq")

    def _leftjoin(self, node: P.LeftJoin) -> _Solutions:
        return self._combine(self.evaluate(node.left), self.evaluate(node.right), "join", node.expr, optional=True)

    def _seqleftjoin(self, node: P.SeqLeftJoin) -> _Solutions:
        return self._combine(self.evaluate(node.left), self.evaluate(node.right), "seq", node.expr, optional=True)

    def _eqleftjoin(self, node: P.EqLeftJoin) -> _Solutions:
        return self._combine(self.evaluate(node.left), self.evaluate(node.right), "eq", node.expr, optional=True)

    def _combine(self, a: _Solutions, b: _Solutions, kind: str, expr: Optional[ast.Expr] = None,
                 optional: bool = False) -> _Solutions:
        """Join, SeqJoin or EqJoin (``kind``) of compatible solutions; with ``optional`` the
        left-join variant: a left solution no right one joins with (under ``expr``) stays alone.
        For OPTIONALSEQ / EQUALSOPTIONAL a right one joins only within the pattern's bound."""
        shared = [v for v in a.vars if v in b.vars]
        renamed = {vcol(v): "_r_" + vcol(v) for v in shared} | {TA: "_r" + TA, TW: "_r" + TW, EV: "_r" + EV}
        right = b.frame.select(*[F.col(c).alias(renamed.get(c, c)) for c in b.frame.columns])
        ta1, tw1, ta2, tw2 = F.col(TA), F.col(TW), F.col("_r" + TA), F.col("_r" + TW)
        conds = []
        for v in shared:
            lc, rc = F.col(vcol(v)), F.col("_r_" + vcol(v))
            conds.append(lc.isNull() | rc.isNull() | (lc == rc) if v in a.maybe or v in b.maybe else lc == rc)
        # A timeless (background) side meets every temporal condition.
        if kind == "seq":
            conds.append(tw1.isNull() | ta2.isNull() | (tw1 < ta2))
            start, end = F.coalesce(ta1, ta2), F.coalesce(tw2, tw1)
        elif kind == "eq":
            conds.append(ta1.isNull() | ta2.isNull() | ((ta1 == ta2) & (tw1 == tw2)))
            start, end = F.coalesce(ta1, ta2), F.coalesce(tw1, tw2)
        else:
            start, end = F.least(ta1, ta2), F.greatest(tw1, tw2)
        if expr is not None:
            scope = Scope(joined_columns(shared, a.vars + b.vars), source=self.query.source,
                          interval=lambda: (start, end))
            conds.append(F.coalesce(compile_expr(expr, scope).ebv(), F.lit(False)))
        if optional and kind != "join" and self.query.bound_us is not None:
            # Bounded optional parts (module docstring): a timeless combination has no duration.
            duration = end - start
            conds.append(duration.isNull() | (duration <= self.query.bound_us))
        condition = functools.reduce(lambda x, y: x & y, conds) if conds else F.lit(True)
        joined = a.frame.join(right, on=condition, how="left" if optional else "inner")
        out_vars = []
        for v in _merge(a.vars, b.vars):
            if v in shared:
                out_vars.append(F.coalesce(F.col(vcol(v)), F.col("_r_" + vcol(v))).alias(vcol(v)))
            else:
                out_vars.append(F.col(vcol(v)))
        events = F.array_distinct(F.concat(F.col(EV), F.coalesce(F.col("_r" + EV), F.array().cast("array<string>"))))
        frame = joined.select(start.alias(TA), end.alias(TW), events.alias(EV), *out_vars)
        if optional:
            maybe = a.maybe | (frozenset(b.vars) - frozenset(a.vars))
        else:
            maybe = frozenset(v for v in _merge(a.vars, b.vars)
                              if (v not in b.vars or v in b.maybe) and (v not in a.vars or v in a.maybe))
        return _Solutions(frame, _merge(a.vars, b.vars), maybe)

    def _minus(self, node: P.Minus) -> _Solutions:
        """SPARQL 18.5 Minus, timeless: removes the left solutions some compatible right one
        shares a bound variable with, wherever in time that one is."""
        a, b = self.evaluate(node.left), self.evaluate(node.right)
        shared = [v for v in a.vars if v in b.vars]
        if not shared:
            return a
        right = b.frame.select(*[F.col(vcol(v)).alias("_r_" + vcol(v)) for v in shared])
        conds, overlap = [], F.lit(False)
        for v in shared:
            lc, rc = F.col(vcol(v)), F.col("_r_" + vcol(v))
            conds.append(lc.isNull() | rc.isNull() | (lc == rc))
            overlap = overlap | (lc.isNotNull() & rc.isNotNull())
        condition = functools.reduce(lambda x, y: x & y, conds) & overlap
        return _Solutions(a.frame.join(right, on=condition, how="left_anti"), a.vars, a.maybe)

    def _union(self, node: P.Union_) -> _Solutions:
        a, b = self.evaluate(node.left), self.evaluate(node.right)
        names = _merge(a.vars, b.vars)

        def align(sols: _Solutions) -> DataFrame:
            return sols.frame.select(TA, TW, EV, *[
                F.col(vcol(v)) if v in sols.vars else F.lit(None).cast("string").alias(vcol(v)) for v in names])

        maybe = a.maybe | b.maybe | (frozenset(a.vars) ^ frozenset(b.vars))
        return _Solutions(align(a).unionByName(align(b)), names, maybe)

    # ---------------------------------------------------------------- expressions

    def _scope(self, sols: _Solutions) -> Scope:
        return Scope(lambda name: F.col(vcol(name)) if name in sols.vars else None, source=self.query.source,
                     interval=lambda: (F.col(TA), F.col(TW)))

    def _filter(self, node: P.Filter) -> _Solutions:
        sols = self.evaluate(node.input)
        test = compile_expr(node.expr, self._scope(sols)).ebv()
        return _Solutions(sols.frame.where(F.coalesce(test, F.lit(False))), sols.vars, sols.maybe)

    def _extend(self, node: P.Extend) -> _Solutions:
        sols = self.evaluate(node.input)
        if node.var.name in sols.vars:
            raise QueryError(f"{self.query.source}: BIND assigns ?{node.var.name}, which is already bound "
                             "in the group (SPARQL 18.2.1)")
        term = compile_expr(node.expr, self._scope(sols)).term
        return _Solutions(sols.frame.withColumn(vcol(node.var.name), term), sols.vars + (node.var.name,),
                          sols.maybe | {node.var.name})

    # ---------------------------------------------------------------- modifiers

    def _project(self, node: P.Project) -> _Solutions:
        inner = self.evaluate(node.input)
        names = tuple(v.name for v in node.vars)
        frame = inner.frame.select(TA, TW, EV, *[
            F.col(vcol(n)) if n in inner.vars else F.lit(None).cast("string").alias(vcol(n)) for n in names])
        return _Solutions(frame, names, frozenset(n for n in names if n in inner.maybe or n not in inner.vars))

    def _distinct(self, node: P.Distinct) -> _Solutions:
        """Matches are already a set of (interval, bindings): the result step merges them."""
        return self.evaluate(node.input)


def _merge(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return a + tuple(v for v in b if v not in a)
