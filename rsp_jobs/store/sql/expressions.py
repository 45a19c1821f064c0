"""Typed TA-SPARQL expressions (``rsp_jobs.algebra.tasparql.expressions``) → SQL over the
columns of one scope.

Values compare as SPARQL does, through the store's typed columns: numbers by ``o_num``, times by
``o_time`` and ``ts``, other terms by their N-Triples text; a comparison that is a type error is
NULL, which FILTER drops and ``||`` / ``&&`` combine as SPARQL's error does (§17.2).

xsd:integer and xsd:decimal values are exact (``Value.exact``): a term of those types, a numeric
constant, a COUNT, and what + - * /, SUM, AVG, MIN and MAX make of those alone. A float or a
double operand makes the value a double, computed on ``o_num`` (SPARQL 1.1 §17.3): its exact
value is NULL. Where both are known, comparisons use the exact values, and results are written
from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Double,
    String,
    and_,
    case,
    cast,
    distinct,
    func,
    literal,
    not_,
    null,
    or_,
)

from rsp_jobs.algebra.tasparql import expressions as E
from rsp_jobs.store.models import UTCDateTime
from rsp_jobs.store.sql.elements import EpochMs, Exact, ExactComparison, Lexical, Position, TimePart
from rsp_jobs.terms import INTEGER_TYPES, XSD, XSD_DECIMAL


@dataclass
class Binding:
    """A term variable's columns: its N-Triples text and, from an object position, its values."""

    text: Any
    num: Any = None
    time: Any = None
    key: Any = None  # what GROUP BY uses, when not the text (the stream IRI column)


@dataclass(frozen=True)
class Value:
    """An expression in SQL. ``kind`` as the plan's; a term has text/num/time columns (num and
    time None when it cannot hold a value), a frame its frames alias as ``sql``."""

    kind: str
    sql: Any = None
    text: Any = None
    num: Any = None
    time: Any = None
    plain_time: bool = False  # a string constant that is a date-time: it orders as a time
    rank: Any = (
        None  # num: the SPARQL numeric type rank of the value (0 integer .. 3 double), when known
    )
    # num: the value exactly (``Exact``) when it is an xsd:integer or xsd:decimal, NULL when not;
    # None when it never is one
    exact: Any = None
    rounded: bool = (
        False  # num: ``sql`` is the exact value rounded to the nearest double (a constant)
    )


class FrameColumns:
    """A frame variable read from a solution table: the columns a ``frames`` alias would give."""

    def __init__(self, id, frame_iri, ts, stream_id):
        self.c = SimpleNamespace(id=id, frame_iri=frame_iri, ts=ts, stream_id=stream_id)


class Columns:
    """What each variable of one scope is in SQL, and the SQL of expressions over them."""

    def __init__(self) -> None:
        self.frames: dict[str, Any] = {}  # frame variable -> a frames alias or FrameColumns
        self.times: dict[
            str, Any
        ] = {}  # a variable bound to a frame's time (dsv:hasTimestamp) -> the time
        self.bindings: dict[str, Binding] = {}

    def read(self, columns: dict[str, tuple[str, dict]]) -> Columns:
        """The variables of solution columns ({var: (kind, {part: column})})."""
        for name, (kind, parts) in columns.items():
            if kind == "frame":
                self.frames[name] = FrameColumns(
                    parts["id"], parts["iri"], parts["ts"], parts["stream"]
                )
            elif kind == "time":
                self.times[name] = parts["ts"]
            else:
                self.bindings[name] = Binding(parts["text"], parts["num"], parts["time"])
        return self

    def condition(self, expr: E.Typed):
        return self.value(expr).sql

    def value(self, expr: E.Typed) -> Value:
        return _VALUES[type(expr)](self, expr)

    # ------------------------------------------------------------------------- leaves

    def _number_constant(self, e: E.Number) -> Value:
        exact = None if e.exact is None else Exact("const", literal(e.exact, String))
        return Value("num", literal(e.value, Double), exact=exact, rounded=True)

    def _time(self, e: E.Time) -> Value:
        return Value("time", literal(e.value, UTCDateTime))

    def _boolean(self, e: E.Boolean) -> Value:
        return Value("bool", literal(e.value))

    def _term(self, e: E.Term) -> Value:
        time = literal(e.time, UTCDateTime) if e.time is not None else None
        return Value("term", text=literal(e.nt, String), time=time, plain_time=time is not None)

    def _term_of(self, e: E.TermOf) -> Value:
        binding = self.bindings[e.var]
        return Value("term", text=binding.text, num=binding.num, time=binding.time)

    def _frame_of(self, e: E.FrameOf) -> Value:
        return Value("frame", self.frames[e.var])

    def _time_of(self, e: E.TimeOf) -> Value:
        return Value("time", self.times[e.var])

    def _frame_time(self, e: E.FrameTime) -> Value:
        return Value("time", self.frames[e.var].c.ts)

    # ---------------------------------------------------------------------- operators

    def _logical(self, e: E.Logical) -> Value:
        left = self.value(e.left)
        if e.op == "!":
            return Value("bool", not_(left.sql))
        if e.right is None:
            raise ValueError(f"{e.op} has one operand")
        return Value("bool", (and_ if e.op == "&&" else or_)(left.sql, self.value(e.right).sql))

    def _negate(self, e: E.Negate) -> Value:
        operand = self.value(e.operand)
        exact = exact_of(operand)
        return Value("num", -number(operand), exact=None if exact is None else Exact("neg", exact))

    def _arithmetic(self, e: E.Arithmetic) -> Value:
        left, right = self.value(e.left), self.value(e.right)
        a, b = number(left), number(right)
        result = {"+": a + b, "-": a - b, "*": a * b}.get(e.op)
        rank = None
        if left.rank is not None and right.rank is not None:  # SPARQL's numeric type promotion
            rank = case((left.rank > right.rank, left.rank), else_=right.rank)
            if e.op == "/":
                rank = case((rank < 1, 1), else_=rank)
        exact_a, exact_b = exact_of(left), exact_of(right)
        exact = None if exact_a is None or exact_b is None else Exact(e.op, exact_a, exact_b)
        return Value(
            "num", result if result is not None else a / func.nullif(b, 0), rank=rank, exact=exact
        )

    def _compare(self, e: E.Compare) -> Value:
        a, b = self.value(e.left), self.value(e.right)
        return Value("bool", _COMPARISONS[e.by](e.op, a, b))

    def _function(self, e: E.Function) -> Value:
        """SPARQL 1.1 §17.4's built-ins: numeric, BOUND, string functions over a term's lexical
        form, the parts of a time in UTC."""
        values = [self.value(arg) for arg in e.args]
        if e.name == "bound":
            (value,) = values
            column = {
                "term": value.text,
                "frame": value.sql.c.id if value.kind == "frame" else None,
            }.get(value.kind, value.sql)
            return Value("bool", column.isnot(None))
        if e.name in E.NUMERIC_FUNCTIONS:
            return Value("num", getattr(func, e.name)(number(values[0])), rank=values[0].rank)
        if e.name in E.TIME_PARTS:
            time = values[0].sql if values[0].kind == "time" else values[0].time
            return Value("num", TimePart(E.TIME_PARTS[e.name], time), rank=literal(0))
        texts = [Lexical(value.text) for value in values]
        if e.name == "str":
            return Value("term", text=_quoted(texts[0]))
        if e.name == "strlen":
            return Value("num", func.length(texts[0]), rank=literal(0))
        if e.name in ("ucase", "lcase"):
            return Value(
                "term", text=_quoted((func.upper if e.name == "ucase" else func.lower)(texts[0]))
            )
        a, b = texts
        # by position, not LIKE: the data's % and _ are characters, not wildcards
        test = {
            "contains": Position(a, b) > 0,
            "strstarts": func.substr(a, 1, func.length(b)) == b,
            "strends": func.substr(a, func.length(a) - func.length(b) + 1) == b,
        }[e.name]
        return Value("bool", test)

    def _aggregate(self, agg: E.Aggregate) -> Value:
        """SPARQL 1.1 §18.5.1: the type of SUM and MIN/MAX is the promoted type of the values (a
        sum of integers is an integer), AVG divides, so is at least a decimal; of no values, 0."""
        if agg.arg is None:
            return Value("int", func.count())
        value = self.value(agg.arg)
        if agg.name == "count":
            column = (
                value.text
                if value.kind == "term"
                else value.sql.c.id
                if value.kind == "frame"
                else value.sql
            )
            return Value("int", func.count(distinct(column) if agg.distinct else column))
        if agg.kind == "time":
            column = distinct(value.sql) if agg.distinct else value.sql
            return Value("time", getattr(func, agg.name)(column))
        operand = number(value)
        column = distinct(operand) if agg.distinct else operand
        result = getattr(func, agg.name)(column)
        rank = value.rank if value.kind != "term" else numeric_rank(value.text)
        if rank is not None:
            rank = func.coalesce(func.max(rank), 0)
            if agg.name == "avg":  # the average of nothing is the integer 0 (§18.5.1.4)
                rank = case((func.count(column) == 0, 0), (rank < 1, 1), else_=rank)
        bad = _erring_member(agg, value, operand)
        if agg.name in ("sum", "avg"):
            result = func.coalesce(result, 0.0)
        exact = exact_of(value)
        if exact is not None:
            exact = exact_aggregate(agg, exact, operand)
        if bad is not None:
            result = case((bad == 1, null()), else_=result)
            exact = None if exact is None else case((bad == 1, null()), else_=exact)
        return Value("num", result, rank=rank, exact=exact)


# each typed expression's class -> the method that writes its SQL (given an instance of it)
_VALUES: dict[type, Callable[[Columns, Any], Value]] = {
    E.Number: Columns._number_constant,
    E.Time: Columns._time,
    E.Boolean: Columns._boolean,
    E.Term: Columns._term,
    E.TermOf: Columns._term_of,
    E.FrameOf: Columns._frame_of,
    E.TimeOf: Columns._time_of,
    E.FrameTime: Columns._frame_time,
    E.Logical: Columns._logical,
    E.Negate: Columns._negate,
    E.Arithmetic: Columns._arithmetic,
    E.Compare: Columns._compare,
    E.Function: Columns._function,
    E.Aggregate: Columns._aggregate,
}


def _erring_member(agg: E.Aggregate, value: Value, operand):
    """1 in a group where a member makes SUM, AVG, MIN or MAX an error (docs/semantics/numbers.md),
    else 0; None when none can. An argument expression that errs for one solution (``?v + 0``
    over "abc"^^xsd:integer) is an error in the list the set function gets (SPARQL 1.1 §18.5.1,
    ListEval); a term that is no number makes a sum a type error (§18.5.1.3), never a silent 0."""
    if not agg.of_variable:
        return func.max(case((operand.is_(None), 1), else_=0))
    if agg.name in ("sum", "avg") and value.kind == "term" and value.num is not None:
        return func.max(case((and_(value.text.isnot(None), value.num.is_(None)), 1), else_=0))
    return None


def number(value: Value):
    """An operand of arithmetic as a double: a time is its UTC milliseconds."""
    if value.kind == "num":
        return value.sql
    if value.kind == "int":
        return cast(value.sql, Double)
    if value.kind == "time":
        return EpochMs(value.sql)
    return value.num


def _quoted(lexical):
    """A simple literal of a lexical form, as N-Triples text."""
    escaped = func.replace(lexical, literal('"', String), literal('\\"', String))
    return literal('"', String) + escaped + literal('"', String)


# ------------------------------------------------------------------------------ comparisons


def apply(op: str, a, b):
    return {"=": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op]


_NAN_TERMS = tuple(f'"NaN"^^<{XSD}{kind}>' for kind in ("double", "float"))


def is_nan(text):
    return text.in_(_NAN_TERMS)


def _by_terms(op: str, a: Value, b: Value):
    """Both sides numbers: by number; both times: by time; else = and != by term."""
    branches = []
    if a.num is not None and b.num is not None:
        branches.append(
            (
                and_(a.num.isnot(None), b.num.isnot(None)),
                numeric_comparison(op, a.num, b.num, exact_of(a), exact_of(b), True),
            )
        )
    ordering_by_time = op in E.ORDERING or not (a.plain_time or b.plain_time)
    if a.time is not None and b.time is not None and ordering_by_time:
        branches.append((and_(a.time.isnot(None), b.time.isnot(None)), apply(op, a.time, b.time)))
    # XPath's numeric comparisons: NaN is neither equal to, less nor greater than anything
    # (so != holds); the store keeps no number for NaN (``frames.stored_number``)
    branches.insert(0, (or_(is_nan(a.text), is_nan(b.text)), literal(op == "!=")))
    return case(*branches, else_=null() if op in E.ORDERING else apply(op, a.text, b.text))


def _term_and_other(a: Value, b: Value):
    """The term side, the other side, and whether the term was written second (``5 < ?v``)."""
    return (a, b, False) if a.kind == "term" else (b, a, True)


def _by_term_time(op: str, a: Value, b: Value):
    term, other, flip = _term_and_other(a, b)
    return apply(op, other.sql, term.time) if flip else apply(op, term.time, other.sql)


def _by_term_number(op: str, a: Value, b: Value):
    term, other, flip = _term_and_other(a, b)
    pairs = ((other.sql, exact_of(other)), (term.num, exact_of(term)))
    (a_num, a_exact), (b_num, b_exact) = pairs if flip else pairs[::-1]
    return case(
        (is_nan(term.text), literal(op == "!=")),
        else_=numeric_comparison(op, a_num, b_num, a_exact, b_exact, rounded(other)),
    )


_COMPARISONS = {
    "boolean": lambda op, a, b: apply(op, a.sql, b.sql),
    "time": lambda op, a, b: apply(op, a.sql, b.sql),
    "numeric": lambda op, a, b: numeric_comparison(
        op, a.sql, b.sql, exact_of(a), exact_of(b), rounded(a) and rounded(b)
    ),
    "epoch": lambda op, a, b: apply(op, number(a), number(b)),
    "terms": _by_terms,
    "term-time": _by_term_time,
    "term-number": _by_term_number,
    "never": lambda op, a, b: apply(op, literal(1), literal(0)),  # SPARQL's = is false here
}

# -------------------------------------------------------------------------- exact numbers


def exact_of(value: Value):
    """A numeric value's exact value (see ``Value.exact``)."""
    # read only where the store holds a number: most rows of a scan hold none
    if value.kind == "term":
        return None if value.num is None else case((value.num.isnot(None), Exact("of", value.text)))
    if value.kind == "int":
        return Exact("const", value.sql)
    return value.exact


def rounded(value: Value) -> bool:
    """Whether a number's double is its exact value rounded to the nearest double: a term's
    ``o_num``, a constant, a count; not a computed double, which rounds at each step."""
    return value.kind in ("term", "int") or value.rounded


def numeric_comparison(op: str, a, b, exact_a, exact_b, both_rounded: bool = False):
    """``a op b`` on the exact values when both numbers have one (XPath op:numeric-equal and
    op:numeric-less-than on decimals), else on their doubles. Rounding to the nearest double
    keeps the order, so when both doubles are rounded and differ they decide, and the exact
    values are read only where they tie (most rows of a FILTER need no exact value)."""
    if exact_a is None or exact_b is None:
        return apply(op, a, b)
    exact = func.coalesce(ExactComparison(op, exact_a, exact_b), apply(op, a, b))
    return case((a != b, apply(op, a, b)), (a == b, exact)) if both_rounded else exact


def exact_aggregate(agg: E.Aggregate, exact, number_column):
    """SUM, AVG, MIN or MAX on the exact values when every member has one (as many of them as
    numbers), else NULL: with a float or double member the double aggregate stands, and an
    integer or decimal that is ill-typed makes the aggregate unbound."""
    every = func.count(exact) == func.count(number_column)
    if agg.name in ("min", "max"):
        return case((every, Exact(agg.name, exact)))
    total: ColumnElement[Any]
    if agg.distinct:  # duplicates by value, 1 and 1.0 alike (PostgreSQL's DISTINCT on NUMERIC)
        total, count = (
            Exact("sum distinct", Exact("value", exact)),
            func.count(distinct(Exact("value", exact))),
        )
        # which of equal members is kept is arbitrary: the sum is a decimal when a member is (§17.3)
        total = case(
            (Exact("any decimal", exact), Exact("+", total, Exact("const", literal("0.0")))),
            else_=total,
        )
    else:
        total, count = Exact("sum", exact), func.count(exact)
    if agg.name == "sum":
        return case((every, func.coalesce(total, 0)))
    # AVG; Avg({}) = 0, an integer (§18.5.1.4)
    return case(
        (func.count(number_column) == 0, 0), (every, Exact("/", total, Exact("const", count)))
    )


def numeric_rank(text):
    """SPARQL's numeric type rank (0 integer, 1 decimal, 2 float, 3 double) of a term's
    N-Triples text, from its datatype."""

    def typed(datatype: str):
        return text.like(f"%^^<{datatype}>")

    integer = or_(*(typed(t) for t in sorted(INTEGER_TYPES)))
    return case((integer, 0), (typed(XSD_DECIMAL), 1), (typed(XSD + "float"), 2), else_=3)
