"""TA-SPARQL one-time queries over the frame store: parse → plan → SQL → execute.

TA-RDF (Rodriguez, McGrath, Liu, Myers, SSN 2009) annotates resources, not triples, with time:
a stream is a sequence of frames r[t]. Here a frame is a stored graph with a timestamp (the
``frames`` row and its ``frame_triples``), and the language is a SPARQL SELECT subset with
selectors (``?x[t]``, ``?x[t1 .. t2]``, ``?x[LAST]``, ``?x[FIRST]``, ``?x[*]``) and ``?x.t``
(docs/languages/ta-sparql.md). The stages: ``rsp_jobs.language.tasparql`` (text → frozen syntax
tree), ``rsp_jobs.algebra.tasparql`` (→ logical plan: frame scans and selectors, SPARQL 1.1's
algebra, every semantic error), ``rsp_jobs.store.sql`` (→ one SQL SELECT, per dialect); this
module runs it and writes the rows as SPARQL 1.1 JSON terms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, Select, String, literal, select

from rsp_jobs.algebra.tasparql import OneTimeQuery, plan
from rsp_jobs.algebra.tasparql.exact import exact_text
from rsp_jobs.language.tasparql import BELONGS_TO, Query, parse
from rsp_jobs.store.models import InvariantTriple, Stream
from rsp_jobs.store.sql.generate import MAX_TABLES, Statement, generate
from rsp_jobs.store.sql.sqlite import with_exact_functions
from rsp_jobs.terms import (
    DSV,
    XSD,
    XSD_BOOLEAN,
    XSD_DATETIME,
    XSD_DECIMAL,
    XSD_DOUBLE,
    XSD_INTEGER,
    nt_to_json,
)
from rsp_jobs.times import as_utc, datetime_lexical, parse_datetime

__all__ = ["BELONGS_TO", "DSV", "MAX_TABLES", "QueryResult", "run_query", "translate"]


@dataclass(frozen=True)
class QueryResult:
    """SPARQL 1.1 JSON results: ``vars`` in projection order, each row maps a bound variable to
    its term (``{"type": "literal", "value": ..., "datatype": ...}``); unbound ones are absent."""

    vars: list[str]
    rows: list[dict[str, dict]]


def run_query(
    engine: Engine, query: OneTimeQuery | Query | str, source: str = "<query>"
) -> QueryResult:
    """Evaluate a TA-SPARQL SELECT (its plan, as ``rsp_jobs.compiler.compile`` returns it, its
    syntax tree or its text) over the store in one SQL statement."""
    planned = _planned(query, source)
    with engine.connect() as conn:
        with_exact_functions(conn)
        statement = generate(planned, _stream_predicates(conn))
        rows = conn.execute(statement.select).all()
    return QueryResult(
        [name for name, _, _ in statement.outputs], [_row(statement, row) for row in rows]
    )


def translate(
    text: str, source: str = "<query>", stream_predicates: frozenset = frozenset()
) -> tuple[Select, dict[str, Any]]:
    """The SQL statement a query runs as and its bound parameters (for inspection and tests);
    ``stream_predicates``: those of time-invariant statements about streams (see ``generate``)."""
    statement = generate(plan(parse(text, source)), stream_predicates).select
    return statement, dict(statement.compile().params)


def _planned(query: OneTimeQuery | Query | str, source: str) -> OneTimeQuery:
    if isinstance(query, str):
        query = parse(query, source)
    return query if isinstance(query, OneTimeQuery) else plan(query)


def _stream_predicates(conn) -> frozenset:
    """The predicates of the stored time-invariant statements about a stream."""
    streams, invariant = Stream.__table__, InvariantTriple.__table__
    about_stream = select(literal("<", String) + streams.c.iri + literal(">", String))
    return frozenset(
        conn.execute(
            select(invariant.c.p).where(invariant.c.s.in_(about_stream)).distinct()
        ).scalars()
    )


def _row(statement: Statement, row) -> dict[str, dict]:
    """A result row: after the outputs come their ranks (when ``ranked``), then their exact values."""
    width = len(statement.outputs)
    start = width * (2 if statement.ranked else 1)
    ranks = row[width : 2 * width] if statement.ranked else (None,) * width
    exacts = row[start : start + width] if statement.exact else (None,) * width
    return {
        name: term
        for (name, kind, exact_kept), value, rank, exact in zip(
            statement.outputs, row, ranks, exacts
        )
        if (term := _to_json(kind, value, rank, exact, exact_kept)) is not None
    }


def _exact_json(value) -> dict:
    """An exact result (PostgreSQL's Decimal, SQLite's text, an integer) as an xsd:integer when it
    has no digit after the point, else an xsd:decimal."""
    text = exact_text(value if isinstance(value, Decimal) else Decimal(value))
    return {
        "type": "literal",
        "value": text,
        "datatype": XSD_DECIMAL if "." in text else XSD_INTEGER,
    }


# ------------------------------------------------------------------------------------ results


def _to_json(kind: str, value, rank=None, exact=None, exact_kept: bool = False) -> dict | None:
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
            return {"type": "literal", "value": str(round(float(value))), "datatype": XSD_INTEGER}
        if int(rank) == 1:
            lexical = format(Decimal(repr(float(value))), "f")
            return {
                "type": "literal",
                "value": lexical if "." in lexical else lexical + ".0",
                "datatype": XSD_DECIMAL,
            }
        if int(rank) == 2:
            return {
                "type": "literal",
                "value": _double_lexical(float(value)),
                "datatype": XSD + "float",
            }
    if kind == "term":
        return nt_to_json(value)
    if kind == "frame":
        return {"type": "uri", "value": value}
    if kind == "time":
        return {
            "type": "literal",
            "value": datetime_lexical(_as_datetime(value)),
            "datatype": XSD_DATETIME,
        }
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
