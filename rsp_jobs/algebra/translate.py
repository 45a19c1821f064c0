"""AST → logical plan, following the translation of W3C SPARQL 1.1 Query section 18.2:
group patterns (18.2.2), then aggregation (18.2.4.1), the select expressions, ORDER BY,
projection, DISTINCT and slice (18.2.5). Windows come from the FROM STREAM clauses.
EP-SPARQL's event operators (Anicic et al., WWW 2011, section 3.2) become SeqJoin, EqJoin and
their optional variants; such pattern queries read streams without windows.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.errors import QueryError, UnsupportedConstruct
from rsp_jobs.language import ast
from rsp_jobs.times import duration_upper_bound_ms, ms_to_us
from rsp_jobs.tree import substitute, walk

INTERVAL_BUILTINS = frozenset({"getduration", "getstarttime", "getendtime"})
DURATION_TYPES = frozenset(
    {ast.XSD + "duration", ast.XSD + "dayTimeDuration", ast.XSD + "yearMonthDuration"}
)


def translate(query: ast.Query) -> P.ContinuousQuery:
    pattern = is_pattern(query)
    if not query.streams and not pattern:
        raise QueryError(
            f"{query.source}: the query reads no stream (add FROM STREAM <iri> [RANGE .. STEP ..])"
        )
    _check_windows(query, pattern)
    node = _aggregate_clauses(query, translate_group(query.where, None))
    if pattern:
        _refuse_in_patterns(node, query.source)
    node, variables = _modifiers(query, node)
    _check_binds(node, query.source)
    _check_exists(node, query.source)
    if pattern:
        _check_timeless(node, query.source)
    reg = query.registration
    kind = reg.kind if reg else "QUERY"
    return (P.PatternQuery if pattern else P.WindowQuery)(
        name=reg.name if reg else _default_name(query.source),
        form=query.form,
        r2s=kind if kind in ("RSTREAM", "ISTREAM", "DSTREAM") else "RSTREAM",
        derives_stream=kind == "STREAM",
        windows=tuple(P.StreamWindow(s.iri, s.window, s.graph) for s in query.streams),
        graphs=query.graphs,
        plan=node,
        variables=variables,
        template=query.template,
        described=tuple(d for d in query.described or () if isinstance(d, ast.IRI)),
        computed_every_ms=reg.computed_every_ms if reg else None,
        source=query.source,
        text=query.text,
        pattern=pattern,
        bound_us=duration_bound_us(query.where) if pattern else None,
    )


def _refuse_in_patterns(node: P.Node, source: str) -> None:
    """EP-SPARQL patterns (``spark/events.py``) match events, each solution carrying the
    interval of the triples behind it; a path's solutions have no such triples, so a path that
    is no triple pattern is refused there (``^p`` and ``p/q`` are triple patterns). BNODE(str)
    needs a name for its solution that a later batch finding the same match would give it too,
    which a match has not (``expressions._bnode``)."""
    for n in walk(node):
        if isinstance(n, P.Path):
            what = "a property path with |, *, +, ? or ! in an EP-SPARQL pattern"
        elif isinstance(n, ast.FunctionCall) and n.name == "bnode" and n.args:
            what = "BNODE(str) outside a window query's FILTER or BIND (in an EP-SPARQL pattern)"
        else:
            continue
        where = n.position or ast.Position(1, 1)
        raise UnsupportedConstruct(source, what, where.line, where.column)


def _modifiers(query: ast.Query, node: P.Node) -> tuple[P.Node, tuple[ast.Var, ...]]:
    """SPARQL 18.2.4-18.2.5 over the WHERE clause's algebra: aggregation, the select
    expressions, ORDER BY, projection, DISTINCT, slice. Returns the plan and the projected
    variables (for a subquery as for the whole query)."""
    fresh = (ast.Var(f"__agg{i}") for i in itertools.count())
    aggregates: list[tuple[ast.Aggregate, ast.Var]] = []

    def lift(expr: ast.Expr) -> ast.Expr | None:
        """Replace each aggregate in ``expr`` by a fresh variable bound by the Group node."""
        if isinstance(expr, ast.Aggregate):
            for known, var in aggregates:
                if known == expr:
                    return var
            var = next(fresh)
            aggregates.append((expr, var))
            return var
        return None

    def lift_all(expr: ast.Expr) -> ast.Expr:
        return substitute(expr, lift)

    select_items = list(query.projection or ())
    _check_aliases(query, select_items)
    lifted_select = [
        (item.var, with_patterns(lift_all(item.expr), None) if item.expr is not None else None)
        for item in select_items
    ]
    having = [with_patterns(lift_all(e), None) for e in query.having]
    order = [replace(c, expr=lift_all(c.expr)) for c in query.order_by]
    for clause, exprs in (("ORDER BY", order), ("GROUP BY", query.group_by)):
        for e in exprs:
            _refuse_exists(
                e.expr, f"{clause} (bind it first: BIND(EXISTS {{...}} AS ?e))", query.source
            )

    grouped = bool(query.group_by or aggregates)
    if grouped and query.form == "SELECT" and query.projection is None:
        raise QueryError(
            f"{query.source}: SELECT * with GROUP BY: a grouped query selects its group keys "
            "and aggregates by name (SPARQL 1.1 section 11.4; W3C syntax test syn-bad-01), e.g. "
            "SELECT ?s (COUNT(*) AS ?n)"
        )
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
                raise QueryError(
                    f"{query.source}: ?{var.name} is selected but neither grouped nor aggregated"
                )
        # GROUP BY on an expression makes the expression itself refer to the key variable.
        key_of = {e: v for e, v in keys if not isinstance(e, ast.Var)}
        lifted_select = [
            (v, _substitute(e, key_of) if e is not None else None) for v, e in lifted_select
        ]
        having = [_substitute(e, key_of) for e in having]
        order = [replace(c, expr=_substitute(c.expr, key_of)) for c in order]
    for expr in having:
        node = P.Filter(expr, node)
    # SPARQL 1.1 section 18.2.4.3: "If the query has a trailing VALUES clause:
    # P := Join(P, ToMultiSet(data))", after HAVING and before the select expressions
    if query.values is not None:
        node = P.Join(node, _values(query.values))
    for var, expr in lifted_select:
        if expr is not None:
            node = P.Extend(node, var, expr)
    if order:
        node = P.OrderBy(node, tuple(order))

    in_scope = _in_scope(query.where) | {c.var for c in query.aggregates}
    in_scope |= set(query.values.vars) if query.values is not None else set()
    if query.form == "SELECT":
        variables = (
            tuple(v for v, _ in lifted_select)
            if query.projection is not None
            else tuple(sorted(in_scope, key=lambda v: v.name))
        )
    elif query.form == "DESCRIBE":  # DESCRIBE * describes every variable in scope
        variables = (
            tuple(d for d in query.described if isinstance(d, ast.Var))
            if query.described is not None
            else tuple(sorted(in_scope, key=lambda v: v.name))
        )
    else:
        variables = tuple(sorted(_template_vars(query.template) | in_scope, key=lambda v: v.name))
    node = P.Project(node, variables)
    if query.distinct:
        node = P.Distinct(node)
    if query.limit is not None or query.offset:
        node = P.Slice(node, query.offset or 0, query.limit)
    return node, variables


def _check_aliases(query: ast.Query, items: list[ast.SelectItem]) -> None:
    """SPARQL 1.1 section 18.2.1: in ``(expr AS ?v)`` the variable "must not be in-scope at the
    point of the (expr AS v) form": not bound by the WHERE clause nor by an earlier select item."""
    bound = _in_scope(query.where) | {c.var for c in query.aggregates}
    for item in items:
        if item.expr is not None and item.var in bound:
            where = f":{item.position.line}:{item.position.column}" if item.position else ""
            raise QueryError(
                f"{query.source}{where}: (... AS ?{item.var.name}) names a variable that is already "
                f"bound {'in the WHERE clause' if item.var in _in_scope(query.where) else 'before it'}; "
                "SPARQL 1.1 (section 18.2.1) requires a new one: choose another name"
            )
        bound.add(item.var)


def _check_binds(node: P.Node, source: str) -> frozenset[str]:
    """SPARQL 1.1 section 18.2.1: "The variable introduced by the BIND clause must not have
    been used in the group graph pattern up to the point of use in BIND" (nor, as a select
    expression's, be in scope). Checked on the plan, before anything runs, for every Extend of
    the query and its subqueries; returns the variables ``node``'s solutions may bind, as the
    evaluators have them (a blank node's label among them)."""
    if isinstance(node, P.BGP):
        graph = [node.graph.name] if isinstance(node.graph, ast.Var) and node.triples else []
        return frozenset(graph).union(*map(P.pattern_vars, node.triples))
    if isinstance(node, P.Values):
        return frozenset(v.name for v in node.vars)
    if isinstance(node, P.Path):
        return frozenset(P.path_vars(node))
    if isinstance(node, P.Project):
        _check_binds(node.input, source)
        return frozenset(v.name for v in node.vars)
    if isinstance(node, P.Group):
        _check_binds(node.input, source)
        return frozenset(v.name for _, v in node.keys + node.aggregates)
    if isinstance(node, P.Minus):
        _check_binds(node.right, source)
        return _check_binds(node.left, source)
    if isinstance(node, (P.Extend, P.GroupExtend)):
        bound = _check_binds(node.input, source)
        if isinstance(node, P.Extend) and node.var.name in bound:
            raise QueryError(
                f"{source}: BIND assigns ?{node.var.name}, which is already bound "
                "in the group (SPARQL 18.2.1)"
            )
        return bound | {node.var.name}
    return frozenset().union(*(_check_binds(child, source) for child in _plan_children(node)))


def _refuse_exists(expr: ast.Expr | None, where: str, source: str) -> None:
    """EXISTS is evaluated for the solutions of a FILTER or a BIND (and a SELECT expression or
    HAVING, which are those); elsewhere it is refused where written."""
    for n in walk(expr) if expr is not None else ():
        if isinstance(n, (ast.Exists, P.Exists)):
            position = n.position or ast.Position(1, 1)
            raise UnsupportedConstruct(source, f"EXISTS in {where}", position.line, position.column)


def _check_exists(node: P.Node, source: str) -> None:
    """An OPTIONAL's filter is its join condition (SPARQL 18.2.2.6), evaluated on pairs of
    solutions, not on solutions: EXISTS is refused there."""
    for n in walk(node):
        if isinstance(n, (P.LeftJoin, P.SeqRightJoin, P.EqLeftJoin)):
            _refuse_exists(n.expr, "an OPTIONAL's FILTER (its join condition)", source)


def _check_timeless(node: P.Node, source: str) -> None:
    """An EP-SPARQL solution is an event with its interval (section 3.2), and inline data has
    none: a VALUES row would be an event of no time, so a pattern refuses it where written."""
    for n in walk(node):
        if isinstance(n, P.Exists):
            where = n.position or ast.Position(1, 1)
            raise UnsupportedConstruct(
                source,
                "EXISTS in an EP-SPARQL pattern (whether a pattern has a match is no event: "
                "it has no interval); match the pattern with OPTIONALSEQ or EQUALSOPTIONAL "
                "and test bound()",
                where.line,
                where.column,
            )
        if isinstance(n, P.Values):
            where = n.position or ast.Position(1, 1)
            raise UnsupportedConstruct(
                source,
                "VALUES in an EP-SPARQL pattern (inline data is no event: it has no interval); "
                "write the values in a FILTER(?x IN (...))",
                where.line,
                where.column,
            )


def _plan_children(node: P.Node) -> list[P.Node]:
    """The operators right below ``node`` (its expressions left out)."""
    if isinstance(node, (P.Filter, P.ToMultiset, P.OrderBy, P.Distinct, P.Slice)):
        return [node.input]
    if isinstance(node, _BINARY):
        return [node.left, node.right]
    raise TypeError(f"{type(node).__name__} is not an operator of two operands or one")


_BINARY = (P.Join, P.LeftJoin, P.SeqJoin, P.EqJoin, P.SeqRightJoin, P.EqLeftJoin, P.Minus, P.Union_)


def _aggregate_clauses(query: ast.Query, node: P.Node) -> P.Node:
    """C-SPARQL's AGGREGATE clauses (section 3.3): "a new variable not occurring in the WHERE
    clause, ... an aggregation function and ... a set of one or more variables, occurring in the
    WHERE clause, which express the grouping criteria"; "multiple independent aggregations".
    Decision: each clause aggregates the WHERE clause's solutions (extending them does not change
    what the next one sees), and the clauses' FILTERs apply after all of them, so their order
    does not matter."""
    in_scope = _in_scope(query.where)
    added: set[ast.Var] = set()
    for clause in query.aggregates:
        where = (
            f"{query.source}:{clause.position.line}:{clause.position.column}"
            if clause.position
            else query.source
        )
        if clause.var in in_scope or clause.var in added:
            raise QueryError(
                f"{where}: AGGREGATE binds ?{clause.var.name}, which is already bound; it needs a new "
                "variable, not occurring in the WHERE clause (C-SPARQL, section 3.3)"
            )
        unknown = [
            v
            for v in (*clause.group, *([clause.aggregate.arg] if clause.aggregate.arg else ()))
            if v not in in_scope
        ]
        if unknown:
            raise QueryError(
                f"{where}: AGGREGATE uses ?{unknown[0].name}, which the WHERE clause does not bind"
            )
        node = P.GroupExtend(node, clause.group, clause.aggregate, clause.var)
        added.add(clause.var)
    for clause in query.aggregates:
        if clause.filter is not None:
            node = P.Filter(clause.filter, node)
    return node


def is_pattern(query: ast.Query) -> bool:
    """Whether the query is an EP-SPARQL pattern: it uses an event operator or an interval
    built-in anywhere."""
    exprs = [i.expr for i in query.projection or () if i.expr is not None]
    exprs += (
        list(query.having) + [c.expr for c in query.order_by] + [c.expr for c in query.group_by]
    )
    return _group_is_pattern(query.where) or any(_uses_interval(e) for e in exprs)


def _group_is_pattern(group: ast.GroupPattern) -> bool:
    for element in group.elements:
        if isinstance(element, ast.EventPattern):
            return True
        if isinstance(element, (ast.Filter, ast.Bind)) and _uses_interval(element.expr):
            return True
        if isinstance(element, (ast.OptionalPattern, ast.MinusPattern, ast.GraphPattern)):
            if _group_is_pattern(element.group):
                return True
        elif (
            (isinstance(element, ast.GroupPattern) and _group_is_pattern(element))
            or (isinstance(element, ast.SubSelect) and is_pattern(element.query))
            or (
                isinstance(element, ast.UnionPattern)
                and any(map(_group_is_pattern, element.alternatives))
            )
        ):
            return True
    return False


def _uses_interval(expr) -> bool:
    return any(isinstance(e, ast.FunctionCall) and e.name in INTERVAL_BUILTINS for e in walk(expr))


def _check_windows(query: ast.Query, pattern: bool) -> None:
    """A window bounds a C-SPARQL query; an EP-SPARQL pattern is bounded by getDURATION()
    instead, so each kind of query must read its streams its own way."""
    for stream in query.streams:
        where = f":{stream.position.line}:{stream.position.column}" if stream.position else ""
        if pattern and stream.window is not None:
            raise QueryError(
                f"{query.source}{where}: stream <{stream.iri}> has a window, but a pattern is "
                "bounded by getDURATION(), not a window (drop the [..])"
            )
        if not pattern and stream.window is None:
            raise QueryError(
                f"{query.source}{where}: stream <{stream.iri}> has no window; add one, e.g. "
                "[RANGE 10s STEP 5s] (only EP-SPARQL patterns read a stream without one)"
            )


def duration_bound_us(where: ast.GroupPattern) -> int | None:
    """The longest a match may last, from the conjuncts ``getDURATION() < d`` or ``<= d`` (or
    ``d > getDURATION()``, ``d >= getDURATION()``) of the WHERE clause's top-level FILTERs;
    None when there is none. A bound elsewhere (inside an OPTIONAL, say) does not bound matches."""
    bounds = []
    for element in where.elements:
        if isinstance(element, ast.Filter):
            for conjunct in _conjuncts(element.expr):
                bound = _duration_bound(conjunct)
                if bound is not None:
                    bounds.append(bound)
    return min(bounds) if bounds else None


def _conjuncts(expr: ast.Expr) -> list[ast.Expr]:
    if isinstance(expr, ast.BinaryOp) and expr.op == "&&":
        return _conjuncts(expr.left) + _conjuncts(expr.right)
    return [expr]


def _duration_bound(expr: ast.Expr) -> int | None:
    if not isinstance(expr, ast.BinaryOp):
        return None
    flipped = {">": "<", ">=": "<="}
    op, left, right = expr.op, expr.left, expr.right
    if op in flipped:
        op, left, right = flipped[op], right, left
    if op not in ("<", "<=") or left != ast.FunctionCall("getduration", ()):
        return None
    if not isinstance(right, ast.Literal) or right.datatype not in DURATION_TYPES:
        return None
    try:  # P1M bounds a match by its longest: 31 days
        return ms_to_us(duration_upper_bound_ms(right.lexical))
    except ValueError:
        return None


def translate_group(group: ast.GroupPattern, graph) -> P.Node:
    """SPARQL 18.2.2.6: fold the elements left to right; filters wrap the whole group."""
    node: P.Node | None = None
    filters: list[ast.Expr] = []

    def join(right: P.Node) -> P.Node:
        return right if node is None else P.Join(node, right)

    for element in group.elements:
        if isinstance(element, ast.TriplesBlock):
            node = join(_triples_block(element, graph))
        elif isinstance(element, ast.Filter):
            filters.append(element.expr)
        elif isinstance(element, ast.OptionalPattern):
            inner, expr = _condition(translate_group(element.group, graph))
            node = P.LeftJoin(node if node is not None else _empty(graph), inner, expr)
        elif isinstance(element, ast.MinusPattern):
            node = P.Minus(
                node if node is not None else _empty(graph), translate_group(element.group, graph)
            )
        elif isinstance(element, ast.UnionPattern):
            alternatives = [translate_group(g, graph) for g in element.alternatives]
            union = alternatives[0]
            for alt in alternatives[1:]:
                union = P.Union_(union, alt)
            node = join(union)
        elif isinstance(element, ast.EventPattern):
            node = join(_translate_event(element, graph))
        elif isinstance(element, ast.GraphPattern):
            node = join(translate_group(element.group, element.name))
        elif isinstance(element, ast.GroupPattern):
            node = join(translate_group(element, graph))
        elif isinstance(element, ast.SubSelect):
            node = join(
                P.ToMultiset(
                    _modifiers(element.query, translate_group(element.query.where, graph))[0]
                )
            )
        elif isinstance(element, ast.Bind):
            node = P.Extend(
                node if node is not None else _empty(graph),
                element.var,
                with_patterns(element.expr, graph),
            )
        elif isinstance(element, ast.InlineData):
            node = join(_values(element))
        else:
            raise UnsupportedConstruct("<query>", type(element).__name__)
    if node is None:
        node = _empty(graph)
    for expr in filters:
        node = P.Filter(with_patterns(expr, graph), node)
    return node


def with_patterns(expr: ast.Expr, graph) -> ast.Expr:
    """``expr`` with each EXISTS pattern in it translated over ``graph`` (SPARQL 18.6): the
    outer solution's bindings join the pattern first (``P.Outer``), so the pattern's own
    filters see them, as they would see the substituted values."""

    def translated(node):
        if not isinstance(node, ast.Exists):
            return None
        inner, condition = _condition(translate_group(node.group, graph))
        seeded: P.Node = P.Join(P.Outer(), inner)
        if condition is not None:
            seeded = P.Filter(condition, seeded)
        return P.Exists(seeded, node.negated, node.position)

    return substitute(expr, translated)


def _triples_block(block: ast.TriplesBlock, graph) -> P.Node:
    """SPARQL 18.2.2.4-18.2.2.5: the block's triple patterns become BGPs, and each path pattern
    that is no triple pattern (the parser made the others triple patterns) a Path joined to
    them. Join being associative and commutative on multisets, the order is free: each set of
    triples that share variables is one BGP (``optimize.order_joins`` orders it), and the BGPs
    and Paths are joined in the order written, except that the next one joined shares a
    variable with those before it where one does, so that ``?s :p ?x . ?x :q* ?y . ?y :r ?z``
    is no product of its two triples. A block without paths is one BGP, as written."""
    triples = [t for t in block.triples if isinstance(t, ast.TriplePattern)]
    paths = [
        P.Path(t.subject, t.path, t.object, graph, t.position)
        for t in block.triples
        if isinstance(t, ast.PathPattern)
    ]
    if not paths:
        return P.BGP(tuple(triples), graph)
    parts: list[tuple[P.Node, set[str]]] = [
        (P.BGP(tuple(c), graph), set().union(*map(P.pattern_vars, c))) for c in _connected(triples)
    ]
    parts += [(p, {n for n in map(P.var_name, (p.subject, p.object)) if n}) for p in paths]
    node, bound = parts.pop(0)
    while parts:
        i = next((i for i, (_, names) in enumerate(parts) if names & bound), 0)
        part, names = parts.pop(i)
        node, bound = P.Join(node, part), bound | names
    return node


def _connected(triples: list[ast.TriplePattern]) -> list[list[ast.TriplePattern]]:
    """The triples in sets that share variables (blank nodes among them), each set in the
    order written, the sets in the order of their first triple."""
    groups: list[tuple[set[str], list[ast.TriplePattern]]] = []
    for triple in triples:
        names = P.pattern_vars(triple)
        joined = [g for g in groups if g[0] & names]
        merged = (names.union(*(g[0] for g in joined)), [t for g in joined for t in g[1]])
        merged[1].append(triple)
        groups = [g for g in groups if g not in joined]
        groups.append(merged)
    order = {id(t): i for i, t in enumerate(triples)}
    ordered = [sorted(ts, key=lambda t: order[id(t)]) for _, ts in groups]
    return sorted(ordered, key=lambda ts: order[id(ts[0])])


_EVENT_JOINS: dict[str, type[P.SeqJoin] | type[P.EqJoin]] = {"SEQ": P.SeqJoin, "EQUALS": P.EqJoin}


def _translate_event(element: ast.EventPattern, graph) -> P.Node:
    """EP-SPARQL 3.2: SEQ → SeqJoin, EQUALS → EqJoin, OPTIONALSEQ → SeqRightJoin (the left
    part optional), EQUALSOPTIONAL → EqLeftJoin (the right part optional). The optional part's
    group filter is the join condition, as OPTIONAL's is (SPARQL 18.2.2.6)."""
    left, right = translate_group(element.left, graph), translate_group(element.right, graph)
    if element.op in _EVENT_JOINS:
        return _EVENT_JOINS[element.op](left, right)
    if element.op == "OPTIONALSEQ":
        left, expr = _condition(left)
        return P.SeqRightJoin(left, right, expr)
    right, expr = _condition(right)
    return P.EqLeftJoin(left, right, expr)


def _condition(node: P.Node) -> tuple[P.Node, ast.Expr | None]:
    """An optional group's plan without its filter, and the filter (None when it has none)."""
    expr = None
    while isinstance(node, P.Filter):
        expr = node.expr if expr is None else ast.BinaryOp("&&", node.expr, expr)
        node = node.input
    return node, expr


def _values(data: ast.InlineData) -> P.Values:
    return P.Values(data.vars, data.rows, data.position)


def _empty(graph) -> P.BGP:
    """The empty group: one solution binding nothing."""
    return P.BGP((), graph)


def _substitute(expr: ast.Expr, mapping: dict) -> ast.Expr:
    return substitute(expr, mapping.get)


def _in_scope(group: ast.GroupPattern) -> set[ast.Var]:
    """Variables a group pattern can bind (for SELECT * and CONSTRUCT)."""
    found: set[ast.Var] = set()
    for element in group.elements:
        if isinstance(element, ast.TriplesBlock):
            for t in element.triples:
                ends = (t.subject, t.object) + (
                    (t.predicate,) if isinstance(t, ast.TriplePattern) else ()
                )
                found |= {x for x in ends if isinstance(x, ast.Var)}
        elif isinstance(element, (ast.OptionalPattern, ast.GroupPattern)):
            found |= _in_scope(
                element.group if isinstance(element, ast.OptionalPattern) else element
            )
        elif isinstance(element, ast.UnionPattern):
            for alt in element.alternatives:
                found |= _in_scope(alt)
        elif isinstance(element, ast.EventPattern):
            found |= _in_scope(element.left) | _in_scope(element.right)
        elif isinstance(element, ast.GraphPattern):
            found |= _in_scope(element.group)
            if isinstance(element.name, ast.Var):
                found.add(element.name)
        elif isinstance(element, ast.Bind):
            found.add(element.var)
        elif isinstance(element, ast.InlineData):
            found |= set(element.vars)
        elif isinstance(element, ast.SubSelect):
            sub = element.query
            found |= (
                {i.var for i in sub.projection}
                if sub.projection is not None
                else _in_scope(sub.where)
            )
    return found


def _template_vars(template) -> set[ast.Var]:
    return {
        x for t in template for x in (t.subject, t.predicate, t.object) if isinstance(x, ast.Var)
    }


def _default_name(source: str) -> str:
    name = source.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[0] if "." in name else name
