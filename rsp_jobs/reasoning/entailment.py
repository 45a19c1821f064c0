"""Entailment regimes: background knowledge closed once with owlrl, stream triples entailed per
frame in Spark by joining with the closed schema as broadcast tables (DOTR's model: reasoning at
each time instant, independent of windows; never loading windows into rdflib).

- ``rdfs``: the background's RDFS closure (owlrl ``RDFS_Semantics``, without axiomatic
  triples); stream triples gain their super-properties (rdfs7), the types their properties'
  domains and ranges give (rdfs2, rdfs3) and those types' super-classes (rdfs9). The closure
  is transitive, so one pass in that order reaches the fixpoint for stream triples.
- ``rdfs++``: the background closed with owlrl's ``RDFS_OWLRL_Semantics``; stream triples also
  gain inverse and symmetric property triples before the RDFS pass.

Schema triples arriving on a stream are data, not schema: the schema is the background's.
What RDFS says of every resource (``rdf:type rdfs:Resource``, ``rdf:Property``) is not added.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from rdflib import Graph, Literal
from rdflib.namespace import OWL, RDF, RDFS

from rsp_jobs import settings, terms
from rsp_jobs.errors import InputError

REGIMES = ("simple", "rdfs", "rdfs++")
TYPE = terms.to_nt(RDF.type)


def check_regime(regime: str, where: str = "entailment") -> str:
    if regime not in REGIMES:
        raise InputError(f"{where}: unknown entailment regime {regime!r}; use one of {', '.join(REGIMES)}")
    return regime


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

    @classmethod
    def of(cls, graph: Graph, regime: str) -> "Schema":
        def pairs(predicate) -> tuple[tuple[str, str], ...]:
            return tuple(sorted({(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(predicate)
                                 if a != b}))
        inverse: tuple = ()
        if regime == "rdfs++":
            inv = {(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(OWL.inverseOf)}
            inv |= {(b, a) for a, b in inv}
            inv |= {(terms.to_nt(p),) * 2 for p in graph.subjects(RDF.type, OWL.SymmetricProperty)}
            inverse = tuple(sorted(inv))
        return cls(regime, pairs(RDFS.subPropertyOf), pairs(RDFS.subClassOf),
                   tuple(sorted({(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(RDFS.domain)})),
                   tuple(sorted({(terms.to_nt(a), terms.to_nt(b)) for a, b in graph.subject_objects(RDFS.range)})),
                   inverse)


def merged(graphs: Sequence[Graph]) -> Graph:
    """One graph holding the triples of ``graphs``."""
    union = Graph()
    for graph in graphs:
        for triple in graph:
            union.add(triple)
    return union


def entail(elements, schema: Schema):
    """Stream elements (``stream, ts, frame, s, p, o, o_num, o_time``) plus what each frame
    entails under ``schema``; derived triples keep their frame and time."""
    from pyspark.sql import functions as F

    spark = elements.sparkSession
    columns = elements.columns

    def table(rows, names):
        return F.broadcast(spark.createDataFrame(list(rows) or [], ", ".join(f"{n} string" for n in names)))

    def resource(column):
        return ~F.col(column).startswith('"')

    def derived(frame, s, p, o):
        return frame.select("stream", "ts", "frame", s.alias("s"), p.alias("p"), o.alias("o"),
                            F.lit(None).cast("double").alias("o_num"), F.lit(None).cast("timestamp").alias("o_time"))

    rows = elements
    if schema.inverse:
        flipped = rows.where(resource("o")).join(table(schema.inverse, ("p", "q")), "p")
        rows = rows.unionByName(derived(flipped, F.col("o"), F.col("q"), F.col("s")))
    if schema.sub_property:
        up = rows.join(table(schema.sub_property, ("p", "sup")), "p")
        rows = rows.unionByName(up.withColumn("p", F.col("sup")).select(*columns))
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
    return typed.dropDuplicates(["stream", "ts", "frame", "s", "p", "o"])
