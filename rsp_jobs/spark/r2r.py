"""R2R, relation to relation: the SPARQL algebra's operators over frames of solutions (W3C SPARQL
1.1 Query, section 18.5), each written once for the evaluators that run them:
``evaluate.Evaluator`` (C-SPARQL windows, and DOTR's event SELECTs, whose windows are instants)
and ``events._Evaluator`` (EP-SPARQL patterns). As RSP4J separates ``s2r``, ``r2r`` and ``r2s``,
windowing (S2R: ``windows.py``) and reporting (R2S: ``results.py``) are modules of their own; an
evaluator decides which frames an operator gets (a window's rows, the background's, kept partial
matches), this module what the operator does with them.

A solution is a row: a ``v_<var>`` column per variable (N-Triples text, NULL when unbound) beside
the columns that annotate it in time, which differ by evaluator (an ``Annotation``):

- ``WINDOW``: the window close ``_win`` (C-SPARQL evaluates the algebra per window; a DOTR
  event SELECT per instant, ``_win`` being the instant);
- ``SPANNED``: the earliest and latest time of a BGP's triples, ``_lo, _hi``, before its
  solutions go into windows (``windows.Spans``);
- ``INTERVAL``: the interval ``_ta, _tw`` of an EP-SPARQL solution and the events ``_ev``
  behind it (Anicic et al., WWW 2011, section 3.2);
- ``TIMELESS``: none, for background solutions, which hold at every time.

A join relates and combines two sides' annotations as a ``Meeting`` says: in the same window
(``SameWindow``), within RANGE of each other (``WithinRange``), one side timeless
(``Unrelated``), on a join key besides (``Keyed``), or as intervals under a temporal relation
(``Intervals``: EP-SPARQL's SEQ, EQUALS and their optional forms are ``join`` with a relation).
What SPARQL says of the variables (compatibility, the domain of a joined solution, which
variables may be unbound) is the same for all of them, and written here once.

Every frame's columns follow from its domain and annotation, so nothing here asks Spark for
them (on Spark Connect each ``DataFrame.columns`` is a round trip that analyses the whole plan).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rsp_jobs.algebra.plan import var_name
from rsp_jobs.language import ast
from rsp_jobs.spark.expressions import Scope, Value, compile_expr

WIN = "_win"  # a window close (µs), or a DOTR instant
LO, HI = "_lo", "_hi"  # the earliest and latest time (µs) of a BGP solution's triples
TA, TW, EV = "_ta", "_tw", "_ev"  # an EP-SPARQL solution's interval (µs) and its events' frame IRIs
RIGHT = "_r_"  # the prefix of the right side's columns where a join has both sides'


def vcol(name: str) -> str:
    """The column of variable ``name``."""
    return "v_" + name


def right(column: str) -> str:
    """``column`` of a join's right side, where the left side has one of that name."""
    return RIGHT + column


class Domain(Protocol):
    """What an operator needs to know of its input's variables: those its solutions may bind
    (``vars``, the frame's ``v_`` columns, in order) and those they may leave unbound (``maybe``)."""

    @property
    def vars(self) -> tuple[str, ...]: ...

    @property
    def maybe(self) -> frozenset[str]: ...


# ---------------------------------------------------------------------------- annotations


@dataclass(frozen=True)
class Annotation:
    """How an evaluator's solutions are annotated in time: the ``columns`` carrying it; those of
    them that tell equal bindings apart (``identity``, by default all: DISTINCT keeps one solution
    per value of them); how the others merge when equal solutions become one (``merged``, Spark
    aggregates); and the start and end columns an expression's interval built-ins read
    (``interval``: getDURATION(), getSTARTTIME(), getENDTIME()), if solutions have them."""

    columns: tuple[str, ...]
    identity: tuple[str, ...] | None = None
    merged: Callable[[], tuple[Column, ...]] = lambda: ()
    interval: tuple[str, str] | None = None

    @property
    def key(self) -> tuple[str, ...]:
        return self.columns if self.identity is None else self.identity


def _events_of_all() -> tuple[Column, ...]:
    """One solution's events where several equal ones become one: those of every derivation."""
    return (F.sort_array(F.array_distinct(F.flatten(F.collect_list(EV)))).alias(EV),)


WINDOW = Annotation((WIN,))
SPANNED = Annotation((LO, HI))
INTERVAL = Annotation((TA, TW, EV), identity=(TA, TW), merged=_events_of_all, interval=(TA, TW))
TIMELESS = Annotation(())


# ---------------------------------------------------------------------------- meetings


class Meeting(Protocol):
    """How a join meets its sides' annotations: the right side's annotation columns it reads
    (``right_columns``, renamed where the left side has the same), the conditions on them, the
    joined solution's annotation (``joined``), and the interval a join condition's interval
    built-ins read (``interval``; None where solutions have none)."""

    @property
    def interval(self) -> Callable[[], tuple[Column, Column]] | None: ...

    def right_columns(self) -> list[Column]: ...

    def conditions(self) -> list[Column]: ...

    def joined(self) -> list[Column]: ...


@dataclass(frozen=True)
class Unrelated:
    """One side holds at every time (background solutions), or both do: nothing of time relates
    them, and the joined solution keeps the other side's annotation, ``kept`` (``from_right``:
    the right side has it)."""

    kept: tuple[str, ...] = ()
    from_right: bool = False
    interval = None

    def right_columns(self) -> list[Column]:
        return [F.col(c) for c in self.kept] if self.from_right else []

    def conditions(self) -> list[Column]:
        return []

    def joined(self) -> list[Column]:
        return [F.col(c) for c in self.kept]


@dataclass(frozen=True)
class SameWindow:
    """Both sides are windows' solutions: a join is per window (C-SPARQL, Barbieri et al. 2010,
    section 3: the query is evaluated over each window), so solutions meet in the same one."""

    interval = None

    def right_columns(self) -> list[Column]:
        return [F.col(WIN).alias(right(WIN))]

    def conditions(self) -> list[Column]:
        return [F.col(WIN) == F.col(right(WIN))]

    def joined(self) -> list[Column]:
        return [F.col(WIN)]


@dataclass(frozen=True)
class WithinRange:
    """Both sides are BGP solutions before windows (``SPANNED``): a window of ``range_us`` holds
    both only if all their triples lie within it, and the joined solution spans both. A right
    row without times (a background solution in the same join) passes: ``greatest`` and
    ``least`` skip NULL."""

    range_us: int
    interval = None

    def right_columns(self) -> list[Column]:
        return [F.col(LO).alias(right(LO)), F.col(HI).alias(right(HI))]

    def conditions(self) -> list[Column]:
        return [F.greatest(HI, right(HI)) - F.least(LO, right(LO)) < F.lit(self.range_us)]

    def joined(self) -> list[Column]:
        return [F.least(LO, right(LO)).alias(LO), F.greatest(HI, right(HI)).alias(HI)]


@dataclass(frozen=True, eq=False)
class Keyed:
    """``inner``, and the sides' ``key`` columns equal: a key an evaluator gave both sides so
    that Spark joins on it by hash (``right_key``: the right side's, computed from its columns,
    where it has no such column yet)."""

    inner: Meeting
    key: str
    right_key: Column | None = None

    @property
    def interval(self):
        return self.inner.interval

    def right_columns(self) -> list[Column]:
        key = F.col(self.key) if self.right_key is None else self.right_key
        return [key.alias(right(self.key)), *self.inner.right_columns()]

    def conditions(self) -> list[Column]:
        return [*self.inner.conditions(), F.col(self.key) == F.col(right(self.key))]

    def joined(self) -> list[Column]:
        return self.inner.joined()


# an EP-SPARQL temporal relation of two intervals: (tα, tω, t'α, t'ω) -> condition
Relation = Callable[[Column, Column, Column, Column], Column]


@dataclass(frozen=True, eq=False)
class Intervals:
    """EP-SPARQL's combination of two solutions (section 3.2): μ ⋈ μ' spans [min(tα, t'α),
    max(tω, t'ω)] and uses the events of both; ``relation`` is the temporal operator's condition
    (SeqJoin, EqJoin, ...; None: Join has none). A timeless (background) side, whose interval
    is NULL, meets every relation and leaves the other's interval as it is."""

    relation: Relation | None = None

    @functools.cached_property
    def _span(self) -> tuple[Column, Column]:
        return F.least(TA, right(TA)), F.greatest(TW, right(TW))  # both skip NULL

    def interval(self) -> tuple[Column, Column]:
        return self._span

    def right_columns(self) -> list[Column]:
        return [F.col(c).alias(right(c)) for c in (TA, TW, EV)]

    def conditions(self) -> list[Column]:
        if self.relation is None:
            return []
        timeless = F.col(TA).isNull() | F.col(right(TA)).isNull()
        return [timeless | self.relation(F.col(TA), F.col(TW), F.col(right(TA)), F.col(right(TW)))]

    def joined(self) -> list[Column]:
        start, end = self._span
        events = F.array_distinct(
            F.concat(F.col(EV), F.coalesce(F.col(right(EV)), F.array().cast("array<string>")))
        )
        return [start.alias(TA), end.alias(TW), events.alias(EV)]


# ---------------------------------------------------------------------------- domains


def shared(a: Domain, b: Domain) -> list[str]:
    """The variables both sides may bind: those compatibility is decided on (SPARQL 18.3)."""
    return [v for v in a.vars if v in b.vars]


def merged_vars(a: Domain, b: Domain) -> tuple[str, ...]:
    """The variables a joined solution μ1 ∪ μ2 may bind, ``a``'s first."""
    return a.vars + tuple(v for v in b.vars if v not in a.vars)


def join_maybe(a: Domain, b: Domain) -> frozenset[str]:
    """Join's unbound variables: μ1 ∪ μ2 leaves a variable unbound only where every side that
    may bind it may leave it unbound."""
    return frozenset(
        v
        for v in merged_vars(a, b)
        if (v not in a.vars or v in a.maybe) and (v not in b.vars or v in b.maybe)
    )


def left_join_maybe(a: Domain, b: Domain) -> frozenset[str]:
    """LeftJoin's unbound variables: ``a``'s, and every one only the optional side binds."""
    return a.maybe | (frozenset(b.vars) - frozenset(a.vars))


def project_maybe(domain: Domain, names: Iterable[str]) -> frozenset[str]:
    """Project's unbound variables: those of ``names`` ``domain`` may leave unbound or lacks."""
    return frozenset(n for n in names if n in domain.maybe or n not in domain.vars)


def union_maybe(a: Domain, b: Domain) -> frozenset[str]:
    """Union's unbound variables: either side's, and every one only one side binds."""
    return a.maybe | b.maybe | (frozenset(a.vars) ^ frozenset(b.vars))


# ---------------------------------------------------------------------------- patterns


def graph_match(graph) -> tuple[Column, dict[str, str]]:
    """The condition a ``g, s, p, o`` row meets to be a triple of ``graph`` (None: the default
    graph; an IRI: that named graph; a variable: any named graph, which it binds to ``g``)."""
    if graph is None:
        return F.col("g").isNull(), {}
    if isinstance(graph, ast.IRI):
        return F.col("g") == f"<{graph.value}>", {}
    return F.col("g").isNotNull(), {graph.name: "g"}


def triple_match(triple: ast.TriplePattern, graph) -> tuple[Column, dict[str, str]]:
    """The condition a ``g, s, p, o`` row meets to match ``triple`` in ``graph`` (None: the
    default graph; an IRI; a variable), and the column each variable binds (SPARQL 18.3: a
    solution is a substitution of the pattern's variables that makes it a triple of the graph)."""
    condition, binds = graph_match(graph)
    positions = (("s", triple.subject), ("p", triple.predicate), ("o", triple.object))
    return _all([condition, *bind_terms(positions, binds)]), binds


def bind_terms(positions, binds: dict[str, str]) -> list[Column]:
    """The conditions a row meets for the terms at its ``positions`` (column, term): a
    constant is its N-Triples text there, a variable named again holds the same term as where
    it was first; ``binds`` gets the column each new variable binds."""
    conditions = []
    for column, term in positions:
        name = var_name(term)
        if name is None:
            conditions.append(F.col(column) == ast.to_nt(term))
        elif name in binds:
            conditions.append(F.col(column) == F.col(binds[name]))
        else:
            binds[name] = column
    return conditions


# ---------------------------------------------------------------------------- expressions


def scope(domain: Domain, source: str, annotation: Annotation = TIMELESS, **kwargs) -> Scope:
    """The scope an expression over ``domain``'s solutions reads: each variable's column, and
    the solution's interval where ``annotation`` has one; ``kwargs`` go to ``Scope``
    (timestamp() calls, numbers known beside terms)."""
    names = domain.vars
    interval = annotation.interval
    return Scope(
        lambda name: F.col(vcol(name)) if name in names else None,
        source=source,
        interval=(lambda: (F.col(interval[0]), F.col(interval[1]))) if interval else None,
        **kwargs,
    )


def true(value: Value) -> Column:
    """Whether ``value``'s effective boolean value is true: an error (NULL) is not (SPARQL
    17.2: FILTER, and a LeftJoin's condition, keep only the solutions it is true for)."""
    return F.coalesce(value.ebv(), F.lit(False))


def _joined_scope(names: list[str], a: Domain, b: Domain, source: str, meeting: Meeting) -> Scope:
    """A join condition's scope (OPTIONAL's filter, SPARQL 18.2.2.6): a shared variable is
    whichever side binds it, the right side's column renamed."""
    domain = a.vars + b.vars

    def column(name: str) -> Column | None:
        if name in names:
            return F.coalesce(F.col(vcol(name)), F.col(right(vcol(name))))
        if name in domain:
            return F.col(vcol(name))
        return None

    return Scope(column, source=source, interval=meeting.interval)


# ---------------------------------------------------------------------------- operators


def compatible(names: Iterable[str], nullable: Iterable[str]) -> list[Column]:
    """SPARQL 18.3: two solutions are compatible when they agree on every variable both bind.
    Over a join's left columns and renamed right ones: equal on each of ``names``, or, where
    either side may leave it unbound (``nullable``), unbound on one side."""
    nullable = frozenset(nullable)
    conds = []
    for v in names:
        lc, rc = F.col(vcol(v)), F.col(right(vcol(v)))
        conds.append(lc.isNull() | rc.isNull() | (lc == rc) if v in nullable else lc == rc)
    return conds


def join(
    left: DataFrame,
    right_frame: DataFrame,
    a: Domain,
    b: Domain,
    meeting: Meeting,
    how: str = "inner",
    expr: ast.Expr | None = None,
    source: str = "<query>",
) -> DataFrame:
    """SPARQL 18.5 Join (``how`` inner) and LeftJoin (``how`` left, ``expr`` its condition): the
    compatible pairs that meet in time as ``meeting`` says, each merged into μ1 ∪ μ2 (a shared
    variable is whichever side binds it); with ``left``, every left solution no pair kept
    stays alone. Equal where both sides are certainly bound, so that Spark hashes on it."""
    names = shared(a, b)
    renamed = set(names)
    right_frame = right_frame.select(
        *meeting.right_columns(),
        *[F.col(vcol(v)).alias(right(vcol(v))) if v in renamed else F.col(vcol(v)) for v in b.vars],
    )
    conds = meeting.conditions() + compatible(names, a.maybe | b.maybe)
    if expr is not None:
        conds.append(true(compile_expr(expr, _joined_scope(names, a, b, source, meeting))))
    joined = left.join(right_frame, on=_all(conds), how=how)
    return joined.select(*meeting.joined(), *_merged_columns(a, b, renamed))


def minus(
    left: DataFrame, right_frame: DataFrame, a: Domain, b: Domain, meeting: Meeting
) -> DataFrame:
    """SPARQL 18.5 Minus: the left solutions no right one is compatible with while sharing a
    bound variable (dom(μ) ∩ dom(μ') not empty), among those ``meeting`` relates it to; with
    disjoint domains nothing is removed."""
    names = shared(a, b)
    if not names:
        return left
    right_frame = right_frame.select(
        *meeting.right_columns(), *[F.col(vcol(v)).alias(right(vcol(v))) for v in names]
    )
    overlap = functools.reduce(
        lambda x, y: x | y,
        [F.col(vcol(v)).isNotNull() & F.col(right(vcol(v))).isNotNull() for v in names],
    )
    conds = meeting.conditions() + compatible(names, names) + [overlap]
    return left.join(right_frame, on=_all(conds), how="left_anti")


def union(frames: Sequence[DataFrame | None]) -> DataFrame | None:
    """SPARQL 18.5 Union: the solutions of every frame given (aligned by ``project``); None
    where there are none."""
    present = [f for f in frames if f is not None]
    return functools.reduce(DataFrame.unionByName, present) if present else None


def project(
    frame: DataFrame,
    domain: Domain,
    names: Sequence[str],
    annotation: Iterable[str] = (),
    extra: Iterable[str] = (),
) -> DataFrame:
    """SPARQL 18.5 Project: the solutions restricted to ``names``, unbound where ``domain``
    does not have one, beside their ``annotation`` columns and ``extra`` ones kept as they are.
    Union aligns its sides with it (a side lacks what only the other binds)."""
    return frame.select(
        *annotation,
        *[
            F.col(vcol(n)) if n in domain.vars else F.lit(None).cast("string").alias(vcol(n))
            for n in names
        ],
        *extra,
    )


def filter_(frame: DataFrame, test: Column) -> DataFrame:
    """SPARQL 18.5 Filter: the solutions ``test`` (a ``true`` of the condition) holds for."""
    return frame.where(test)


def extend(frame: DataFrame, bound: Mapping[str, Column]) -> DataFrame:
    """SPARQL 18.5 Extend, for BINDs in a row (none reading another's variable): each solution
    with every variable of ``bound`` bound to its column's term, unbound where that is an
    error; one plan step. ``translate`` has refused a variable already in scope (18.2.1)."""
    return frame.withColumns({vcol(name): term for name, term in bound.items()})


def distinct(
    frame: DataFrame, domain: Domain, annotation: Annotation, merged: Iterable[Column] = ()
) -> DataFrame:
    """SPARQL 18.5 Distinct, among solutions of the same ``annotation.key`` (a window, an
    interval): one of equal ones, the rest of their annotation merged as ``annotation`` says and
    ``merged`` (aggregates) add. Unbound counts as a value: Spark groups NULLs together."""
    key = [*annotation.key, *map(vcol, domain.vars)]
    aggregates = [*annotation.merged(), *merged]
    return frame.groupBy(*key).agg(*aggregates) if aggregates else frame.dropDuplicates(key)


# ---------------------------------------------------------------------------- helpers


def _merged_columns(a: Domain, b: Domain, renamed: set[str]) -> list[Column]:
    return [
        F.coalesce(F.col(vcol(v)), F.col(right(vcol(v)))).alias(vcol(v))
        if v in renamed
        else F.col(vcol(v))
        for v in merged_vars(a, b)
    ]


def _all(conds: list[Column]) -> Column:
    return functools.reduce(lambda x, y: x & y, conds) if conds else F.lit(True)
