"""AST → logical plan, following the translation of W3C SPARQL 1.1 Query section 18.2:
group patterns (18.2.2), then aggregation (18.2.4.1), the select expressions, ORDER BY,
projection, DISTINCT and slice (18.2.5). Windows come from the FROM STREAM clauses.
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Optional

from rsp_jobs.algebra import plan as P
from rsp_jobs.errors import QueryError, UnsupportedConstruct
from rsp_jobs.language import ast


def translate(query: ast.Query) -> P.ContinuousQuery:
    if not query.streams:
        raise QueryError(f"{query.source}: the query reads no stream (add FROM STREAM <iri> [RANGE .. STEP ..])")
    fresh = (ast.Var(f"__agg{i}") for i in itertools.count())
    node = translate_group(query.where, None)

    aggregates: list[tuple[ast.Aggregate, ast.Var]] = []

    def lift(expr: ast.Expr) -> ast.Expr:
        """Replace each aggregate in ``expr`` by a fresh variable bound by the Group node."""
        if isinstance(expr, ast.Aggregate):
            for known, var in aggregates:
                if known == expr:
                    return var
            var = next(fresh)
            aggregates.append((expr, var))
            return var
        return _map_children(expr, lift)

    select_items = list(query.projection or ())
    lifted_select = [(item.var, lift(item.expr) if item.expr is not None else None) for item in select_items]
    having = [lift(e) for e in query.having]
    order = [replace(c, expr=lift(c.expr)) for c in query.order_by]

    grouped = bool(query.group_by or aggregates)
    if grouped:
        keys = []
        for i, cond in enumerate(query.group_by):
            if cond.var is not None:
                keys.append((cond.expr, cond.var))
            elif isinstance(cond.expr, ast.Var):
                keys.append((cond.expr, cond.expr))
            else:
                keys.append((cond.expr, ast.Var(f"__key{i}")))
        node = P.Group(node, tuple(keys), tuple(aggregates))
        key_vars = {v for _, v in keys}
        for var, expr in lifted_select:
            if expr is None and var not in key_vars:
                raise QueryError(f"{query.source}: ?{var.name} is selected but neither grouped nor aggregated")
        # GROUP BY on an expression makes the expression itself refer to the key variable.
        key_of = {e: v for e, v in keys if not isinstance(e, ast.Var)}
        lifted_select = [(v, _substitute(e, key_of) if e is not None else None) for v, e in lifted_select]
        having = [_substitute(e, key_of) for e in having]
        order = [replace(c, expr=_substitute(c.expr, key_of)) for c in order]
    for expr in having:
        node = P.Filter(expr, node)
    for var, expr in lifted_select:
        if expr is not None:
            node = P.Extend(node, var, expr)
    if order:
        node = P.OrderBy(node, tuple(order))

    if query.form == "SELECT":
        variables = tuple(v for v, _ in lifted_select) if query.projection is not None \
            else tuple(sorted(_in_scope(query.where), key=lambda v: v.name))
    else:
        variables = tuple(sorted(_template_vars(query.template) | _in_scope(query.where), key=lambda v: v.name))
    node = P.Project(node, variables)
    if query.distinct:
        node = P.Distinct(node)
    if query.limit is not None or query.offset:
        node = P.Slice(node, query.offset or 0, query.limit)

    reg = query.registration
    kind = reg.kind if reg else "QUERY"
    return P.ContinuousQuery(
        name=reg.name if reg else _default_name(query.source),
        form=query.form,
        r2s=kind if kind in ("RSTREAM", "ISTREAM", "DSTREAM") else "RSTREAM",
        derives_stream=kind == "STREAM",
        windows=tuple(P.StreamWindow(s.iri, s.window, s.graph) for s in query.streams),
        graphs=query.graphs,
        plan=node,
        variables=variables,
        template=query.template,
        computed_every_ms=reg.computed_every_ms if reg else None,
        source=query.source,
        text=query.text,
    )


def translate_group(group: ast.GroupPattern, graph) -> P.Node:
    """SPARQL 18.2.2.6: fold the elements left to right; filters wrap the whole group."""
    node: Optional[P.Node] = None
    filters: list[ast.Expr] = []

    def join(right: P.Node) -> P.Node:
        return right if node is None else P.Join(node, right)

    for element in group.elements:
        if isinstance(element, ast.TriplesBlock):
            node = join(P.BGP(element.triples, graph))
        elif isinstance(element, ast.Filter):
            filters.append(element.expr)
        elif isinstance(element, ast.OptionalPattern):
            inner = translate_group(element.group, graph)
            expr = None
            if isinstance(inner, P.Filter):
                inner, expr = inner.input, inner.expr
            node = P.LeftJoin(node if node is not None else _empty(graph), inner, expr)
        elif isinstance(element, ast.MinusPattern):
            node = P.Minus(node if node is not None else _empty(graph), translate_group(element.group, graph))
        elif isinstance(element, ast.UnionPattern):
            alternatives = [translate_group(g, graph) for g in element.alternatives]
            union = alternatives[0]
            for alt in alternatives[1:]:
                union = P.Union_(union, alt)
            node = join(union)
        elif isinstance(element, ast.GraphPattern):
            node = join(translate_group(element.group, element.name))
        elif isinstance(element, ast.GroupPattern):
            node = join(translate_group(element, graph))
        elif isinstance(element, ast.Bind):
            node = P.Extend(node if node is not None else _empty(graph), element.var, element.expr)
        else:
            raise UnsupportedConstruct("<query>", type(element).__name__)
    if node is None:
        node = _empty(graph)
    for expr in filters:
        node = P.Filter(expr, node)
    return node


def _empty(graph) -> P.BGP:
    """The empty group: one solution binding nothing."""
    return P.BGP((), graph)


def _map_children(expr: ast.Expr, fn) -> ast.Expr:
    if isinstance(expr, ast.BinaryOp):
        return ast.BinaryOp(expr.op, fn(expr.left), fn(expr.right))
    if isinstance(expr, ast.UnaryOp):
        return ast.UnaryOp(expr.op, fn(expr.operand))
    if isinstance(expr, ast.FunctionCall):
        return ast.FunctionCall(expr.name, tuple(fn(a) for a in expr.args))
    if isinstance(expr, ast.In):
        return ast.In(fn(expr.expr), tuple(fn(o) for o in expr.options), expr.negated)
    return expr


def _substitute(expr: ast.Expr, mapping: dict) -> ast.Expr:
    if expr in mapping:
        return mapping[expr]
    return _map_children(expr, lambda e: _substitute(e, mapping))


def _in_scope(group: ast.GroupPattern) -> set[ast.Var]:
    """Variables a group pattern can bind (for SELECT * and CONSTRUCT)."""
    found: set[ast.Var] = set()
    for element in group.elements:
        if isinstance(element, ast.TriplesBlock):
            for t in element.triples:
                found |= {x for x in (t.subject, t.predicate, t.object) if isinstance(x, ast.Var)}
        elif isinstance(element, (ast.OptionalPattern, ast.GroupPattern)):
            found |= _in_scope(element.group if isinstance(element, ast.OptionalPattern) else element)
        elif isinstance(element, ast.UnionPattern):
            for alt in element.alternatives:
                found |= _in_scope(alt)
        elif isinstance(element, ast.GraphPattern):
            found |= _in_scope(element.group)
            if isinstance(element.name, ast.Var):
                found.add(element.name)
        elif isinstance(element, ast.Bind):
            found.add(element.var)
    return found


def _template_vars(template) -> set[ast.Var]:
    return {x for t in template for x in (t.subject, t.predicate, t.object) if isinstance(x, ast.Var)}


def _default_name(source: str) -> str:
    name = source.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name
