"""The independent reference for the differential tests and the benchmark: window contents
computed here in plain Python from the semantics in ../shared/data/csrbench/README.md (not with
the engine's code), and each window's query answered by rdflib's SPARQL engine over those
triples plus the background graphs. The engine itself never evaluates with rdflib.

It stays in the package, not in ``tests/support/``: ``make bench`` checks the engine's answers
against it (``rsp_jobs.bench.__main__``, ``rsp_jobs.bench.reasoning``); the differential tests
import it from here."""

from __future__ import annotations

import math
import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from rdflib import Dataset, Graph, Literal, URIRef
from rdflib.graph import ReadOnlyGraphAggregate
from rdflib.namespace import XSD
from rdflib.plugins.sparql.operators import register_custom_function, unregister_custom_function
from rdflib.plugins.sparql.sparql import SPARQLError
from rdflib.query import ResultRow

from rsp_jobs.terms import nt_to_rdflib, to_nt

CSPARQL_TIMESTAMP = URIRef("http://larkc.eu/csparql/sparql/jena/ext#timestamp")


@dataclass(frozen=True)
class Elem:
    stream: str
    ts_ms: int
    s: str
    p: str
    o: str  # N-Triples text
    pos: int = 0  # its place in the stream as delivered: orders the triples of one time
    graph: str | None = None  # the graph that delivered it (several may share a time)


@dataclass(frozen=True)
class WindowSpec:
    stream: str
    range_ms: int | None = None
    step_ms: int | None = None
    triples: int | None = None  # a count window
    graph: str | None = None  # FROM NAMED STREAM: the graph name


def window_contents(
    elements: Sequence[Elem], specs: Sequence[WindowSpec], t0: int = 0, every_ms: int | None = None
) -> dict[int, list]:
    """{close ms: [(spec, elem), ...]} for every close whose window holds data. ``every_ms``:
    COMPUTED EVERY, evaluated at the ticks ``t0 + k*every`` once every window is full (each
    window ``[close - its RANGE, close)``, its STEP unused).

    A stream's triples of one time are one frame, an RDF graph (TA-RDF restriction 2): a triple
    that several graphs or statements bring for one time is one element, at its first position.
    Count windows take the last triples by time, then by position (C-SPARQL §3.1)."""
    first: dict[tuple, Elem] = {}
    for e in sorted(elements, key=lambda e: (e.stream, e.ts_ms, e.pos)):
        first.setdefault((e.stream, e.ts_ms, e.s, e.p, e.o), e)
    elements = list(first.values())
    timed = [(s, s.range_ms) for s in specs if s.range_ms is not None]
    if timed and every_ms is not None:
        widest = max(range_ms for _, range_ms in timed)
        closes = sorted(
            {
                t0 + k * every_ms
                for spec, range_ms in timed
                for e in elements
                if e.stream == spec.stream
                for k in range(
                    max(-(-widest // every_ms), (e.ts_ms - t0) // every_ms + 1),
                    (e.ts_ms + range_ms - t0) // every_ms + 1,
                )
            }
        )
        inclusive = False
    elif timed:
        # the grid points c = t0 + range + k*step that can see some element: ts < c <= ts + range
        grid: set[int] = set()
        for spec, range_ms in timed:
            step_ms = _step(spec)
            for e in elements:
                if e.stream == spec.stream:
                    k = max(0, (e.ts_ms - t0 - range_ms) // step_ms + 1)
                    while t0 + range_ms + k * step_ms <= e.ts_ms + range_ms:
                        grid.add(t0 + range_ms + k * step_ms)
                        k += 1
        closes = sorted(grid)
        inclusive = False
    else:
        closes = sorted({e.ts_ms for e in elements})
        inclusive = True
    by_stream = {
        spec.stream: sorted(
            (e for e in elements if e.stream == spec.stream),
            key=lambda e: (e.ts_ms, e.pos, e.s, e.p, e.o),
        )
        for spec in specs
    }
    times = {stream: [e.ts_ms for e in items] for stream, items in by_stream.items()}
    out = {}
    for close in closes:
        content = []
        for spec in specs:
            mine, stamps = by_stream[spec.stream], times[spec.stream]
            if spec.range_ms is not None:
                if every_ms is None and (
                    (close - t0 - spec.range_ms) < 0 or (close - t0 - spec.range_ms) % _step(spec)
                ):
                    continue
                lo, hi = bisect_left(stamps, close - spec.range_ms), bisect_left(stamps, close)
                content += [(spec, e) for e in mine[lo:hi]]
            else:
                hi = bisect_right(stamps, close) if inclusive else bisect_left(stamps, close)
                content += [(spec, e) for e in mine[max(0, hi - _count(spec)) : hi]]
        if content:
            out[close] = content
    return out


def _step(spec: WindowSpec) -> int:
    if spec.step_ms is None:
        raise ValueError(f"the window on {spec.stream}: a RANGE without STEP needs COMPUTED EVERY")
    return spec.step_ms


def _count(spec: WindowSpec) -> int:
    if spec.triples is None:
        raise ValueError(f"the window on {spec.stream} has neither RANGE nor TRIPLES")
    return spec.triples


_local = threading.local()


def _timestamp(s, p, o):
    """C-SPARQL timestamp(s, p, o) over the current window: the latest matching triple's time."""
    stamps = _local.stamps
    key = (to_nt(s), to_nt(p), to_nt(o))
    if key not in stamps:
        raise SPARQLError("timestamp(): no such triple in the window")
    return Literal(stamps[key], datatype=XSD.integer)


def rdflib_answer(
    sparql: str,
    content: list,
    background: Sequence[Graph] = (),
    named_background: dict | None = None,
    one_graph: bool = False,
):
    """rdflib's answer for one window: a list of {var: rdflib term} for SELECT, a set of
    N-Triples lines for CONSTRUCT, a bool for ASK. ``one_graph``: the window's and the
    background's triples copied into one graph rather than read through a union of them: over
    a union, rdflib's property paths give a term once per graph holding it, where SPARQL 1.1's
    ALP (section 18.4) gives it once."""
    dataset = Dataset()
    window = Graph()
    stamps: dict = {}
    for spec, e in content:
        triple = (nt_to_rdflib(e.s), nt_to_rdflib(e.p), nt_to_rdflib(e.o))
        (dataset.graph(URIRef(spec.graph)) if spec.graph else window).add(triple)
        key = (e.s, e.p, e.o)
        stamps[key] = max(stamps.get(key, e.ts_ms), e.ts_ms)
    for iri, graph in (named_background or {}).items():
        named = dataset.graph(URIRef(iri))
        for triple in graph:
            named.add(triple)
    # a dataset, default graph copied in
    if named_background or re.search(r"\bGRAPH\b", sparql, re.IGNORECASE):
        target: Graph = dataset
        for graph in (window, *background):
            for triple in graph:
                dataset.default_graph.add(triple)
    elif one_graph:
        target = window
        for graph in background:
            target += graph
    else:  # the default graph only: a read-only union, so the background is not copied per window
        target = ReadOnlyGraphAggregate([window, *background]) if background else window
    _local.stamps = stamps
    # rdflib calls a function registered without raw=True with its evaluated arguments, not the
    # (expression, bindings) its stubs name
    register_custom_function(CSPARQL_TIMESTAMP, _timestamp, override=True)  # type: ignore[arg-type]
    try:
        result = target.query(sparql)
        if result.type == "ASK":
            return bool(result.askAnswer)
        if result.type in ("CONSTRUCT", "DESCRIBE"):
            # SPARQL 16.2 leaves out ill-formed triples (a literal subject); rdflib keeps them
            if result.graph is None:
                raise RuntimeError(f"rdflib answered a {result.type} query without a graph")
            return {
                " ".join(to_nt(t) for t in triple) + " ."
                for triple in result.graph
                if not isinstance(triple[0], Literal)
            }
        if result.vars is None:
            raise RuntimeError(f"rdflib answered a {result.type} query without variables")
        names = [str(v) for v in result.vars]
        # a SELECT result's rows are ResultRows (the stubs type the rows of every kind of result)
        rows = cast(Iterable[ResultRow], result)
        return [{n: row[i] for i, n in enumerate(names) if row[i] is not None} for row in rows]
    finally:
        unregister_custom_function(CSPARQL_TIMESTAMP, _timestamp)


def plain_sparql(text: str) -> str:
    """A C-SPARQL query written one clause per line, without its REGISTER and FROM lines: the
    SPARQL that rdflib answers over a window's dataset."""
    lines = [
        ln
        for ln in text.splitlines()
        if not ln.strip().upper().startswith(("REGISTER", "FROM", "#"))
    ]
    return "\n".join(lines)


NUMERIC_TYPES = {
    "http://www.w3.org/2001/XMLSchema#" + t
    for t in (
        "integer",
        "decimal",
        "float",
        "double",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "nonPositiveInteger",
        "negativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
}


def _row_key(binding: dict) -> tuple:
    """A sort key that is coarse on numbers (6 significant digits), exact on everything else."""
    return tuple(
        sorted(
            (
                var,
                ("number", f"{float(t['value']):.6g}", "", "")
                if t.get("datatype") in NUMERIC_TYPES
                else (t["type"], t["value"], t.get("datatype") or "", t.get("xml:lang") or ""),
            )
            for var, t in binding.items()
        )
    )


def _same_term(a: dict, b: dict) -> bool:
    if a.get("datatype") in NUMERIC_TYPES and b.get("datatype") in NUMERIC_TYPES:
        return math.isclose(float(a["value"]), float(b["value"]), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def same_bindings(ours: list[dict], theirs: list[dict]) -> bool:
    """Two multisets of JSON-results bindings are the same, numbers compared as doubles with a
    relative tolerance of 1e-9 (rdflib computes with Decimal, Spark with doubles)."""
    if len(ours) != len(theirs):
        return False
    ours, theirs = sorted(ours, key=_row_key), sorted(theirs, key=_row_key)
    return all(
        a.keys() == b.keys() and all(_same_term(a[k], b[k]) for k in a)
        for a, b in zip(ours, theirs)
    )
