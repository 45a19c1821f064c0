"""Entailment regimes: background knowledge closed once with owlrl, stream triples entailed per
frame in Spark by joining with the closed schema as broadcast tables (DOTR's model: reasoning at
each time instant, independent of windows; never loading windows into rdflib).

- ``rdfs``: the background's RDFS closure (owlrl ``RDFS_Semantics``, without axiomatic
  triples); stream triples gain their super-properties (rdfs7), the types their properties'
  domains and ranges give (rdfs2, rdfs3) and those types' super-classes (rdfs9).
- ``rdfs++``: the background closed with owlrl's ``RDFS_OWLRL_Semantics``; stream triples also
  gain inverse and symmetric property triples (prp-inv, prp-symp), the closure of transitive
  properties (prp-trp) and copies under ``owl:sameAs`` (eq-sym, eq-trans, eq-rep-s, eq-rep-o).

The scope of a frame's entailment is the frame plus the closed background, never another frame
(DOTR: one time instant): a transitive chain or a sameAs identity may run through background
triples and through triples of the same frame, but not through a triple of an earlier frame in
the same window. The background's own closure is owlrl's; only triples a frame adds are derived
here. One pass, in this order, reaches the fixpoint of the rules above for a frame:

1. *property map*: every triple gains its images under the sub-property and inverse/symmetric
   edges of the schema, composed on the driver (``p ⊑ r``, ``r inverseOf q`` gives
   ``(s p o) ⇒ (o q s)``), so one join does what alternating the two rules would;
2. *transitive and sameAs closure*, per frame in Python on the driver: only the triples of
   transitive properties and ``owl:sameAs`` are collected (one scan), frames are small, and a
   Python UDF per frame cost several times more in Spark than the whole RDFS pass:
   the frame's ``owl:sameAs`` triples merged with the background's identity classes, then for
   each transitive property the reachability over the frame's triples (after step 1, so
   sub-properties' triples count) and the background's triples of that property, with nodes
   taken up to identity (a chain ``a p x``, ``x sameAs y``, ``y p c`` gives ``a p c``); the new
   triples then get their step-1 images (the image of a closed relation is closed, so a
   transitive super-property needs no second round);
3. *types*: domains, ranges and super-classes (substitution-invariant, so they commute with 4);
4. *sameAs copies*: every triple of the frame, stated or entailed, is copied with its subject
   and/or object replaced by each equivalent (the background's identity classes, and within the
   frame the classes its own sameAs triples make).

Derived triples the closed background already holds are dropped (the query sees the background
beside the window; one triple in both would match twice); stated stream triples are kept.

Left out, by design: schema triples arriving on a stream are data, not schema (the schema is the
background's); what RDFS says of every resource (``rdf:type rdfs:Resource``, ``rdf:Property``) and
reflexive ``x owl:sameAs x`` (eq-ref) are not added; predicates are not replaced by equivalents
(eq-rep-p); a frame's sameAs triples copy the frame's triples, not the background's (eq-rep-s over
a background triple whose node the frame alone makes equal to another is not derived).
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

from rdflib import Graph, Literal
from rdflib.namespace import OWL, RDF, RDFS

from rsp_jobs import settings, terms

TYPE = terms.to_nt(RDF.type)
SAME_AS = terms.to_nt(OWL.sameAs)
FRAME_KEY = ("stream", "ts")  # DOTR rules, EP-SPARQL patterns: one time instant of a stream
WINDOW_KEY = ("_win", "g")  # C-SPARQL window queries: a window's graph
LITERAL_COLUMNS = ("o_num", "o_time")



def closed(graph: Graph, regime: str) -> Graph:
    """The graph's closure under ``regime``, computed once per content and regime and cached as
    N-Triples under the project home."""
    if regime == "simple":
        return graph
    text = graph.serialize(format="nt")
    key = hashlib.sha256(f"{regime}\n".encode() + "".join(sorted(text.splitlines(True))).encode()).hexdigest()
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
    inverse: tuple[tuple[str, str], ...] = ()  # (p, q): (s p o) gives (o q s); symmetric p as (p, p)
    transitive: tuple[str, ...] = ()
    transitive_triples: tuple[tuple[str, str, str], ...] = ()  # the background's (s, p, o) of those
    same_as: tuple[tuple[str, str], ...] = ()  # the background's identities, x != y, both ways
    background: tuple[tuple[str, str, str], ...] = ()  # every closed background triple, see entail

    @classmethod
    def of(cls, graph: Graph, regime: str) -> "Schema":
        def pairs(predicate) -> tuple[tuple[str, str], ...]:
            return tuple(sorted({(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(predicate)
                                 if a != b}))
        inverse: tuple = ()
        transitive: tuple = ()
        transitive_triples: tuple = ()
        same_as: tuple = ()
        if regime == "rdfs++":
            inv = {(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(OWL.inverseOf)}
            inv |= {(b, a) for a, b in inv}
            inv |= {(terms.to_nt(p),) * 2 for p in graph.subjects(RDF.type, OWL.SymmetricProperty)}
            inverse = tuple(sorted(inv))
            props = set(graph.subjects(RDF.type, OWL.TransitiveProperty))
            transitive = tuple(sorted(terms.to_nt(p) for p in props))
            transitive_triples = tuple(sorted((terms.to_nt(s), terms.to_nt(p), terms.to_nt(o))
                                              for p in props for s, o in graph.subject_objects(p)
                                              if not isinstance(o, Literal)))
            same = pairs(OWL.sameAs)
            same_as = tuple(sorted(set(same) | {(b, a) for a, b in same}))
        return cls(regime, pairs(RDFS.subPropertyOf), pairs(RDFS.subClassOf),
                   tuple(sorted({(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(RDFS.domain)})),
                   tuple(sorted({(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(RDFS.range)})),
                   inverse, transitive, transitive_triples, same_as,
                   tuple(sorted((terms.to_nt(s), terms.to_nt(p), terms.to_nt(o)) for s, p, o in graph)))

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
            nxt = set(frame_succ.get(c, ()))
            for m in members[c]:
                nxt |= {find(y) for y in bsucc.get(m, ())}
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
                out |= {(x, prop, y) for x in members[c] for y in members[r]
                        if (x, prop, y) not in bg and (x, prop, y) not in stated}
    return out


def entail(elements, schema: Schema, key: tuple[str, ...] = FRAME_KEY):
    """Rows plus what each group of rows with one ``key`` entails under ``schema``; derived
    triples keep their group's columns.

    Which query kind uses which key (the scope of reasoning):

    - ``FRAME_KEY`` (``stream, ts``): lake elements ``stream, ts, frame, s, p, o, o_num,
      o_time, seq``, each frame (all triples of a stream at one time, whatever files or graphs
      brought them) reasoned over alone with the background. DOTR rules (Margara et al.:
      reasoning at each time instant) and EP-SPARQL patterns (``engine.match``).
    - ``WINDOW_KEY`` (``_win, g``): window rows ``_win, g, s, p, o, _open, ts`` of
      ``windows.assign``, each window's graph (every stream of the window that shares a graph)
      reasoned over whole with the background. Registered C-SPARQL window queries
      (``engine.evaluate``): the tutorial's slides "C-SPARQL queries and reasoning" answer "under
      RDFS entailment regime" / "RDFS++ entailment regime" over what the window holds (the
      example's ``:posts`` at T2 on fs and ``:observes`` at T1 on rfid answer together).

    A derived triple's other columns (``ts``, what ``timestamp()`` reports, and ``_open``) come
    from the triple it was derived from (sub-property, inverse, domain, range, sub-class: one
    stream triple each). Decision: a triple derived or stated more than once in one group gets
    the latest ``ts`` (as ``windows.assign`` stamps a triple that arrives twice); a triple of
    the transitive or sameAs closure (step 2, derived from a chain) gets the latest ``ts`` of
    the group's transitive-property and ``owl:sameAs`` triples (an upper bound of its chain's
    latest link: ``frame_closure`` does not track which links it used); a sameAs copy (step 4)
    keeps the copied triple's ``ts``."""
    from pyspark.sql import functions as F

    from rsp_jobs.spark.local import local_frame

    spark = elements.sparkSession
    columns = elements.columns
    carried = [c for c in columns if c not in ("s", "p", "o", *LITERAL_COLUMNS)]
    literal = [c for c in LITERAL_COLUMNS if c in columns]
    literal_types = {c: elements.schema[c].dataType for c in literal}

    def table(rows, names):
        return F.broadcast(local_frame(spark, rows, ", ".join(f"{n} string" for n in names)))

    def resource(column):
        return ~F.col(column).startswith('"')

    def no_literal_values():
        return [F.lit(None).cast(literal_types[c]).alias(c) for c in literal]

    def derived(frame, s, p, o):
        return frame.select(*carried, s.alias("s"), p.alias("p"), o.alias("o"), *no_literal_values())

    mapping = defaultdict(list)
    for p, q, flip in schema.property_map():
        mapping[p].append((q, flip))
    map_table = None
    if mapping:
        map_table = F.broadcast(local_frame(
            spark, sorted(mapping.items()), "p string, targets array<struct<q: string, flip: boolean>>"))

    def images(rows):
        """Each row and its images, by one join and an explode (no self-union: the plan stays
        one scan of the stream however many steps follow)."""
        if map_table is None:
            return rows
        me = F.array(F.struct(F.col("p").alias("q"), F.lit(False).alias("flip")))
        out = (rows.join(map_table, "p", "left")
               .select(*columns, F.explode(F.concat(me, F.coalesce("targets", F.array().cast(
                   "array<struct<q: string, flip: boolean>>")))).alias("t"))
               .where(~F.col("t.flip") | resource("o")))
        flip = F.col("t.flip")
        return out.select(*carried, F.when(flip, F.col("o")).otherwise(F.col("s")).alias("s"),
                          F.col("t.q").alias("p"), F.when(flip, F.col("s")).otherwise(F.col("o")).alias("o"),
                          *[F.when(flip, F.lit(None)).otherwise(F.col(c)).alias(c) for c in literal])

    rows = images(elements)
    same = None
    if schema.regime == "rdfs++":
        rows, same = _transitive_and_same(rows, schema, images, derived, resource, key, carried)
    typed = rows
    if schema.domain:
        typed = typed.unionByName(derived(rows.join(table(schema.domain, ("p", "c")), "p"),
                                          F.col("s"), F.lit(TYPE), F.col("c")))
    if schema.range:
        typed = typed.unionByName(derived(rows.where(resource("o")).join(table(schema.range, ("p", "c")), "p"),
                                          F.col("o"), F.lit(TYPE), F.col("c")))
    if schema.sub_class:
        supers = typed.where(F.col("p") == TYPE).join(table(schema.sub_class, ("o", "sup")), "o")
        typed = typed.unionByName(derived(supers, F.col("s"), F.col("p"), F.col("sup")))
    if same is not None or schema.same_as:
        typed = _same_as_copies(typed, same, schema.same_as, columns, resource, key)
    if schema.background:  # a derived triple the background states would match a pattern twice
        typed = typed.join(table(schema.background, ("s", "p", "o")), ["s", "p", "o"], "left_anti")
        typed = typed.unionByName(elements)
    extras = [c for c in carried if c not in key]
    if not extras:  # a frame: every column but the triple's own is the key
        return typed.dropDuplicates([*key, "s", "p", "o"])
    latest = [F.max(c).alias(c) if c == "ts" else F.min(c).alias(c) for c in extras]
    return (typed.groupBy(*key, "s", "p", "o").agg(*latest, *[F.max(c).alias(c) for c in literal])
            .select(*columns))


def _transitive_and_same(rows, schema: Schema, images, derived, resource, key, carried):
    """Step 2: the closure per group (``frame_closure``) of the transitive properties' and
    owl:sameAs triples, with its images; returns the rows and the group's identities. The
    relevant triples are collected: the scan runs once, and nothing else of the stream moves."""
    from pyspark.sql import functions as F

    from rsp_jobs.spark.local import local_frame
    from pyspark.sql import types as T

    transitive = set(schema.transitive) | {SAME_AS}
    background_triples, background_same = schema.transitive_triples, schema.same_as
    extras = [c for c in carried if c not in key]
    relevant = rows.where(F.col("p").isin(sorted(transitive)) & resource("o")).select(*carried, "s", "p", "o")
    groups, stamps = defaultdict(list), {}
    for row in relevant.collect():
        group = tuple(row[k] for k in key)
        groups[group].append((row.s, row.p, row.o))
        seen = stamps.setdefault(group, {c: row[c] for c in extras})
        for c in extras:  # see entail: the group's latest ts, the least of the others
            if seen[c] is None or row[c] is None:
                seen[c] = seen[c] if row[c] is None else row[c]
            else:
                seen[c] = (max if c == "ts" else min)(seen[c], row[c])
    found = [(*group, *[stamps[group][c] for c in extras], s, p, o) for group, edges in groups.items()
             for s, p, o in sorted(frame_closure(edges, transitive, background_triples, background_same))]
    shape = T.StructType([rows.schema[c] for c in (*key, *extras)]
                         + [T.StructField(c, T.StringType()) for c in ("s", "p", "o")])
    added = local_frame(rows.sparkSession, found, shape)
    added = derived(added, F.col("s"), F.col("p"), F.col("o"))
    rows = rows.unionByName(images(added))
    same = None
    if any(p == SAME_AS for *_, p, _o in found):
        same = added.where(F.col("p") == SAME_AS).select(*key, F.col("s").alias("x"), F.col("o").alias("y"))
    return rows, same


def _same_as_copies(rows, group_same, background_same, columns, resource, key):
    """Step 4 (eq-rep-s, eq-rep-o): every triple copied with its subject, then its object,
    replaced by each equivalent (a left join to the node's equivalents and an explode, so the
    plan does not repeat); reflexive sameAs copies are left out as eq-ref is. ``group_same``:
    the identities each group (``key``) adds."""
    from pyspark.sql import functions as F

    from rsp_jobs.spark.local import local_frame

    spark = rows.sparkSession
    classes = defaultdict(list)
    for x, y in background_same:
        classes[x].append(y)
    background = None
    if classes:
        background = F.broadcast(local_frame(spark, sorted(classes.items()), "x string, bg array<string>"))
    mine = None
    if group_same is not None:
        mine = F.broadcast(group_same.groupBy(*key, "x").agg(F.collect_set("y").alias("fr"))
                           .select(*[F.col(k).alias(f"_{k}") for k in key], "x", "fr"))

    def replaced(frame, column):
        if background is not None:
            frame = frame.join(background, F.col(column) == F.col("x"), "left").drop("x")
        else:
            frame = frame.withColumn("bg", F.lit(None).cast("array<string>"))
        if mine is not None:  # null-safe: a window's default graph is a NULL g
            frame = frame.join(mine, [F.col(k).eqNullSafe(F.col(f"_{k}")) for k in key]
                               + [F.col(column) == F.col("x")], "left").drop("x", *[f"_{k}" for k in key])
        else:
            frame = frame.withColumn("fr", F.lit(None).cast("array<string>"))
        empty = F.array().cast("array<string>")
        others = F.concat(F.coalesce("bg", empty), F.coalesce("fr", empty))
        if column == "o":
            others = F.when(resource("o"), others).otherwise(empty)
        frame = frame.select(*columns, F.explode(F.concat(F.array(F.col(column)), others)).alias("_v"))
        changed = F.col("_v") != F.col(column)
        return frame.select(*[F.col("_v").alias(c) if c == column
                              else F.when(changed, F.lit(None)).otherwise(F.col(c)).alias(c)
                              if column == "o" and c in LITERAL_COLUMNS else F.col(c) for c in columns])

    copies = replaced(replaced(rows, "s"), "o")
    return copies.where(~((F.col("p") == SAME_AS) & (F.col("s") == F.col("o"))))
