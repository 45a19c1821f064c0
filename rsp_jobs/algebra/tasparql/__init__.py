"""TA-SPARQL syntax tree → logical plan (Rodriguez, McGrath, Liu, Myers, SSN 2009, §6).

``plan`` resolves every variable and types every expression (``patterns``, ``expressions``),
so that each semantic error names its line and column before any SQL is written; the plan's
operators are in ``nodes``, and ``explain`` prints them.

    >>> from rsp_jobs.language.tasparql import parse
    >>> query = plan(parse("SELECT ?h WHERE { ?x[LAST] <urn:height> ?h }"))
    >>> query.where.scans[0].selector
    Last()
"""

from __future__ import annotations

from rsp_jobs.algebra.tasparql.expressions import (
    Types,
    grouped_only,
    has_aggregate,
    position,
    projected,
)
from rsp_jobs.algebra.tasparql.nodes import Group, OneTimeQuery, OrderKey, Pattern, Projection
from rsp_jobs.algebra.tasparql.patterns import Patterns, scope_of
from rsp_jobs.errors import QuerySyntaxError
from rsp_jobs.language import tasparql as ast

__all__ = ["OneTimeQuery", "plan"]


def plan(query: ast.Query) -> OneTimeQuery:
    """The query's solutions (its outermost group, whose FILTERs apply to the whole of it),
    then grouping, projection, DISTINCT, ORDER BY and the slice (SPARQL 1.1 §18.2.4-5)."""
    root, source = query.where, query.source
    patterns = Patterns(query)
    where: Pattern
    if root.flat:
        if root.basic is None:
            raise QuerySyntaxError(source, 1, 1, "the query has no triple pattern")
        where = patterns.frames(root.basic)
    else:
        where = patterns.group(root, filtered=False)
    types = Types(scope_of(where), source)
    filters = tuple(types.condition(expr, "FILTER") for expr in root.filters)
    aggregated = (
        query.group_by is not None
        or query.having is not None
        or any(has_aggregate(item.expr) for item in query.items)
    )
    keys = _group_keys(query) if aggregated else None
    items = []
    for item in query.items:
        if keys is not None and not has_aggregate(item.expr):
            grouped_only(item.expr, keys, source)
        items.append(Projection(item.name, types.value(item.expr, aggregates=aggregated)))
    group = None if keys is None else _group(query, keys, types)
    return OneTimeQuery(
        where,
        filters,
        group,
        tuple(items),
        query.distinct,
        _order(query, keys, types),
        query.limit,
        query.offset,
        source,
    )


def _group_keys(query: ast.Query) -> tuple:
    """GROUP BY's keys or, without it, the projected items that are not aggregates (§6's
    ``SELECT ?x ?y SUM(?z)``)."""
    if query.group_by is not None:
        return query.group_by
    keys = []
    for item in query.items:
        if has_aggregate(item.expr):
            continue
        if not isinstance(item.expr, (ast.VarRef, ast.FrameTime)):
            raise QuerySyntaxError(
                query.source,
                item.pos.line,
                item.pos.column,
                f"?{item.name}: with aggregates and no GROUP BY, the other projected items "
                "are variables (they group the solutions)",
            )
        keys.append(item.expr)
    return tuple(keys)


def _group(query: ast.Query, keys: tuple, types: Types) -> Group:
    typed = tuple(types.value(key) for key in keys)
    having = None
    if query.having is not None:
        grouped_only(query.having, keys, query.source)
        having = types.condition(query.having, "HAVING", aggregates=True)
    return Group(typed, having)


def _order(query: ast.Query, keys, types: Types) -> tuple[OrderKey, ...]:
    """ORDER BY: the name of a projected expression sorts by that expression's value; with
    DISTINCT only projected values may sort, so that DISTINCT keeps the same rows."""
    items = {item.name: i for i, item in enumerate(query.items)}
    plain = {item.name for item in query.items if isinstance(item.expr, ast.VarRef)}
    order = []
    for expr, descending in query.order_by:
        if isinstance(expr, ast.VarRef) and expr.name in items and expr.name not in plain:
            order.append(OrderKey(None, items[expr.name], descending))
            continue
        if keys is not None and not has_aggregate(expr):
            grouped_only(expr, keys, query.source)
        if query.distinct and not projected(expr, query.items):
            pos = position(expr)
            raise QuerySyntaxError(
                query.source,
                pos.line,
                pos.column,
                "with DISTINCT, ORDER BY uses projected variables",
            )
        order.append(OrderKey(types.value(expr, aggregates=keys is not None), None, descending))
    return tuple(order)
