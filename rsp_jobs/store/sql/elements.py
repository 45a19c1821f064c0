"""The SQL elements the generator needs that SQLite and PostgreSQL write differently. Each
dialect module (``sqlite``, ``postgresql``) says how; SQLite's form is also the default
dialect's, for printing a statement with no engine."""

from __future__ import annotations

from sqlalchemy import Boolean, Double, Integer, Join, String, true
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.sql.visitors import InternalTraversal


class EpochMs(FunctionElement):
    """UTC milliseconds since 1970 of a stored time, exact to the microsecond on both backends."""

    type = Double()
    name = "epoch_ms"
    inherit_cache = True


class FrameJoin(Join):
    """A frame joined to the frames before it, with no condition of its own (FILTERs and shared
    variables relate frames). SQLite writes it as a CROSS JOIN, which keeps the frames before it
    in outer loops: without statistics SQLite otherwise checks a frame's own triples only after
    joining the next frame."""

    inherit_cache = True

    def __init__(self, left, right):
        super().__init__(left, right, true())


class _Operation(FunctionElement):
    """A function element whose SQL depends on ``operation``, which is part of the statement
    cache's key (else one operation would reuse the SQL cached for another). (Not ``op``: that is
    SQLAlchemy's method for a custom operator, which an attribute would hide.)"""

    inherit_cache = True
    _traverse_internals = [  # noqa: RUF012 (SQLAlchemy declares it an instance attribute)
        *FunctionElement._traverse_internals,
        ("operation", InternalTraversal.dp_string),
    ]

    def __init__(self, operation: str, *args):
        self.operation = operation
        super().__init__(*args)


class Exact(_Operation):
    """An exact operation on xsd:integer and xsd:decimal values (each dialect's ``EXACT_SQL``):
    ``of`` a stored term, ``const``, ``neg``, ``+ - * /``, ``sum``, ``min``, ``max`` ..."""

    name = "exact"
    inherit_cache = True


class ExactComparison(_Operation):
    """``=``, ``!=``, ``<`` ... of two exact values."""

    type = Boolean()
    name = "exact_comparison"
    inherit_cache = True

    def __init__(self, op: str, a, b):
        super().__init__(op, a, b)


class TimePart(_Operation):
    """A part of a stored UTC time (year, month, day, hour, minute, second) as a number."""

    type = Double()
    name = "time_part"
    inherit_cache = True

    def __init__(self, part: str, time):
        super().__init__(part, time)

    @property
    def part(self) -> str:
        return self.operation


class Lexical(FunctionElement):
    """The lexical form of a term's N-Triples text: between the first and the last quote of a
    literal (escapes kept), the IRI itself for an IRI."""

    type = String()
    name = "lexical"
    inherit_cache = True


QUOTE = "'\"'"


def lexical_sql(text: str, first: str, last: str) -> str:
    """``Lexical`` of the SQL ``text``, given the SQL of where its first and last quotes are."""
    return (
        f"CASE WHEN substr({text}, 1, 1) = {QUOTE} THEN substr({text}, {first} + 1, {last} - {first} - 1) "
        f"ELSE substr({text}, 2, length({text}) - 2) END"
    )


class Position(FunctionElement):
    """Where the second string first occurs in the first (1-based), 0 when it does not."""

    type = Integer()
    name = "position"
    inherit_cache = True
