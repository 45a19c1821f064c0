"""A brute-force DOTR evaluator written from the paper (Margara, Cugola, Collavini, Dell'Aglio,
ESWC 2018, §3 and §4), to check the engine against.

It reads the rule's syntax tree for its structure (labels, policies, scopes, the texts of its
queries and conditions; ``rsp_jobs.language.dotr``), never the engine's algebra or Spark code,
and evaluates every step the way the paper describes it, with rdflib doing all SPARQL:

1. *Ontological reasoning* (§3 "the enriched dynamic knowledge, comprising the content of any
   streaming element annotated with time t, any background knowledge [...] and any
   information that can be derived through ontological reasoning [...] expressed using Datalog
   rules"; §4 "Knowledge Inference"): per instant, the instant's graph plus the background,
   then every Datalog rule applied to the whole graph (its body as a SPARQL query, its head
   added) until a round adds nothing (naive iteration), alternated with owlrl's closure when a
   regime is asked.
2. *Facts of interest* (§3: "SPARQL queries [...] get re-evaluated to extract flows of
   (timestamped) facts of interest"; §4: "For each query RDFox generates zero, one, or more
   facts of interests"): each event's ``[SELECT ...]``, as written, run by rdflib over an
   instant's graph; every solution is a fact. A reference ``Smoke.?room1`` in it is the value
   of that event in the match being built, written into the text before rdflib runs it (so the
   references must go to events bound earlier in the rule: the trigger or an earlier one).
3. *Temporal reasoning* (§3, TESLA): for each trigger fact in time order, every choice of facts
   in scope, the ``last``/``first``/``each`` selection, ``not``, aggregates, the ``with``
   conditions (each an rdflib ``ASK { FILTER (...) }`` with the values written in), and
   ``consuming``.
4. *Output* (§3 ``define``, §4 "Output Translation"): the template, the ``with`` values written
   in, a fresh node per match for ``dotr_id1`` and blank nodes (``_:m<i>/<name>``).

DECISIONS the paper leaves open, taken as the engine takes them (docs/decisions/dotr.md):
``within d from R`` holds ``t_R - d <= t < t_R``; ``between X and Y`` holds
``min(t_X, t_Y) <= t < max(t_X, t_Y)``; ties of ``last``/``first`` among facts of one instant go
to the smallest key; a match's consumed facts are used up once its trigger is processed (the
matches of one trigger may share them); an empty count/sum/avg is 0, an empty min/max unbound.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Optional

import owlrl
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import XSD

from rsp_jobs.language import ast
from rsp_jobs.language.dotr import Rule, Within
from rsp_jobs.terms import nt_to_rdflib, to_nt

Triple = tuple[str, str, str]
_REFERENCE = re.compile(r"(?<![\w?$:/#.])([A-Za-z][A-Za-z0-9_]*)\.\?(\w+)")
_AGGREGATE = re.compile(r"\b(avg|sum|count|min|max)\s*\(\s*([A-Za-z]\w*)\.\?(\w+)\s+"
                        r"(within\s+\d+\s*[A-Za-z]+\s+from\s+[A-Za-z]\w*"
                        r"|between\s+[A-Za-z]\w*\s+and\s+[A-Za-z]\w*)\s*\)", re.IGNORECASE)
_FRESH = re.compile(r"(?<![\w:?$.\-])dotr_id\w*")


@dataclass(frozen=True)
class Fact:
    """A solution of an event's query at instant ``t``; ``copy``: equal solutions before it."""

    label: str
    t: int
    bindings: tuple[tuple[str, str], ...]
    copy: int = 0

    @property
    def key(self) -> str:
        """The key format the engine documents (``spark/dotr.py``, ``fact_key``): label@t#sha1(bindings)[.n]."""
        text = "\n".join(f"{n}={v}" for n, v in self.bindings)
        return f"{self.label}@{self.t}#{hashlib.sha1(text.encode()).hexdigest()[:12]}" + (
            f".{self.copy}" if self.copy else "")

    def get(self, var: str) -> Optional[str]:
        return dict(self.bindings).get(var)


# ------------------------------------------------------------------------------ 1. ontology

def enrich(triples: set[Triple], background: set[Triple], rule: Rule, regime: str = "simple") -> Graph:
    """The enriched knowledge at one instant: its triples, the background, and the closure."""
    graph = Graph()
    for s, p, o in triples | background:
        graph.add((nt_to_rdflib(s), nt_to_rdflib(p), nt_to_rdflib(o)))
    while True:
        before = len(graph)
        if regime != "simple":
            semantics = owlrl.RDFS_Semantics if regime == "rdfs" else owlrl.RDFS_OWLRL_Semantics
            owlrl.DeductiveClosure(semantics, axiomatic_triples=False, datatype_axioms=False).expand(graph)
        for datalog in rule.program:
            body = " . ".join(" ".join(_sparql_term(t) for t in (a.subject, a.predicate, a.object))
                              for a in datalog.body)
            for row in graph.query(f"SELECT * WHERE {{ {body} }}"):
                head = [_ground(t, row) for t in (datalog.head.subject, datalog.head.predicate, datalog.head.object)]
                if None not in head and not isinstance(head[0], Literal) and isinstance(head[1], URIRef):
                    graph.add(tuple(head))
        if len(graph) == before:
            return graph


def _sparql_term(term: ast.Term) -> str:
    return f"?{term.name}" if isinstance(term, ast.Var) else ast.to_nt(term)


def _ground(term: ast.Term, row):
    return row[term.name] if isinstance(term, ast.Var) else nt_to_rdflib(ast.to_nt(term))


# ------------------------------------------------------------------------------ 2. facts

def _prologue(rule: Rule) -> str:
    return "\n".join(re.findall(r"(?i)\bPREFIX\s+[\w\-.]*:\s*<[^>]*>", rule.text)) + "\n"


def _substitute(text: str, env: dict[str, Fact]) -> str:
    """``L.?x`` written as the term of event L's fact in ``env`` (unbound: a variable nothing
    binds, which a FILTER reads as an error, as SPARQL reads an unbound variable)."""
    def term(m: re.Match) -> str:
        if m[1] not in env:
            raise NotImplementedError(f"{m[0]}: the brute force reads only events bound earlier")
        value = env[m[1]].get(m[2])
        return value if value is not None else "?__unbound"
    return _REFERENCE.sub(term, text)


_ANSWERS: dict = {}  # (graph, query text) -> rows: rdflib parses slowly, the same texts recur


def _query(graph: Graph, text: str):
    key = (id(graph), text)
    if key not in _ANSWERS:
        result = graph.query(text)
        _ANSWERS[key] = (graph, result.askAnswer if result.type == "ASK" else
                         (list(result.vars or ()), [tuple(row) for row in result]))
    return _ANSWERS[key][1]


def facts_at(rule: Rule, label: str, t: int, graph: Graph, env: dict[str, Fact]) -> list[Fact]:
    """Event ``label``'s facts at ``t``: its query as written, other events' values written in."""
    names, rows = _query(graph, _prologue(rule) + _substitute(rule.predicate(label).text[1:-1], env))
    out, seen = [], {}
    for row in rows:
        bindings = tuple(sorted((str(v), to_nt(value)) for v, value in zip(names, row) if value is not None))
        copy = seen.get(bindings, 0)
        seen[bindings] = copy + 1
        out.append(Fact(label, t, bindings, copy))
    return out


# ------------------------------------------------------------------------------ 3. temporal

def _in_scope(t: int, scope, env: dict[str, Fact]) -> bool:
    if isinstance(scope, Within):
        return env[scope.ref].t - scope.us <= t < env[scope.ref].t
    a, b = env[scope.first].t, env[scope.second].t
    return min(a, b) <= t < max(a, b)


def _labels(text: str) -> set[str]:
    return {m[1] for m in _REFERENCE.finditer(_AGGREGATE.sub("0", text))}


class _Run:
    """One evaluation: the enriched instants, the rule's ``with`` texts, what is used up."""

    def __init__(self, rule: Rule, instants: dict[int, set[Triple]], background: set[Triple], regime: str):
        self.rule, self.prologue = rule, _prologue(rule)
        self.graphs = {t: enrich(triples, set(background), rule, regime) for t, triples in sorted(instants.items())}
        # the event FILTERs' conditions are evaluated inside the events' queries (facts_at)
        self.conditions = [c.text for c in rule.conditions if c.event is None]
        self.assignments = [(a.var, a.text.split("=", 1)[1]) for a in rule.assignments]
        self.used: set[str] = set()
        self.empty = Graph()

    def holds(self, text: str, env: dict[str, Fact], aggregates: dict[str, str]) -> bool:
        expr = _substitute(_AGGREGATE.sub(lambda m: aggregates[m[0]], text), env)
        return bool(_query(self.empty, self.prologue + f"ASK {{ FILTER ({expr}) }}"))

    def value(self, text: str, env: dict[str, Fact], aggregates: dict[str, str]) -> Optional[str]:
        expr = _substitute(_AGGREGATE.sub(lambda m: aggregates[m[0]], text), env)
        _, rows = _query(self.empty, self.prologue + f"SELECT ?x WHERE {{ BIND (({expr}) AS ?x) }}")
        return None if not rows or rows[0][0] is None else to_nt(rows[0][0])

    def ok(self, env: dict[str, Fact], label: str) -> bool:
        """The ``with`` conditions that read ``label`` and bound events only (no aggregate)."""
        return all(self.holds(c, env, {}) for c in self.conditions
                   if label in _labels(c) and _labels(c) <= set(env) and not _AGGREGATE.search(c))

    def candidates(self, label: str, scope, env: dict[str, Fact], skip_used: bool) -> list[Fact]:
        return [f for t, graph in self.graphs.items() if _in_scope(t, scope, env)
                for f in facts_at(self.rule, label, t, graph, env)
                if not (skip_used and f.key in self.used) and self.ok({**env, label: f}, label)]

    def aggregate(self, m: re.Match, env: dict[str, Fact]) -> str:
        """``fn(G.?v <scope>)`` over G's facts in scope meeting the conditions that read G."""
        fn, label, var = m[1].lower(), m[2], m[3]
        agg = next(a for a in self.rule.aggregates if (a.fn, a.label, a.var) == (fn, label, var))
        values = [nt_to_rdflib(f.get(var)) for f in self.candidates(label, agg.scope, env, skip_used=False)
                  if f.get(var) is not None]
        if fn == "count":
            return to_nt(Literal(len(values)))
        numbers = [Decimal(str(v.toPython())) for v in values]
        if fn in ("sum", "avg"):  # SPARQL 18.5.1: over integers, sum is an integer, avg a decimal
            if not numbers:
                return to_nt(Literal(0))
            total = sum(numbers)
            if fn == "sum" and all(v.datatype == XSD.integer for v in values):
                return to_nt(Literal(int(total)))
            value = total / len(numbers) if fn == "avg" else total
            text = format(value.normalize(), "f")  # XSD's canonical decimal: "60.0", "1.5"
            return f'"{text if "." in text else text + ".0"}"^^<{XSD.decimal}>'

        if not numbers:
            return "?__unbound"
        return to_nt(values[numbers.index((min if fn == "min" else max)(numbers))])

    def evaluate(self, after, until, consumed) -> tuple[list[dict], set[str]]:
        rule = self.rule
        selected = [p for p in rule.predicates if p.kind in ("trigger", "positive")]
        self.used = set(consumed)
        newly: set[str] = set()
        matches = []
        triggers = sorted((f for t, g in self.graphs.items() for f in facts_at(rule, rule.trigger.label, t, g, {})),
                          key=lambda f: (f.t, f.key))
        for a in triggers:
            if (after is not None and a.t <= after) or (until is not None and a.t > until) or a.key in self.used:
                continue
            envs = [{a.label: a}] if self.ok({a.label: a}, a.label) else []
            for p in selected[1:]:
                extended = []
                for env in envs:
                    found = self.candidates(p.label, p.within, env, skip_used=True)
                    if found and p.policy == "last":
                        found = [min(found, key=lambda f: (-f.t, f.key))]
                    elif found and p.policy == "first":
                        found = [min(found, key=lambda f: (f.t, f.key))]
                    extended += [{**env, p.label: f} for f in found]
                envs = extended
            fired = []
            for env in envs:
                if any(self.candidates(n.label, n.scope, env, skip_used=False)
                       for n in rule.predicates if n.kind == "negative"):
                    continue
                texts = self.conditions + [e for _, e in self.assignments]
                aggregates = {m[0]: self.aggregate(m, env) for text in texts for m in _AGGREGATE.finditer(text)}
                if not all(self.holds(c, env, aggregates) for c in self.conditions if _AGGREGATE.search(c)):
                    continue
                fired.append(env)
                values = {var: self.value(expr, env, aggregates) for var, expr in self.assignments}
                matches.append({"time": a.t, "facts": {l: f.key for l, f in env.items()},
                                "triples": _output(rule, env, values)})
            for env in fired:
                for label in rule.consumes:
                    self.used.add(env[label].key)
                    newly.add(env[label].key)
        return sorted(matches, key=lambda m: (m["time"], m["triples"], sorted(m["facts"].items()))), newly


def evaluate(rule: Rule, instants: dict[int, set[Triple]], background: set[Triple] = frozenset(),
             after: Optional[int] = None, until: Optional[int] = None, consumed: frozenset = frozenset(),
             regime: str = "simple") -> tuple[list[dict], set[str]]:
    """``[{time, facts: {label: key}, triples}]`` of the matches in ``(after, until]`` in time
    order, and the fact keys they newly consumed."""
    try:
        return _Run(rule, instants, set(background), regime).evaluate(after, until, consumed)
    finally:
        _ANSWERS.clear()


# ------------------------------------------------------------------------------ 4. output

def _output(rule: Rule, env: dict[str, Fact], values: dict[str, Optional[str]]) -> list[str]:
    """The ``define`` template instantiated; a fresh node of the match is ``_:new/<name>``."""
    def term(t) -> Optional[str]:
        if isinstance(t, ast.BNode):
            return f"_:new/{t.label}"
        if isinstance(t, ast.Var):
            if "\u00b7" in t.name:
                label, var = t.name.split("\u00b7")
                return env[label].get(var)
            return values[t.name] if t.name in values else f"_:new/{t.name}"
        return ast.to_nt(t)
    lines = set()
    for t in rule.template:
        s, p, o = term(t.subject), term(t.predicate), term(t.object)
        if None not in (s, p, o) and not s.startswith('"') and p.startswith("<"):
            lines.add(f"{s} {p} {o} .")
    return sorted(lines)


def comparable(matches: list[dict]) -> list[tuple]:
    """Matches of either evaluator as ``(time, triples, facts)``, sorted; the engine's fresh
    IRIs (``<urn:rsp:rule:N/match/<digest>/x>``) written ``_:new/x``."""
    out = []
    for m in matches:
        lines = sorted(re.sub(r"<urn:rsp:rule:[^>]*/match/[0-9a-f]+/([^>]*)>", r"_:new/\1", line)
                       for line in m["triples"])
        out.append((m.get("time_us", m["time"]), lines, sorted(m["facts"].items())))
    return sorted(out)
