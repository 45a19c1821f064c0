"""A brute-force EP-SPARQL evaluator written from the paper's definitions (Anicic, Fodor, Rudolph,
Stojanovic, WWW 2011, section 3.2), to check the engine against.

It reads the query's syntax tree (``rsp_jobs.language.parser``), never the engine's algebra or
Spark code, and translates each operator itself, as section 3.2 maps them:

    seq → SeqJoin,  equals → EqJoin,  optionalseq → SeqRightJoin,  equalsoptional → EqLeftJoin,
    juxtaposition → Join,  union → Union,  optional → LeftJoin.

A solution is a triple ⟨μ, tα, tω⟩ and every operator returns a *set* of them, enumerated
over every combination of events. Where the paper is silent or contradicts itself, this file
takes the decisions docs/decisions/ep-sparql.md lists (and ``rsp_jobs.spark.events``
implements), each marked DECISION below:

- a background triple holds at no particular time: its solution has no interval (None), meets
  every temporal condition, and leaves the interval of what it joins with unchanged;
- LeftJoin's time condition is t'ω <= tω, not the paper's t'ω < tω (which would contradict the
  paper's own downward compatibility: over a stream where everything has one time stamp, plain
  OPTIONAL could never bind);
- a left-join's filter F sees the interval of the combination μ ⋈ μ' in both branches (the paper
  writes σ with μ's interval in LeftJoin and in SeqRightJoin's second branch, but the combined
  one in SeqRightJoin's first branch, Filter(F, SeqJoin(...)));
- the filter of OPTIONALSEQ is the one written in its optional (left) group, as OPTIONAL takes
  the filter of its optional group (SPARQL 18.2.2.6); EQUALSOPTIONAL takes its right group's;
- SELECT projects the set of solutions to a bag (two solutions with the same projection give two
  rows); DISTINCT merges rows with the same bindings *and* interval;
- getDURATION() compared with a duration that has years or months compares getENDTIME() with
  getSTARTTIME() plus that duration on the calendar (XSD 1.1 appendix E).
"""
from __future__ import annotations

import calendar
import hashlib
import operator
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import NamedTuple, Optional

from rdflib import Literal

from rsp_jobs.language import ast
from rsp_jobs.language.parser import parse_query
from rsp_jobs.terms import nt_to_json, nt_to_rdflib

XSD = ast.XSD
DURATIONS = {XSD + "duration", XSD + "dayTimeDuration", XSD + "yearMonthDuration"}
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class Event(NamedTuple):
    """A triple occurrence ⟨⟨s, p, o⟩, t, end⟩ (N-Triples terms, µs); ``end`` None: atomic."""

    s: str
    p: str
    o: str
    t: int
    frame: str
    end: Optional[int] = None
    sources: frozenset = frozenset()  # a derived event's: the stream frames behind it


class Sol(NamedTuple):
    mu: frozenset  # of (variable, N-Triples term)
    ta: Optional[int]
    tw: Optional[int]
    ev: frozenset  # the frames of the events used (provenance, not part of the solution)


class Diverges(Exception):
    pass


def evaluate(query, events, background=(), after_us=None, until_us=None, rules=(), max_rounds=200) -> list[dict]:
    """The matches of ``query`` (a compiled query: its text is parsed again here, or a text)
    whose end lies in (after_us, until_us], reported as ``rsp_jobs.spark.events`` reports
    them. ``rules``: CONSTRUCT queries closing the stream under their output (Q-closure)."""
    q = _parsed(query)
    stream = closure([_parsed(r) for r in rules], list(events), list(background), max_rounds)
    return report(q, solutions(q, stream, background), after_us, until_us)


def _parsed(query) -> ast.Query:
    if isinstance(query, ast.Query):
        return query
    if isinstance(query, str):
        return parse_query(query, "<reference>")
    return parse_query(query.text, query.source)


def closure(rules, events, background, max_rounds=200) -> list[Event]:
    """closQ(S) of section 3.2: the smallest stream containing S and every rule's output over
    it, by naive iteration (each round evaluates every rule over all that is known)."""
    derived: dict[tuple, set] = {}
    for _ in range(max_rounds if rules else 1):
        stream = events + [Event(s, p, o, ta, "", tw, frozenset(ev)) for (s, p, o, ta, tw), ev in derived.items()]
        found: dict[tuple, set] = {}
        for rule in rules:
            for m in report(rule, solutions(rule, stream, background, derived), None, None):
                for line in m["triples"]:
                    s, p, rest = line.split(" ", 2)
                    found.setdefault((s, p, rest[:-2], m["start_us"], m["end_us"]), set()).update(m["events"])
        if all(k in derived and v <= derived[k] for k, v in found.items()):
            return stream
        for k, v in found.items():
            derived.setdefault(k, set()).update(v)
    raise Diverges(f"no fixpoint in {max_rounds} rounds")


# ------------------------------------------------------------------------------ reporting

def report(q: ast.Query, sols: set[Sol], after_us, until_us) -> list[dict]:
    kept = [s for s in sols if s.tw is not None and (after_us is None or s.tw > after_us)
            and (until_us is None or s.tw <= until_us)]
    if q.form == "CONSTRUCT":
        merged: dict[tuple, set] = {}
        for s in kept:
            triples = tuple(_instantiate(q, s))
            if triples:
                merged.setdefault((s.tw, s.ta, triples), set()).update(s.ev)
        return [{"start_us": ta, "end_us": tw, "events": sorted(ev), "triples": list(triples)}
                for (tw, ta, triples), ev in sorted(merged.items())]
    names = [i.var.name for i in q.projection] if q.projection is not None else sorted(_in_scope(q.where))
    rows = []
    for s in kept:
        mu = dict(_extend_select(q, s).mu)
        rows.append(((s.tw, s.ta, tuple(sorted((n, mu[n]) for n in names if n in mu))), s.ev))
    if q.distinct:
        merged = {}
        for key, ev in rows:
            merged.setdefault(key, set()).update(ev)
        rows = list(merged.items())
    rows.sort(key=lambda r: (r[0], sorted(r[1])))
    return [{"start_us": ta, "end_us": tw, "events": sorted(ev), "bindings": {n: nt_to_json(v) for n, v in bound}}
            for (tw, ta, bound), ev in rows]


def _extend_select(q: ast.Query, s: Sol) -> Sol:
    for item in q.projection or ():
        if item.expr is not None:
            s = _bind(s, item.var.name, item.expr)
    return s


def _instantiate(q: ast.Query, s: Sol) -> list[str]:
    """SPARQL 16.2: blank nodes fresh per solution (named after the solution's interval and
    bindings, so the same solution found again gives the same nodes); triples with unbound or
    ill-formed positions left out."""
    mu = dict(s.mu)
    used = sorted((k, v) for k, v in mu.items() if not k.startswith("_:"))
    stamp = hashlib.sha1("|".join([_name(q), str(s.ta), str(s.tw), *[f"{k}={v}" for k, v in used]])
                         .encode()).hexdigest()[:16]

    def pos(term):
        if isinstance(term, ast.Var):
            return mu.get(term.name)
        if isinstance(term, ast.BNode):
            return f"_:b{stamp}_{term.label}"
        return ast.to_nt(term)

    lines = set()
    for t in q.template:
        s_, p, o = pos(t.subject), pos(t.predicate), pos(t.object)
        if None not in (s_, p, o) and not s_.startswith('"') and p.startswith("<"):
            lines.add(f"{s_} {p} {o} .")
    return sorted(lines)


def _name(q: ast.Query) -> str:
    if q.registration is not None:
        return q.registration.name
    return q.source.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _in_scope(group: ast.GroupPattern) -> set[str]:
    names = set()
    for e in group.elements:
        if isinstance(e, ast.TriplesBlock):
            names |= {x.name for t in e.triples for x in (t.subject, t.predicate, t.object) if isinstance(x, ast.Var)}
        elif isinstance(e, ast.GroupPattern):
            names |= _in_scope(e)
        elif isinstance(e, ast.OptionalPattern):
            names |= _in_scope(e.group)
        elif isinstance(e, ast.UnionPattern):
            for alt in e.alternatives:
                names |= _in_scope(alt)
        elif isinstance(e, ast.EventPattern):
            names |= _in_scope(e.left) | _in_scope(e.right)
        elif isinstance(e, ast.Bind):
            names.add(e.var.name)
    return names


# ------------------------------------------------------------------------------ the algebra

def solutions(q: ast.Query, stream: list[Event], background, derived=None) -> set[Sol]:
    return _Eval(stream, list(background)).group(q.where)


class _Eval:
    def __init__(self, stream: list[Event], background: list[tuple]):
        self.occurrences = [((e.s, e.p, e.o), e.t, e.t if e.end is None else e.end,
                             frozenset([e.frame]) if e.frame else e.sources) for e in stream]
        self.occurrences += [(t, None, None, frozenset()) for t in background]

    def group(self, group: ast.GroupPattern) -> set[Sol]:
        """SPARQL 18.2.2.6: elements folded left to right, the group's filters over the result."""
        acc = {Sol(frozenset(), None, None, frozenset())}
        for e in group.elements:
            if isinstance(e, ast.TriplesBlock):
                acc = join(acc, self.bgp(e.triples))
            elif isinstance(e, ast.GroupPattern):
                acc = join(acc, self.group(e))
            elif isinstance(e, ast.OptionalPattern):
                inner, f = _split_filters(e.group)
                acc = left_join(acc, self.group(inner), f)
            elif isinstance(e, ast.UnionPattern):
                acc = join(acc, set().union(*(self.group(alt) for alt in e.alternatives)))
            elif isinstance(e, ast.EventPattern):
                acc = join(acc, self.event(e))
            elif isinstance(e, ast.Bind):
                acc = {_bind(s, e.var.name, e.expr) for s in acc}
            elif isinstance(e, ast.SubSelect):
                acc = join(acc, self.subselect(e.query))
            elif not isinstance(e, ast.Filter):
                raise NotImplementedError(type(e).__name__)
        for e in group.elements:
            if isinstance(e, ast.Filter):
                acc = {s for s in acc if true(e.expr, s)}
        return acc

    def event(self, e: ast.EventPattern) -> set[Sol]:
        if e.op == "SEQ":
            return seq_join(self.group(e.left), self.group(e.right))
        if e.op == "EQUALS":
            return eq_join(self.group(e.left), self.group(e.right))
        if e.op == "OPTIONALSEQ":  # SeqRightJoin(Ψ', Ψ, F): the left part is the optional one
            optional, f = _split_filters(e.left)
            return seq_right_join(self.group(optional), self.group(e.right), f)
        if e.op == "EQUALSOPTIONAL":
            optional, f = _split_filters(e.right)
            return eq_left_join(self.group(e.left), self.group(optional), f)
        raise NotImplementedError(e.op)

    def subselect(self, q: ast.Query) -> set[Sol]:
        names = {i.var.name for i in q.projection} if q.projection is not None else _in_scope(q.where)
        out = set()
        for s in self.group(q.where):
            s = _extend_select(q, s)
            out.add(s._replace(mu=frozenset((k, v) for k, v in s.mu if k in names)))
        return out

    def bgp(self, triples) -> set[Sol]:
        """BGP(list of triples): μ over the triples' variables with every instantiated triple
        occurring in S; tα the least start, tω the greatest end (timeless ones left out)."""
        acc = {Sol(frozenset(), None, None, frozenset())}
        for t in triples:
            acc = join(acc, self.triple(t))
        return acc

    def triple(self, t: ast.TriplePattern) -> set[Sol]:
        out = set()
        for spo, ta, tw, ev in self.occurrences:
            mu, ok = {}, True
            for term, value in zip((t.subject, t.predicate, t.object), spo):
                if isinstance(term, (ast.Var, ast.BNode)):
                    name = term.name if isinstance(term, ast.Var) else "_:" + term.label
                    ok = ok and mu.setdefault(name, value) == value
                else:
                    ok = ok and ast.to_nt(term) == value
            if ok:
                out.add(Sol(frozenset(mu.items()), ta, tw, ev))
        return out


def _split_filters(group: ast.GroupPattern):
    """A group without its filters, and their conjunction (None when it has none)."""
    filters = [e.expr for e in group.elements if isinstance(e, ast.Filter)]
    rest = ast.GroupPattern(tuple(e for e in group.elements if not isinstance(e, ast.Filter)))
    expr = None
    for f in filters:
        expr = f if expr is None else ast.BinaryOp("&&", expr, f)
    return rest, expr


def compatible(a: Sol, b: Sol) -> bool:
    da = dict(a.mu)
    return all(da.get(k, v) == v for k, v in b.mu)


def combine(a: Sol, b: Sol) -> Sol:
    """⟨μ, tα, tω⟩ ⋈ ⟨μ', t'α, t'ω⟩ = ⟨μ ∪ μ', min(tα, t'α), max(tω, t'ω)⟩ (timeless sides left out)."""
    starts = [t for t in (a.ta, b.ta) if t is not None]
    ends = [t for t in (a.tw, b.tw) if t is not None]
    return Sol(a.mu | b.mu, min(starts) if starts else None, max(ends) if ends else None, a.ev | b.ev)


def _before(first: Sol, then: Sol) -> bool:
    """first.tω < then.tα; a timeless side meets it (DECISION)."""
    return first.tw is None or then.ta is None or first.tw < then.ta


def _same_interval(a: Sol, b: Sol) -> bool:
    return a.ta is None or b.ta is None or (a.ta, a.tw) == (b.ta, b.tw)


def join(left, right) -> set[Sol]:
    return {combine(a, b) for a in left for b in right if compatible(a, b)}


def seq_join(left, right) -> set[Sol]:
    """SeqJoin(Ψ, Ψ'): compatible pairs with tω < t'α."""
    return {combine(a, b) for a in left for b in right if compatible(a, b) and _before(a, b)}


def eq_join(left, right) -> set[Sol]:
    """EqJoin(Ψ, Ψ'): compatible pairs with tα = t'α and tω = t'ω."""
    return {combine(a, b) for a in left for b in right if compatible(a, b) and _same_interval(a, b)}


def _passes(f, s: Sol) -> bool:
    return f is None or true(f, s)


def left_join(left, right, f) -> set[Sol]:
    """LeftJoin(Ψ, Ψ', F): the combinations with F true and t'ω <= tω (DECISION: the paper's
    t'ω < tω made non-strict), and each μ no such μ' exists for."""
    def counts(a, b):
        return compatible(a, b) and (a.tw is None or b.tw is None or b.tw <= a.tw) and _passes(f, combine(a, b))
    out = {combine(a, b) for a in left for b in right if counts(a, b)}
    return out | {a for a in left if not any(counts(a, b) for b in right)}


def seq_right_join(optional, mandatory, f) -> set[Sol]:
    """SeqRightJoin(Ψ', Ψ, F): Filter(F, SeqJoin(Ψ', Ψ)), and every μ ∈ Ψ for which no
    compatible μ' ∈ Ψ' has F true and tα > t'ω."""
    def counts(b, a):  # b from Ψ' (earlier, optional), a from Ψ
        return compatible(b, a) and _before(b, a) and _passes(f, combine(b, a))
    out = {combine(b, a) for b in optional for a in mandatory if counts(b, a)}
    return out | {a for a in mandatory if not any(counts(b, a) for b in optional)}


def eq_left_join(left, right, f) -> set[Sol]:
    """EqLeftJoin(Ψ, Ψ', F): Filter(F, EqJoin(Ψ, Ψ')), and every μ ∈ Ψ for which no compatible
    μ' ∈ Ψ' has F true over the same interval."""
    def counts(a, b):
        return compatible(a, b) and _same_interval(a, b) and _passes(f, combine(a, b))
    out = {combine(a, b) for a in left for b in right if counts(a, b)}
    return out | {a for a in left if not any(counts(a, b) for b in right)}


def _bind(s: Sol, name: str, expr) -> Sol:
    """Extend: the value as a term; an error leaves the variable unbound (SPARQL 18.5)."""
    if name in dict(s.mu):
        raise ValueError(f"?{name} is already bound")
    try:
        term = _to_nt(_value(expr, s))
    except (TypeError, KeyError, ValueError, ArithmeticError):
        return s
    return s._replace(mu=s.mu | {(name, term)})


# ------------------------------------------------------------------------------ expressions
# Values: bool, int, Decimal, float, ("duration", months, µs, anchor µs or None),
# ("time", µs), or the N-Triples text of any other term.

def true(expr, s: Sol) -> bool:
    try:
        return _ebv(_value(expr, s))
    except (TypeError, KeyError, ValueError, ArithmeticError):
        return False  # an error: the filter rejects


def _ebv(v) -> bool:
    if isinstance(v, (bool, int, float, Decimal)):
        return bool(v)
    raise TypeError("no effective boolean value")


_CMP = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}
_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def _value(expr, s: Sol):
    if isinstance(expr, ast.Var):
        return _from_nt(dict(s.mu)[expr.name])
    if isinstance(expr, ast.Literal):
        return _from_nt(ast.to_nt(expr))
    if isinstance(expr, ast.IRI):
        return ast.to_nt(expr)
    if isinstance(expr, ast.UnaryOp):
        v = _value(expr.operand, s)
        if expr.op == "!":
            return not _ebv(v)
        _number(v)
        return -v if expr.op == "-" else v
    if isinstance(expr, ast.FunctionCall):
        if expr.name == "bound":
            return expr.args[0].name in dict(s.mu)
        if s.ta is None:
            raise ValueError("a timeless solution has no interval")
        if expr.name == "getduration":
            return ("duration", 0, s.tw - s.ta, s.ta)
        if expr.name == "getstarttime":
            return ("time", s.ta)
        if expr.name == "getendtime":
            return ("time", s.tw)
        raise NotImplementedError(expr.name)
    if isinstance(expr, ast.BinaryOp):
        if expr.op in ("&&", "||"):
            return _logic(expr, s)
        a, b = _value(expr.left, s), _value(expr.right, s)
        if expr.op in _CMP:
            return _compare(expr.op, a, b)
        _number(a), _number(b)
        if expr.op == "/":
            if isinstance(a, int) and isinstance(b, int):
                return Decimal(a) / Decimal(b)  # SPARQL: integer / integer is a decimal
            return _promote(a, b, operator.truediv)
        return _promote(a, b, _ARITH[expr.op])
    raise NotImplementedError(type(expr).__name__)


def _number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
        raise TypeError("not a number")


def _promote(a, b, op):
    if isinstance(a, float) or isinstance(b, float):
        return op(float(a), float(b))
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return op(Decimal(a), Decimal(b))
    return op(a, b)


def _compare(op, a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0]):
            if op in ("=", "!="):
                return op == "!="
            raise TypeError("incomparable")
        if a[0] == "time":
            return _CMP[op](a[1], b[1])
        return _CMP[op](*_durations(a, b))
    numeric = [isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) for v in (a, b)]
    if all(numeric):
        a, b = (float(a), float(b)) if any(isinstance(v, float) for v in (a, b)) else (Decimal(a), Decimal(b))
        return _CMP[op](a, b)
    if any(numeric) or isinstance(a, bool) != isinstance(b, bool):
        if op in ("=", "!="):
            return op == "!="
        raise TypeError("incomparable")
    if op in ("=", "!="):
        return _CMP[op](a, b)
    if isinstance(a, bool):
        return _CMP[op](a, b)
    raise TypeError("no order on these terms")


def _durations(a, b):
    """Two durations as comparable µs. getDURATION() against a duration with years or months:
    its start plus that duration on the calendar (DECISION); two fixed durations: their µs;
    otherwise XSD 1.1's partial order (the four reference times), an error if they disagree."""
    (_, ma, ua, anchor_a), (_, mb, ub, anchor_b) = a, b
    if ma == mb == 0:
        return ua, ub
    anchor = anchor_a if anchor_a is not None else anchor_b
    if anchor is not None:
        start = EPOCH + timedelta(microseconds=anchor)
        return _micros(_add(start, ma, ua)) - anchor, _micros(_add(start, mb, ub)) - anchor
    refs = [datetime(1696, 9, 1, tzinfo=timezone.utc), datetime(1697, 2, 1, tzinfo=timezone.utc),
            datetime(1903, 3, 1, tzinfo=timezone.utc), datetime(1903, 7, 1, tzinfo=timezone.utc)]
    pairs = {(_add(r, ma, ua) > _add(r, mb, ub)) - (_add(r, ma, ua) < _add(r, mb, ub)) for r in refs}
    if len(pairs) != 1:
        raise TypeError("indeterminate duration order")
    order = pairs.pop()
    return order, 0


def _add(moment: datetime, months: int, micros: int) -> datetime:
    """XSD 1.1 appendix E: months first (the day pinned to the month's last), then the rest."""
    total = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(total, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day) + timedelta(microseconds=micros)


def _micros(moment: datetime) -> int:
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _logic(expr, s):
    """SPARQL 17.2: an error on one side is hidden when the other decides."""
    results = []
    for side in (expr.left, expr.right):
        try:
            results.append(_ebv(_value(side, s)))
        except (TypeError, KeyError, ValueError, ArithmeticError):
            results.append(None)
    decisive = expr.op == "||"
    if decisive in results:
        return decisive
    if None in results:
        raise TypeError("error")
    return not decisive


_DURATION = re.compile(r"(-)?P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?")


def _from_nt(text: str):
    term = nt_to_rdflib(text)
    if isinstance(term, Literal) and term.datatype is not None:
        dt = str(term.datatype)
        if dt in DURATIONS:
            m = _DURATION.fullmatch(str(term))
            if not m or str(term).endswith(("P", "T")):
                raise ValueError(f"not a duration: {term}")
            sign = -1 if m[1] else 1
            months = int(m[2] or 0) * 12 + int(m[3] or 0)
            micros = ((int(m[4] or 0) * 24 + int(m[5] or 0)) * 60 + int(m[6] or 0)) * 60_000_000 \
                + int(Decimal(m[7] or 0) * 1_000_000)
            return ("duration", sign * months, sign * micros, None)
        if dt == XSD + "dateTime":
            return ("time", _micros(term.toPython()))
        value = term.toPython()
        if isinstance(value, (bool, int, float, Decimal)):
            return value
    return text


def _to_nt(v) -> str:
    if isinstance(v, bool):
        return f'"{str(v).lower()}"^^<{XSD}boolean>'
    if isinstance(v, int):
        return f'"{v}"^^<{XSD}integer>'
    if isinstance(v, Decimal):
        return f'"{_canonical_decimal(v)}"^^<{XSD}decimal>'
    if isinstance(v, float):
        return f'"{Literal(v).n3()[1:].split(chr(34))[0]}"^^<{XSD}double>'
    if isinstance(v, tuple) and v[0] == "time":
        moment = EPOCH + timedelta(microseconds=v[1])
        fraction = f".{moment.microsecond:06d}".rstrip("0") if moment.microsecond else ""
        return f'"{moment:%Y-%m-%dT%H:%M:%S}{fraction}Z"^^<{XSD}dateTime>'
    if isinstance(v, tuple) and v[0] == "duration" and v[1] == 0:
        seconds = Decimal(v[2]) / 1_000_000
        return f'"PT{_canonical_decimal(seconds)}S"^^<{XSD}duration>'
    if isinstance(v, str):
        return v
    raise TypeError(f"no term for {v!r}")


def _canonical_decimal(d: Decimal) -> str:
    text = format(d.normalize(), "f")
    return text if "." in text else text + ".0"
