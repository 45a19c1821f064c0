"""A DOTR rule's Datalog rules over a run's instants: the ontological part before the temporal.

DOTR §4, at runtime, "upon receiving an RDF graph G with timestamp t, DOTR: (1) enriches G with
the background knowledge and derives all the information that holds at t (ontological
reasoning); (2) executes the SPARQL queries embedded in rules". Here, for the instants of a run:

1. the background (its default graph: the rule's ``FROM`` graphs, already closed under the
   regime when there is one) is closed under the rules once, on the driver; what that derives
   holds at every instant and joins the background as one more graph;
2. the instants' triples that a rule can read are collected (one scan; instants are small, see
   ``reasoning/datalog.py``) and each instant is closed alone, with the closed background;
3. what the instants derive comes back as rows of their instants (``frame`` NULL: a derived
   triple belongs to no input frame), beside the stated ones.

Decision (the paper's instant is "any streaming element annotated with time t"): an instant is
every stream of the rule at one time, so a rule may join triples of two streams stamped alike.
With an entailment regime the rows are the regime's entailment already (``entailment.entail``);
the regime's rules join the user's as clauses (``regime_clauses``) so that what the user rules
derive is entailed too, and the instant's closure is the least fixpoint of both. Datalog does
not read FROM NAMED graphs (they are the queries' ``GRAPH`` data, not the ontology).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from rdflib import Graph

from rsp_jobs import terms
from rsp_jobs.language.datalog import DatalogRule
from rsp_jobs.reasoning.datalog import (
    Index,
    closure,
    compile_rules,
    read_predicates,
    regime_clauses,
)
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.local import local_frame


def reason_per_instant(
    rows: DataFrame, rules: Sequence[DatalogRule], background: Background, schema=None
) -> tuple[DataFrame, Background]:
    """``rows`` (``ts, frame, s, p, o``) with what the rules derive at each ``ts``, and the
    background with what they derive from it alone."""
    clauses = compile_rules(rules) + regime_clauses(schema)
    stated = {
        (terms.to_nt(s), terms.to_nt(p), terms.to_nt(o))
        for g in background.default
        for s, p, o in g
    }
    extra = closure(stated, clauses)
    closed = Index(stated | extra)
    if extra:
        background = Background([*background.default, _graph(extra)], background.named)
    readable = read_predicates(clauses)
    relevant = rows if readable is None else rows.where(F.col("p").isin(sorted(readable)))
    instants: dict[int, set] = defaultdict(set)
    for r in relevant.select("ts", "s", "p", "o").collect():
        instants[r.ts].add((r.s, r.p, r.o))
    derived = [
        (ts, None, s, p, o)
        for ts in sorted(instants)
        for s, p, o in sorted(closure(instants[ts], clauses, closed))
    ]
    if not derived:
        return rows, background
    added = local_frame(
        rows.sparkSession, derived, "ts long, frame string, s string, p string, o string"
    )
    return rows.unionByName(
        added.select(*[F.col(c).cast(rows.schema[c].dataType) for c in rows.columns])
    ), background


def _graph(triples) -> Graph:
    graph = Graph()
    for s, p, o in triples:
        graph.add((terms.nt_to_rdflib(s), terms.nt_to_rdflib(p), terms.nt_to_rdflib(o)))
    return graph
