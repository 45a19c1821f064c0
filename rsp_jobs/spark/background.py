"""Background knowledge for a query: the ``FROM`` and ``FROM NAMED`` graphs, loaded with rdflib
on the driver once per file version and handed to Spark as a small broadcast table.

Files are bound to the query's graph IRIs explicitly (``IRI=PATH``) or by name: a plain path
binds to the FROM graph whose IRI ends in the same file stem (``SensorRepository.n3`` for
``<http://host/RDF/SensorRepository.rdf>``); other plain paths join the default graph.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from rdflib import Graph

from rsp_jobs import terms
from rsp_jobs.errors import QueryError
from rsp_jobs.language import ast
from rsp_jobs.rdf_files import background_spec, load_rdf_file
from rsp_jobs.spark.local import local_frame

_FRAMES: dict[tuple, tuple[list, object]] = {}  # Background.frame's, by session and graph objects


def load_graph(path: str | Path) -> Graph:
    """A background file's graph, parsed once per process and file version."""
    return load_rdf_file(path, "background")


@dataclass
class Background:
    default: list[Graph] = field(default_factory=list)
    named: dict[str, list[Graph]] = field(default_factory=dict)
    _frame = None

    @classmethod
    def for_query(cls, clauses: Sequence[ast.GraphClause], files: Sequence[str], source: str) -> "Background":
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
                where = f":{clause.position.line}:{clause.position.column}" if clause.position else ""
                raise QueryError(f"{source}{where}: no file for background graph <{clause.iri}>; pass "
                                 f"--background <file> (same name) or --background {clause.iri}=<file>")
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
        pattern = tuple(None if isinstance(t, (ast.Var, ast.BNode)) else terms.ast_to_rdflib(t)
                        for t in (triple.subject, triple.predicate, triple.object))
        if graph is None:
            graphs = self.default
        elif isinstance(graph, ast.IRI):
            graphs = self.named.get(graph.value, [])
        else:
            graphs = [g for gs in self.named.values() for g in gs]
        return any(next(iter(g.triples(pattern)), None) is not None for g in graphs)

    def frame(self, spark):
        """All background triples as a DataFrame ``g, s, p, o`` (g NULL for the default graph),
        built once per process for the same graphs (``load_graph`` and the closures hand out one
        object per file version): CityBench's sensor repository takes a second to convert."""
        if self._frame is None:
            key = (id(spark), tuple(map(id, self.default)),
                   tuple((iri, tuple(map(id, gs))) for iri, gs in sorted(self.named.items())))
            if key not in _FRAMES:
                if len(_FRAMES) >= 8:
                    _FRAMES.pop(next(iter(_FRAMES)))
                # the graphs are kept with their frame, so that their ids are not reused meanwhile
                _FRAMES[key] = (self.default + [g for gs in self.named.values() for g in gs], self._build(spark))
            self._frame = _FRAMES[key][1]
        return self._frame

    def _build(self, spark):
        rows = {(None, terms.to_nt(s), terms.to_nt(p), terms.to_nt(o)) for g in self.default for s, p, o in g}
        for iri, graphs in self.named.items():
            rows |= {(f"<{iri}>", terms.to_nt(s), terms.to_nt(p), terms.to_nt(o)) for g in graphs for s, p, o in g}
        schema = "g string, s string, p string, o string"
        return local_frame(spark, sorted(rows, key=lambda r: (r[0] or "", r[1:])), schema)

    def closed(self, regime: str) -> tuple["Background", object]:
        """This background under an entailment regime (each graph closed once per content, see
        ``rsp_jobs.reasoning``), and the schema that entails stream triples."""
        from rsp_jobs.reasoning.entailment import Schema, closed, merged

        everything = closed(merged(self.default + [g for gs in self.named.values() for g in gs]), regime)
        if self.named:
            default = [closed(merged(self.default), regime)] if self.default else []
        else:  # the default graph is everything: its closure is computed once
            default = [everything] if self.default else []
        named = {iri: [closed(merged(gs), regime)] for iri, gs in self.named.items()}
        return Background(default, named), Schema.of(everything, regime)

    @property
    def empty(self) -> bool:
        return not self.default and not self.named


def _iri_stem(iri: str) -> str:
    tail = iri.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    return os.path.splitext(tail)[0]
