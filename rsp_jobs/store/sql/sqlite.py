"""SQLite's SQL for the generator's elements, and its exact decimals.

SQLite has no exact decimal type: an xsd:integer or xsd:decimal value is the canonical text of a
Python ``Decimal``, computed by functions and aggregates registered on each connection
(``with_exact_functions``), so that SQLite and PostgreSQL's NUMERIC give the same answers
(XSD 1.0 Part 2 §3.2.3, §3.3.13; SPARQL 1.1 §18.5.1.3-4). Times are kept by ``UTCDateTime``
as 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC.
"""

from __future__ import annotations

import decimal
import itertools
from collections.abc import Callable
from decimal import Decimal

from sqlalchemy.ext.compiler import compiles

from rsp_jobs.algebra.tasparql.exact import (
    DECIMAL_DIGITS,
    EXACT,
    exact_text,
    term_exact,
    value_text,
)
from rsp_jobs.store.sql.elements import (
    QUOTE,
    EpochMs,
    Exact,
    ExactComparison,
    FrameJoin,
    Lexical,
    Position,
    TimePart,
    lexical_sql,
)
from rsp_jobs.terms import XSD

# doubles and floats (most numbers of a stream) skip the call into Python
_DOUBLE = f"{{0}} GLOB '*\"^^<{XSD}double>' OR {{0}} GLOB '*\"^^<{XSD}float>'"
# ``Exact``'s operations, over the functions of ``_FUNCTIONS`` and ``_AGGREGATES``
EXACT_SQL = {
    "of": f"CASE WHEN {_DOUBLE} THEN NULL ELSE rsp_decimal_of({{0}}) END",
    "const": "{0}",
    "neg": "rsp_decimal_sub(0, {0})",
    "+": "rsp_decimal_add({0}, {1})",
    "-": "rsp_decimal_sub({0}, {1})",
    "*": "rsp_decimal_mul({0}, {1})",
    "/": "rsp_decimal_div({0}, {1})",
    "sum": "rsp_decimal_sum({0})",
    "sum distinct": "rsp_decimal_sum(DISTINCT {0})",
    "value": "rsp_decimal_value({0})",  # a key equal for equal values
    "any decimal": "(max(instr({0}, '.')) > 0)",
    "min": "rsp_decimal_min({0})",
    "max": "rsp_decimal_max({0})",
}
_TIME_FORMATS = {
    "year": "%Y",
    "month": "%m",
    "day": "%d",
    "hour": "%H",
    "minute": "%M",
    "second": "%S",
}


def _sql(compiler, element, **kw) -> list[str]:
    return [compiler.process(c, **kw) for c in element.clauses]


@compiles(EpochMs)
@compiles(EpochMs, "sqlite")
def _epoch_ms(element, compiler, **kw):
    (time,) = _sql(compiler, element, **kw)
    seconds = f"CAST(strftime('%s', substr({time}, 1, 19)) AS INTEGER)"  # whole seconds, then the microseconds
    micros = f"CAST(substr({time}, 21, 6) AS INTEGER)"
    return f"({seconds} * 1000.0 + {micros} / 1000.0)"


@compiles(FrameJoin, "sqlite")
def _frame_join(join, compiler, asfrom=False, from_linter=None, **kw):
    if from_linter:
        from_linter.edges.update(
            itertools.product(join.left._from_objects, join.right._from_objects)
        )
    left = join.left._compiler_dispatch(compiler, asfrom=True, from_linter=from_linter, **kw)
    right = join.right._compiler_dispatch(compiler, asfrom=True, from_linter=from_linter, **kw)
    return f"{left} CROSS JOIN {right}"


@compiles(Exact)
@compiles(Exact, "sqlite")
def _exact(element, compiler, **kw):
    return EXACT_SQL[element.operation].format(*_sql(compiler, element, **kw))


@compiles(ExactComparison)
@compiles(ExactComparison, "sqlite")
def _exact_comparison(element, compiler, **kw):
    a, b = _sql(compiler, element, **kw)
    return f"(rsp_decimal_cmp({a}, {b}) {element.operation} 0)"


@compiles(Lexical)
@compiles(Lexical, "sqlite")
def _lexical(element, compiler, **kw):
    """SQLite has no reverse(): the closing quote is the last one, before the suffix."""
    (text,) = _sql(compiler, element, **kw)
    return lexical_sql(
        text, f"instr({text}, {QUOTE})", f"length(rtrim({text}, replace({text}, {QUOTE}, '')))"
    )


@compiles(Position)
@compiles(Position, "sqlite")
def _position(element, compiler, **kw):
    text, part = _sql(compiler, element, **kw)
    return f"instr({text}, {part})"


@compiles(TimePart)
@compiles(TimePart, "sqlite")
def _time_part(element, compiler, **kw):
    (time,) = _sql(compiler, element, **kw)
    value = f"CAST(strftime('{_TIME_FORMATS[element.part]}', substr({time}, 1, 19)) AS REAL)"
    if element.part == "second":  # with the microseconds UTCDateTime keeps
        value = f"({value} + CAST(substr({time}, 21, 6) AS REAL) / 1000000.0)"
    return value


# ------------------------------------------------------------------------- exact decimals


def with_exact_functions(conn) -> None:
    """Register the Decimal functions of ``EXACT_SQL`` on a SQLite connection, once (the pool
    keeps them with it); nothing on other backends."""
    if conn.dialect.name != "sqlite" or conn.connection.info.get("rsp_decimal"):
        return
    sqlite = conn.connection.driver_connection
    for name, (arity, function) in _FUNCTIONS.items():
        sqlite.create_function(name, arity, function, deterministic=True)
    for name, aggregate in _AGGREGATES.items():
        sqlite.create_aggregate(name, 1, aggregate)
    conn.connection.info["rsp_decimal"] = True


def divide(a: Decimal, b: Decimal) -> Decimal | None:
    """a / b to DECIMAL_DIGITS after the point, rounded half up (as PostgreSQL's round); None (an
    error, FOAR0001) when b is 0. Rounded from the quotient truncated one digit further, which
    decides half up alike (that digit is 5 or more exactly when the rest is half a unit or more)."""
    if b.is_zero():
        return None
    truncated = EXACT.scaleb(
        EXACT.divide_int(EXACT.scaleb(a, DECIMAL_DIGITS + 1), b), -DECIMAL_DIGITS - 1
    )
    return truncated.quantize(Decimal(1).scaleb(-DECIMAL_DIGITS), decimal.ROUND_HALF_UP, EXACT)


def _on_text(operation, written=exact_text):
    """A SQLite function of exact values (text or integers), NULL when one is."""

    def apply(*values):
        if any(v is None for v in values):
            return None
        result = operation(*(Decimal(v) for v in values))
        return None if result is None else written(result)

    return apply


_FUNCTIONS = {
    "rsp_decimal_of": (1, term_exact),
    "rsp_decimal_add": (2, _on_text(EXACT.add)),
    "rsp_decimal_sub": (2, _on_text(EXACT.subtract)),
    "rsp_decimal_mul": (2, _on_text(EXACT.multiply)),
    "rsp_decimal_div": (2, _on_text(divide)),
    "rsp_decimal_cmp": (2, _on_text(EXACT.compare, int)),
    "rsp_decimal_value": (1, _on_text(lambda number: number, value_text)),
}


class _Fold:
    """A SQLite aggregate of exact values: ``combine`` folds them; NULL over none, as SQL's."""

    combine: Callable[[Decimal, Decimal], Decimal]  # each fold's own

    def __init__(self):
        self.value = None

    def step(self, value):
        if value is not None:
            number = Decimal(value)
            self.value = number if self.value is None else self.combine(self.value, number)

    def finalize(self):
        return None if self.value is None else exact_text(self.value)


class _Sum(_Fold):
    combine = staticmethod(EXACT.add)


class _Min(_Fold):
    combine = staticmethod(lambda a, b: b if b < a else a)


class _Max(_Fold):
    combine = staticmethod(lambda a, b: b if b > a else a)


_AGGREGATES = {"rsp_decimal_sum": _Sum, "rsp_decimal_min": _Min, "rsp_decimal_max": _Max}
