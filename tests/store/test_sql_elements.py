"""The SQL elements of TA-SPARQL's generator (``rsp_jobs/store/sql/elements.py``)."""
from __future__ import annotations

from sqlalchemy import String, literal
from sqlalchemy.sql.elements import BinaryExpression

from rsp_jobs.store.sql.elements import Exact, ExactComparison, TimePart


def test_an_operation_keeps_sqlalchemys_op_method():
    """The operation is ``operation``: an attribute named ``op`` would hide ColumnOperators.op,
    SQLAlchemy's custom operator."""
    comparison = ExactComparison("<", literal("1", String), literal("2", String))
    assert comparison.operation == "<"
    assert isinstance(comparison.op("=")(literal(True)), BinaryExpression)
    assert TimePart("year", literal("t", String)).part == "year"


def test_the_operation_is_part_of_the_statement_cache_key():
    a, b = literal("1", String), literal("2", String)
    keys = {
        Exact(name, a, b)._generate_cache_key().key for name in ("+", "-", "*", "/")
    } | {ExactComparison(name, a, b)._generate_cache_key().key for name in ("<", ">")}
    assert len(keys) == 6
