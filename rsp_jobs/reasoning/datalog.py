"""Datalog to a least fixpoint over one time instant's graph and the background (DOTR §3).

DOTR §3: "At each time t, the state of the environment is represented by the *enriched dynamic
knowledge*, comprising the content of any streaming element annotated with time t, any
background knowledge about the application domain, and any information that can be derived
through ontological reasoning [...], expressed using Datalog rules". §4 runs them per received
graph, before the SPARQL queries extract the facts of interest. So here, per instant:

    closure(stated) = the least set D with  D ⊇ stated  and  rule(D ∪ background) ⊆ D ∪ background
                      for every rule, minus what was stated or is background.

Plain Python, semi-naive (each round joins only what the previous round added, the rest from
the instant's and the background's indexes). Why not Spark: an instant is one graph of a few
triples to a few thousand, and the rules' joins are index look-ups on the closed background;
a Spark job per instant or a self-join per rule and round would cost more than the reasoning
(``rsp_jobs.spark.entailment`` collects its per-frame transitive closures for the same
reason). The background's own consequences are computed once (``closure`` with no background)
and become background: an instant derives only what needs one of its own triples.

A regime (RDFS, RDFS++) combines with user rules as more clauses (``regime_clauses``): those of
``rsp_jobs.spark.entailment.entail``, applied to what the user rules derive, so the instant's
closure is the least fixpoint of both (``spark/datalog.py``).

Triples are N-Triples text ``(s, p, o)``; in a clause a term starting with ``?`` is a variable.
A derived triple that is not RDF (a literal subject, a predicate that is not an IRI) is not
derived (as ``entailment.closed`` drops owlrl's literal subjects).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from rsp_jobs import terms
from rsp_jobs.language import ast
from rsp_jobs.language.datalog import DatalogRule

Triple = tuple[str, str, str]
RDF_TYPE = terms.RDF_TYPE_NT
SAME_AS = "<http://www.w3.org/2002/07/owl#sameAs>"


@dataclass(frozen=True)
class Atom:
    """A triple pattern; ``local``: matched against the instant's triples only (eq-rep)."""

    s: str
    p: str
    o: str
    local: bool = False


@dataclass(frozen=True)
class Clause:
    """``head :- body``; ``irreflexive``: a derived ``x owl:sameAs x`` is dropped (eq-ref is
    left out, as ``entailment`` leaves it out)."""

    head: Atom
    body: tuple[Atom, ...]
    irreflexive: bool = False


def compile_rules(rules: Sequence[DatalogRule]) -> tuple[Clause, ...]:
    """The parsed rules (``language/datalog.py``) as clauses over N-Triples text."""

    def term(t: ast.Term) -> str:
        return f"?{t.name}" if isinstance(t, ast.Var) else ast.to_nt(t)

    def atom(t: ast.TriplePattern) -> Atom:
        return Atom(term(t.subject), term(t.predicate), term(t.object))

    return tuple(Clause(atom(r.head), tuple(atom(b) for b in r.body)) for r in rules)


def regime_clauses(schema) -> tuple[Clause, ...]:
    """``entailment.Schema``'s rules as clauses: rdfs7 (and prp-inv, prp-symp, eq-sym) through
    the composed property map, rdfs2, rdfs3, rdfs9; for RDFS++ also prp-trp and eq-trans, and
    eq-rep-s / eq-rep-o copying the instant's triples (``entailment``: "a frame's sameAs
    triples copy the frame's triples, not the background's")."""
    if schema is None or schema.regime == "simple":
        return ()
    out = []
    for p, q, flip in schema.property_map():
        out.append(
            Clause(
                Atom("?o", q, "?s") if flip else Atom("?s", q, "?o"), (Atom("?s", p, "?o"),), True
            )
        )
    out += [Clause(Atom("?s", RDF_TYPE, c), (Atom("?s", p, "?o"),)) for p, c in schema.domain]
    out += [Clause(Atom("?o", RDF_TYPE, c), (Atom("?s", p, "?o"),)) for p, c in schema.range]
    out += [
        Clause(Atom("?x", RDF_TYPE, d), (Atom("?x", RDF_TYPE, c),)) for c, d in schema.sub_class
    ]
    if schema.regime == "rdfs++":
        for p in sorted(set(schema.transitive) | {SAME_AS}):
            out.append(
                Clause(Atom("?x", p, "?z"), (Atom("?x", p, "?y"), Atom("?y", p, "?z")), True)
            )
        same = Atom("?x", SAME_AS, "?y")
        # eq-rep-s
        out.append(Clause(Atom("?y", "?p", "?o"), (Atom("?x", "?p", "?o", local=True), same), True))
        # eq-rep-o
        out.append(Clause(Atom("?s", "?p", "?y"), (Atom("?s", "?p", "?x", local=True), same), True))
    return tuple(out)


def read_predicates(clauses: Sequence[Clause]) -> frozenset[str] | None:
    """The predicates a triple must have to take part (bodies and heads), or None when a
    clause has a variable predicate (every triple may)."""
    found = set()
    for clause in clauses:
        for atom in (clause.head, *clause.body):
            if atom.p.startswith("?"):
                return None
            found.add(atom.p)
    return frozenset(found)


class Index:
    """Triples by predicate, (predicate, subject), (predicate, object), subject and object."""

    def __init__(self, triples: Iterable[Triple] = ()):
        self.all: set[Triple] = set()
        self.p: defaultdict[str, set[Triple]] = defaultdict(set)
        self.s: defaultdict[str, set[Triple]] = defaultdict(set)
        self.o: defaultdict[str, set[Triple]] = defaultdict(set)
        self.ps: defaultdict[tuple[str, str], set[Triple]] = defaultdict(set)
        self.po: defaultdict[tuple[str, str], set[Triple]] = defaultdict(set)
        for t in triples:
            self.add(t)

    def add(self, t: Triple) -> bool:
        if t in self.all:
            return False
        s, p, o = t
        self.all.add(t)
        self.p[p].add(t)
        self.s[s].add(t)
        self.o[o].add(t)
        self.ps[(p, s)].add(t)
        self.po[(p, o)].add(t)
        return True

    def __contains__(self, t: Triple) -> bool:
        return t in self.all

    def __len__(self) -> int:
        return len(self.all)

    def candidates(self, s: str | None, p: str | None, o: str | None) -> Iterable[Triple]:
        """The triples that may match (None: free); the caller checks them."""
        if p is not None:
            if s is not None:
                return self.ps.get((p, s), ())
            if o is not None:
                return self.po.get((p, o), ())
            return self.p.get(p, ())
        if s is not None:
            return self.s.get(s, ())
        if o is not None:
            return self.o.get(o, ())
        return self.all


EMPTY = Index()


def closure(
    stated: Iterable[Triple], clauses: Sequence[Clause], background: Index = EMPTY
) -> set[Triple]:
    """What ``clauses`` derive from ``stated`` and ``background`` beyond both: semi-naive, each
    round firing every clause with one body atom on the previous round's new triples."""
    local = Index(stated)
    delta = set(local.all)
    derived: set[Triple] = set()
    while delta:
        fresh = Index(delta)
        new: set[Triple] = set()
        for clause in clauses:
            for i, atom in enumerate(clause.body):
                rest = clause.body[:i] + clause.body[i + 1 :]
                for binding in _match(atom, {}, fresh, None):
                    for full in _join(rest, binding, local, background):
                        t = _ground(clause.head, full)
                        if (
                            t is not None
                            and _is_rdf(t, clause)
                            and t not in local
                            and t not in background
                        ):
                            new.add(t)
        for t in new:
            local.add(t)
        derived |= new
        delta = new
    return derived


def _join(
    atoms: tuple[Atom, ...], binding: dict, local: Index, background: Index
) -> Iterator[dict]:
    """Every extension of ``binding`` matching all ``atoms``: the most bound atom first."""
    if not atoms:
        yield binding
        return
    best = max(range(len(atoms)), key=lambda i: _bound(atoms[i], binding))
    atom, rest = atoms[best], atoms[:best] + atoms[best + 1 :]
    for extended in _match(atom, binding, local, None if atom.local else background):
        yield from _join(rest, extended, local, background)


def _bound(atom: Atom, binding: dict) -> int:
    return sum(not t.startswith("?") or t in binding for t in (atom.s, atom.p, atom.o))


def _match(atom: Atom, binding: dict, index: Index, other: Index | None) -> Iterator[dict]:
    key = [
        None if t.startswith("?") and t not in binding else binding.get(t, t)
        for t in (atom.s, atom.p, atom.o)
    ]
    for source in (index, other) if other is not None else (index,):
        for triple in source.candidates(*key):
            out = dict(binding)
            for term, value in zip((atom.s, atom.p, atom.o), triple):
                if term.startswith("?"):
                    if out.setdefault(term, value) != value:
                        break
                elif term != value:
                    break
            else:
                yield out


def _ground(atom: Atom, binding: dict) -> Triple | None:
    s, p, o = (binding.get(t) if t.startswith("?") else t for t in (atom.s, atom.p, atom.o))
    return None if s is None or p is None or o is None else (s, p, o)


def _is_rdf(t: Triple, clause: Clause) -> bool:
    s, p, o = t
    if s.startswith('"') or not p.startswith("<"):
        return False
    return not (clause.irreflexive and p == SAME_AS and s == o)
