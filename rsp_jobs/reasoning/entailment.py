"""Entailment regimes: background knowledge closed once with owlrl, and what a frame's triples
entail with it, as data the Spark layer joins with (``rsp_jobs.spark.entailment.entail``: stream
triples entailed per frame by joining with the closed schema as broadcast tables; DOTR's model:
reasoning at each time instant, independent of windows; never loading windows into rdflib).
Nothing here builds a Spark plan, so the regimes can be read and tested without Spark.

- ``rdfs``: the background's RDFS closure (owlrl ``RDFS_Semantics``, without axiomatic
  triples); stream triples gain their super-properties (rdfs7), the types their properties'
  domains and ranges give (rdfs2, rdfs3) and those types' super-classes (rdfs9).
- ``rdfs++``: the background closed with owlrl's ``RDFS_OWLRL_Semantics``; stream triples also
  gain inverse and symmetric property triples (prp-inv, prp-symp), the closure of transitive
  properties (prp-trp) and copies under ``owl:sameAs`` (eq-sym, eq-trans, eq-rep-s, eq-rep-o).

The scope of a frame's entailment is the frame plus the closed background, never another frame
(DOTR: one time instant): a transitive chain or a sameAs identity may run through background
triples and through triples of the same frame, but not through a triple of an earlier frame in
the same window. The background's own closure is owlrl's; only triples a frame adds are derived,
in the one pass ``rsp_jobs.spark.entailment`` describes, from this module's ``Schema`` (the
closed background's schema, its ``property_map``) and ``frame_closure`` (a frame's transitive
and sameAs closure).

Left out, by design: schema triples arriving on a stream are data, not schema (the schema is the
background's); what RDFS says of every resource (``rdf:type rdfs:Resource``, ``rdf:Property``) and
reflexive ``x owl:sameAs x`` (eq-ref) are not added; predicates are not replaced by equivalents
(eq-rep-p); a frame's sameAs triples copy the frame's triples, not the background's (eq-rep-s over
a background triple whose node the frame alone makes equal to another is not derived).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from rdflib import Graph, Literal
from rdflib.namespace import OWL, RDF, RDFS

from rsp_jobs import settings, terms

TYPE = terms.to_nt(RDF.type)
SAME_AS = terms.to_nt(OWL.sameAs)


def closed(graph: Graph, regime: str) -> Graph:
    """The graph's closure under ``regime``, computed once per content and regime and cached as
    N-Triples under the project home."""
    if regime == "simple":
        return graph
    text = graph.serialize(format="nt")
    key = hashlib.sha256(
        f"{regime}\n".encode() + "".join(sorted(text.splitlines(True))).encode()
    ).hexdigest()
    cache = settings.home_dir() / "reasoning" / f"{key}.nt"
    result = Graph()
    if cache.is_file():
        return result.parse(cache, format="nt")
    import owlrl

    for triple in graph:
        result.add(triple)
    semantics = owlrl.RDFS_Semantics if regime == "rdfs" else owlrl.RDFS_OWLRL_Semantics
    owlrl.DeductiveClosure(semantics, axiomatic_triples=False, datatype_axioms=False).expand(result)
    for triple in [t for t in result if isinstance(t[0], Literal)]:
        result.remove(triple)  # owlrl reasons in generalised RDF; a literal subject is not RDF
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_suffix(".partial")
    result.serialize(partial, format="nt", encoding="utf-8")
    partial.replace(cache)
    return result


@dataclass(frozen=True)
class Schema:
    """The closed background's schema as N-Triples term pairs."""

    regime: str
    sub_property: tuple[tuple[str, str], ...]
    sub_class: tuple[tuple[str, str], ...]
    domain: tuple[tuple[str, str], ...]
    range: tuple[tuple[str, str], ...]
    inverse: tuple[
        tuple[str, str], ...
    ] = ()  # (p, q): (s p o) gives (o q s); symmetric p as (p, p)
    transitive: tuple[str, ...] = ()
    transitive_triples: tuple[tuple[str, str, str], ...] = ()  # the background's (s, p, o) of those
    same_as: tuple[tuple[str, str], ...] = ()  # the background's identities, x != y, both ways
    background: tuple[tuple[str, str, str], ...] = ()  # every closed background triple, see entail

    @classmethod
    def of(cls, graph: Graph, regime: str) -> Schema:
        def pairs(predicate) -> tuple[tuple[str, str], ...]:
            return tuple(
                sorted(
                    {
                        (terms.to_nt(a), terms.to_nt(b))
                        for a, b in graph.subject_objects(predicate)
                        if a != b
                    }
                )
            )

        inverse: tuple = ()
        transitive: tuple = ()
        transitive_triples: tuple = ()
        same_as: tuple = ()
        if regime == "rdfs++":
            inv = {
                (terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(OWL.inverseOf)
            }
            inv |= {(b, a) for a, b in inv}
            inv |= {(terms.to_nt(p),) * 2 for p in graph.subjects(RDF.type, OWL.SymmetricProperty)}
            inverse = tuple(sorted(inv))
            props = set(graph.subjects(RDF.type, OWL.TransitiveProperty))
            transitive = tuple(sorted(terms.to_nt(p) for p in props))
            transitive_triples = tuple(
                sorted(
                    (terms.to_nt(s), terms.to_nt(p), terms.to_nt(o))
                    for p in props
                    for s, o in graph.subject_objects(p)
                    if not isinstance(o, Literal)
                )
            )
            same = pairs(OWL.sameAs)
            same_as = tuple(sorted(set(same) | {(b, a) for a, b in same}))
        return cls(
            regime,
            pairs(RDFS.subPropertyOf),
            pairs(RDFS.subClassOf),
            tuple(
                sorted(
                    {
                        (terms.to_nt(a), terms.to_nt(b))
                        for a, b in graph.subject_objects(RDFS.domain)
                    }
                )
            ),
            tuple(
                sorted(
                    {(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(RDFS.range)}
                )
            ),
            inverse,
            transitive,
            transitive_triples,
            same_as,
            tuple(sorted((terms.to_nt(s), terms.to_nt(p), terms.to_nt(o)) for s, p, o in graph)),
        )

    def property_map(self) -> tuple[tuple[str, str, bool], ...]:
        """``(p, q, flipped)``: a ``p`` triple entails a ``q`` triple, subject and object swapped
        when flipped; sub-property and inverse edges composed to their closure."""
        edges = defaultdict(set)
        for p, q in self.sub_property:
            edges[p].add((q, False))
        for p, q in self.inverse:
            edges[p].add((q, True))
        if self.regime == "rdfs++":
            edges[SAME_AS].add((SAME_AS, True))  # eq-sym
        out = set()
        for p in list(edges):
            seen, todo = set(), [(p, False)]
            while todo:
                q, flip = todo.pop()
                for r, f in edges.get(q, ()):
                    state = (r, flip != f)
                    if state not in seen:
                        seen.add(state)
                        todo.append(state)
            out |= {(p, q, flip) for q, flip in seen if (q, flip) != (p, False)}
        return tuple(sorted(out))


def merged(graphs: Sequence[Graph]) -> Graph:
    """One graph holding the triples of ``graphs``."""
    union = Graph()
    for graph in graphs:
        for triple in graph:
            union.add(triple)
    return union


def frame_closure(edges, transitive, background_triples, background_same):
    """The triples one frame adds by owl:sameAs (eq-sym, eq-trans) and transitive properties
    (prp-trp), with the background: ``edges`` are the frame's ``(s, p, o)``; the result holds
    neither the frame's nor the background's triples.

    >>> sorted(frame_closure([("a", "p", "b")], {"p"}, [("b", "p", "c")], []))
    [('a', 'p', 'c')]
    """
    classes = defaultdict(set)  # the background's identity classes, without the node itself
    for x, y in background_same:
        classes[x].add(y)
    parent: dict = {}
    members: dict = {}  # root -> its class, kept once the frame's identities are merged

    def find(n):
        if n not in parent:
            parent[n] = n
            for m in classes.get(n, ()):
                parent.setdefault(m, n)
            members[n] = {n, *classes.get(n, ())}
        root = n
        while parent[root] != root:
            root = parent[root]
        while parent[n] != root:
            parent[n], n = root, parent[n]
        return root

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    stated = set(edges)
    for s, p, o in stated:
        find(s), find(o)
        if p == SAME_AS:
            union(s, o)
    members.clear()
    for n in list(parent):
        members.setdefault(find(n), set()).add(n)
    out = set()
    known = set(background_same)
    for group in members.values():
        if len(group) > 1:
            out |= {(x, SAME_AS, y) for x in group for y in group if x != y and (x, y) not in known}

    succ = defaultdict(lambda: defaultdict(set))
    pred = defaultdict(lambda: defaultdict(set))
    bg = set()
    for s, p, o in background_triples:
        succ[p][s].add(o)
        pred[p][o].add(s)
        bg.add((s, p, o))
    for prop in transitive:
        if prop == SAME_AS:
            continue
        frame_succ = defaultdict(set)
        for s, p, o in stated:
            if p == prop:
                frame_succ[find(s)].add(find(o))
        if not frame_succ:
            continue
        bsucc, bpred = succ[prop], pred[prop]

        def step(c):
            nxt = set(frame_succ.get(c, ()))  # noqa: B023 (called within this iteration only)
            for m in members[c]:
                nxt |= {find(y) for y in bsucc.get(m, ())}  # noqa: B023
            return nxt

        starts = set(frame_succ)
        for c in list(starts):
            for m in members[c]:
                starts |= {find(x) for x in bpred.get(m, ())}
        for c in starts:
            reached, todo = set(), list(step(c))
            while todo:
                r = todo.pop()
                if r not in reached:
                    reached.add(r)
                    todo.extend(step(r))
            for r in reached:
                out |= {
                    (x, prop, y)
                    for x in members[c]
                    for y in members[r]
                    if (x, prop, y) not in bg and (x, prop, y) not in stated
                }
    return out
