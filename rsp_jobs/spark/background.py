"""Background knowledge for a query: the ``FROM`` and ``FROM NAMED`` graphs, loaded with rdflib
on the driver once per file version and handed to Spark as a small broadcast table.

Files are bound to the query's graph IRIs explicitly (``IRI=PATH``) or by name: a plain path
binds to the FROM graph whose IRI ends in the same file stem (``SensorRepository.n3`` for
``<http://host/RDF/SensorRepository.rdf>``); other plain paths join the default graph.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rdflib import Graph

from rsp_jobs import terms
from rsp_jobs.errors import QueryError
from rsp_jobs.language import ast
from rsp_jobs.rdf_files import background_spec, load_rdf_file
from rsp_jobs.spark.local import LOCAL_ROWS, local_frame

if TYPE_CHECKING:
    from rsp_jobs.reasoning.entailment import Schema

_FRAMES: dict[tuple, tuple[list, object]] = {}  # Background.frame's, by session and graph objects
_SELECTED: dict[
    tuple, tuple[list, object]
] = {}  # Background.frame_for's, by session, graphs and pattern
SCHEMA = "g string, s string, p string, o string"


def load_graph(path: str | Path) -> Graph:
    """A background file's graph, parsed once per process and file version."""
    return load_rdf_file(path, "background")


@dataclass
class Background:
    default: list[Graph] = field(default_factory=list)
    named: dict[str, list[Graph]] = field(default_factory=dict)
    _frame = None

    @classmethod
    def for_query(
        cls, clauses: Sequence[ast.GraphClause], files: Sequence[str], source: str
    ) -> Background:
        """Bind ``files`` (``PATH`` or ``IRI=PATH``) to the query's FROM / FROM NAMED clauses."""
        explicit: dict[str, list[str]] = {}
        plain: list[str] = []
        for spec in files:
            iri, path = background_spec(spec)
            if iri is not None:
                explicit.setdefault(iri, []).append(path)
            else:
                plain.append(path)
        bound = {iri: list(paths) for iri, paths in explicit.items()}
        unused = []
        for path in plain:
            stem = Path(path).stem
            matches = [c.iri for c in clauses if _iri_stem(c.iri) == stem]
            if matches:
                for iri in matches:
                    bound.setdefault(iri, []).append(path)
            else:
                unused.append(path)
        background = cls()
        for clause in clauses:
            paths = bound.get(clause.iri)
            if not paths:
                if not clause.named and unused:
                    continue  # the unmatched plain files stand in for it in the default graph
                where = (
                    f":{clause.position.line}:{clause.position.column}" if clause.position else ""
                )
                raise QueryError(
                    f"{source}{where}: no file for background graph <{clause.iri}>; pass "
                    f"--background <file> (same name) or --background {clause.iri}=<file>"
                )
            graphs = [load_graph(p) for p in paths]
            if clause.named:
                background.named.setdefault(clause.iri, []).extend(graphs)
            else:
                background.default.extend(graphs)
        background.default.extend(load_graph(p) for p in unused)
        for iri, paths in explicit.items():
            if not any(c.iri == iri for c in clauses):
                background.default.extend(load_graph(p) for p in paths)
        return background

    def may_match(self, triple: ast.TriplePattern, graph) -> bool:
        """Whether the pattern's constants occur together in a background graph it can see."""
        pattern = _constants(triple)
        return any(
            next(iter(g.triples(pattern)), None) is not None for _, g in self._visible(graph)
        )

    def frame_for(self, spark, triple: ast.TriplePattern, graph):
        """The background triples ``g, s, p, o`` a pattern's constants select in the graphs it
        can see, looked up in rdflib's indexes, as a local relation when they are few (at most
        ``LOCAL_ROWS``; else ``frame``, all of them): Spark broadcasts a local relation without
        running a job for it, where filtering the checkpointed ``frame`` was a job of its own
        that the window job waited for (a day of CityBench: the window job submitted 0.1 s
        sooner; DOTR's benchmark rules 3 jobs, not 4). The caller still matches the pattern on
        what it gets (repeated variables, the graph). Kept per session, graphs and pattern."""
        pattern, graphs = _constants(triple), self._visible(graph)

        def make():
            rows = _rows(graphs, pattern, LOCAL_ROWS)
            return self.frame(spark) if rows is None else local_frame(spark, rows, SCHEMA)

        key = (id(spark), tuple((iri, id(g)) for iri, g in graphs), pattern)
        return _kept(_SELECTED, 256, key, [g for _, g in graphs], make)

    def terms(self, position: str, predicate: str) -> set[str]:
        """The terms (N-Triples) at ``position`` (``s`` or ``o``) of the triples with
        ``predicate`` (N-Triples) in every background graph (``optimize.rank_extrema``)."""
        rows = _rows(
            self._visible(None) + self._visible(ast.Var("g")),
            (None, ast.to_rdflib(ast.IRI(predicate[1:-1])), None),
        )
        return {row[1] if position == "s" else row[3] for row in rows or ()}  # no limit: a list

    def _visible(self, graph) -> list[tuple[str | None, Graph]]:
        """The graphs a pattern in ``graph`` (None: the default graph; an IRI; a variable) sees,
        each with its name (None for the default graph's)."""
        if graph is None:
            return [(None, g) for g in self.default]
        if isinstance(graph, ast.IRI):
            return [(graph.value, g) for g in self.named.get(graph.value, [])]
        return [(iri, g) for iri, gs in self.named.items() for g in gs]

    def frame(self, spark):
        """All background triples as a DataFrame ``g, s, p, o`` (g NULL for the default graph),
        built once per process for the same graphs (``load_graph`` and the closures hand out one
        object per file version): CityBench's sensor repository takes a second to convert."""
        if self._frame is None:
            graphs = self._visible(None) + self._visible(ast.Var("g"))
            key = (
                id(spark),
                tuple(map(id, self.default)),
                tuple((iri, tuple(map(id, gs))) for iri, gs in sorted(self.named.items())),
            )
            self._frame = _kept(
                _FRAMES,
                8,
                key,
                [g for _, g in graphs],
                lambda: local_frame(spark, _rows(graphs, (None, None, None)), SCHEMA),
            )
        return self._frame

    def closed(self, regime: str) -> tuple[Background, Schema]:
        """This background under an entailment regime (each graph closed once per content, see
        ``rsp_jobs.reasoning``), and the schema that entails stream triples."""
        from rsp_jobs.reasoning.entailment import Schema, closed, merged

        everything = closed(
            merged(self.default + [g for gs in self.named.values() for g in gs]), regime
        )
        if self.named:
            default = [closed(merged(self.default), regime)] if self.default else []
        else:  # the default graph is everything: its closure is computed once
            default = [everything] if self.default else []
        named = {iri: [closed(merged(gs), regime)] for iri, gs in self.named.items()}
        return Background(default, named), Schema.of(everything, regime)

    @property
    def empty(self) -> bool:
        return not self.default and not self.named


def _rows(
    graphs: list[tuple[str | None, Graph]], pattern: tuple, limit: int | None = None
) -> list | None:
    """The distinct ``g, s, p, o`` rows of the triples ``pattern`` selects in ``graphs`` (each
    with its name, None for the default graph), in order; None if more than ``limit``."""
    rows = set()
    for iri, graph in graphs:
        for s, p, o in graph.triples(pattern):
            rows.add((iri and f"<{iri}>", terms.to_nt(s), terms.to_nt(p), terms.to_nt(o)))
            if limit is not None and len(rows) > limit:
                return None
    return sorted(rows, key=lambda r: (r[0] or "", r[1:]))


def _kept(cache: dict, size: int, key: tuple, graphs: list, make):
    """``make()`` once per ``key`` (at most ``size`` kept, the oldest dropped first), held with
    the graphs its key names by ``id``, so that their ids are not reused meanwhile."""
    if key not in cache:
        if len(cache) >= size:
            cache.pop(next(iter(cache)))
        cache[key] = (graphs, make())
    return cache[key][1]


def _constants(triple: ast.TriplePattern) -> tuple:
    """A pattern as rdflib's ``triples`` takes it: its constants, None for a variable."""
    return tuple(
        None if isinstance(t, (ast.Var, ast.BNode)) else ast.to_rdflib(t)
        for t in (triple.subject, triple.predicate, triple.object)
    )


def _iri_stem(iri: str) -> str:
    tail = iri.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    return os.path.splitext(tail)[0]
