"""Typed TA-SPARQL expressions, and the type checks that make them from the syntax tree.

Each typed node has a ``kind``: ``num`` (a number), ``int`` (a count), ``time``, ``bool``,
``term`` (an RDF term, compared by value where it has one) or ``frame``. A term may carry a
number and a time beside its text (``has_number``, ``has_time``): a variable bound at an object
position does, one bound only as a subject or predicate does not. Which SPARQL 1.1 operator a
comparison is (§17.3's operator mapping: numeric, dateTime, RDF term, boolean) is decided
here, once (``Compare.by``), and so is every error, with its line and column.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rsp_jobs.algebra.tasparql.exact import numeral_exact, term_exact
from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language import tasparql as ast
from rsp_jobs.terms import NUMERIC_RANK, XSD_BOOLEAN, XSD_DATETIME
from rsp_jobs.tree import walk

# ----------------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Number:
    """A numeric constant: its double and, for an integer or a decimal, its exact value."""

    value: float
    exact: str | None
    kind = "num"


@dataclass(frozen=True)
class Time:
    value: datetime
    kind = "time"


@dataclass(frozen=True)
class Boolean:
    value: bool
    kind = "bool"


@dataclass(frozen=True)
class Term:
    """An IRI or a non-numeric literal; ``time`` when it is a plain string holding a date-time,
    which compares as a time (``?x.t > "2011-03-11T05:46:24Z"``)."""

    nt: str
    time: datetime | None = None
    kind = "term"


@dataclass(frozen=True)
class TermOf:
    """A variable bound to RDF terms; ``valued``: it has a number and a time beside its text."""

    var: str
    valued: bool
    kind = "term"


@dataclass(frozen=True)
class FrameOf:
    """A frame variable: compared only by its time, ``?x.t``."""

    var: str
    kind = "frame"


@dataclass(frozen=True)
class TimeOf:
    """A variable bound by ``?x dsv:hasTimestamp ?t`` (Table 2): the frame's time."""

    var: str
    kind = "time"


@dataclass(frozen=True)
class FrameTime:
    """``?x.t`` (§6): the time of the frame ?x."""

    var: str
    kind = "time"


# -------------------------------------------------------------------------------- operators


@dataclass(frozen=True)
class Logical:
    """``&&``, ``||`` or ``!`` (``right`` None): SPARQL 1.1 §17.2's logical-and, -or, -not."""

    op: str
    left: Typed
    right: Typed | None = None
    kind = "bool"


@dataclass(frozen=True)
class Negate:
    operand: Typed
    kind = "num"


@dataclass(frozen=True)
class Arithmetic:
    """``+ - * /`` on numbers and times (a time is its UTC milliseconds)."""

    op: str
    left: Typed
    right: Typed
    kind = "num"


@dataclass(frozen=True)
class Compare:
    """``= != < > <= >=``. ``by`` names the operator SPARQL 1.1 §17.3 maps it to:

    * ``numeric``, ``time``, ``boolean``: both sides of that type;
    * ``epoch``: a time and a number, the time as UTC milliseconds;
    * ``terms``: two terms, by number where both are numbers, by time where both are times,
      else (``=``, ``!=``) by RDF term equality;
    * ``term-number``, ``term-time``: a term and a number or a time, by the term's value;
    * ``never``: ``=`` or ``!=`` of a term that cannot hold the other side's value (false, true).
    """

    op: str
    left: Typed
    right: Typed
    by: str
    kind = "bool"


NUMERIC_FUNCTIONS = frozenset({"abs", "ceil", "floor", "round"})
STRING_TESTS = frozenset({"contains", "strstarts", "strends"})
TIME_PARTS = {
    "year": "year",
    "month": "month",
    "day": "day",
    "hours": "hour",
    "minutes": "minute",
    "seconds": "second",
}
_KIND_OF_FUNCTION = {
    **dict.fromkeys(NUMERIC_FUNCTIONS, "num"),
    **dict.fromkeys(TIME_PARTS, "num"),
    **dict.fromkeys(STRING_TESTS, "bool"),
    "bound": "bool",
    "strlen": "num",
    "str": "term",
    "ucase": "term",
    "lcase": "term",
}


@dataclass(frozen=True)
class Function:
    """A SPARQL 1.1 built-in (§17.4): numeric, BOUND, string functions over a term's lexical
    form, and the parts of a time in UTC."""

    name: str
    args: tuple[Typed, ...]

    @property
    def kind(self) -> str:
        return _KIND_OF_FUNCTION[self.name]


@dataclass(frozen=True)
class Aggregate:
    """SUM, AVG, MIN, MAX or COUNT (SPARQL 1.1 §18.5.1); ``arg`` None is COUNT(*)."""

    name: str
    arg: Typed | None
    distinct: bool

    @property
    def kind(self) -> str:
        if self.name == "count":
            return "int"
        if self.name in ("min", "max") and self.arg is not None and self.arg.kind == "time":
            return "time"
        return "num"

    @property
    def of_variable(self) -> bool:
        """Whether the argument is a variable (or ``?x.t``), not an expression that can err."""
        return isinstance(self.arg, (TermOf, FrameOf, TimeOf, FrameTime))


Typed = (
    Number
    | Time
    | Boolean
    | Term
    | TermOf
    | FrameOf
    | TimeOf
    | FrameTime
    | Logical
    | Negate
    | Arithmetic
    | Compare
    | Function
    | Aggregate
)


def has_number(value: Typed) -> bool:
    """Whether a term-valued expression carries a number beside its text."""
    return isinstance(value, TermOf) and value.valued


def has_time(value: Typed) -> bool:
    """Whether a term-valued expression carries a time beside its text."""
    return (isinstance(value, TermOf) and value.valued) or (
        isinstance(value, Term) and value.time is not None
    )


def plain_time(value: Typed) -> bool:
    """A plain string that holds a date-time: it orders as a time, but ``=`` is term equality."""
    return isinstance(value, Term) and value.time is not None


# ------------------------------------------------------------------------------------ scope


@dataclass(frozen=True)
class Scope:
    """What each variable is where an expression is read: a frame, a time (dsv:hasTimestamp),
    or a term, with (``terms``' flag) or without a number and a time beside it."""

    frames: tuple[str, ...] = ()
    times: tuple[str, ...] = ()
    terms: tuple[tuple[str, bool], ...] = ()

    def lookup(self, name: str) -> Typed | None:
        if name in self.frames:
            return FrameOf(name)
        if name in self.times:
            return TimeOf(name)
        valued = dict(self.terms).get(name)
        return None if valued is None else TermOf(name, valued)

    def schema(self) -> tuple[tuple[str, str], ...]:
        """The columns of this scope as a solution table: a variable both a time and a term is
        a term there, in the time's place."""
        kinds = {name: "frame" for name in self.frames}
        kinds.update((name, "time") for name in self.times)
        kinds.update((name, "term") for name, _ in self.terms)
        return tuple(kinds.items())

    @classmethod
    def of_solutions(cls, schema) -> Scope:
        """A solution table's variables: its term columns always include number and time."""
        return cls(
            tuple(n for n, k in schema if k == "frame"),
            tuple(n for n, k in schema if k == "time"),
            tuple((n, True) for n, k in schema if k == "term"),
        )


# ------------------------------------------------------------------------------ type checks

ORDERING = frozenset({"<", ">", "<=", ">="})
_NUMERIC = frozenset({"num", "int"})


def position(expr) -> ast.Pos:
    return getattr(expr, "pos", None) or ast.Pos(1, 1)


def constant(literal: ast.LiteralTerm, source: str) -> Typed:
    """A literal in an expression: numbers and date-times by value, other terms by text."""
    term = literal.term
    datatype = str(term.datatype) if term.datatype is not None else None
    if datatype in NUMERIC_RANK:
        try:
            return Number(float(term.toPython()), term_exact(literal.const.nt))
        except (TypeError, ValueError):
            raise _error(source, literal.pos, f"not a number: {literal.const.nt}") from None
    if datatype == XSD_DATETIME:
        value = ast.iso_time(str(term))
        if value is None:
            raise _error(source, literal.pos, f"not an xsd:dateTime: {literal.const.nt}")
        return Time(value)
    if datatype == XSD_BOOLEAN and str(term) in ("true", "false"):
        return Boolean(str(term) == "true")
    plain = datatype is None and term.language is None
    return Term(literal.const.nt, ast.iso_time(str(term)) if plain else None)


def has_aggregate(expr) -> bool:
    return any(isinstance(node, ast.Aggregate) for node in walk(expr))


def outside_aggregates(expr):
    """The nodes of an expression outside aggregates (an aggregate itself included)."""
    return walk(expr, prune=lambda node: isinstance(node, ast.Aggregate))


def _error(source: str, pos: ast.Pos, message: str) -> QuerySyntaxError:
    return QuerySyntaxError(source, pos.line, pos.column, message)


class Types:
    """Syntax-tree expressions → typed ones, in ``scope``; each error names where it is."""

    def __init__(self, scope: Scope, source: str):
        self.scope = scope
        self.source = source

    def error(self, pos: ast.Pos, message: str) -> QuerySyntaxError:
        return _error(self.source, pos, message)

    def condition(self, expr, where: str, aggregates: bool = False) -> Typed:
        """A FILTER's or HAVING's expression: a comparison or a boolean."""
        value = self.value(expr, aggregates=aggregates)
        if value.kind != "bool":
            raise self.error(position(expr), f"{where} needs a comparison or a boolean expression")
        return value

    def value(self, expr, aggregates: bool = False, in_aggregate: bool = False) -> Typed:
        """``aggregates``: whether aggregates may appear (a grouped query's projection, HAVING,
        ORDER BY); never inside another one."""
        if isinstance(expr, ast.Num):
            return Number(expr.value, numeral_exact(expr.value, expr.text))
        if isinstance(expr, ast.LiteralTerm):
            return constant(expr, self.source)
        if isinstance(expr, ast.Const):
            return Term(expr.nt)
        if isinstance(expr, ast.VarRef):
            found = self.scope.lookup(expr.name)
            if found is None:
                raise self.error(expr.pos, f"?{expr.name} is not bound by any pattern")
            return found
        if isinstance(expr, ast.FrameTime):
            if expr.name not in self.scope.frames:
                raise self.error(expr.pos, f"?{expr.name}.t: ?{expr.name} is not a frame variable")
            return FrameTime(expr.name)
        if isinstance(expr, ast.Aggregate):
            if not aggregates or in_aggregate:
                raise self.error(expr.pos, f"{expr.name.upper()} is not allowed here")
            return self._aggregate(expr)
        if isinstance(expr, ast.Op):
            return self._operator(expr, aggregates, in_aggregate)
        if isinstance(expr, ast.Call):
            return self._call(expr, aggregates, in_aggregate)
        raise AssertionError(f"unknown expression {expr!r}")

    def _call(self, call: ast.Call, aggregates: bool, in_aggregate: bool) -> Typed:
        arity = 2 if call.name in STRING_TESTS else 1
        if len(call.args) != arity:
            raise self.error(
                call.pos, f"{call.name.upper()} takes {arity} argument{'s' if arity > 1 else ''}"
            )
        if call.name == "bound" and not isinstance(call.args[0], ast.VarRef):
            raise self.error(call.pos, "BOUND takes a variable")
        values = tuple(self.value(arg, aggregates, in_aggregate) for arg in call.args)
        if call.name in NUMERIC_FUNCTIONS:
            self._number(values[0], call.name.upper(), call.pos)
        elif call.name in TIME_PARTS:
            if values[0].kind != "time" and not (values[0].kind == "term" and has_time(values[0])):
                raise self.error(call.pos, f"{call.name.upper()} takes a time")
        elif call.name != "bound":
            for value, arg in zip(values, call.args):
                if value.kind != "term":
                    raise self.error(position(arg), f"{call.name.upper()} takes RDF terms")
        return Function(call.name, values)

    def _operator(self, expr: ast.Op, aggregates: bool, in_aggregate: bool) -> Typed:
        left = self.value(expr.left, aggregates, in_aggregate)
        right = None if expr.right is None else self.value(expr.right, aggregates, in_aggregate)
        op = expr.op
        if op in ("&&", "||", "!"):
            for operand, side in ((left, expr.left), (right, expr.right)):
                if operand is not None and operand.kind != "bool":
                    raise self.error(position(side), f"{op} combines comparisons")
            return Logical(op, left, right)
        if op == "neg":
            self._number(left, "neg", expr.pos)
            return Negate(left)
        if right is None:
            raise ValueError(f"the parser wrote {op} with one operand")
        if op in ("+", "-", "*", "/"):
            self._number(left, op, expr.pos)
            self._number(right, op, expr.pos)
            return Arithmetic(op, left, right)
        return Compare(op, left, right, self._comparison(op, left, right, expr.pos))

    def _number(self, value: Typed, op: str, pos: ast.Pos) -> None:
        """An operand of arithmetic: a number, a time (its milliseconds), or a term with a number."""
        if value.kind in ("num", "int", "time") or (value.kind == "term" and has_number(value)):
            return
        raise self.error(
            pos, f"'{op}' needs numbers or times" if op != "neg" else "'-' needs a number or a time"
        )

    def _comparison(self, op: str, a: Typed, b: Typed, pos: ast.Pos) -> str:
        """Which comparison ``a op b`` is (``Compare.by``)."""
        kinds = {a.kind, b.kind}
        if "frame" in kinds:
            raise self.error(pos, "a frame variable is compared by its time: ?x.t")
        if "bool" in kinds:
            if a.kind != b.kind or op in ORDERING:
                raise self.error(pos, f"cannot compare a boolean with '{op}'")
            return "boolean"
        if kinds <= _NUMERIC:
            return "numeric"
        if kinds == {"time"}:
            return "time"
        if "term" not in kinds:
            return "epoch"
        if kinds == {"term"}:
            by_time = op in ORDERING or not (plain_time(a) or plain_time(b))
            if op in ORDERING and not (
                (has_number(a) and has_number(b)) or (has_time(a) and has_time(b) and by_time)
            ):
                raise self.error(pos, f"'{op}' compares numbers or times")
            return "terms"
        term, other = (a, b) if a.kind == "term" else (b, a)
        numeric = other.kind in _NUMERIC
        if not (has_number(term) if numeric else has_time(term)):
            if op in ORDERING:
                raise self.error(pos, f"'{op}' compares numbers or times")
            return "never"
        return "term-number" if numeric else "term-time"

    def _aggregate(self, agg: ast.Aggregate) -> Typed:
        if agg.arg is None:
            return Aggregate("count", None, agg.distinct)
        value = self.value(agg.arg, aggregates=True, in_aggregate=True)
        if agg.name != "count" and not (agg.name in ("min", "max") and value.kind == "time"):
            self._number(value, agg.name.upper(), agg.pos)
        return Aggregate(agg.name, value, agg.distinct)


def grouped_only(expr, keys, source: str) -> None:
    """A non-aggregate expression of a grouped query uses grouped variables only (SPARQL 1.1
    §11.4, aggregate projection restrictions)."""
    grouped_vars = {k.name for k in keys if isinstance(k, ast.VarRef)}
    grouped_times = {k.name for k in keys if isinstance(k, ast.FrameTime)}
    for node in outside_aggregates(expr):
        if isinstance(node, ast.VarRef) and node.name not in grouped_vars:
            raise _error(source, node.pos, f"?{node.name} is neither grouped nor aggregated")
        if (
            isinstance(node, ast.FrameTime)
            and node.name not in grouped_times
            and node.name not in grouped_vars
        ):
            raise _error(source, node.pos, f"?{node.name}.t is neither grouped nor aggregated")


def projected(expr, items) -> bool:
    """Whether an ORDER BY expression depends on projected items only."""
    names = {item.name for item in items if isinstance(item.expr, ast.VarRef)}
    times = {item.expr.name for item in items if isinstance(item.expr, ast.FrameTime)}
    return all(
        not isinstance(node, (ast.VarRef, ast.FrameTime, ast.Aggregate))
        or (isinstance(node, ast.VarRef) and node.name in names)
        or (isinstance(node, ast.FrameTime) and (node.name in times or node.name in names))
        for node in outside_aggregates(expr)
    ) and not has_aggregate(expr)
