"""``FILTER(bound(?k) && ...)``: every solution past the filter binds ``?k``, so a join on
``?k`` above it is an equi-join (a hash join) rather than the equal-or-unbound test SPARQL's
compatibility needs for a variable that may be unbound (a nested-loop join)."""

from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.language import ast
from rsp_jobs.tree import transform


def bound_join_keys(query: P.ContinuousQuery) -> P.ContinuousQuery:
    def mark(node):
        if isinstance(node, P.Filter):
            return replace(node, bound=_asserted_bound(node.expr))
        return node

    return replace(query, plan=transform(query.plan, mark))


def _asserted_bound(expr: ast.Expr) -> frozenset[str]:
    """The variables a filter's top-level conjuncts ``bound(?x)`` require to be bound."""
    if isinstance(expr, ast.BinaryOp) and expr.op == "&&":
        return _asserted_bound(expr.left) | _asserted_bound(expr.right)
    if (
        isinstance(expr, ast.FunctionCall)
        and expr.name == "bound"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Var)
    ):
        return frozenset({expr.args[0].name})
    return frozenset()
