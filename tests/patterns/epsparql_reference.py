"""A brute-force EP-SPARQL evaluator, written from the paper's definitions (Anicic et al., WWW
2011, section 3.2) in plain Python, to check the Spark evaluation against.

It walks the algebra plan and enumerates every combination of events: a triple pattern is
matched against each event (interval [t, t]) and each background triple (no interval); Join,
SeqJoin and EqJoin pair every left solution with every right one. OPTIONALSEQ and
EQUALSOPTIONAL count a right solution only when the combined interval lasts at most the
query's duration bound (``bound_us``), in the joined branch and in the Diff test: the stated
restriction of ``rsp_jobs.spark.events`` that makes an optional part's absence decidable. No Spark, no shared code with
``rsp_jobs.spark``: only the plan and the N-Triples term helpers.
"""
from __future__ import annotations

import hashlib
import operator
from decimal import Decimal
from typing import NamedTuple, Optional

from rdflib import Literal

from rsp_jobs.algebra import plan as P
from rsp_jobs.language import ast
from rsp_jobs.language.parser import parse_duration
from rsp_jobs.terms import ast_to_nt, nt_to_json, nt_to_rdflib

XSD = ast.XSD
DURATIONS = {XSD + "duration", XSD + "dayTimeDuration"}


class Event(NamedTuple):
    s: str
    p: str
    o: str
    t: int  # µs
    frame: str
    end: Optional[int] = None  # derived events span [t, end]


class Sol(NamedTuple):
    mu: frozenset  # of (var, N-Triples term)
    ta: Optional[int]
    tw: Optional[int]
    ev: frozenset


def evaluate(query: P.ContinuousQuery, events: list[Event], background: list[tuple[str, str, str]] = (),
             after_us=None, until_us=None, rules=(), max_iterations=8) -> list[dict]:
    """The matches as ``rsp_jobs.spark.events.evaluate_events`` reports them."""
    events = list(events)
    derived: dict[tuple, set] = {}
    for _ in range(max_iterations if rules else 0):
        current = events + [Event(s, p, o, ta, "", tw) for (s, p, o, ta, tw) in derived]
        found: dict[tuple, set] = {}
        for rule in rules:
            for m in _report(rule, _eval(rule.plan, current, derived, background, rule.bound_us), None, None):
                for line in m["triples"]:
                    s, p, rest = line.split(" ", 2)
                    found.setdefault((s, p, rest[:-2], m["start_us"], m["end_us"]), set()).update(m["events"])
        grew = any(k not in derived or not v <= derived[k] for k, v in found.items())
        for k, v in found.items():
            derived.setdefault(k, set()).update(v)
        if not grew:
            break
    else:
        if rules:
            raise RuntimeError("no fixpoint")
    current = events + [Event(s, p, o, ta, "", tw) for (s, p, o, ta, tw) in derived]
    return _report(query, _eval(query.plan, current, derived, background, query.bound_us), after_us, until_us)


def _report(query, sols, after_us, until_us) -> list[dict]:
    names = [v.name for v in query.variables]
    merged: dict[tuple, set] = {}
    for sol in sols:
        if sol.tw is None or (after_us is not None and sol.tw <= after_us) or (until_us is not None and sol.tw > until_us):
            continue
        mu = dict(sol.mu)
        key = (sol.tw, sol.ta, tuple(sorted((n, mu[n]) for n in names if n in mu)))
        merged.setdefault(key, set()).update(sol.ev)
    out = []
    for (tw, ta, bound), ev in sorted(merged.items()):
        match = {"start_us": ta, "end_us": tw, "events": sorted(ev)}
        if query.form == "CONSTRUCT":
            match["triples"] = _instantiate(query, ta, tw, dict(bound))
        else:
            match["bindings"] = {n: nt_to_json(v) for n, v in bound}
        out.append(match)
    if query.form == "CONSTRUCT":
        seen: dict[tuple, dict] = {}
        for m in out:
            key = (m["end_us"], m["start_us"], tuple(m["triples"]))
            if key in seen:
                seen[key]["events"] = sorted(set(seen[key]["events"]) | set(m["events"]))
            elif m["triples"]:
                seen[key] = m
        out = list(seen.values())
    return out


def _instantiate(query, ta, tw, nt) -> list[str]:
    key = "|".join([query.name, str(ta), str(tw), *[f"{k}={v}" for k, v in sorted(nt.items())]])
    stamp = hashlib.sha1(key.encode()).hexdigest()[:16]

    def pos(term):
        if isinstance(term, ast.Var):
            return nt.get(term.name)
        if isinstance(term, ast.BNode):
            return f"_:b{stamp}_{term.label}"
        return ast_to_nt(term)

    lines = set()
    for t in query.template:
        s, p, o = pos(t.subject), pos(t.predicate), pos(t.object)
        if None not in (s, p, o) and not s.startswith('"') and p.startswith("<"):
            lines.add(f"{s} {p} {o} .")
    return sorted(lines)


# ------------------------------------------------------------------------------ the algebra

def _eval(node, events, derived, background, bound) -> set[Sol]:
    """``bound``: the query's duration bound (µs), None when it has none."""
    go = lambda n: _eval(n, events, derived, background, bound)  # noqa: E731
    if isinstance(node, P.BGP):
        sols = {Sol(frozenset(), None, None, frozenset())}
        for triple in node.triples:
            sols = _join(sols, _match(triple, events, derived, background), "join")
        return sols
    if isinstance(node, P.Join):
        return _join(go(node.left), go(node.right), "join")
    if isinstance(node, P.SeqJoin):
        return _join(go(node.left), go(node.right), "seq")
    if isinstance(node, P.EqJoin):
        return _join(go(node.left), go(node.right), "eq")
    if isinstance(node, (P.LeftJoin, P.SeqLeftJoin, P.EqLeftJoin)):
        kind = {P.LeftJoin: "join", P.SeqLeftJoin: "seq", P.EqLeftJoin: "eq"}[type(node)]
        left, right = go(node.left), go(node.right)

        def counts(j: Sol) -> bool:
            within = kind == "join" or bound is None or j.ta is None or j.tw - j.ta <= bound
            return within and (node.expr is None or _true(node.expr, j))

        joined = {s for s in _join(left, right, kind) if counts(s)}
        # Diff: the left solutions that no right one joins with under expr (and within the bound)
        alone = {l for l in left if not any(counts(j) for j in _join({l}, right, kind))}
        return joined | alone
    if isinstance(node, P.Union_):
        return go(node.left) | go(node.right)
    if isinstance(node, P.Filter):
        return {s for s in go(node.input) if _true(node.expr, s)}
    if isinstance(node, P.Extend):
        out = set()
        for s in go(node.input):
            value = _value(node.expr, s)
            out.add(s._replace(mu=s.mu | {(node.var.name, value)}) if value is not None else s)
        return out
    if isinstance(node, P.Minus):
        right = go(node.right)
        return {l for l in go(node.left) if not any(
            _compatible(l.mu, r.mu) and set(dict(l.mu)) & set(dict(r.mu)) for r in right)}
    if isinstance(node, P.Project):
        names = {v.name for v in node.vars}
        return {s._replace(mu=frozenset((k, v) for k, v in s.mu if k in names)) for s in go(node.input)}
    if isinstance(node, P.Distinct):
        return go(node.input)
    raise NotImplementedError(type(node).__name__)


def _match(triple, events, derived, background) -> set[Sol]:
    out = set()
    candidates = [((e.s, e.p, e.o), e.t, e.t if e.end is None else e.end,
                   frozenset([e.frame]) if e.end is None else frozenset(derived[(e.s, e.p, e.o, e.t, e.end)]))
                  for e in events]
    candidates += [(t, None, None, frozenset()) for t in background]
    for spo, ta, tw, ev in candidates:
        mu = {}
        ok = True
        for term, value in zip((triple.subject, triple.predicate, triple.object), spo):
            name = term.name if isinstance(term, ast.Var) else "_bn_" + term.label if isinstance(term, ast.BNode) else None
            if name is None:
                ok = ok and ast_to_nt(term) == value
            elif mu.setdefault(name, value) != value:
                ok = False
        if ok:
            out.add(Sol(frozenset(mu.items()), ta, tw, ev))
    return out


def _compatible(a, b) -> bool:
    da = dict(a)
    return all(da.get(k, v) == v for k, v in b)


def _join(left, right, kind) -> set[Sol]:
    """Join [min ta, max tw]; SeqJoin tw1 < ta2 → [ta1, tw2]; EqJoin equal intervals. A timeless
    side (background only) meets every temporal condition."""
    out = set()
    for l in left:
        for r in right:
            if not _compatible(l.mu, r.mu):
                continue
            timed = l.ta is not None and r.ta is not None
            if kind == "seq":
                if timed and not l.tw < r.ta:
                    continue
                ta, tw = (l.ta if l.ta is not None else r.ta), (r.tw if r.tw is not None else l.tw)
            elif kind == "eq":
                if timed and (l.ta, l.tw) != (r.ta, r.tw):
                    continue
                ta, tw = (l.ta if l.ta is not None else r.ta), (l.tw if l.tw is not None else r.tw)
            else:
                starts = [t for t in (l.ta, r.ta) if t is not None]
                ends = [t for t in (l.tw, r.tw) if t is not None]
                ta, tw = (min(starts) if starts else None), (max(ends) if ends else None)
            out.add(Sol(l.mu | r.mu, ta, tw, l.ev | r.ev))
    return out


# ------------------------------------------------------------------------------ expressions
# Values: Python numbers, ("duration", µs), ("time", µs), str (N-Triples of other terms), bool.

_CMP = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt, "<=": operator.le,
        ">=": operator.ge}


def _true(expr, sol) -> bool:
    try:
        return bool(_eval_expr(expr, sol))
    except (TypeError, KeyError, ValueError, ZeroDivisionError):
        return False  # a SPARQL error


def _eval_expr(expr, sol):
    if isinstance(expr, ast.Var):
        return _from_nt(dict(sol.mu)[expr.name])
    if isinstance(expr, ast.Literal):
        if expr.datatype in DURATIONS:
            return ("duration", parse_duration(expr.lexical) * 1000)
        return _from_nt(ast_to_nt(expr))
    if isinstance(expr, ast.IRI):
        return ast_to_nt(expr)
    if isinstance(expr, ast.UnaryOp):
        value = _eval_expr(expr.operand, sol)
        return (not value) if expr.op == "!" else (-value if expr.op == "-" else value)
    if isinstance(expr, ast.FunctionCall):
        if expr.name == "bound":
            return expr.args[0].name in dict(sol.mu)
        if expr.name == "getduration":
            return ("duration", sol.tw - sol.ta)
        if expr.name == "getstarttime":
            return ("time", sol.ta)
        if expr.name == "getendtime":
            return ("time", sol.tw)
        raise NotImplementedError(expr.name)
    if isinstance(expr, ast.BinaryOp):
        if expr.op == "&&":
            return _logic(expr, sol, all)
        if expr.op == "||":
            return _logic(expr, sol, any)
        a, b = _eval_expr(expr.left, sol), _eval_expr(expr.right, sol)
        if expr.op in _CMP:
            if isinstance(a, tuple) != isinstance(b, tuple) or (isinstance(a, tuple) and a[0] != b[0]):
                if expr.op in ("<", ">", "<=", ">="):
                    raise TypeError("incomparable")
            if isinstance(a, bool) or isinstance(b, bool):
                if type(a) is not type(b):
                    raise TypeError("incomparable")
            return _CMP[expr.op](a, b)
        if isinstance(a, (tuple, str, bool)) or isinstance(b, (tuple, str, bool)):
            raise TypeError("not numbers")
        return {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}[expr.op](a, b)
    raise NotImplementedError(type(expr).__name__)


def _logic(expr, sol, combine):
    """SPARQL 17.2: an error on one side is hidden when the other side decides."""
    results = []
    for side in (expr.left, expr.right):
        try:
            results.append(bool(_eval_expr(side, sol)))
        except (TypeError, KeyError, ValueError, ZeroDivisionError):
            results.append(None)
    if combine is all and False in results or combine is any and True in results:
        return combine is any
    if None in results:
        raise TypeError("error")
    return combine(results)


def _from_nt(text: str):
    term = nt_to_rdflib(text)
    if isinstance(term, Literal) and term.datatype is not None:
        value = term.toPython()
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float, Decimal)):
            return float(value)
    return text


def _value(expr, sol) -> Optional[str]:
    """A BIND's value as N-Triples (what the tests BIND: constants and variables)."""
    if isinstance(expr, (ast.IRI, ast.Literal)):
        return ast_to_nt(expr)
    if isinstance(expr, ast.Var):
        return dict(sol.mu).get(expr.name)
    raise NotImplementedError(type(expr).__name__)
