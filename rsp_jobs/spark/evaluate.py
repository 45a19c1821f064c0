"""Logical plan → Spark DataFrames over windows: one method per algebra operator (as rdflib's
``evaluate.py`` has), evaluated for all windows of a run at once. What an operator does to
solutions is ``r2r``'s, written once for windows and EP-SPARQL patterns alike; this module
chooses the frames it works on and how they meet in time (``r2r.Meeting``).

Solutions carry the window close ``_win`` as an ordinary join key, so a join, a group or an
ORDER BY per window is one Spark operator over all windows. Background knowledge is the same in
every window, so solutions that come only from it are kept *window-independent* (no ``_win``)
and joined to windowed ones on their variables alone; they are crossed with the windows only
where semantics require it (grouping, OPTIONAL against window data, the final result). This is
what keeps a 44k-triple background from being copied into every window. Under one sliding
or tumbling window (``optimize.window_solutions``) a BGP is matched on the slice's triples before any
window: its solutions carry the span of their triples' times (``SPAN``), join within RANGE of
each other (``_join_band``) and go to their windows as late as the operators above allow
(``_into_windows``): a FILTER or BIND over them, and a GROUP's keys and aggregate arguments,
are computed once per solution, not once per window holding it (RANGE/STEP times).

A variable ``?x`` is the string column ``v_x`` holding N-Triples text, NULL when unbound.
Every frame's columns follow from its ``Solutions``: ``_win`` in the window rows (``dep``),
the variables' columns, ``_rank`` when ``ranked``. The evaluator knows them from that and never
asks Spark: on a Spark Connect session each ``DataFrame.columns`` is a round trip that analyses
the whole plan so far.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as W
from pyspark.sql import functions as F
from pyspark.sql import types as T

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.plan import var_name
from rsp_jobs.errors import UnsupportedConstruct
from rsp_jobs.ingest.lake import Vocabulary
from rsp_jobs.language import ast
from rsp_jobs.spark import aggregates, r2r
from rsp_jobs.spark import terms as ST
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.expressions import Scope, compile_expr
from rsp_jobs.spark.local import LOCAL_ROWS, local_frame
from rsp_jobs.spark.paths import evaluate_path
from rsp_jobs.spark.r2r import HI, LO, WIN, triple_match, vcol
from rsp_jobs.spark.windows import Spans
from rsp_jobs.tree import walk

RANK = "_rank"
COUNT_RANK = 0  # a COUNT is an xsd:integer (SPARQL 18.5.1.2)
# a BGP's solutions over the slice's triples, before windows (``windows.Spans``): the earliest
# and latest time of their triples (``r2r.SPANNED``)
SPAN = r2r.SPANNED.columns
# _join_either's join key: a window close, or ANY_WINDOW (never a close) for solutions that
# hold in every window
KEY, ANY_WINDOW = "_key", -(2**63)
# the variable keying an EXISTS pattern's outer solutions (``Evaluator._exists``)
OUTER = "__outer"


@dataclass(frozen=True)
class Solutions:
    """A multiset of solutions in two parts: ``dep`` rows belong to the window ``_win``,
    ``indep`` rows hold in every window. ``maybe`` lists the variables that can be unbound."""

    dep: DataFrame | None
    indep: DataFrame | None
    vars: tuple[str, ...]
    maybe: frozenset[str] = frozenset()
    ranked: bool = False  # a _rank column carries ORDER BY position (in dep; indep is None then)
    spanned: bool = False  # dep rows carry SPAN instead of _win (inside a BGP under windows.Spans)
    # variables whose number is a column of ``dep`` beside their term (a COUNT's): a HAVING or
    # BIND over them compares that number instead of parsing the rendered term back. Only
    # FILTER and BIND keep it (they keep every column); any other operator starts without.
    numbers: Mapping[str, str] = field(default_factory=dict)

    def columns(self, windowed: bool, rank: bool = True) -> list[str]:
        """The columns of ``dep`` (``windowed``) or of ``indep``; ``rank``: with ``_rank`` if ranked."""
        return (
            (self.window_columns if windowed else [])
            + [vcol(v) for v in self.vars]
            + ([RANK] if windowed and rank and self.ranked else [])
        )

    @property
    def background_part(self) -> DataFrame:
        """``indep``, read where there is no ``dep``: solutions have one part at least."""
        if self.indep is None:
            raise ValueError("solutions with neither window rows nor background rows")
        return self.indep

    @property
    def annotation(self) -> r2r.Annotation:
        """How ``dep`` rows are annotated in time: by window, or by span before windows."""
        return r2r.SPANNED if self.spanned else r2r.WINDOW

    @property
    def window_columns(self) -> list[str]:
        return list(self.annotation.columns)


SOLUTION = "_solution"  # a solution's name, for BNODE(str) (``Evaluator._with_execution``)


@dataclass(frozen=True)
class Execution:
    """What an expression over window rows reads beside the solution: NOW()'s instant, the
    solution's name for BNODE(str), and the columns added for them (dropped after)."""

    now: Callable[[], Column] | None = None
    solution: Callable[[], Column] | None = None
    hidden: tuple[str, ...] = ()


class Evaluator:
    def __init__(
        self,
        query: P.ContinuousQuery,
        window_rows: DataFrame | None,
        active: DataFrame,
        background: Background,
        spans: Spans | None = None,
        triples: DataFrame | None = None,
        vocabulary: Vocabulary | None = None,
        ranks: Future | None = None,
    ):
        self.query = query
        self._rows = window_rows  # _win, _open, g, s, p, o, ts
        self.active = active  # _win, _open: the windows that have data
        self.background = background
        # with ``spans``, BGPs match ``triples`` (the slice's, ``windows.triples``) and window
        # their solutions; ``rows`` is then made only where a window's triples themselves matter
        self.spans, self.triples = spans, triples
        # what the slice's triples name (None: anything, as under entailment): a pattern that
        # names something else matches the background alone
        self.vocabulary = vocabulary
        # the terms at the places ``optimize.rank_extrema`` named, ranked (``rank_terms``): a
        # future of them by places, asked for when a GROUP needs them (None: not ranked)
        self.ranks = ranks
        self.spark = active.sparkSession
        self._names = (f"_t{i}" for i in itertools.count())
        # the solutions the EXISTS patterns being evaluated are tested for, innermost last
        self._outers: list[Solutions] = []

    @property
    def rows(self) -> DataFrame:
        """The window rows; under ``spans`` made on first use (by timestamp() or DESCRIBE):
        building their plan is some 550 JVM calls that a plan without them need not make."""
        if self._rows is None:
            self._rows = self._spans.window_rows(self.query, self._slice_triples)
        return self._rows

    @property
    def _spans(self) -> Spans:
        """``spans``, read where solutions are spanned, which they are only under it."""
        if self.spans is None:
            raise ValueError("spanned solutions without windows.Spans")
        return self.spans

    @property
    def _slice_triples(self) -> DataFrame:
        """``triples``, which come with ``spans``."""
        if self.triples is None:
            raise ValueError("windows.Spans without the slice's triples")
        return self.triples

    # ------------------------------------------------------------------ dispatch

    def evaluate(self, node: P.Node, spanned: bool = False) -> Solutions:
        """``node``'s solutions; ``spanned``: the caller takes them before windows (``SPAN``
        instead of ``_win``) when they come so: per-solution operators (FILTER, BIND) and GROUP's
        per-solution columns (``_to_dep_with``)."""
        method = getattr(self, "_" + type(node).__name__.lower().rstrip("_"))
        sols = method(node)
        return self._into_windows(sols) if sols.spanned and not spanned else sols

    def to_dep(self, sols: Solutions) -> DataFrame:
        """All solutions as window rows: window-independent ones are copied to every window."""
        return self._to_dep_with(sols, {})

    def _to_dep_with(
        self,
        sols: Solutions,
        extra: dict[str, Column],
        ranks: dict[str, tuple[str, DataFrame]] | None = None,
    ) -> DataFrame:
        """``to_dep`` with ``extra`` columns (functions of the solution's variables), computed
        before spanned solutions go to windows: once per solution, not once per window; and
        ``ranks``: a column named as the key, the rank of the term in the column its value
        names, from a ``ST.ranks`` table (NULL where unbound)."""
        ranks = ranks or {}

        def add(frame: DataFrame) -> DataFrame:
            frame = (
                frame.select("*", *[column.alias(name) for name, column in extra.items()])
                if extra
                else frame
            )
            for name, (column, table) in ranks.items():  # joined on the column: one plan step
                frame = frame.join(
                    F.broadcast(
                        table.select(
                            F.col(ST.RANKED_TERM).alias(column), F.col(ST.TERM_RANK).alias(name)
                        )
                    ),
                    column,
                    "left",
                )
            return frame

        parts = []
        if sols.dep is not None and sols.spanned:
            parts.append(
                self._into_windows(replace(sols, dep=add(sols.dep)), list(extra) + list(ranks)).dep
            )
        elif sols.dep is not None:
            parts.append(add(sols.dep))
        if sols.indep is not None:
            parts.append(add(sols.indep).crossJoin(self.active.select(WIN)))
        return r2r.union(parts) or add(self._empty(sols.vars, windowed=True))

    # ------------------------------------------------------------------ patterns

    def _bgp(self, node: P.BGP) -> Solutions:
        if not node.triples:
            unit = self.spark.range(1).select()  # one solution that binds nothing
            if isinstance(node.graph, ast.Var):
                raise UnsupportedConstruct(self.query.source, "an empty GRAPH ?g {} pattern")
            return Solutions(None, unit, ())
        # in the order written: optimize.order_joins wrote them in the order to join them
        patterns = [self._pattern(t, node.graph) for t in node.triples]
        # spanned: ``evaluate`` windows them
        return functools.reduce(self._join_solutions, patterns)

    def _values(self, node: P.Values) -> Solutions:
        """Inline data holds in every window: window-independent solutions, as the
        background's are, in a local relation."""
        names = tuple(v.name for v in node.vars)
        rows = [tuple(None if t is None else ast.to_nt(t) for t in row) for row in node.rows]
        schema = T.StructType([T.StructField(vcol(n), T.StringType()) for n in names])
        maybe = frozenset(n for i, n in enumerate(names) if any(row[i] is None for row in rows))
        return Solutions(None, local_frame(self.spark, rows, schema), names, maybe)

    def _path(self, node: P.Path) -> Solutions:
        """A property path that is no triple pattern (SPARQL 1.1 section 18.4), over the
        window's and the background's triples: ``paths``. Its solutions are in windows already
        (a path's matches are not one triple's, so they have no span to window later)."""
        dep, indep, names = evaluate_path(self, node)
        return Solutions(dep, indep, names)

    def _into_windows(self, sols: Solutions, extra: Iterable[str] = ()) -> Solutions:
        """A BGP's spanned solutions → the windows that hold all their triples. A solution is
        a mapping, and the mapping fixes its triples, so a window has it once, unless the slice
        holds one of those triples at several times (``Spans.repeats``): then it is made a set.
        ``extra``: columns of ``dep`` to keep (functions of the variables, so the set is the same)."""
        if sols.dep is None:
            return replace(sols, spanned=False)
        columns = [vcol(v) for v in sols.vars] + list(extra)
        windowed = self._spans.to_windows(sols.dep, LO, HI, columns, opens=False)
        return replace(
            sols, dep=windowed.dropDuplicates() if self._spans.repeats else windowed, spanned=False
        )

    def _pattern(self, triple: ast.TriplePattern, graph) -> Solutions:
        positions = (("s", triple.subject), ("p", triple.predicate), ("o", triple.object))
        graph_var = graph.name if isinstance(graph, ast.Var) else None

        def match(frame: DataFrame, windowed: bool) -> DataFrame:
            condition, binds = triple_match(triple, graph)
            out = frame.where(condition)
            if not windowed:
                keep = []
            elif self.spans is not None:
                keep = [F.col("ts").alias(LO), F.col("ts").alias(HI)]
            else:
                keep = [F.col(WIN)]
            return out.select(*keep, *[F.col(c).alias(vcol(v)) for v, c in binds.items()])

        names = []
        for _, term in positions:
            name = var_name(term)
            if name is not None and name not in names:
                names.append(name)
        if graph_var and graph_var not in names:
            names.append(graph_var)
        indep = None
        if self.background.may_match(triple, graph):
            indep = F.broadcast(match(self.background.frame_for(self.spark, triple, graph), False))
        if self.vocabulary is None or self.vocabulary.may_match(
            _constant(triple.predicate), _constant(triple.object)
        ):
            dep = match(self.rows if self.spans is None else self._slice_triples, True)
        elif indep is None:  # matches nothing; an operator's other side may still need a frame
            dep = self._empty(names, windowed=True, spanned=self.spans is not None)
        else:  # the slice holds no triple the pattern names: it matches the background only
            dep = None
        return Solutions(dep, indep, tuple(names), spanned=self.spans is not None)

    # ------------------------------------------------------------------ joins

    def _join(self, node: P.Join) -> Solutions:
        return self._join_solutions(self.evaluate(node.left), self.evaluate(node.right))

    def _join_solutions(self, a: Solutions, b: Solutions) -> Solutions:
        dep_parts = []
        if a.spanned and a.dep is not None and b.dep is not None:
            dep_parts.append(self._join_band(a.dep, b.dep, b.indep, a, b))
        elif a.dep is not None and b.dep is not None and b.indep is not None:
            dep_parts.append(self._join_either(a.dep, b.dep, b.indep, a, b))
        elif a.dep is not None and b.dep is not None:
            dep_parts.append(self._join_frames(a.dep, b.dep, a, b, (True, True)))
        elif a.dep is not None and b.indep is not None:
            dep_parts.append(self._join_frames(a.dep, b.indep, a, b, (True, False)))
        if a.indep is not None and b.dep is not None:
            dep_parts.append(self._join_frames(a.indep, b.dep, a, b, (False, True)))
        indep = None
        if a.indep is not None and b.indep is not None:
            indep = self._join_frames(a.indep, b.indep, a, b, (False, False))
        return Solutions(
            r2r.union(dep_parts),
            indep,
            r2r.merged_vars(a, b),
            r2r.join_maybe(a, b),
            spanned=a.spanned,
        )

    def _join_band(
        self,
        left: DataFrame,
        b_dep: DataFrame,
        b_indep: DataFrame | None,
        a: Solutions,
        b: Solutions,
    ) -> DataFrame:
        """``left ⋈ b_dep (∪ left ⋈ b_indep)`` for spanned solutions: two solutions join when
        compatible and their times lie within RANGE of each other (else no window holds both).
        A ``b_dep`` row is keyed by its bucket (``Spans.bucket`` of its ``lo``), a ``left`` row
        by the buckets within RANGE of it (``Spans.near``), so the band is an equi-join plus a
        filter; as in ``_join_either``, ``b_indep`` rows come in the same join under
        ANY_WINDOW. The copies are of ``left``, the solutions joined so far:
        ``optimize.order_joins`` joins the most selective patterns first, so these are fewer
        than one pattern's matches (a day of CityBench: 9 thousand against 45 thousand a
        pattern). Where the two sides share a variable, buckets are wide (two copies, not
        three), since a variable to match on keeps the wider stretch's extra pairs from becoming
        candidates (``Spans.near``). Under tumbling windows a
        solution's times all lie in one window, so both sides are keyed by that window and
        nothing is copied (one that straddles two windows is in none: ``_into_windows``)."""
        spans = self._spans
        if spans.tumbling:
            bucket = spans.window_of(LO)
            near = [bucket]
        else:
            # a variable both sides bind narrows a row's partners: fewer copies pay (``Spans.near``)
            wide = any(v in b.vars for v in a.vars if v not in a.maybe and v not in b.maybe)
            bucket, near = spans.bucket(LO, wide), spans.near(LO, wide)
        near += [F.lit(ANY_WINDOW)] if b_indep is not None else []
        left = left.withColumn(KEY, F.explode(F.array(*near)) if len(near) > 1 else near[0])
        if b_indep is None:  # keyed where its columns are renamed for the join: one plan step fewer
            return self._join_frames(left, b_dep, a, b, (True, True), keyed=True, right_key=bucket)
        columns = b.columns(windowed=True)
        none = [F.lit(None).cast("long").alias(c) for c in SPAN]
        right = b_dep.select(bucket.alias(KEY), *columns).unionByName(
            b_indep.select(F.lit(ANY_WINDOW).alias(KEY), *none, *b.columns(False))
        )
        return self._join_frames(left, right, a, b, (True, True), keyed=True)

    def _join_either(
        self, left: DataFrame, b_dep: DataFrame, b_indep: DataFrame, a: Solutions, b: Solutions
    ) -> DataFrame:
        """``left ⋈ b_dep ∪ left ⋈ b_indep`` as one join. As two joins, ``left`` (the solutions
        joined so far) would be in the plan twice, so a BGP of n patterns that match both window
        and background triples would build a plan of 2^n copies of its first pattern (CityBench
        Q4's twelve patterns took Catalyst minutes before any data was read). Instead each
        ``left`` row is keyed twice: by its window, to meet window rows, and by ANY_WINDOW, to
        meet the window-independent rows, which carry that key."""
        left = left.withColumn(KEY, F.explode(F.array(F.col(WIN), F.lit(ANY_WINDOW))))
        columns = b.columns(windowed=False)
        right = b_dep.select(F.col(WIN).alias(KEY), *columns).unionByName(
            b_indep.select(F.lit(ANY_WINDOW).alias(KEY), *columns)
        )
        return self._join_frames(left, right, a, b, (True, False), keyed=True)

    def _join_frames(
        self,
        left: DataFrame,
        right: DataFrame,
        a: Solutions,
        b: Solutions,
        windowed: tuple[bool, bool],
        how: str = "inner",
        expr: ast.Expr | None = None,
        keyed: bool = False,
        right_key: Column | None = None,
    ) -> DataFrame:
        """``r2r.join`` of two solution frames, ``windowed`` saying whether ``left`` and
        ``right`` are window rows (``dep``): two such meet in their window, or within RANGE
        before windows (``_join_band``); a window-independent side meets any. ``keyed``: on
        ``KEY`` as well (``_join_either``, ``_join_band``; ``right_key``: ``right``'s key,
        computed from its columns, where it has none yet). A join's solutions are a multiset:
        an ORDER BY position does not carry through it."""
        meeting = self._meeting(a, b, windowed)
        if keyed:
            meeting = r2r.Keyed(meeting, KEY, right_key)
        return r2r.join(left, right, a, b, meeting, how, expr, self.query.source)

    def _meeting(self, a: Solutions, b: Solutions, windowed: tuple[bool, bool]) -> r2r.Meeting:
        """How window rows meet: in the same window, or within RANGE while spanned; where one
        side is window-independent, the joined rows are the other side's windows."""
        if all(windowed):
            return r2r.WithinRange(self._spans.range_us) if a.spanned else r2r.SameWindow()
        if windowed[0]:
            return r2r.Unrelated(tuple(a.window_columns))
        return r2r.Unrelated(tuple(b.window_columns) if windowed[1] else (), from_right=True)

    def _leftjoin(self, node: P.LeftJoin) -> Solutions:
        a, b = self.evaluate(node.left), self.evaluate(node.right)
        vars_, maybe = r2r.merged_vars(a, b), r2r.left_join_maybe(a, b)
        if b.dep is None:  # the optional part is background only: no window needed
            dep = (
                self._join_frames(a.dep, b.background_part, a, b, (True, False), "left", node.expr)
                if a.dep is not None
                else None
            )
            indep = (
                self._join_frames(
                    a.indep, b.background_part, a, b, (False, False), "left", node.expr
                )
                if a.indep is not None
                else None
            )
            return Solutions(dep, indep, vars_, maybe)
        dep = self._join_frames(
            self.to_dep(a), self.to_dep(b), a, b, (True, True), "left", node.expr
        )
        return Solutions(dep, None, vars_, maybe)

    def _minus(self, node: P.Minus) -> Solutions:
        a, b = self.evaluate(node.left), self.evaluate(node.right)
        if not set(a.vars) & set(b.vars):  # SPARQL 18.5: disjoint domains never remove anything
            return a
        if b.dep is None:
            background = b.background_part
            dep = self._anti(a.dep, background, a, b, (True, False)) if a.dep is not None else None
            indep = (
                self._anti(a.indep, background, a, b, (False, False))
                if a.indep is not None
                else None
            )
            return Solutions(dep, indep, a.vars, a.maybe, a.ranked)
        return Solutions(
            self._anti(self.to_dep(a), self.to_dep(b), a, b, (True, True)),
            None,
            a.vars,
            a.maybe,
            a.ranked,
        )

    @staticmethod
    def _anti(
        left: DataFrame, right: DataFrame, a: Solutions, b: Solutions, windowed: tuple[bool, bool]
    ) -> DataFrame:
        """``r2r.minus`` within each window where both sides are window rows."""
        return r2r.minus(left, right, a, b, r2r.SameWindow() if all(windowed) else r2r.Unrelated())

    def _union(self, node: P.Union_) -> Solutions:
        a, b = self.evaluate(node.left), self.evaluate(node.right)
        vars_ = r2r.merged_vars(a, b)

        def align(frame: DataFrame | None, sols: Solutions, windowed: bool) -> DataFrame | None:
            return (
                None
                if frame is None
                else r2r.project(frame, sols, vars_, [WIN] if windowed else [])
            )

        dep = r2r.union([align(a.dep, a, True), align(b.dep, b, True)])
        indep = r2r.union([align(a.indep, a, False), align(b.indep, b, False)])
        return Solutions(dep, indep, vars_, r2r.union_maybe(a, b))

    # ------------------------------------------------------------------ expressions

    def _scope(
        self, sols: Solutions, joined: dict | None = None, execution: Execution | None = None
    ) -> Scope:
        def column(node) -> Column:
            return F.col((joined or {})[node])  # called only where they are joined in

        numbers = {
            name: (F.col(number), F.lit(COUNT_RANK)) for name, number in sols.numbers.items()
        }
        execution = execution or Execution()
        return r2r.scope(
            sols,
            self.query.source,
            timestamp=column if joined is not None else None,
            exists=column if joined is not None else None,
            numbers=numbers,
            now=execution.now,
            solution=execution.solution,
        )

    def _with_execution(
        self, sols: Solutions, exprs: Iterable[ast.Expr]
    ) -> tuple[Solutions, Execution]:
        """Where ``exprs`` call NOW(), solutions as window rows, NOW() being the window's close
        (``expressions._now``); where they call BNODE(str), each solution named by a column
        (``SOLUTION``, a random UUID) that its BNODE(str) calls share."""
        calls = [n for e in exprs for n in walk(e) if isinstance(n, ast.FunctionCall)]
        now = any(c.name == "now" for c in calls)
        named = any(c.name == "bnode" and c.args for c in calls)
        if not now and not named:
            return sols, Execution()
        numbers = sols.numbers
        if sols.indep is None and not sols.spanned and sols.dep is not None:
            frame = sols.dep
        else:  # (the numbers' columns are not carried into the windows: their terms are)
            frame, numbers = self.to_dep(sols), {}
        if named:
            # a column of its own: Spark evaluates a nondeterministic expression once per row
            # there, where each call in the expression would draw another UUID
            frame = frame.withColumn(SOLUTION, F.expr("uuid()"))
        sols = Solutions(frame, None, sols.vars, sols.maybe, sols.ranked, numbers=numbers)
        return sols, Execution(
            now=(lambda: F.col(WIN)) if now else None,
            solution=(lambda: F.col(SOLUTION)) if named else None,
            hidden=(SOLUTION,) if named else (),
        )

    def _with_joined(self, sols: Solutions, expr: ast.Expr) -> tuple[Solutions, dict | None]:
        """Join in a column for each timestamp() call and each EXISTS of ``expr``: they read
        the window beyond the solution (``_scope`` then finds them by their node)."""
        calls = list(dict.fromkeys(_timestamp_calls(expr)))
        tests = list(dict.fromkeys(_exists_tests(expr)))
        if not calls and not tests:
            return sols, None
        frame, names = self._timestamps(self.to_dep(sols), sols, calls)
        for test in tests:
            names[test] = next(self._names)
            frame = self._exists(frame, sols, test, names[test])
        return Solutions(frame, None, sols.vars, sols.maybe, sols.ranked), names

    def _exists(self, frame: DataFrame, sols: Solutions, test: P.Exists, name: str) -> DataFrame:
        """``frame`` with the boolean column ``name``: whether ``test``'s pattern has a solution
        in the window compatible with the row on the variables the pattern mentions. The
        pattern is evaluated once for the distinct bindings of those (``P.Outer``), each keyed
        by its window and values, and the keys that found a match come back by a left join."""
        mentioned = {v.name for v in walk(test.plan) if isinstance(v, ast.Var)}
        shared = [v for v in sols.vars if v in mentioned]
        key = F.to_json(F.struct(F.col(WIN), *[F.col(vcol(v)) for v in shared]))
        outer = frame.select(WIN, *[vcol(v) for v in shared], key.alias(vcol(OUTER))).distinct()
        self._outers.append(
            Solutions(outer, None, (*shared, OUTER), sols.maybe.intersection(shared))
        )
        try:
            inner = self.evaluate(test.plan)
        finally:
            self._outers.pop()
        found = self.to_dep(inner).select(F.col(vcol(OUTER)).alias(name)).distinct()
        keyed = frame.withColumn(name + "_k", key)
        return (
            keyed.join(found, keyed[name + "_k"] == found[name], "left")
            .withColumn(name, F.col(name).isNotNull())
            .drop(name + "_k")
        )

    def _outer(self, node: P.Outer) -> Solutions:
        if not self._outers:
            raise ValueError("an EXISTS pattern's outer solutions outside its test")
        return self._outers[-1]

    def _timestamps(
        self, frame: DataFrame, sols: Solutions, calls: list[ast.Timestamp]
    ) -> tuple[DataFrame, dict]:
        """``frame`` with, for each timestamp(s, p, o) call, the time (ms) of the latest window
        triple matching it under the solution's bindings (C-SPARQL, Barbieri et al. 2010), and
        the columns' names by call."""
        names: dict = {}
        for call in calls:
            name = next(self._names)
            conds, keys = [], []
            for column, term in (("s", call.subject), ("p", call.predicate), ("o", call.object)):
                var = var_name(term)
                if var is None:
                    conds.append(F.col(column) == ast.to_nt(term))
                elif var in sols.vars:
                    keys.append((column, var))
            latest = self.rows
            for cond in conds:
                latest = latest.where(cond)
            latest = latest.groupBy(WIN, *[c for c, _ in keys]).agg(
                F.floor(F.max("ts") / 1000).cast("long").alias(name)
            )
            latest = latest.select(
                F.col(WIN).alias("_ts_win"), *[F.col(c).alias("_ts_" + c) for c, _ in keys], name
            )
            cond = F.col(WIN) == F.col("_ts_win")
            for c, v in keys:
                cond = cond & (F.col(vcol(v)) == F.col("_ts_" + c))
            frame = frame.join(latest, cond, "left").drop("_ts_win", *["_ts_" + c for c, _ in keys])
            names[call] = name
        return frame, names

    def _filter(self, node: P.Filter) -> Solutions:
        sols, joined = self._with_joined(self.evaluate(node.input, spanned=True), node.expr)
        sols, execution = self._with_execution(sols, [node.expr])
        test = r2r.true(compile_expr(node.expr, self._scope(sols, joined, execution)))
        hidden = (list(joined.values()) if joined else []) + list(execution.hidden)

        def apply(frame):
            return None if frame is None else r2r.filter_(frame, test).drop(*hidden)

        # what passes FILTER(bound(?x) && ..) has ?x bound (optimize.bound_join_keys): later
        # joins on ?x are equi-joins
        return replace(
            sols, dep=apply(sols.dep), indep=apply(sols.indep), maybe=sols.maybe - node.bound
        )

    def _extend(self, node: P.Extend) -> Solutions:
        binds = _binds_together(node)
        sols, joined = self._with_joined(self.evaluate(binds[0].input, spanned=True), node.expr)
        sols, execution = self._with_execution(sols, [bind.expr for bind in binds])
        scope = self._scope(sols, joined, execution)
        columns, numbers, vars_ = {}, dict(sols.numbers), sols.vars
        for bind in binds:
            columns[bind.var.name] = compile_expr(bind.expr, scope).term
            # BIND(?count AS ?n): the same number
            if isinstance(bind.expr, ast.Var) and bind.expr.name in numbers:
                numbers[bind.var.name] = numbers[bind.expr.name]
            vars_ += (bind.var.name,)
        hidden = (list(joined.values()) if joined else []) + list(execution.hidden)

        def apply(frame):
            return None if frame is None else r2r.extend(frame, columns).drop(*hidden)

        return replace(
            sols,
            dep=apply(sols.dep),
            indep=apply(sols.indep),
            vars=vars_,
            maybe=sols.maybe | {bind.var.name for bind in binds},
            numbers=numbers,
        )

    # ------------------------------------------------------------------ grouping

    def _group(self, node: P.Group) -> Solutions:
        exprs = [e for e, _ in node.keys] + [a.arg for a, _ in node.aggregates if a.arg is not None]
        inner, execution = self._with_execution(self.evaluate(node.input, spanned=True), exprs)
        scope = self._scope(inner, execution=execution)
        # The keys and each aggregate's argument become plain columns first, per solution
        # before windows, so that the aggregation and the rendering after it work on columns,
        # not on copies of the whole expression.
        extra, key_cols = {}, []
        for expr, var in node.keys:
            if not (isinstance(expr, ast.Var) and expr == var):
                extra[vcol(var.name)] = compile_expr(expr, scope).term
            key_cols.append(vcol(var.name))
        ranks = {}  # MIN and MAX by their argument's rank (optimize.rank_extrema), by column prefix
        for i, (agg, _) in enumerate(node.aggregates):
            table = self._ranks(node.ranked[i]) if node.ranked and node.ranked[i] else None
            if table is not None and isinstance(agg.arg, ast.Var):  # rank_extrema ranks variables
                ranks[f"_a{i}"] = (vcol(agg.arg.name), table)
            elif agg.arg is not None:
                extra.update(aggregates.arguments(agg, compile_expr(agg.arg, scope), f"_a{i}"))
        frame = self._to_dep_with(
            inner, extra, {name + "_k": ranked for name, ranked in ranks.items()}
        )
        aggs: list[Column] = []
        renders: list[Column] = []
        defaults: dict[str, object] = {}  # an aggregate's value over no solutions, by column
        numbers: dict[str, str] = {}
        for i, (agg, var) in enumerate(node.aggregates):
            columns, render, default = aggregates.aggregate(
                agg, f"_a{i}", inner.vars, self.query.source, ranked=f"_a{i}" in ranks
            )
            aggs += columns
            renders.append(render.alias(vcol(var.name)))
            if default is not None:
                defaults[vcol(var.name)] = default
            if agg.name == "count":
                numbers[var.name] = f"_a{i}_c"
        grouped = (
            frame.groupBy(WIN, *key_cols).agg(*aggs)
            if aggs
            else frame.select(WIN, *key_cols).distinct()
        )
        for name, (_, table) in ranks.items():  # each greatest or least rank back to its term
            grouped = grouped.join(
                F.broadcast(
                    table.select(
                        F.col(ST.TERM_RANK).alias(name + "_v"),
                        F.col(ST.RANKED_TERM).alias(name + "_term"),
                    )
                ),
                name + "_v",
                "left",
            )
        if not node.keys:  # the implicit group exists in every window, even without solutions
            # an aggregate's value over no solutions is its default; over some, an unbound one
            # is an error (SUM over "abc"^^xsd:integer) and stays unbound, as in any other group
            grouped = self.active.select(WIN).join(
                grouped.select(WIN, *renders, *numbers.values(), F.lit(True).alias("_group")),
                WIN,
                "left",
            )
            defaults.update({number: 0 for number in numbers.values()})
            empty = F.col("_group").isNull()
            grouped = grouped.select(
                WIN,
                *[
                    F.when(empty, F.lit(defaults[name])).otherwise(F.col(name)).alias(name)
                    if name in defaults
                    else F.col(name)
                    for name in [vcol(v.name) for _, v in node.aggregates] + list(numbers.values())
                ],
            )
        else:
            grouped = grouped.select(WIN, *key_cols, *renders, *numbers.values())
        vars_ = tuple(v.name for _, v in node.keys) + tuple(v.name for _, v in node.aggregates)
        return Solutions(grouped, None, vars_, frozenset(vars_), numbers=numbers)

    def _ranks(self, places: tuple[P.TermsAt, ...]) -> DataFrame | None:
        return None if self.ranks is None else self.ranks.result().get(places)

    def _groupextend(self, node: P.GroupExtend) -> Solutions:
        """C-SPARQL's AGGREGATE clause: the aggregate per window and group, joined back to every
        solution of the group (null-safe: an unbound group variable is a group of its own, as
        GROUP BY has it)."""
        inner = self.evaluate(node.input)
        frame = self.to_dep(inner)
        keys = [vcol(v.name) for v in node.keys]
        name = next(self._names)
        arguments = {}
        if node.aggregate.arg is not None:
            # (window rows: NOW() is their window's close)
            scope = self._scope(inner, execution=Execution(now=lambda: F.col(WIN)))
            arguments = aggregates.arguments(
                node.aggregate, compile_expr(node.aggregate.arg, scope), name
            )
            frame = frame.select("*", *[column.alias(c) for c, column in arguments.items()])
        columns, render, _ = aggregates.aggregate(
            node.aggregate, name, inner.vars, self.query.source
        )
        grouped = (
            frame.groupBy(WIN, *keys)
            .agg(*columns)
            .select(
                *[F.col(c).alias("_g" + c) for c in (WIN, *keys)], render.alias(vcol(node.var.name))
            )
        )
        match = [F.col(c).eqNullSafe(F.col("_g" + c)) for c in (WIN, *keys)]
        extended = frame.join(grouped, functools.reduce(lambda a, b: a & b, match), "left").drop(
            *["_g" + c for c in (WIN, *keys)], *arguments
        )
        return Solutions(
            extended,
            None,
            (*inner.vars, node.var.name),
            inner.maybe | {node.var.name},
            inner.ranked,
        )

    def _tomultiset(self, node: P.ToMultiset) -> Solutions:
        """A subquery's solutions, without the order its ORDER BY gave them."""
        inner = self.evaluate(node.input)
        if not inner.ranked:
            return inner
        return Solutions(self.to_dep(inner).drop(RANK), None, inner.vars, inner.maybe)

    # ------------------------------------------------------------------ solution modifiers

    def _orderby(self, node: P.OrderBy) -> Solutions:
        inner = self.evaluate(node.input)
        frame = self.to_dep(inner)
        # (window rows: NOW() is their window's close)
        scope = self._scope(inner, execution=Execution(now=lambda: F.col(WIN)))
        keys = []
        for cond in node.conditions:
            for part in ST.order_key(compile_expr(cond.expr, scope).term):
                keys.append(part.desc_nulls_last() if cond.descending else part.asc_nulls_first())
        ranked = frame.withColumn(RANK, F.row_number().over(W.partitionBy(WIN).orderBy(*keys)))
        return Solutions(ranked, None, inner.vars, inner.maybe, ranked=True)

    def _project(self, node: P.Project) -> Solutions:
        inner = self.evaluate(node.input)
        names = tuple(v.name for v in node.vars)

        def project(frame: DataFrame | None, windowed: bool) -> DataFrame | None:
            if frame is None:
                return None
            return r2r.project(
                frame,
                inner,
                names,
                [WIN] if windowed else [],
                [RANK] if windowed and inner.ranked else [],
            )

        return Solutions(
            project(inner.dep, True),
            project(inner.indep, False),
            names,
            r2r.project_maybe(inner, names),
            inner.ranked,
        )

    def _distinct(self, node: P.Distinct) -> Solutions:
        """Distinct per window; a ranked solution keeps its first position."""
        inner = self.evaluate(node.input)
        first = [F.min(RANK).alias(RANK)] if inner.ranked else []
        frame = r2r.distinct(self.to_dep(inner), inner, r2r.WINDOW, first)
        return Solutions(frame, None, inner.vars, inner.maybe, inner.ranked)

    def _slice(self, node: P.Slice) -> Solutions:
        inner = self.evaluate(node.input)
        frame = self.to_dep(inner)
        if not inner.ranked:  # no ORDER BY: any order will do, but the same every run
            frame = frame.withColumn(
                RANK,
                F.row_number().over(
                    W.partitionBy(WIN).orderBy(
                        *[F.col(vcol(v)).asc_nulls_first() for v in inner.vars]
                    )
                ),
            )
        position = F.row_number().over(W.partitionBy(WIN).orderBy(RANK))
        frame = frame.withColumn(RANK, position)
        keep = F.col(RANK) > node.offset
        if node.limit is not None:
            keep = keep & (F.col(RANK) <= node.offset + node.limit)
        return Solutions(frame.where(keep), None, inner.vars, inner.maybe, ranked=True)

    # ------------------------------------------------------------------ helpers

    def _empty(self, vars_: Iterable[str], windowed: bool, spanned: bool = False) -> DataFrame:
        window = SPAN if spanned else (WIN,)
        fields = ([T.StructField(c, T.LongType()) for c in window] if windowed else []) + [
            T.StructField(vcol(v), T.StringType()) for v in vars_
        ]
        return self.spark.createDataFrame([], T.StructType(fields))


def rank_terms(
    spark,
    places: tuple[P.TermsAt, ...],
    slice_terms: Mapping[P.TermsAt, list[str]],
    background: Background,
) -> DataFrame | None:
    """The terms at ``places`` in the slice (``Lake.facts``) and the background, ranked
    (``ST.ranks``) for a MIN or MAX (``optimize.rank_extrema``); None where they are more than
    a local relation holds (the aggregate then sorts its ORDER BY keys)."""
    found = set()
    for place in places:
        found.update(slice_terms[place])
        found.update(background.terms(place.position, place.predicate))
    return ST.ranks(spark, found) if len(found) <= LOCAL_ROWS else None


def _constant(term) -> str | None:
    """A pattern's term in N-Triples, as the lake holds it; None for a variable."""
    return None if isinstance(term, (ast.Var, ast.BNode)) else ast.to_nt(term)


def _binds_together(node: P.Extend) -> list[P.Extend]:
    """``node`` and the BINDs right under it that can be one plan step (``withColumns``), the
    innermost first: none reads what another of them binds, and none calls timestamp() or EXISTS (which
    joins columns in first). A SELECT's ``(AVG(?x) AS ?avg)`` items are such a
    row; Spark analyses the whole plan again at each step."""
    binds = [node]
    while isinstance(binds[-1].input, P.Extend) and not _reads_window(node.expr):
        inner = binds[-1].input
        read = {v.name for bind in binds for v in walk(bind.expr) if isinstance(v, ast.Var)}
        if _reads_window(inner.expr) or inner.var.name in read:
            break
        binds.append(inner)
    return binds[::-1]


def _reads_window(expr) -> bool:
    """Whether ``expr`` reads the window beyond its solution: a column is joined in first."""
    return bool(_timestamp_calls(expr) or _exists_tests(expr))


def _timestamp_calls(expr) -> list[ast.Timestamp]:
    """The timestamp() calls of ``expr`` itself (those of an EXISTS pattern are its own)."""
    return [n for n in walk(expr, _is_exists) if isinstance(n, ast.Timestamp)]


def _exists_tests(expr) -> list[P.Exists]:
    """The EXISTS of ``expr``, outermost ones (a nested one is its pattern's)."""
    return [n for n in walk(expr, _is_exists) if isinstance(n, P.Exists)]


def _is_exists(node) -> bool:
    return isinstance(node, P.Exists)
