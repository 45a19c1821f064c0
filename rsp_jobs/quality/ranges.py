"""Numeric ranges per property, declared in ``ontology/quality.ttl`` in SHACL terms, and which
rows of a batch each range applies to.

A range is a ``sh:NodeShape`` with one ``sh:property [ sh:path P; sh:minInclusive ...]``. It
applies either to every ``P`` value (``sh:targetSubjectsOf P``) or to the ``P`` values of
observations of a property (``rspq:targetObservedProperty C``: the observation's
``ssn:observedProperty`` is ``C`` or an instance of ``C``). CityBench's observed properties are
sensor-specific resources typed only in its background (SensorRepository.n3), which is why
``range_column`` takes background files.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from rdflib import RDF, Graph, Namespace, URIRef
from rdflib.term import IdentifiedNode

from rsp_jobs.errors import InputError
from rsp_jobs.rdf_files import load_rdf_file, parse_rdf_file
from rsp_jobs.settings import REPO_ROOT

SH = Namespace("http://www.w3.org/ns/shacl#")
RSPQ = Namespace("urn:rsp:quality:")
RANGES_FILE = REPO_ROOT / "ontology" / "quality.ttl"
BOUNDS = (SH.minInclusive, SH.minExclusive, SH.maxInclusive, SH.maxExclusive)
# the predicates that link an observation to what it observes (SSN, as CityBench; SOSA)
OBSERVED_PROPERTY = (
    "<http://purl.oclc.org/NET/ssnx/ssn#observedProperty>",
    "<http://www.w3.org/ns/sosa/observedProperty>",
)


@dataclass(frozen=True)
class Range:
    """Where a reading must lie; terms are N-Triples text like the lake's columns."""

    shape: str  # the shape's IRI, which names the range in results
    path: str  # the predicate whose numeric objects are checked
    observed: str | None = None  # observed property or class; None: every value of ``path``
    minimum: float | None = None
    maximum: float | None = None
    strict_min: bool = False
    strict_max: bool = False
    undefined: float | None = None  # a value meaning "undefined", exempt from the bounds


@functools.cache
def load_ranges(path: Path = RANGES_FILE) -> tuple[Range, ...]:
    """The ranges a file declares, sorted by shape IRI: one per shape, each shape with one
    ``sh:property`` that has a path and a bound (anything else is an error naming the shape)."""
    graph = parse_rdf_file(path)
    ranges = []
    # a shape is an IRI or a blank node: IdentifiedNodes, which order (Node need not)
    shapes = {s for s in graph.subjects(RDF.type, SH.NodeShape) if isinstance(s, IdentifiedNode)}
    for shape in sorted(shapes):
        props = list(graph.objects(shape, SH.property))
        predicate = graph.value(props[0], SH.path) if len(props) == 1 else None
        bounds = [_number(graph, props[0], b) for b in BOUNDS] if predicate is not None else []
        if all(b is None for b in bounds):
            raise InputError(
                f"{path}: shape <{shape}> needs exactly one sh:property with an sh:path and a bound"
            )
        low_in, low_ex, high_in, high_ex = bounds
        observed = graph.value(shape, RSPQ.targetObservedProperty)
        ranges.append(
            Range(
                shape=str(shape),
                path=f"<{predicate}>",
                observed=f"<{observed}>" if observed is not None else None,
                minimum=low_ex if low_in is None else low_in,
                maximum=high_ex if high_in is None else high_in,
                strict_min=low_in is None and low_ex is not None,
                strict_max=high_in is None and high_ex is not None,
                undefined=_number(graph, shape, RSPQ.undefinedValue),
            )
        )
    return tuple(ranges)


def range_column(
    rows: pd.DataFrame, ranges: Iterable[Range], background: Iterable[str | Path] = ()
) -> pd.Series:
    """For each row, the shape IRI of the range its ``o_num`` must lie in, or None; when several
    ranges apply to a row, the first in ``ranges`` does. Rows of the lake's columns (s, p, o,
    frame; a missing column counts as null): an observation's property is looked up in its own
    frame, as frames are separate graphs."""
    terms = rows.reindex(columns=["frame", "s", "p", "o"])
    links = terms[terms["p"].isin(OBSERVED_PROPERTY)]
    observed_by = dict(zip(zip(links["frame"], links["s"]), links["o"]))
    types = _types(tuple(str(path) for path in background))

    def observed_kinds(frame_and_subject) -> set[str]:
        """The observed property of the row's subject and that property's classes."""
        node = observed_by.get(frame_and_subject)
        return {node, *types.get(node, ())} if node else set()

    kinds = pd.Series(
        [observed_kinds(key) for key in zip(terms["frame"], terms["s"])],
        index=rows.index,
        dtype=object,
    )
    column = pd.Series(None, index=rows.index, dtype=object)
    for r in ranges:
        applies = terms["p"].eq(r.path) & column.isna()
        if r.observed is not None:
            applies &= kinds.map(lambda k, wanted=r.observed: wanted in k)
        column[applies] = r.shape
    return column.where(column.notna(), None)  # None, not NaN, where no range applies


@functools.cache
def _types(background: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """{node: its rdf:types} of the background files, as N-Triples IRIs (parsed once per set of
    files: SensorRepository.n3 takes seconds)."""
    types: dict[str, set[str]] = {}
    for path in background:
        for node, cls in load_rdf_file(path, "background").subject_objects(RDF.type):
            if isinstance(node, URIRef) and isinstance(cls, URIRef):
                types.setdefault(f"<{node}>", set()).add(f"<{cls}>")
    return {node: frozenset(classes) for node, classes in types.items()}


def _number(graph: Graph, node, predicate) -> float | None:
    value = graph.value(node, predicate)
    return None if value is None else float(value)
