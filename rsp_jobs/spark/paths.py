"""Property paths (W3C SPARQL 1.1 Query, section 9) over a window's graph: the Path(X, P, Y)
patterns that section 18.2.2.4 leaves (alternatives, ``*``, ``+``, ``?``, negated property sets),
evaluated as section 18.4 defines them.

A path runs over the graph a BGP in its place matches (``plan.Path.graph``): the window's
triples (``Evaluator.rows``) merged with the background's (``Evaluator.background``), in the
default graph, a named graph, or each named graph under ``GRAPH ?g``. A path expression
evaluates to *pairs*, the (start, end) of its matches: ``dep`` rows per window (``_win``),
``indep`` rows that hold in every window, as ``Solutions`` have them. Where the window's data
names none of the path's predicates (``Evaluator.vocabulary``) its pairs are ``indep`` alone:
computed once, for all windows, and a ``+`` over them reaches its fixpoint once.

Section 18.4's operators, each written once below:

- link(iri): the triples with that predicate; NPS: those whose predicate is not in the set
  (``!(^p)``'s inverse members match triples reversed);
- inv: the pairs reversed; seq: the pairs joined end to start, a multiset (its evaluation is
  a Join); alt: their Union, a multiset;
- ZeroLengthPath: every subject and object of the graph paired with itself when no end of the
  path is a constant; the constant alone, even if not in the graph, when one is (the *seed*);
- ZeroOrOnePath, ZeroOrMorePath and OneOrMorePath are sets (ALP, section 18.4, collects
  terms once each): distinct per window, a window's pairs that the background's already give
  left out. ``*`` and ``+`` reach their fixpoint by semi-naive iteration: each step joins the
  pairs found last to the edges and keeps only those not known yet, until a step finds none,
  at most ``settings.max_path_steps()`` steps (each one Spark job), past which the query is
  refused, naming the path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rsp_jobs import settings
from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.explain import path as path_text
from rsp_jobs.errors import QueryError
from rsp_jobs.ingest.lake import Vocabulary
from rsp_jobs.language import ast
from rsp_jobs.spark import r2r
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.local import materialized, release
from rsp_jobs.spark.r2r import WIN, vcol

START, END, MIDDLE = "_s", "_o", "_m"  # a pair's columns (N-Triples), and a join's middle
# the end of a path that is a constant, and that constant (N-Triples): ``s`` or ``o``
Seed = tuple[str, str] | None


class Evaluator(Protocol):
    """What a path reads of the evaluator it is part of (``evaluate.Evaluator``): the query
    (for messages), the window rows, the background, what the slice's triples name, and the
    windows that have data."""

    query: P.ContinuousQuery
    background: Background
    vocabulary: Vocabulary | None
    spark: SparkSession
    active: DataFrame

    @property
    def rows(self) -> DataFrame: ...


@dataclass(frozen=True)
class Pairs:
    """The pairs a path expression relates: ``dep`` (``_win``, the graph's ``g`` under
    ``GRAPH ?g``, ``_s``, ``_o``) per window, ``indep`` (``g``, ``_s``, ``_o``) in every
    window; None where there are none."""

    dep: DataFrame | None
    indep: DataFrame | None


def evaluate_path(
    evaluator: Evaluator, node: P.Path
) -> tuple[DataFrame | None, DataFrame | None, tuple[str, ...]]:
    """``node``'s solutions: window rows, window-independent rows, and the variables they
    bind (``evaluate.Solutions`` is made of them)."""
    return _Path(evaluator, node).solutions()


class _Path:
    def __init__(self, evaluator: Evaluator, node: P.Path):
        self.ev = evaluator
        self.node = node
        # under GRAPH ?g a path is matched in each named graph on its own: ``g`` is a key of
        # every pair, as the window is of dep ones
        self.keys = ["g"] if isinstance(node.graph, ast.Var) else []
        self.max_steps = settings.max_path_steps()

    def solutions(self) -> tuple[DataFrame | None, DataFrame | None, tuple[str, ...]]:
        node = self.node
        seed: Seed = None
        if P.var_name(node.subject) is None:
            seed = ("s", ast.to_nt(node.subject))
        elif P.var_name(node.object) is None:
            seed = ("o", ast.to_nt(node.object))
        pairs = self.pairs(node.path, seed)
        # the pattern's ends: a constant must be there, a variable twice the same term
        binds: dict[str, str] = {}
        ends = [(START, node.subject), (END, node.object)]
        if isinstance(node.graph, ast.Var):
            ends.append(("g", node.graph))
        conditions = r2r.bind_terms(ends, binds)
        columns = [F.col(c).alias(vcol(n)) for n, c in binds.items()]

        def bind(frame: DataFrame | None, windowed: bool) -> DataFrame | None:
            if frame is None:
                return None
            for condition in conditions:
                frame = frame.where(condition)
            return frame.select(*([WIN] if windowed else []), *columns)

        names = tuple(binds)
        dep, indep = bind(pairs.dep, True), bind(pairs.indep, False)
        if dep is None and indep is None:  # matches nothing; an operator above may need a frame
            fields = [T.StructField(WIN, T.LongType())]
            fields += [T.StructField(vcol(n), T.StringType()) for n in names]
            dep = self.ev.spark.createDataFrame([], T.StructType(fields))
        return dep, indep, names

    # ------------------------------------------------------------------ path expressions

    def pairs(self, path: ast.PathExpr, seed: Seed) -> Pairs:
        """``path``'s pairs; ``seed``: a constant end of the pattern, which only a zero-length
        path needs (every other pair is filtered by the pattern's ends) and which lets ``+``
        start from it rather than from every edge."""
        if isinstance(path, ast.IRI):
            return self._link(path)
        if isinstance(path, ast.PathNegated):
            return self._negated(path)
        if isinstance(path, ast.PathInverse):
            return _inverse(self.pairs(path.path, _flipped(seed)))
        if isinstance(path, ast.PathSequence):
            last = len(path.steps) - 1
            steps = [
                self.pairs(
                    step,
                    seed if seed and (i, seed[0]) in ((0, "s"), (last, "o")) else None,
                )
                for i, step in enumerate(path.steps)
            ]
            result = steps[0]
            for step in steps[1:]:
                result = self._sequence(result, step)
            return result
        if isinstance(path, ast.PathAlternative):
            return _union([self.pairs(p, seed) for p in path.alternatives])
        if isinstance(path, ast.PathZeroOrOne):
            return self._set(_union([self._zero(seed), self.pairs(path.path, None)]))
        if isinstance(path, ast.PathZeroOrMore):
            closure = self._closure(self.pairs(path.path, None), seed)
            return self._set(_union([self._zero(seed), closure]))
        if isinstance(path, ast.PathOneOrMore):
            return self._closure(self.pairs(path.path, None), seed)
        raise TypeError(f"not a property path: {path!r}")

    def _link(self, iri: ast.IRI) -> Pairs:
        """link(iri): the subject and object of each triple with predicate ``iri``."""
        nt = ast.to_nt(iri)
        return _edges(self._triples(F.col("p") == nt, iri))

    def _negated(self, path: ast.PathNegated) -> Pairs:
        """Section 18.2.2.3: NPS(forward) when no inverse member is written, inv(NPS(inverse))
        when only inverse ones are, and alt of the two when both are; NPS(set) holds the
        triples whose predicate is not in the set (section 18.4)."""
        parts = []
        if path.forward or not path.inverse:
            parts.append(_edges(self._triples(_not_in(path.forward), None)))
        if path.inverse:
            parts.append(_inverse(_edges(self._triples(_not_in(path.inverse), None))))
        return _union(parts)

    def _sequence(self, first: Pairs, then: Pairs) -> Pairs:
        """seq(P, Q): Join(Path(X, P, ?V), Path(?V, Q, Y)) with ?V projected away, a multiset.
        A window's pairs meet another window's in it, and the background's anywhere."""
        keys = [*self.keys, MIDDLE]

        def join(a: DataFrame | None, b: DataFrame | None, windowed: bool, on: list[str]):
            if a is None or b is None:
                return None
            left = a.withColumnRenamed(END, MIDDLE)
            right = b.withColumnRenamed(START, MIDDLE)
            return left.join(right, on).select(*([WIN] if windowed else []), *self.keys, START, END)

        dep = r2r.union(
            [
                join(first.dep, then.dep, True, [WIN, *keys]),
                join(first.dep, then.indep, True, keys),
                join(first.indep, then.dep, True, keys),
            ]
        )
        return Pairs(dep, join(first.indep, then.indep, False, keys))

    def _zero(self, seed: Seed) -> Pairs:
        """ZeroLengthPath (section 18.4): with a constant end, that term paired with itself
        (in each named graph under GRAPH ?g), whether or not the graph holds it; else every
        subject and object of the graph."""
        if seed is not None and not self.keys:
            term = F.lit(seed[1])
            return Pairs(None, self.ev.spark.range(1).select(term.alias(START), term.alias(END)))
        dep, indep = self._triples(F.lit(True), None)
        if seed is not None:
            term = F.lit(seed[1])

            def graphs(frame: DataFrame | None, windowed: bool) -> DataFrame | None:
                if frame is None:
                    return None
                named = frame.select(*([WIN] if windowed else []), *self.keys).distinct()
                return named.select("*", term.alias(START), term.alias(END))

            return Pairs(graphs(dep, True), graphs(indep, False))

        def terms(frame: DataFrame | None, windowed: bool) -> DataFrame | None:
            if frame is None:
                return None
            keys = [*([WIN] if windowed else []), *self.keys]
            found = frame.select(*keys, F.col("s").alias(START)).unionByName(
                frame.select(*keys, F.col("o").alias(START))
            )
            return found.distinct().select("*", F.col(START).alias(END))

        return Pairs(terms(dep, True), terms(indep, False))

    def _set(self, pairs: Pairs) -> Pairs:
        """The pairs as a set per window (ALP's): distinct, and a window's pairs that the
        background's give too left to the background's."""
        indep = None if pairs.indep is None else pairs.indep.distinct()
        dep = None if pairs.dep is None else pairs.dep.distinct()
        if dep is not None and indep is not None:
            dep = dep.join(indep, [*self.keys, START, END], "left_anti")
        return Pairs(dep, indep)

    def _closure(self, edges: Pairs, seed: Seed) -> Pairs:
        """OneOrMorePath: the pairs joined by one or more edges, a set. Over the background's
        edges alone it is computed once, window-independent; where a window has edges of its
        own, per window over them and the background's."""
        if seed is not None and seed[0] == "o":  # from the constant end: backwards
            return _inverse(self._closure(_inverse(edges), ("s", seed[1])))
        start = None if seed is None else seed[1]
        if edges.dep is None:
            if edges.indep is None:
                return edges
            return Pairs(None, self._fixpoint(edges.indep, self.keys, start))
        every = edges.dep
        if edges.indep is not None:
            every = every.unionByName(edges.indep.crossJoin(self.ev.active.select(WIN)))
        return Pairs(self._fixpoint(every, [WIN, *self.keys], start), None)

    def _fixpoint(self, edges: DataFrame, keys: list[str], start: str | None) -> DataFrame:
        """Semi-naive transitive closure of ``edges`` within each value of ``keys`` (a window,
        a graph), from ``start`` only if given: each step joins the pairs found last to the
        edges and keeps the new ones, so a pair is found once, at the length of its shortest
        path; at most ``max_steps`` steps."""
        edges = materialized(edges.select(*keys, START, END).distinct())
        known = edges if start is None else materialized(edges.where(F.col(START) == start))
        delta = known
        following = edges.select(*keys, F.col(START).alias(MIDDLE), END)
        for _ in range(self.max_steps):
            step = (
                delta.select(*keys, START, F.col(END).alias(MIDDLE))
                .join(following, [*keys, MIDDLE])
                .select(*keys, START, END)
                .distinct()
            )
            new = materialized(step.join(known, [*keys, START, END], "left_anti"))
            if delta is not edges and delta is not known:
                release(delta)
            if new.isEmpty():
                release(new)
                if known is not edges:
                    release(edges)
                return known
            grown = materialized(known.unionByName(new))
            if known is not edges:
                release(known)
            known, delta = grown, new
        where = self.node.position or ast.Position(1, 1)
        raise QueryError(
            f"{self.ev.query.source}:{where.line}:{where.column}: the property path "
            f"{path_text(self.node.path)} did not reach its fixpoint within {self.max_steps} "
            "steps (RSP_MAX_PATH_STEPS): a window or the background holds a chain of more "
            "steps than that; raise RSP_MAX_PATH_STEPS or bound the path's length"
        )

    # ------------------------------------------------------------------ the graph's triples

    def _triples(
        self, where: Column, predicate: ast.IRI | None
    ) -> tuple[DataFrame | None, DataFrame | None]:
        """The graph's triples meeting ``where`` (``predicate``: the one they all have, if
        known), ``g`` kept under GRAPH ?g: the window's per window, the background's for every
        window. The merged graph is a set of triples: a window's triple the background holds
        too is left to the background's."""
        ev, graph = self.ev, self.node.graph
        in_graph, _ = r2r.graph_match(graph)
        condition = in_graph & F.col("p").isNotNull() & where
        columns = [*self.keys, "s", "p", "o"]
        pattern = ast.TriplePattern(ast.Var("s"), predicate or ast.Var("p"), ast.Var("o"))
        indep = None
        if ev.background.may_match(pattern, graph):
            frame = ev.background.frame_for(ev.spark, pattern, graph)
            indep = F.broadcast(frame.where(condition).select(*columns))
        dep = None
        if ev.vocabulary is None or ev.vocabulary.may_match(
            None if predicate is None else ast.to_nt(predicate), None
        ):
            dep = ev.rows.where(condition).select(WIN, *columns)
            if indep is not None:
                dep = dep.join(indep, columns, "left_anti")
        return dep, indep


def _edges(triples: tuple[DataFrame | None, DataFrame | None]) -> Pairs:
    """Triples as the pairs of their subject and object."""

    def pairs(frame: DataFrame | None) -> DataFrame | None:
        if frame is None:
            return None
        return frame.drop("p").withColumnRenamed("s", START).withColumnRenamed("o", END)

    dep, indep = triples
    return Pairs(pairs(dep), pairs(indep))


def _inverse(pairs: Pairs) -> Pairs:
    """inv(P): eval(Path(X, inv(P), Y)) is eval(Path(Y, P, X)), the pairs reversed."""

    def swap(frame: DataFrame | None) -> DataFrame | None:
        if frame is None:
            return None
        return (
            frame.withColumnRenamed(START, MIDDLE)
            .withColumnRenamed(END, START)
            .withColumnRenamed(MIDDLE, END)
        )

    return Pairs(swap(pairs.dep), swap(pairs.indep))


def _union(parts: list[Pairs]) -> Pairs:
    """alt(P, Q): Union, a multiset."""
    return Pairs(r2r.union([p.dep for p in parts]), r2r.union([p.indep for p in parts]))


def _flipped(seed: Seed) -> Seed:
    return None if seed is None else ("o" if seed[0] == "s" else "s", seed[1])


def _not_in(iris: tuple[ast.IRI, ...]) -> Column:
    return ~F.col("p").isin([ast.to_nt(i) for i in iris]) if iris else F.lit(True)
