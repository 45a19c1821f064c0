"""Event SELECTs of one group of rules that differ only in an IRI of their triple patterns
(``?o a :E1 ; :by ?s`` beside ``?o a :E2 ; :by ?s``) are evaluated once, with a variable in
that place restricted to the IRIs, and their solutions are split by its value among the
events that asked for each IRI. DOTR §5 merges its benchmark's queries the same way ("SPARQL
queries that differ only for their FILTER part"); the benchmark's ten sequence rules over
eleven event types then evaluate one SELECT per instant, not eleven, and a Spark job's stages
(some ten exchanges per SELECT) are what bound the facts job on a small machine.

Why the split gives each event exactly its own solutions (as a bag): the IRI stands in a triple
pattern of a basic graph pattern every solution must match, reached from the root only through
operators that act on each solution alone or keep a solution whatever the extra variable
binds: Project (which keeps the variable), DISTINCT (distinct with the variable, then split,
is distinct per IRI), FILTER and BIND (their expressions cannot read the fresh variable), Join,
the left side of OPTIONAL and MINUS, a subquery's multiset and ORDER BY. Under GROUP BY, LIMIT,
UNION or the right of OPTIONAL/MINUS a solution's fate depends on the others, so a difference
there keeps the SELECTs apart. The solutions whose variable holds IRI ``x`` are then those of
the SELECT written with ``x``, each once, and ``spark/dotr.facts_frame`` keys them as it keys
that SELECT's own (the variable is not one of the fact's bindings)."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.dotr import RuleSetPlan, SharedEvent
from rsp_jobs.language import ast
from rsp_jobs.tree import walk

# the fields of each operator through which a solution's own triples pass unjudged by others
_THROUGH = {
    P.Project: ("input",),
    P.Distinct: ("input",),
    P.Filter: ("input",),
    P.Extend: ("input",),
    P.Join: ("left", "right"),
    P.LeftJoin: ("left",),
    P.Minus: ("left",),
    P.ToMultiset: ("input",),
    P.OrderBy: ("input",),
}

Path = tuple  # field names and tuple indices from a plan's root to a node


def share_events_differing_in_an_iri(plan: RuleSetPlan) -> RuleSetPlan:
    return replace(plan, groups=tuple(replace(g, events=_merged(g.events)) for g in plan.groups))


def _merged(events: tuple[SharedEvent, ...]) -> tuple[SharedEvent, ...]:
    """Each event whose query differs from an earlier one's in one IRI (at one or more places)
    joins that one's cluster; a cluster of several becomes one split event, in place of its first."""
    clusters: list[tuple[list[SharedEvent], tuple[Path, ...] | None]] = []
    for event in events:
        for i, (members, places) in enumerate(clusters):
            found = _iri_places(members[0], event)
            if found is not None and places in (None, found):
                members.append(event)
                clusters[i] = (members, found)
                break
        else:
            clusters.append(([event], None))
    return tuple(
        members[0] if places is None else _split(members, places) for members, places in clusters
    )


def _iri_places(a: SharedEvent, b: SharedEvent) -> tuple[Path, ...] | None:
    """Where ``a``'s query has one IRI and ``b``'s another, if they differ nowhere else and
    each place is one ``_THROUGH`` lets through; else None."""
    if a.split is not None or b.split is not None or a.query.variables != b.query.variables:
        return None
    found = _differences(a.query.plan, b.query.plan, ())
    if not found or any(p is None for p in found):
        return None
    if len({x for _, x, _ in found}) != 1 or len({y for _, _, y in found}) != 1:
        return None
    return tuple(path for path, _, _ in found)


def _differences(a, b, path: Path) -> list:
    """``(path, a_iri, b_iri)`` per triple-pattern position where the plans hold different
    IRIs; a None in the list marks a difference anywhere else."""
    if a == b:
        return []
    if type(a) is not type(b):
        return [None]
    if isinstance(a, P.BGP):
        if a.graph != b.graph or len(a.triples) != len(b.triples):
            return [None]
        out = []
        for i, (s, t) in enumerate(zip(a.triples, b.triples)):
            for name in ("subject", "predicate", "object"):
                x, y = getattr(s, name), getattr(t, name)
                if x != y:
                    both = isinstance(x, ast.IRI) and isinstance(y, ast.IRI)
                    out.append(((*path, "triples", i, name), x, y) if both else None)
        return out
    through = _THROUGH.get(type(a), ())
    out = []
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x != y:
            out += _differences(x, y, (*path, f.name)) if f.name in through else [None]
    return out


def _split(members: list[SharedEvent], places: tuple[Path, ...]) -> SharedEvent:
    """One event for the cluster: the first member's query with a fresh variable at
    ``places``, kept by every Project above them and restricted to the members' IRIs right
    above the first place's BGP; each member's uses, with its IRI."""
    first = members[0].query
    var = _fresh(first.plan)
    iris = tuple(_at(m.query.plan, places[0]) for m in members)
    plan = first.plan
    for place in places:
        plan = _replace_at(plan, place, lambda _: var, var)
    bgp = places[0][: places[0].index("triples")]

    def restricted(node):
        return P.Filter(ast.In(var, tuple(dict.fromkeys(iris))), node)

    plan = _replace_at(plan, bgp, restricted, var)
    known = [m.query.predicates for m in members if m.query.predicates is not None]
    predicates = frozenset[str]().union(*known) if len(known) == len(members) else None
    query = replace(first, plan=plan, variables=(*first.variables, var), predicates=predicates)
    uses = tuple(u for m in members for u in m.uses)
    by_use = tuple(f"<{iri.value}>" for m, iri in zip(members, iris) for _ in m.uses)
    return SharedEvent(uses, query, split=var.name, iris=by_use)


def _fresh(plan) -> ast.Var:
    taken = {n.name for n in walk(plan) if isinstance(n, ast.Var)}
    name = "_iri"
    while name in taken:
        name += "_"
    return ast.Var(name)


def _at(node, path: Path):
    for step in path:
        node = node[step] if isinstance(step, int) else getattr(node, step)
    return node


def _replace_at(node, path: Path, fn, var: ast.Var):
    """``node`` with the node at ``path`` replaced by ``fn(it)``, and ``var`` added to every
    Project on the way (the split needs it in the solutions)."""
    if not path:
        return fn(node)
    step, rest = path[0], path[1:]
    if isinstance(step, int):
        return (*node[:step], _replace_at(node[step], rest, fn, var), *node[step + 1 :])
    changes = {step: _replace_at(getattr(node, step), rest, fn, var)}
    if isinstance(node, P.Project) and var not in node.vars:
        changes["vars"] = (*node.vars, var)
    return replace(node, **changes)
