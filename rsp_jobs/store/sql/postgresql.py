"""PostgreSQL's SQL for the generator's elements: exact decimals as NUMERIC, read from a term's
lexical form as ``rsp_jobs.algebra.tasparql.exact.term_exact`` reads it (XSD 1.0 Part 2
§3.2.3, §3.3.13). A value past what NUMERIC holds (131072 digits before the point) fails the
query, as FOAR0002 would, rather than round."""

from __future__ import annotations

from sqlalchemy.ext.compiler import compiles

from rsp_jobs.algebra.tasparql.exact import (
    DECIMAL_DIGITS,
    DECIMAL_LEXICAL,
    INTEGER_DATATYPES,
    INTEGER_LEXICAL,
    XSD_TYPED,
)
from rsp_jobs.store.sql.elements import (
    QUOTE,
    EpochMs,
    Exact,
    ExactComparison,
    Lexical,
    Position,
    TimePart,
    lexical_sql,
)


def exact_term(text: str) -> str:
    """``term_exact`` of a term's N-Triples text, as NUMERIC; NULL when it is no integer or
    decimal. A decimal keeps a digit after the point (``+ 0.0``), so that the result's type
    follows from its value."""
    lexical, datatype = (
        f"substr(split_part({text}, '{XSD_TYPED}', 1), 2)",
        f"split_part({text}, '{XSD_TYPED}', 2)",
    )
    integers = ", ".join(f"'{t}'" for t in INTEGER_DATATYPES)
    return (
        f"CASE WHEN {datatype} IN ({integers}) AND {lexical} ~ '^{INTEGER_LEXICAL}$' "
        f"THEN CAST({lexical} AS NUMERIC) "
        f"WHEN {datatype} = 'decimal>' AND {lexical} ~ '^{DECIMAL_LEXICAL}$' "
        f"THEN CAST({lexical} AS NUMERIC) + 0.0 END"
    )


# ``Exact``'s operations; a quotient keeps DECIMAL_DIGITS after the point, rounded half up from
# the quotient truncated one digit further
EXACT_SQL = {
    "of": exact_term("{0}"),
    "const": "CAST({0} AS NUMERIC)",
    "neg": "(- {0})",
    "+": "({0} + {1})",
    "-": "({0} - {1})",
    "*": "({0} * {1})",
    "/": (
        f"round(div(CAST({{0}} AS NUMERIC) * 1{'0' * (DECIMAL_DIGITS + 1)}, NULLIF({{1}}, 0))"
        f" * 0.{'0' * DECIMAL_DIGITS}1, {DECIMAL_DIGITS})"
    ),
    "sum": "sum({0})",
    "sum distinct": "sum(DISTINCT {0})",
    "value": "{0}",  # NUMERIC's equality is by value already
    "any decimal": "bool_or(scale({0}) > 0)",
    "min": "min({0})",
    "max": "max({0})",
}


def _sql(compiler, element, **kw) -> list[str]:
    return [compiler.process(c, **kw) for c in element.clauses]


@compiles(EpochMs, "postgresql")
def _epoch_ms(element, compiler, **kw):
    (time,) = _sql(compiler, element, **kw)
    return f"CAST(EXTRACT(EPOCH FROM {time}) * 1000 AS DOUBLE PRECISION)"


@compiles(Exact, "postgresql")
def _exact(element, compiler, **kw):
    return EXACT_SQL[element.operation].format(*_sql(compiler, element, **kw))


@compiles(ExactComparison, "postgresql")
def _exact_comparison(element, compiler, **kw):
    a, b = _sql(compiler, element, **kw)
    return f"({a} {element.operation} {b})"


@compiles(Lexical, "postgresql")
def _lexical(element, compiler, **kw):
    (text,) = _sql(compiler, element, **kw)
    return lexical_sql(
        text, f"strpos({text}, {QUOTE})", f"(length({text}) - strpos(reverse({text}), {QUOTE}) + 1)"
    )


@compiles(Position, "postgresql")
def _position(element, compiler, **kw):
    text, part = _sql(compiler, element, **kw)
    return f"strpos({text}, {part})"


@compiles(TimePart, "postgresql")
def _time_part(element, compiler, **kw):
    (time,) = _sql(compiler, element, **kw)
    return (
        f"CAST(EXTRACT({element.part.upper()} FROM {time} AT TIME ZONE 'UTC') AS DOUBLE PRECISION)"
    )
