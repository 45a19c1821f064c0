"""Join order inside a basic graph pattern, by selectivity: evaluators join a BGP's triple
patterns in the order written, so this rule writes them in the order to join them."""

from __future__ import annotations

from dataclasses import replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.language import ast
from rsp_jobs.tree import transform


def order_joins(query: P.ContinuousQuery) -> P.ContinuousQuery:
    """Greedy order: start with the pattern with most constants, then always take one that
    shares a variable with what is joined so far (most constants first, ties in written
    order), so that no cartesian product is formed while a connected pattern remains."""

    def reorder(node):
        if not isinstance(node, P.BGP) or len(node.triples) < 2:
            return node
        order = _join_order(node)
        return replace(node, triples=tuple(node.triples[i] for i in order))

    return replace(query, plan=transform(query.plan, reorder))


def _join_order(bgp: P.BGP) -> list[int]:
    graph = {bgp.graph.name} if isinstance(bgp.graph, ast.Var) else set()
    var_sets = [P.pattern_vars(t) | graph for t in bgp.triples]
    constants = [_constants(t) for t in bgp.triples]
    remaining = list(range(len(var_sets)))
    first = max(remaining, key=lambda i: (constants[i], -i))
    order, bound = [first], set(var_sets[first])
    remaining.remove(first)
    while remaining:
        pool = [i for i in remaining if var_sets[i] & bound] or remaining
        nxt = max(pool, key=lambda i: (constants[i], -i))
        order.append(nxt)
        bound |= var_sets[nxt]
        remaining.remove(nxt)
    return order


def _constants(triple: ast.TriplePattern) -> int:
    return sum(P.var_name(t) is None for t in (triple.subject, triple.predicate, triple.object))
