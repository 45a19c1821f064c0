"""TA-SPARQL one-time queries over the frame store: the syntax tree of
``rsp_jobs/language/tasparql.py`` translated to one SQL SELECT.

TA-RDF (Rodriguez, McGrath, Liu, Myers, SSN 2009) annotates resources, not triples, with time:
a stream is a sequence of frames r[t]. Here a frame is a stored graph with a timestamp (the
``frames`` row and its ``frame_triples``), and the language is a SPARQL SELECT subset with:

* frame variables: at the top level of WHERE the subject of a triple pattern is a frame, and
  ``?x[sel] <p> ?o`` matches the triples of the frames ?x with predicate p, whatever their
  subject (the time-annotated resource's content). ``GRAPH ?x[sel] { ... }`` matches patterns with
  their own subjects inside one frame, for frames that describe several resources.
* selectors, per stream: ``?x[*]`` every frame, ``?x[t]`` the frame at exactly t,
  ``?x[t1 .. t2]`` the frames with t1 <= ts <= t2, ``?x[LAST]``, ``?x[FIRST]``. A frame variable
  with no selector is ``[*]``; two different selectors on one variable are an error. A time is
  ``"..."^^xsd:dateTime``, a plain string or a bare ISO 8601 date-time; one without an offset is
  UTC, as ``terms.time_value`` reads data literals.
* ``?x dsv:belongsTo <stream>`` (or ``?s``) says which stream ?x ranges over; without it a
  selector applies to each stream, so ``?x[LAST]`` is the last frame of every stream.
* ``?x.t``: the frame's timestamp, an xsd:dateTime when projected; in comparisons and arithmetic
  UTC milliseconds, and a plain string that is an ISO date-time compares as a time.
* SUM, AVG, MIN, MAX, COUNT; with no GROUP BY the other projected variables group (TA-SPARQL).
* OPTIONAL and UNION as SPARQL 1.1's (Table 2 writes LAST and restriction 1 with them): such a
  group becomes solution tables joined, left-joined and unioned in SQL (``_Translator._solutions``).

Values compare as SPARQL does, through the store's typed columns: numbers by ``o_num``, times by
``o_time`` and ``ts``, other terms by their N-Triples text; a comparison that is a type error is
NULL, which FILTER drops and ``||`` / ``&&`` combine as SPARQL's error does. User text reaches
the database only as bound parameters.

xsd:integer and xsd:decimal values are exact, read from the term's lexical form: PostgreSQL
NUMERIC, Python ``Decimal`` functions registered on SQLite connections ("exact numbers" below);
a float or double makes a value a double, computed on ``o_num`` (SPARQL 1.1 §17.3).
"""
from __future__ import annotations

import decimal
import itertools
import math
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from types import SimpleNamespace
from typing import Any, Optional, Union

from sqlalchemy import (Boolean, Double, Engine, Integer, Join, Select, String, and_, case, cast, distinct, func, literal, not_, null,
                        or_, select, true, union_all)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import InternalTraversal

from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language.tasparql import (BELONGS_TO, Aggregate, BasicPattern, GroupPattern, OptionalPattern, UnionPattern, Bool, Call, Const, FrameTime,
                                        Item, LiteralTerm, Located, Num, Op, Pos, Query, Stamp, TermConst, Time, Triple,
                                        Var, VarRef, iso_time, parse)
from rsp_jobs.store.models import Frame, FrameTriple, InvariantTriple, Stream, UTCDateTime
from rsp_jobs.terms import (DSV, INTEGER_TYPES, NUMERIC_RANK, XSD, XSD_BOOLEAN, XSD_DATETIME, XSD_DECIMAL, XSD_DOUBLE,
                            XSD_INTEGER, nt_to_json)
from rsp_jobs.times import as_utc, datetime_lexical, parse_datetime
from rsp_jobs.tree import walk

__all__ = ["DSV", "BELONGS_TO", "QueryResult", "run_query", "translate"]

_FRAMES, _TRIPLES, _STREAMS = Frame.__table__, FrameTriple.__table__, Stream.__table__
_INVARIANT = InvariantTriple.__table__


@dataclass(frozen=True)
class QueryResult:
    """SPARQL 1.1 JSON results: ``vars`` in projection order, each row maps a bound variable to
    its term (``{"type": "literal", "value": ..., "datatype": ...}``); unbound ones are absent."""

    vars: list[str]
    rows: list[dict[str, dict]]


def run_query(engine: Engine, query: Union[Query, str], source: str = "<query>") -> QueryResult:
    """Evaluate a TA-SPARQL SELECT (compiled by ``rsp_jobs.compiler.compile``, or its text)
    over the store in one SQL statement."""
    if isinstance(query, str):
        query = parse(query, source)
    source = query.source
    with engine.connect() as conn:
        _with_exact_functions(conn)
        plan = _Translator(query, source, _stream_predicates(conn)).plan()
        rows = conn.execute(plan.statement).all()
    width = len(plan.outputs)
    start = width * (2 if plan.ranked else 1)  # of the exact values, after the outputs and their ranks
    results = []
    for row in rows:
        ranks = row[width:2 * width] if plan.ranked else (None,) * width
        exacts = row[start:start + width] if plan.exact else (None,) * width
        results.append({name: term for (name, kind, exact_kept), value, rank, exact
                        in zip(plan.outputs, row, ranks, exacts)
                        if (term := _to_json(kind, value, rank, exact, exact_kept)) is not None})
    return QueryResult([name for name, _, _ in plan.outputs], results)


def translate(text: str, source: str = "<query>", stream_predicates: frozenset = frozenset()) -> tuple[Select, dict[str, Any]]:
    """The SQL statement a query runs as and its bound parameters (for inspection and tests);
    ``stream_predicates``: those of time-invariant statements about streams (see ``run_query``)."""
    statement = _Translator(parse(text, source), source, stream_predicates).plan().statement
    return statement, dict(statement.compile().params)


def _stream_predicates(conn) -> frozenset:
    """The predicates of the stored time-invariant statements about a stream: a frame pattern
    with one of them also matches those (restriction 1), at the price of a union; the others
    read the frames' triples alone."""
    about_stream = select(literal("<", String) + _STREAMS.c.iri + literal(">", String))
    return frozenset(conn.execute(select(_INVARIANT.c.p).where(_INVARIANT.c.s.in_(about_stream)).distinct()).scalars())


# --------------------------------------------------------------------------------- translation


class _EpochMs(FunctionElement):
    """UTC milliseconds since 1970 of a stored time, exact to the microsecond on both backends."""

    type = Double()
    name = "epoch_ms"
    inherit_cache = True


@compiles(_EpochMs)
def _epoch_ms_default(element, compiler, **kw):
    return f"epoch_ms({compiler.process(element.clauses, **kw)})"


@compiles(_EpochMs, "postgresql")
def _epoch_ms_postgresql(element, compiler, **kw):
    return f"CAST(EXTRACT(EPOCH FROM {compiler.process(element.clauses, **kw)}) * 1000 AS DOUBLE PRECISION)"


@compiles(_EpochMs, "sqlite")
def _epoch_ms_sqlite(element, compiler, **kw):
    # UTCDateTime keeps 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC: whole seconds, then the microseconds
    seconds = f"CAST(strftime('%s', substr({compiler.process(element.clauses, **kw)}, 1, 19)) AS INTEGER)"
    micros = f"CAST(substr({compiler.process(element.clauses, **kw)}, 21, 6) AS INTEGER)"
    return f"({seconds} * 1000.0 + {micros} / 1000.0)"


class _FrameJoin(Join):
    """A frame joined to the frames before it, with no condition of its own. On SQLite it is
    a CROSS JOIN, which keeps the frames before it (and their triples) in outer loops: without
    statistics SQLite otherwise checks a frame's own triples only after joining the next frame
    (a week-long self-join of the weather stream took 10 s instead of well under one)."""

    inherit_cache = True

    def __init__(self, left, right):
        super().__init__(left, right, true())


@compiles(_FrameJoin, "sqlite")
def _frame_join_sqlite(join, compiler, asfrom=False, from_linter=None, **kw):
    if from_linter:
        from_linter.edges.update(itertools.product(join.left._from_objects, join.right._from_objects))
    left = join.left._compiler_dispatch(compiler, asfrom=True, from_linter=from_linter, **kw)
    right = join.right._compiler_dispatch(compiler, asfrom=True, from_linter=from_linter, **kw)
    return f"{left} CROSS JOIN {right}"


# tables one SELECT may join: SQLite's limit, kept on PostgreSQL too so a query runs on both or neither
MAX_TABLES = 64

# frames with these selectors come first in the join order: a point or one frame per stream,
# then a range, then every frame
_SELECTIVITY = {"at": 0, "first": 0, "last": 0, "between": 1, "every": 2}


@dataclass
class _Binding:
    """A term variable's columns: its N-Triples text and, from an object position, its values."""

    text: Any
    num: Any = None
    time: Any = None
    key: Any = None  # what GROUP BY uses, when not the text (the stream IRI column)


@dataclass(frozen=True)
class _Value:
    """A compiled expression. ``kind``: num, int, time, bool, term (text/num/time columns, any
    of num/time None when they cannot hold a value), frame (``sql`` is the frames alias)."""

    kind: str
    sql: Any = None
    text: Any = None
    num: Any = None
    time: Any = None
    plain_time: bool = False  # a string constant that is a date-time: it orders as a time
    rank: Any = None  # num: the SPARQL numeric type rank of the value (0 integer .. 3 double), when known
    # num: the value exactly (``_Exact``) when it is an xsd:integer or xsd:decimal, NULL when not;
    # None when it never is one
    exact: Any = None
    rounded: bool = False  # num: ``sql`` is the exact value rounded to the nearest double (a constant)


@dataclass(frozen=True)
class _Number:
    """A numeric constant: its double and, for an xsd:integer or xsd:decimal, its exact value's
    canonical text (see "exact numbers")."""

    value: float
    exact: Optional[str]


_ORDERING = {"<", ">", "<=", ">="}


@dataclass(frozen=True)
class _Plan:
    statement: Select
    outputs: list[tuple[str, str, bool]]  # (variable, value kind, whether it has an exact value) per result column
    ranked: bool = False  # each output column is followed, after all of them, by its numeric type rank
    exact: bool = False  # then by its exact value (``_Value.exact``)


@dataclass(frozen=True)
class _Solutions:
    """A solution table: a column per variable part (``_PARTS``), NULL where unbound."""

    select: Any  # Select or CompoundSelect
    schema: dict  # variable -> kind (frame, time, term), in column order
    maybe: frozenset  # variables some solutions leave unbound


# the columns of a variable in a solution table, by kind, and the one compatibility compares
_PARTS = {"frame": ("id", "iri", "ts", "stream"), "time": ("ts",), "term": ("text", "num", "time")}
_KEY_PART = {"frame": "id", "time": "ts", "term": "text"}
_PART_TYPES = {"id": Integer, "iri": String, "ts": UTCDateTime, "stream": Integer, "text": String, "num": Double,
               "time": UTCDateTime}
_UNIT = _Solutions(select(literal(1).label("unit")), {}, frozenset())  # one solution binding nothing


class _FrameColumns:
    """A frame variable read from a solution table: the columns a ``frames`` alias would give."""

    def __init__(self, id, frame_iri, ts, stream_id):
        self.c = SimpleNamespace(id=id, frame_iri=frame_iri, ts=ts, stream_id=stream_id)


class _Translator:
    """``Query`` → one SQLAlchemy Core SELECT over frames, frame_triples and streams.

    A group with no OPTIONAL or UNION is one FROM clause: every frame variable an alias of
    ``frames``, every triple pattern an alias of ``frame_triples`` joined to its frame; a
    variable's first occurrence binds it, later ones are equalities on the N-Triples text (SPARQL
    term equality). Other groups are built bottom-up as ``_Solutions`` (SPARQL 1.1 §18.5's
    algebra in SQL: Join, LeftJoin, Union), which the query then reads as one table."""

    def __init__(self, query: Query, source: str, stream_predicates: frozenset = frozenset(),
                 names: Optional[dict] = None):
        self.q = query
        self.source = source
        self.stream_predicates = stream_predicates
        self.frames: dict[str, Any] = {}  # frame variable -> a frames alias or a _FrameColumns
        self.bindings: dict[str, _Binding] = {}
        self.times: dict[str, Any] = {}  # a variable bound to a frame's time (dsv:hasTimestamp) -> the time
        self.where: list[Any] = []
        self.names = {} if names is None else names  # variable -> its column prefix in solution tables
        self.basic: Optional[BasicPattern] = None

    def _scope(self, columns: dict[str, tuple[str, dict]]) -> "_Translator":
        """A translator that reads each variable from solution columns ({var: (kind, parts)})."""
        scope = _Translator(self.q, self.source, self.stream_predicates, self.names)
        scope._read(columns)
        return scope

    def _read(self, columns: dict[str, tuple[str, dict]]) -> None:
        for name, (kind, parts) in columns.items():
            if kind == "frame":
                self.frames[name] = _FrameColumns(parts["id"], parts["iri"], parts["ts"], parts["stream"])
            elif kind == "time":
                self.times[name] = parts["ts"]
            else:
                self.bindings[name] = _Binding(parts["text"], parts["num"], parts["time"])

    def error(self, pos: Pos, message: str) -> QuerySyntaxError:
        return QuerySyntaxError(self.source, pos.line, pos.column, message)

    def plan(self) -> _Plan:
        q = self.q
        root = q.where
        if root.flat:
            if root.basic is None:
                raise QuerySyntaxError(self.source, 1, 1, "the query has no triple pattern")
            from_clause = self._patterns(root.basic)
        else:
            solutions = self._solutions(root, filtered=False)
            from_clause = solutions.select.subquery("solutions")
            self._read(self._columns(from_clause, solutions.schema))
        for expr in root.filters:
            self.where.append(self._condition(expr, "FILTER"))
        aggregated = q.group_by is not None or q.having is not None or any(
            _has_aggregate(item.expr) for item in q.items)
        group_keys = self._group_keys() if aggregated else None
        columns, outputs, ranks, exacts = [], [], [], []
        for i, item in enumerate(q.items):
            if group_keys is not None and not _has_aggregate(item.expr):
                self._check_grouped(item.expr, group_keys)
            value = self._value(item.expr, aggregates=aggregated)
            kind, column = _output_column(value)
            columns.append(column.label(f"c{i}"))
            ranks.append(value.rank if value.rank is not None else null())
            exacts.append(value.exact if value.exact is not None else null())
            outputs.append((item.name, kind, value.exact is not None))
        ranked = any(value is not None and not isinstance(value, type(null())) for value in ranks)
        exact = any(kept for _, _, kept in outputs)
        statement = select(*columns, *([r.label(f"r{i}") for i, r in enumerate(ranks)] if ranked else []),
                           *([e.label(f"e{i}") for i, e in enumerate(exacts)] if exact else []))
        statement = statement.select_from(from_clause)
        if self.where:
            statement = statement.where(and_(*self.where))
        if group_keys is not None:
            statement = statement.group_by(*self._group_columns(group_keys))
            if q.having is not None:
                self._check_grouped(q.having, group_keys)
                statement = statement.having(self._condition(q.having, "HAVING", aggregates=True))
        order, hidden = self._order(columns, group_keys)
        if q.distinct:
            statement = statement.add_columns(*hidden).distinct()
        statement = statement.order_by(*order)
        if q.limit is not None:
            statement = statement.limit(q.limit)
        if q.offset is not None:
            statement = statement.offset(q.offset)
        return _Plan(statement, outputs, ranked, exact)

    # -------------------------------------------------------------------------- patterns

    def _patterns(self, basic: BasicPattern):
        """FROM: each frame alias, its triple aliases joined to it, streams where named by a
        variable. Frames join with no condition (FILTERs link them), the most selective first."""
        q = self.q
        self.basic = basic
        tables = (len(basic.frames()) + len(basic.triples) + 2 * len(basic.links) + len(basic.invariants)
                  + sum(isinstance(m.stream, Var) for m in basic.memberships))
        if tables > MAX_TABLES:
            raise QuerySyntaxError(self.source, 1, 1, f"the query joins {tables} tables in one group; the limit is "
                                                      f"{MAX_TABLES} (SQLite's, kept on every backend): split it")
        from_clause = None
        ordered = sorted(basic.frames(),
                         key=lambda name: _SELECTIVITY[getattr(q.selectors.get(name), "kind", "every")])
        for index, name in enumerate(ordered):
            frame = _FRAMES.alias(f"f{index}")
            self.frames[name] = frame
            from_clause = frame if from_clause is None else _FrameJoin(from_clause, frame)
            from_clause = self._membership(name, frame, from_clause)
            self._selector(name, frame)
            for number, triple in enumerate(t for t in basic.triples if t.frame == name):
                alias = self._frame_statements(triple, frame).alias(f"f{index}t{number}")
                on = [alias.c.frame_id == frame.c.id]
                for term, column in ((triple.subject, "s"), (triple.predicate, "p"), (triple.obj, "o")):
                    on += self._term(term, alias, column)
                from_clause = from_clause.join(alias, and_(*on))
            for stamp in (st for st in basic.stamps if st.frame == name):
                self._stamp(stamp, frame)
        for number, link in enumerate(basic.links):
            # the stream the statement's object names, and the frames of it
            frame = self.frames[link.frame]
            stream = _STREAMS.alias(f"l{number}s")
            alias = _INVARIANT.alias(f"l{number}")
            from_clause = from_clause.join(stream, stream.c.id == frame.c.stream_id)
            on = [alias.c.o == literal("<", String) + stream.c.iri + literal(">", String)]
            on += self._term(link.subject, alias, "s") + self._term(link.predicate, alias, "p")
            from_clause = from_clause.join(alias, and_(*on))
        for number, pattern in enumerate(basic.invariants):
            alias = _INVARIANT.alias(f"i{number}")
            on = []
            for term, column in ((pattern.subject, "s"), (pattern.predicate, "p"), (pattern.obj, "o")):
                on += self._term(term, alias, column)
            from_clause = alias if from_clause is None else from_clause.join(alias, and_(true(), *on))
            if from_clause is alias:
                self.where += on
        return from_clause

    def _frame_statements(self, triple: Triple, frame):
        """What a frame pattern matches: the frame's triples and, outside GRAPH, the
        time-invariant statements about its stream, which hold for every frame of it (TA-RDF
        restriction 1). The union is built only when such statements exist with a predicate
        the pattern can match (``run_query`` asks the store)."""
        predicate = triple.predicate
        wanted = (self.stream_predicates if isinstance(predicate, Var)
                  else self.stream_predicates & {predicate.nt})
        if triple.subject is not None or not wanted:
            return _TRIPLES
        stated = select(_TRIPLES.c.frame_id, _TRIPLES.c.s, _TRIPLES.c.p, _TRIPLES.c.o, _TRIPLES.c.o_num,
                        _TRIPLES.c.o_time)
        if not isinstance(predicate, Var):
            stated = stated.where(_TRIPLES.c.p == predicate.nt)
        frames, streams = _FRAMES.alias(), _STREAMS.alias()
        invariant = (select(frames.c.id, _INVARIANT.c.s, _INVARIANT.c.p, _INVARIANT.c.o, _INVARIANT.c.o_num,
                            _INVARIANT.c.o_time)
                     .select_from(frames.join(streams, streams.c.id == frames.c.stream_id)
                                  .join(_INVARIANT, _INVARIANT.c.s == literal("<", String) + streams.c.iri
                                        + literal(">", String)))
                     .where(_INVARIANT.c.p.in_(sorted(wanted))))
        return stated.union_all(invariant).subquery()

    def _stamp(self, stamp: Stamp, frame) -> None:
        """``?F dsv:hasTimestamp ?t``: ?t is the frame's time; a constant is an equality."""
        if isinstance(stamp.time, Var):
            name = stamp.time.name
            if name in self.times or name in self.bindings:
                known = self.times.get(name)
                self.where.append(frame.c.ts == (known if known is not None else self.bindings[name].time))
            else:
                self.times[name] = frame.c.ts
            return
        value = _expression_constant(stamp.time, self)
        if not isinstance(value, Time):
            raise self.error(stamp.time.pos, "dsv:hasTimestamp takes an xsd:dateTime")
        self.where.append(frame.c.ts == value.value)

    def _term(self, term, alias, column: str) -> list:
        """Conditions on one position of a triple alias; binds a variable met first here."""
        if term is None:
            return []
        if isinstance(term, (LiteralTerm, Located)):
            term = term.const
        if isinstance(term, Const):
            return [alias.c[column] == term.nt]
        if term.name in self.frames or term.name in self.q.frames:
            raise self.error(term.pos, f"?{term.name} is a frame; it can only be a subject, a GRAPH "
                                       f"name, or ?{term.name}.t in expressions")
        values = (alias.c.o_num, alias.c.o_time) if column == "o" else (None, None)
        return self._bind(term.name, alias.c[column], *values)

    def _bind(self, name: str, text, num=None, time=None, key=None) -> list:
        known = self.bindings.get(name)
        if known is None:
            self.bindings[name] = _Binding(text, num, time, key)
            return []
        if known.num is None and num is not None:
            known.num, known.time = num, time
        return [text == known.text]

    def _membership(self, name: str, frame, from_clause):
        for number, membership in enumerate(m for m in self.basic.memberships if m.frame == name):
            stream = membership.stream
            if isinstance(stream, Const):
                self.where.append(frame.c.stream_id == _stream_id(stream.nt[1:-1]))
                continue
            if stream.name in self.q.frames:
                raise self.error(stream.pos, f"?{stream.name} is a frame, not a stream")
            alias = _STREAMS.alias(f"f{len(self.frames) - 1}s{number}")
            from_clause = from_clause.join(alias, alias.c.id == frame.c.stream_id)
            # a stream IRI as N-Triples text, grouped by the column itself: PostgreSQL does not
            # match two renderings of the expression (each has its own parameters)
            self.where += self._bind(stream.name, literal("<", String) + alias.c.iri + literal(">", String),
                                     key=alias.c.iri)
        return from_clause

    def _selector(self, name: str, frame) -> None:
        selector = self.q.selectors.get(name)
        if selector is None or selector.kind == "every":
            return
        if selector.kind in ("at", "between"):
            start, end, end_included = selector.times
            if start == end and end_included:
                self.where.append(frame.c.ts == start)
            else:
                self.where.append(frame.c.ts >= start)
                self.where.append(frame.c.ts <= end if end_included else frame.c.ts < end)
        else:  # FIRST, LAST: per stream, by the (stream_id, ts) index, one look-up per stream
            inner, streams = _FRAMES.alias(), _STREAMS.alias()
            ts = inner.c.ts.desc() if selector.kind == "last" else inner.c.ts.asc()
            pick = (select(inner.c.id).where(inner.c.stream_id == streams.c.id).order_by(ts).limit(1)
                    .correlate(streams).scalar_subquery())
            ids = select(pick).select_from(streams)
            named = [m.stream.nt[1:-1] for m in self.basic.memberships
                     if m.frame == name and isinstance(m.stream, Const)]
            if named:
                ids = ids.where(streams.c.iri.in_(named))
            self.where.append(frame.c.id.in_(ids))

    # ------------------------------------------------------------------ OPTIONAL and UNION

    def _solutions(self, group: GroupPattern, filtered: bool = True) -> "_Solutions":
        """A group's solutions as a table: its elements joined in order, an OPTIONAL left-joined
        to what comes before it with its FILTERs as the condition (SPARQL 1.1 §18.2.2.5), then
        the group's own FILTERs unless ``filtered`` is False (the caller applies them)."""
        if group.basic is not None:
            return self._basic_solutions(group.basic, group.filters if filtered else [])
        solutions = None
        for element in group.elements:
            if isinstance(element, OptionalPattern):
                right = self._solutions(element.group, filtered=False)
                solutions = self._join(solutions or _UNIT, right, element.group.filters, outer=True)
                continue
            if isinstance(element, BasicPattern):
                part = self._basic_solutions(element, [])
            elif isinstance(element, UnionPattern):
                part = self._union(element.branches)
            else:
                part = self._solutions(element)
            solutions = part if solutions is None else self._join(solutions, part)
        solutions = solutions or _UNIT
        if filtered and group.filters:
            solutions = self._filtered(solutions, group.filters)
        return solutions

    def _basic_solutions(self, basic: BasicPattern, filters: list) -> "_Solutions":
        """One FROM clause, as a query without OPTIONAL or UNION has, selecting every variable."""
        scope = _Translator(self.q, self.source, self.stream_predicates, self.names)
        from_clause = scope._patterns(basic)
        where = scope.where + [scope._condition(expr, "FILTER") for expr in filters]
        columns = {name: ("frame", {"id": frame.c.id, "iri": frame.c.frame_iri, "ts": frame.c.ts,
                                    "stream": frame.c.stream_id}) for name, frame in scope.frames.items()}
        columns.update((name, ("time", {"ts": ts})) for name, ts in scope.times.items())
        columns.update((name, ("term", {"text": b.text, "num": b.num, "time": b.time}))
                       for name, b in scope.bindings.items())
        statement = select(*self._labelled(columns)).select_from(from_clause)
        if where:
            statement = statement.where(and_(*where))
        return _Solutions(statement, {name: kind for name, (kind, _) in columns.items()}, frozenset())

    def _join(self, left: "_Solutions", right: "_Solutions", filters: list = (), outer: bool = False) -> "_Solutions":
        """Join (or LeftJoin with ``filters``) of two solution tables: solutions are compatible
        when every variable they share is bound to the same term in both, or unbound in one."""
        a, b = left.select.subquery(), right.select.subquery()
        ca, cb = self._columns(a, left.schema), self._columns(b, right.schema)
        merged, on, maybe = {}, [], set()
        for name in dict.fromkeys([*left.schema, *right.schema]):
            if name in ca and name in cb:
                (kind, pa), (other, pb) = ca[name], cb[name]
                if kind != other:
                    raise QuerySyntaxError(self.source, 1, 1, f"?{name} is a {kind} in one pattern and a {other} "
                                                              "in another")
                key = _KEY_PART[kind]
                if name in left.maybe or name in right.maybe:
                    on.append(or_(pa[key].is_(None), pb[key].is_(None), pa[key] == pb[key]))
                    merged[name] = (kind, {part: func.coalesce(pa[part], pb[part]) for part in pa})
                else:
                    on.append(pa[key] == pb[key])
                    merged[name] = ca[name]
                if name in left.maybe and (outer or name in right.maybe):
                    maybe.add(name)
            elif name in ca:
                merged[name] = ca[name]
                maybe.update({name} & left.maybe)
            else:
                merged[name] = cb[name]
                if outer or name in right.maybe:
                    maybe.add(name)
        scope = self._scope(merged)
        on += [scope._condition(expr, "FILTER") for expr in filters]
        statement = select(*self._labelled(merged)).select_from(a.join(b, and_(true(), *on), isouter=outer))
        return _Solutions(statement, {name: kind for name, (kind, _) in merged.items()}, frozenset(maybe))

    def _union(self, branches: tuple) -> "_Solutions":
        """UNION: each branch's solutions, a variable a branch does not bind left unbound."""
        parts = [self._solutions(branch) for branch in branches]
        schema: dict[str, str] = {}
        for part in parts:
            for name, kind in part.schema.items():
                if schema.setdefault(name, kind) != kind:
                    raise QuerySyntaxError(self.source, 1, 1, f"?{name} is a {schema[name]} in one branch of a "
                                                              f"UNION and a {kind} in another")
        selects = []
        for part in parts:
            sub = part.select.subquery()
            columns = self._columns(sub, part.schema)
            full = {name: columns.get(name) or (kind, {p: cast(null(), _PART_TYPES[p]) for p in _PARTS[kind]})
                    for name, kind in schema.items()}
            selects.append(select(*self._labelled(full)).select_from(sub))
        maybe = {name for name in schema if any(name not in p.schema or name in p.maybe for p in parts)}
        return _Solutions(union_all(*selects), schema, frozenset(maybe))

    def _filtered(self, solutions: "_Solutions", filters: list) -> "_Solutions":
        sub = solutions.select.subquery()
        columns = self._columns(sub, solutions.schema)
        scope = self._scope(columns)
        statement = (select(*self._labelled(columns)).select_from(sub)
                     .where(and_(*[scope._condition(expr, "FILTER") for expr in filters])))
        return _Solutions(statement, solutions.schema, solutions.maybe)

    def _label(self, name: str, part: str) -> str:
        """A variable's column in solution tables: v<n>_<part>, n its number in this query
        (variable names can be long or not valid SQL identifiers)."""
        return f"v{self.names.setdefault(name, len(self.names))}_{part}"

    def _labelled(self, columns: dict[str, tuple[str, dict]]) -> list:
        labelled = [(parts[part] if parts[part] is not None else cast(null(), _PART_TYPES[part])).label(
            self._label(name, part)) for name, (kind, parts) in columns.items() for part in _PARTS[kind]]
        return labelled or [literal(1).label("unit")]

    def _columns(self, table, schema: dict[str, str]) -> dict[str, tuple[str, dict]]:
        return {name: (kind, {part: table.c[self._label(name, part)] for part in _PARTS[kind]})
                for name, kind in schema.items()}

    # ------------------------------------------------------------------------- grouping

    def _group_keys(self) -> list:
        """GROUP BY's keys or, without it, the projected items that are not aggregates."""
        if self.q.group_by is not None:
            return self.q.group_by
        keys = []
        for item in self.q.items:
            if _has_aggregate(item.expr):
                continue
            if not isinstance(item.expr, (VarRef, FrameTime)):
                raise self.error(item.pos, f"?{item.name}: with aggregates and no GROUP BY, the other "
                                           "projected items are variables (they group the solutions)")
            keys.append(item.expr)
        return keys

    def _group_columns(self, keys: list) -> list:
        columns = []
        for key in keys:
            value = self._value(key)
            if value.kind == "frame":
                columns += [value.sql.c.id, value.sql.c.frame_iri, value.sql.c.ts]
            elif value.kind == "term":
                binding = self.bindings[key.name]
                columns += [c for c in (binding.key, binding.num, binding.time) if c is not None]
                if binding.key is None:
                    columns.append(binding.text)
            else:
                columns.append(value.sql)
        return columns

    def _check_grouped(self, expr, keys: list) -> None:
        """A non-aggregate expression of a grouped query uses grouped variables only."""
        grouped_vars = {k.name for k in keys if isinstance(k, VarRef)}
        grouped_times = {k.name for k in keys if isinstance(k, FrameTime)}
        for node in _walk(expr):
            if isinstance(node, VarRef) and node.name not in grouped_vars:
                raise self.error(node.pos, f"?{node.name} is neither grouped nor aggregated")
            if (isinstance(node, FrameTime) and node.name not in grouped_times
                    and node.name not in grouped_vars):
                raise self.error(node.pos, f"?{node.name}.t is neither grouped nor aggregated")

    # -------------------------------------------------------------------------- ordering

    def _order(self, columns: list, group_keys) -> tuple[list, list]:
        """ORDER BY terms and, for DISTINCT, the columns they sort by, added to the select list
        and sorted by label (PostgreSQL requires it). Those are values of projected terms, and
        the same term has the same value, so DISTINCT keeps the same rows."""
        order, hidden = [], []
        labels = {item.name: column for item, column in zip(self.q.items, columns)}
        plain = {item.name for item in self.q.items if isinstance(item.expr, VarRef)}
        for expr, descending in self.q.order_by:
            if isinstance(expr, VarRef) and expr.name in labels and expr.name not in plain:
                keys = [labels[expr.name]]
            else:
                if group_keys is not None and not _has_aggregate(expr):
                    self._check_grouped(expr, group_keys)
                if self.q.distinct and not _projected(expr, self.q.items):
                    raise self.error(_position(expr), "with DISTINCT, ORDER BY uses projected variables")
                value = self._value(expr, aggregates=group_keys is not None)
                if value.kind == "term":
                    keys = [c for c in (value.num, value.time, value.text) if c is not None]
                elif value.kind == "frame":
                    keys = [value.sql.c.ts, value.sql.c.frame_iri]
                else:
                    keys = [value.sql]
                if self.q.distinct:
                    keys = [key.label(f"h{len(hidden) + i}") for i, key in enumerate(keys)]
                    hidden += keys
            order += [(key.desc() if descending else key.asc()).nulls_last() for key in keys]
        return order, hidden

    # ----------------------------------------------------------------------- expressions

    def _condition(self, expr, where: str, aggregates: bool = False):
        value = self._value(expr, aggregates=aggregates)
        if value.kind != "bool":
            raise self.error(_position(expr), f"{where} needs a comparison or a boolean expression")
        return value.sql

    def _value(self, expr, aggregates: bool = False, in_aggregate: bool = False) -> _Value:
        if isinstance(expr, Num):
            expr = _Number(expr.value, _numeral_exact(expr))
        if isinstance(expr, _Number):
            exact = None if expr.exact is None else _Exact("const", literal(expr.exact, String))
            return _Value("num", literal(expr.value, Double), exact=exact, rounded=True)
        if isinstance(expr, Time):
            return _Value("time", literal(expr.value, UTCDateTime))
        if isinstance(expr, Bool):
            return _Value("bool", literal(expr.value))
        if isinstance(expr, TermConst):
            time = literal(expr.time, UTCDateTime) if expr.time is not None else None
            return _Value("term", text=literal(expr.nt, String), time=time, plain_time=time is not None)
        if isinstance(expr, LiteralTerm):
            return self._value(_expression_constant(expr, self), aggregates, in_aggregate)
        if isinstance(expr, Const):
            return self._value(TermConst(expr.nt), aggregates, in_aggregate)
        if isinstance(expr, VarRef):
            if expr.name in self.frames:
                return _Value("frame", self.frames[expr.name])
            if expr.name in self.times:
                return _Value("time", self.times[expr.name])
            binding = self.bindings.get(expr.name)
            if binding is None:
                raise self.error(expr.pos, f"?{expr.name} is not bound by any pattern")
            return _Value("term", text=binding.text, num=binding.num, time=binding.time)
        if isinstance(expr, FrameTime):
            if expr.name not in self.frames:
                raise self.error(expr.pos, f"?{expr.name}.t: ?{expr.name} is not a frame variable")
            return _Value("time", self.frames[expr.name].c.ts)
        if isinstance(expr, Aggregate):
            if not aggregates or in_aggregate:
                raise self.error(expr.pos, f"{expr.name.upper()} is not allowed here")
            return self._aggregate(expr)
        if isinstance(expr, Op):
            return self._operator(expr, aggregates, in_aggregate)
        if isinstance(expr, Call):
            return self._call(expr, aggregates, in_aggregate)
        raise AssertionError(f"unknown expression {expr!r}")

    def _call(self, call: Call, aggregates: bool, in_aggregate: bool) -> _Value:
        """SPARQL 1.1 built-ins (§17.4): numeric (abs, ceil, floor, round), bound, string
        functions over a term's lexical form, and the parts of a time in UTC."""
        arity = 2 if call.name in _STRING_TESTS else 1
        if len(call.args) != arity:
            raise self.error(call.pos, f"{call.name.upper()} takes {arity} argument{'s' if arity > 1 else ''}")
        if call.name == "bound":
            (arg,) = call.args
            if not isinstance(arg, VarRef):
                raise self.error(call.pos, "BOUND takes a variable")
            value = self._value(arg, aggregates, in_aggregate)
            column = {"term": value.text, "frame": getattr(value.sql, "c", None) and value.sql.c.id}.get(value.kind,
                                                                                                     value.sql)
            return _Value("bool", column.isnot(None))
        values = [self._value(arg, aggregates, in_aggregate) for arg in call.args]
        if call.name in _NUMERIC_FUNCTIONS:
            number = self._number(values[0], Op(call.name.upper(), call.args[0], None, call.pos))
            return _Value("num", getattr(func, call.name)(number), rank=values[0].rank)
        if call.name in _TIME_PARTS:
            if values[0].kind == "time":
                time = values[0].sql
            elif values[0].kind == "term" and values[0].time is not None:
                time = values[0].time
            else:
                raise self.error(call.pos, f"{call.name.upper()} takes a time")
            return _Value("num", _TimePart(_TIME_PARTS[call.name], time), rank=literal(0))
        texts = []
        for value, arg in zip(values, call.args):
            if value.kind != "term":
                raise self.error(_position(arg), f"{call.name.upper()} takes RDF terms")
            texts.append(_Lexical(value.text))
        if call.name == "str":
            return _Value("term", text=literal('"', String) + _escape_quotes(texts[0]) + literal('"', String))
        if call.name == "strlen":
            return _Value("num", func.length(texts[0]), rank=literal(0))
        if call.name in ("ucase", "lcase"):
            lexical = (func.upper if call.name == "ucase" else func.lower)(texts[0])
            return _Value("term", text=literal('"', String) + _escape_quotes(lexical) + literal('"', String))
        a, b = texts
        # by position, not LIKE: the data's % and _ are characters, not wildcards
        test = {"contains": _Position(a, b) > 0,
                "strstarts": func.substr(a, 1, func.length(b)) == b,
                "strends": func.substr(a, func.length(a) - func.length(b) + 1) == b}[call.name]
        return _Value("bool", test)

    def _operator(self, expr: Op, aggregates: bool, in_aggregate: bool) -> _Value:
        left = self._value(expr.left, aggregates, in_aggregate)
        right = None if expr.right is None else self._value(expr.right, aggregates, in_aggregate)
        op = expr.op
        if op in ("&&", "||", "!"):
            for operand, side in ((left, expr.left), (right, expr.right)):
                if operand is not None and operand.kind != "bool":
                    raise self.error(_position(side), f"{op} combines comparisons")
            if op == "!":
                return _Value("bool", not_(left.sql))
            return _Value("bool", (and_ if op == "&&" else or_)(left.sql, right.sql))
        if op == "neg":
            exact = _exact(left)
            return _Value("num", -self._number(left, expr), exact=None if exact is None else _Exact("neg", exact))
        if op in ("+", "-", "*", "/"):
            a, b = self._number(left, expr), self._number(right, expr)
            result = {"+": a + b, "-": a - b, "*": a * b}.get(op)
            rank = None
            if left.rank is not None and right.rank is not None:  # SPARQL's numeric type promotion
                rank = case((left.rank > right.rank, left.rank), else_=right.rank)
                if op == "/":
                    rank = case((rank < 1, 1), else_=rank)
            exact_a, exact_b = _exact(left), _exact(right)
            exact = None if exact_a is None or exact_b is None else _Exact(op, exact_a, exact_b)
            return _Value("num", result if result is not None else a / func.nullif(b, 0), rank=rank, exact=exact)
        return _Value("bool", self._compare(op, left, right, expr))

    def _number(self, value: _Value, expr: Op):
        if value.kind == "num":
            return value.sql
        if value.kind == "int":
            return cast(value.sql, Double)
        if value.kind == "time":
            return _EpochMs(value.sql)
        if value.kind == "term" and value.num is not None:
            return value.num
        raise self.error(expr.pos, f"'{expr.op}' needs numbers or times" if expr.op != "neg"
                         else "'-' needs a number or a time")

    def _compare(self, op: str, a: _Value, b: _Value, expr: Op):
        """SPARQL's value comparison; a pair it cannot compare gives NULL (an error)."""
        if "frame" in (a.kind, b.kind):
            raise self.error(expr.pos, "a frame variable is compared by its time: ?x.t")
        if "bool" in (a.kind, b.kind):
            if a.kind != b.kind or op in _ORDERING:
                raise self.error(expr.pos, f"cannot compare a boolean with '{op}'")
            return _apply(op, a.sql, b.sql)
        numeric = {"num", "int"}
        if a.kind in numeric and b.kind in numeric:
            return _numeric_comparison(op, a.sql, b.sql, _exact(a), _exact(b), _rounded(a) and _rounded(b))
        if a.kind == "time" and b.kind == "time":
            return _apply(op, a.sql, b.sql)
        if {a.kind, b.kind} == {"time", "num"} or {a.kind, b.kind} == {"time", "int"}:
            return _apply(op, self._number(a, expr), self._number(b, expr))
        if a.kind == "term" and b.kind == "term":
            return self._compare_terms(op, a, b, expr)
        term, other = (a, b) if a.kind == "term" else (b, a)
        flip = term is b  # keep the written order: `5 < ?v` is `?v > 5`
        column = term.num if other.kind in numeric else term.time
        if column is None:
            if op in _ORDERING:
                raise self.error(expr.pos, f"'{op}' compares numbers or times")
            return _apply(op, literal(1), literal(0))  # never equal: SPARQL's = is false here
        if other.kind not in numeric:
            return _apply(op, other.sql, column) if flip else _apply(op, column, other.sql)
        pairs = ((other.sql, _exact(other)), (column, _exact(term)))
        (a_num, a_exact), (b_num, b_exact) = pairs if flip else pairs[::-1]
        return case((_is_nan(term.text), literal(op == "!=")),
                    else_=_numeric_comparison(op, a_num, b_num, a_exact, b_exact, _rounded(other)))

    def _compare_terms(self, op: str, a: _Value, b: _Value, expr: Op):
        """Both sides numbers: by number; both times: by time; else = and != by term."""
        branches = []
        if a.num is not None and b.num is not None:
            branches.append((and_(a.num.isnot(None), b.num.isnot(None)),
                             _numeric_comparison(op, a.num, b.num, _exact(a), _exact(b), True)))
        ordering_by_time = op in _ORDERING or not (a.plain_time or b.plain_time)
        if a.time is not None and b.time is not None and ordering_by_time:
            branches.append((and_(a.time.isnot(None), b.time.isnot(None)), _apply(op, a.time, b.time)))
        if op in _ORDERING and not branches:
            raise self.error(expr.pos, f"'{op}' compares numbers or times")
        # XPath's numeric comparisons: NaN is neither equal to, less nor greater than anything
        # (so != holds); the store keeps no number for NaN (``frames.stored_number``)
        branches.insert(0, (or_(_is_nan(a.text), _is_nan(b.text)), literal(op == "!=")))
        return case(*branches, else_=null() if op in _ORDERING else _apply(op, a.text, b.text))

    def _aggregate(self, agg: Aggregate) -> _Value:
        if agg.arg is None:
            return _Value("int", func.count())
        value = self._value(agg.arg, aggregates=True, in_aggregate=True)
        if agg.name == "count":
            column = value.text if value.kind == "term" else value.sql.c.id if value.kind == "frame" else value.sql
            return _Value("int", func.count(distinct(column) if agg.distinct else column))
        if agg.name in ("min", "max") and value.kind == "time":
            column = distinct(value.sql) if agg.distinct else value.sql
            return _Value("time", getattr(func, agg.name)(column))
        number = self._number(value, Op(agg.name.upper(), agg.arg, None, agg.pos))
        column = distinct(number) if agg.distinct else number
        result = getattr(func, agg.name)(column)
        # SPARQL 1.1 §18.5: the type of SUM and MIN/MAX is the promoted type of the values (a sum
        # of integers is an integer), AVG divides, so is at least a decimal; of no values, 0
        rank = value.rank if value.kind != "term" else _numeric_rank(value.text)
        if rank is not None:
            rank = func.coalesce(func.max(rank), 0)
            if agg.name == "avg":  # the average of nothing is the integer 0 (§18.5.1.4)
                rank = case((func.count(column) == 0, 0), (rank < 1, 1), else_=rank)
        bad = None
        if not isinstance(agg.arg, (VarRef, FrameTime)):
            # an argument expression that is an error for one solution (``?v + 0`` over
            # "abc"^^xsd:integer) is an error in the list the set function gets (SPARQL 1.1
            # §18.5.1, ListEval): the aggregate is unbound (docs/semantics/numbers.md)
            bad = func.max(case((number.is_(None), 1), else_=0))
        elif agg.name in ("sum", "avg") and value.kind == "term" and value.num is not None:
            # a term that is not a number (an ill-typed "abc"^^xsd:integer, a string, an IRI)
            # makes the sum a type error (SPARQL 1.1 §18.5.1.3): unbound, never a silent 0
            bad = func.max(case((and_(value.text.isnot(None), value.num.is_(None)), 1), else_=0))
        if agg.name in ("sum", "avg"):
            result = func.coalesce(result, 0.0)
        exact = _exact(value)
        if exact is not None:
            exact = _exact_aggregate(agg, exact, number)
        if bad is not None:
            result = case((bad == 1, null()), else_=result)
            exact = None if exact is None else case((bad == 1, null()), else_=exact)
        return _Value("num", result, rank=rank, exact=exact)


_NUMERIC_FUNCTIONS = {"abs", "ceil", "floor", "round"}
_STRING_TESTS = {"contains", "strstarts", "strends"}
_TIME_PARTS = {"year": "year", "month": "month", "day": "day", "hours": "hour", "minutes": "minute",
               "seconds": "second"}


class _Lexical(FunctionElement):
    """The lexical form of a term's N-Triples text: between the first and the last quote of a
    literal (escapes kept), the IRI itself for an IRI."""

    type = String()
    name = "lexical"
    inherit_cache = True


@compiles(_Lexical)
def _lexical(element, compiler, **kw):
    text = compiler.process(element.clauses, **kw)
    quote = "'\"'"
    if compiler.dialect.name == "postgresql":
        last = f"(length({text}) - strpos(reverse({text}), {quote}) + 1)"
        first = f"strpos({text}, {quote})"
    else:  # SQLite has no reverse(): the closing quote is the last one, before the suffix
        last = f"length(rtrim({text}, replace({text}, {quote}, '')))"
        first = f"instr({text}, {quote})"
    return (f"CASE WHEN substr({text}, 1, 1) = {quote} THEN substr({text}, {first} + 1, {last} - {first} - 1) "
            f"ELSE substr({text}, 2, length({text}) - 2) END")


class _Position(FunctionElement):
    """Where the second string first occurs in the first (1-based), 0 when it does not."""

    type = Integer()
    name = "position"
    inherit_cache = True


@compiles(_Position)
def _position_sql(element, compiler, **kw):
    text, part = (compiler.process(c, **kw) for c in element.clauses)
    return f"strpos({text}, {part})" if compiler.dialect.name == "postgresql" else f"instr({text}, {part})"


def _escape_quotes(text):
    return func.replace(text, literal('"', String), literal('\\"', String))


class _TimePart(FunctionElement):
    """A part of a stored UTC time (year .. second) as a number."""

    type = Double()
    name = "time_part"
    inherit_cache = True
    # the part is in the statement cache's key: else MONTH(?x.t) reuses the SQL of YEAR(?x.t)
    _traverse_internals = FunctionElement._traverse_internals + [("part", InternalTraversal.dp_string)]

    def __init__(self, part: str, time):
        self.part = part
        super().__init__(time)


@compiles(_TimePart)
def _time_part(element, compiler, **kw):
    time = compiler.process(element.clauses, **kw)
    if compiler.dialect.name == "postgresql":
        return f"CAST(EXTRACT({element.part.upper()} FROM {time} AT TIME ZONE 'UTC') AS DOUBLE PRECISION)"
    fmt = {"year": "%Y", "month": "%m", "day": "%d", "hour": "%H", "minute": "%M", "second": "%S"}[element.part]
    value = f"CAST(strftime('{fmt}', substr({time}, 1, 19)) AS REAL)"
    if element.part == "second":  # with the microseconds UTCDateTime keeps
        value = f"({value} + CAST(substr({time}, 21, 6) AS REAL) / 1000000.0)"
    return value


# ------------------------------------------------------------------------------ exact numbers
#
# XSD 1.0 Part 2 §3.2.3: processors support decimals of at least 18 digits, and xsd:integer
# (§3.3.13) has no bound; SPARQL 1.1 §17.3 promotes integer < decimal < float < double, §18.5.1.3
# sums with op:numeric-add and §18.5.1.4 averages as Sum / Count. So an xsd:integer or xsd:decimal
# value is computed exactly, from the term's lexical form: a term of those types, a numeric
# constant, a COUNT, and what + - * /, SUM, AVG, MIN and MAX make of those alone. It is NUMERIC on
# PostgreSQL, and on SQLite the canonical text of a Python Decimal through the functions
# ``_with_exact_functions`` registers. A float or a double operand makes the value a double,
# computed on ``o_num`` as before (``_Value.sql``): its exact value is NULL. Where both are known,
# comparisons use the exact values, and results are written from them (``_to_json``).
#
# An integer keeps no digit after the point and a decimal at least one (a decimal "5" is read as
# 5.0), so the result's type follows from its value alike on both backends. A quotient keeps
# DECIMAL_DIGITS digits after the point, the last rounded half up (away from zero), as on Spark:
# XPath F&O 3.1 §4.2 leaves the digits of decimal division implementation-defined. It is rounded
# from the quotient truncated one digit further, which decides half up alike (that digit is 5 or
# more exactly when the rest is half a unit or more). A value past what PostgreSQL's NUMERIC
# holds (131072 digits before the point) fails the query there, as FOAR0002 would, rather than
# round; SQLite's Decimal context keeps every digit.

DECIMAL_DIGITS = 18
# every digit kept: no operation but a quotient's rounding to DECIMAL_DIGITS rounds
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN,
                         traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow])

# a valid xsd:integer (or derived type) and xsd:decimal literal (XSD §3.3.13.1, §3.2.3.1): its
# N-Triples text split at the first _XSD_TYPED is the quote and the lexical form, then the local
# name of the datatype and '>'. Read alike in Python and in PostgreSQL, by string functions and a
# pattern of the lexical form alone: PostgreSQL's regex engine is many times slower on one
# pattern of the whole term, with its alternative datatypes, and that is paid at every row read.
_XSD_TYPED = f'"^^<{XSD}'
_INTEGER_LEXICAL = r"[+-]?[0-9]+"
_DECIMAL_LEXICAL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_INTEGER_DATATYPES = tuple(sorted(t[len(XSD):] + ">" for t in INTEGER_TYPES))
_INTEGER_RE, _DECIMAL_RE = re.compile(_INTEGER_LEXICAL), re.compile(_DECIMAL_LEXICAL)


def _exact_term_text(text: Optional[str]) -> Optional[str]:
    """The exact value of an integer or decimal term's N-Triples text, canonical; else None."""
    if text is None:
        return None
    parts = text.split(_XSD_TYPED, 2)  # as PostgreSQL's split_part
    lexical, datatype = parts[0][1:], parts[1] if len(parts) > 1 else ""
    if datatype in _INTEGER_DATATYPES and _INTEGER_RE.fullmatch(lexical):
        return _exact_text(Decimal(lexical))
    if datatype == "decimal>" and _DECIMAL_RE.fullmatch(lexical):
        return _exact_text(_EXACT.add(Decimal(lexical), Decimal("0.0")))
    return None


def _postgresql_exact_term(text: str) -> str:
    """``_exact_term_text`` in PostgreSQL, as NUMERIC."""
    lexical, datatype = (f"substr(split_part({text}, '{_XSD_TYPED}', 1), 2)",
                         f"split_part({text}, '{_XSD_TYPED}', 2)")
    integers = ", ".join(f"'{t}'" for t in _INTEGER_DATATYPES)
    return (f"CASE WHEN {datatype} IN ({integers}) AND {lexical} ~ '^{_INTEGER_LEXICAL}$' "
            f"THEN CAST({lexical} AS NUMERIC) "
            f"WHEN {datatype} = 'decimal>' AND {lexical} ~ '^{_DECIMAL_LEXICAL}$' "
            f"THEN CAST({lexical} AS NUMERIC) + 0.0 END")


def _numeral_exact(numeral) -> Optional[str]:
    """The exact value of a numeral of the query (a ``Num``): as written (``0.100000000000000001``,
    ``1000000000000000000000000000001``). One with an exponent is read from its double as the
    shortest decimal that reads back as it (``1e-1`` is 0.1, not 0.1000000000000000055...); an
    integral one is an integer."""
    value = numeral.value
    if not math.isfinite(value):
        return None
    if numeral.text and "e" not in numeral.text.lower():
        return _exact_text(Decimal(numeral.text))
    exact = Decimal(repr(value))
    return _exact_text(Decimal(int(exact)) if value.is_integer() else exact)


def _exact_text(number: Decimal) -> str:
    """The canonical lexical form (XSD §3.3.13.2, §3.2.3.2): no exponent, sign only when
    negative, no leading zeros; a decimal has no trailing zeros but one digit after the point."""
    if number.is_zero():
        number = number.copy_abs()
    text = format(number, "f")
    if number.as_tuple().exponent >= 0:
        return text
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


def _value_text(number: Decimal) -> str:
    """The canonical form of the value alone: 1 for 1.0 too."""
    text = _exact_text(number)
    return text[:-2] if text.endswith(".0") else text


def _exact_json(value) -> dict:
    """An exact result (PostgreSQL's Decimal, SQLite's text, an integer) as an xsd:integer when it
    has no digit after the point, else an xsd:decimal."""
    text = _exact_text(value if isinstance(value, Decimal) else Decimal(value))
    return {"type": "literal", "value": text, "datatype": XSD_DECIMAL if "." in text else XSD_INTEGER}


def _exact(value: _Value):
    """A numeric value's exact value (see ``_Value.exact``)."""
    if value.kind == "term":  # read only where the store holds a number: most rows of a scan hold none
        return None if value.num is None else case((value.num.isnot(None), _Exact("of", value.text)))
    if value.kind == "int":
        return _Exact("const", value.sql)
    return value.exact


def _rounded(value: _Value) -> bool:
    """Whether a number's double is its exact value rounded to the nearest double: a term's
    ``o_num``, a constant, a count; not a computed double, which rounds at each step."""
    return value.kind in ("term", "int") or value.rounded


def _numeric_comparison(op: str, a, b, exact_a, exact_b, rounded: bool = False):
    """``a op b`` on the exact values when both numbers have one (XPath op:numeric-equal and
    op:numeric-less-than on decimals), else on their doubles. Rounding to the nearest double
    keeps the order, so when both doubles are ``rounded`` and differ they decide, and the
    exact values are read only where they tie (most rows of a FILTER need no exact value)."""
    if exact_a is None or exact_b is None:
        return _apply(op, a, b)
    exact = func.coalesce(_ExactComparison(op, exact_a, exact_b), _apply(op, a, b))
    return case((a != b, _apply(op, a, b)), (a == b, exact)) if rounded else exact


def _exact_aggregate(agg: Aggregate, exact, number):
    """SUM, AVG, MIN or MAX on the exact values when every member has one (as many of them as
    numbers), else NULL: with a float or double member the double aggregate stands, and an
    integer or decimal that is ill-typed makes the aggregate unbound (``_to_json``)."""
    every = func.count(exact) == func.count(number)
    if agg.name in ("min", "max"):
        return case((every, _Exact(agg.name, exact)))
    if agg.distinct:  # duplicates by value, 1 and 1.0 alike (PostgreSQL's DISTINCT on NUMERIC)
        total, count = _Exact("sum distinct", _Exact("value", exact)), func.count(distinct(_Exact("value", exact)))
        # which of equal members is kept is arbitrary: the sum is a decimal when a member is (§17.3)
        total = case((_Exact("any decimal", exact), _Exact("+", total, _Exact("const", literal("0.0")))),
                     else_=total)
    else:
        total, count = _Exact("sum", exact), func.count(exact)
    if agg.name == "sum":
        return case((every, func.coalesce(total, 0)))
    # AVG; Avg({}) = 0, an integer (§18.5.1.4)
    return case((func.count(number) == 0, 0), (every, _Exact("/", total, _Exact("const", count))))


# on SQLite, doubles and floats (most numbers of a stream) skip the call into Python
_SQLITE_DOUBLE = f"{{0}} GLOB '*\"^^<{XSD}double>' OR {{0}} GLOB '*\"^^<{XSD}float>'"
# per operation: its SQL on PostgreSQL (NUMERIC) and on SQLite (``_SQLITE_FUNCTIONS``)
_EXACT_SQL = {
    "of": (_postgresql_exact_term("{0}"), f"CASE WHEN {_SQLITE_DOUBLE} THEN NULL ELSE rsp_decimal_of({{0}}) END"),
    "const": ("CAST({0} AS NUMERIC)", "{0}"),
    "neg": ("(- {0})", "rsp_decimal_sub(0, {0})"),
    "+": ("({0} + {1})", "rsp_decimal_add({0}, {1})"),
    "-": ("({0} - {1})", "rsp_decimal_sub({0}, {1})"),
    "*": ("({0} * {1})", "rsp_decimal_mul({0}, {1})"),
    "/": (f"round(div(CAST({{0}} AS NUMERIC) * 1{'0' * (DECIMAL_DIGITS + 1)}, NULLIF({{1}}, 0))"
          f" * 0.{'0' * DECIMAL_DIGITS}1, {DECIMAL_DIGITS})", "rsp_decimal_div({0}, {1})"),
    "sum": ("sum({0})", "rsp_decimal_sum({0})"),
    "sum distinct": ("sum(DISTINCT {0})", "rsp_decimal_sum(DISTINCT {0})"),
    "value": ("{0}", "rsp_decimal_value({0})"),  # a key equal for equal values
    "any decimal": ("bool_or(scale({0}) > 0)", "(max(instr({0}, '.')) > 0)"),
    "min": ("min({0})", "rsp_decimal_min({0})"),
    "max": ("max({0})", "rsp_decimal_max({0})"),
}


class _Exact(FunctionElement):
    """An exact operation on xsd:integer and xsd:decimal values (``_EXACT_SQL``)."""

    name = "exact"
    inherit_cache = True
    _traverse_internals = FunctionElement._traverse_internals + [("op", InternalTraversal.dp_string)]

    def __init__(self, op: str, *args):
        self.op = op
        super().__init__(*args)


@compiles(_Exact)
def _exact_sql(element, compiler, **kw):
    postgresql, sqlite = _EXACT_SQL[element.op]
    template = postgresql if compiler.dialect.name == "postgresql" else sqlite
    return template.format(*(compiler.process(c, **kw) for c in element.clauses))


class _ExactComparison(FunctionElement):
    """``=``, ``!=``, ``<`` ... of two exact values."""

    type = Boolean()
    name = "exact_comparison"
    inherit_cache = True
    _traverse_internals = FunctionElement._traverse_internals + [("op", InternalTraversal.dp_string)]

    def __init__(self, op: str, a, b):
        self.op = op
        super().__init__(a, b)


@compiles(_ExactComparison)
def _exact_comparison_sql(element, compiler, **kw):
    a, b = (compiler.process(c, **kw) for c in element.clauses)
    if compiler.dialect.name == "postgresql":
        return f"({a} {element.op} {b})"
    return f"(rsp_decimal_cmp({a}, {b}) {element.op} 0)"


def _with_exact_functions(conn) -> None:
    """SQLite has no exact decimal type: register the Decimal functions of ``_EXACT_SQL`` on the
    connection, once (the pool keeps them with it)."""
    if conn.dialect.name != "sqlite" or conn.connection.info.get("rsp_decimal"):
        return
    sqlite = conn.connection.driver_connection
    for name, (arity, function) in _SQLITE_FUNCTIONS.items():
        sqlite.create_function(name, arity, function, deterministic=True)
    for name, aggregate in _SQLITE_AGGREGATES.items():
        sqlite.create_aggregate(name, 1, aggregate)
    conn.connection.info["rsp_decimal"] = True


def _divide(a: Decimal, b: Decimal) -> Optional[Decimal]:
    """a / b to DECIMAL_DIGITS after the point, rounded half up (as PostgreSQL's round); None (an
    error, FOAR0001) when b is 0."""
    if b.is_zero():
        return None
    truncated = _EXACT.scaleb(_EXACT.divide_int(_EXACT.scaleb(a, DECIMAL_DIGITS + 1), b), -DECIMAL_DIGITS - 1)
    return truncated.quantize(Decimal(1).scaleb(-DECIMAL_DIGITS), decimal.ROUND_HALF_UP, _EXACT)


def _on_text(operation, written=_exact_text):
    """A SQLite function of exact values (text or integers), NULL when one is."""
    def apply(*values):
        if any(v is None for v in values):
            return None
        result = operation(*(Decimal(v) for v in values))
        return None if result is None else written(result)
    return apply


_SQLITE_FUNCTIONS = {
    "rsp_decimal_of": (1, _exact_term_text),
    "rsp_decimal_add": (2, _on_text(_EXACT.add)),
    "rsp_decimal_sub": (2, _on_text(_EXACT.subtract)),
    "rsp_decimal_mul": (2, _on_text(_EXACT.multiply)),
    "rsp_decimal_div": (2, _on_text(_divide)),
    "rsp_decimal_cmp": (2, _on_text(_EXACT.compare, int)),
    "rsp_decimal_value": (1, _on_text(lambda number: number, _value_text)),
}


class _ExactFold:
    """A SQLite aggregate of exact values: ``combine`` folds them; NULL over none, as SQL's."""

    combine = None

    def __init__(self):
        self.value = None

    def step(self, value):
        if value is not None:
            number = Decimal(value)
            self.value = number if self.value is None else self.combine(self.value, number)

    def finalize(self):
        return None if self.value is None else _exact_text(self.value)


class _ExactSum(_ExactFold):
    combine = staticmethod(_EXACT.add)


class _ExactMin(_ExactFold):
    combine = staticmethod(lambda a, b: b if b < a else a)


class _ExactMax(_ExactFold):
    combine = staticmethod(lambda a, b: b if b > a else a)


_SQLITE_AGGREGATES = {"rsp_decimal_sum": _ExactSum, "rsp_decimal_min": _ExactMin, "rsp_decimal_max": _ExactMax}


def _numeric_rank(text):
    """SPARQL's numeric type rank (0 integer, 1 decimal, 2 float, 3 double) of a term's
    N-Triples text, from its datatype."""
    def typed(datatype: str):
        return text.like(f"%^^<{datatype}>")
    integer = or_(*(typed(t) for t in sorted(INTEGER_TYPES)))
    return case((integer, 0), (typed(XSD_DECIMAL), 1), (typed(XSD + "float"), 2), else_=3)


_NAN_TERMS = tuple(f'"NaN"^^<{XSD}{kind}>' for kind in ("double", "float"))


def _is_nan(text):
    return text.in_(_NAN_TERMS)


def _apply(op: str, a, b):
    return {"=": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]


def _stream_id(iri: str):
    return select(_STREAMS.c.id).where(_STREAMS.c.iri == iri).scalar_subquery()


def _expression_constant(literal_term: LiteralTerm, translator: _Translator):
    """A literal in an expression: numbers and date-times by value, other terms by text."""
    term = literal_term.term
    datatype = str(term.datatype) if term.datatype is not None else None
    if datatype in NUMERIC_RANK:
        try:
            return _Number(float(term.toPython()), _exact_term_text(literal_term.const.nt))
        except (TypeError, ValueError):
            raise translator.error(literal_term.pos, f"not a number: {literal_term.const.nt}") from None
    if datatype == XSD_DATETIME:
        value = iso_time(str(term))
        if value is None:
            raise translator.error(literal_term.pos, f"not an xsd:dateTime: {literal_term.const.nt}")
        return Time(value)
    if datatype == XSD_BOOLEAN and str(term) in ("true", "false"):
        return Bool(str(term) == "true")
    plain = datatype is None and term.language is None
    return TermConst(literal_term.const.nt, iso_time(str(term)) if plain else None)


def _output_column(value: _Value) -> tuple[str, Any]:
    if value.kind == "term":
        return "term", value.text
    if value.kind == "frame":
        return "frame", value.sql.c.frame_iri
    return value.kind, value.sql


def _walk(expr):
    """The nodes of an expression outside aggregates (an aggregate itself included)."""
    return walk(expr, prune=lambda node: isinstance(node, Aggregate))


def _has_aggregate(expr) -> bool:
    return any(isinstance(node, Aggregate) for node in walk(expr))


def _projected(expr, items: list[Item]) -> bool:
    """Whether an ORDER BY expression depends on projected items only."""
    names = {item.name for item in items if isinstance(item.expr, VarRef)}
    times = {item.expr.name for item in items if isinstance(item.expr, FrameTime)}
    return all(not isinstance(node, (VarRef, FrameTime, Aggregate))
               or (isinstance(node, VarRef) and node.name in names)
               or (isinstance(node, FrameTime) and (node.name in times or node.name in names))
               for node in _walk(expr)) and not _has_aggregate(expr)


def _position(expr) -> Pos:
    return getattr(expr, "pos", None) or Pos(1, 1)


# ------------------------------------------------------------------------------------ results


def _to_json(kind: str, value, rank=None, exact=None, exact_kept: bool = False) -> Optional[dict]:
    """A result column as a SPARQL JSON term. A number with an exact value is written from it;
    an xsd:integer or xsd:decimal aggregate without one (over an ill-typed member) is unbound,
    never its double."""
    if kind == "num" and exact_kept:
        if exact is not None:
            return _exact_json(exact)
        if rank is not None and int(rank) <= 1:
            return None
    if value is None:
        return None
    if kind == "num" and rank is not None and math.isfinite(float(value)):
        if int(rank) == 0:
            return {"type": "literal", "value": str(int(round(float(value)))), "datatype": XSD_INTEGER}
        if int(rank) == 1:
            lexical = format(Decimal(repr(float(value))), "f")
            return {"type": "literal", "value": lexical if "." in lexical else lexical + ".0",
                    "datatype": XSD_DECIMAL}
        if int(rank) == 2:
            return {"type": "literal", "value": _double_lexical(float(value)), "datatype": XSD + "float"}
    if kind == "term":
        return nt_to_json(value)
    if kind == "frame":
        return {"type": "uri", "value": value}
    if kind == "time":
        return {"type": "literal", "value": datetime_lexical(_as_datetime(value)), "datatype": XSD_DATETIME}
    if kind == "int":
        return {"type": "literal", "value": str(int(value)), "datatype": XSD_INTEGER}
    if kind == "bool":
        return {"type": "literal", "value": "true" if value else "false", "datatype": XSD_BOOLEAN}
    return {"type": "literal", "value": _double_lexical(float(value)), "datatype": XSD_DOUBLE}


def _as_datetime(value) -> datetime:
    if isinstance(value, str):  # SQLite's text form, when a result column carries no type
        return parse_datetime(value)
    return as_utc(value)


def _double_lexical(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "INF" if value > 0 else "-INF"
    return repr(value)
