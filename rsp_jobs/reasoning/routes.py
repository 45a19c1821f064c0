"""Alternative routes round a congested road segment, as in the EP-SPARQL paper's delivery
scenario (Anicic et al., WWW 2011): when a segment is congested or inaccessible, first decide
whether its end node can still be reached from its start node over the other roads (the paper's
transitive closure of the road relation), and only then look for the best such route.

The road graph is the one ``rsp_jobs.ingest.roads`` builds (``ct:hasFirstNode``,
``ct:hasSecondNode``, ``roads:lengthInMetres``, ``roads:sensor``), in the vocabularies of
``rsp_jobs.namespaces``: routing reads the graph, not the adapter that wrote it. Semantics fixed
here:

* The segments left out are the blocked one plus every segment in ``avoid`` (say, the other
  segments currently congested); each may be named by its segment IRI or by its traffic
  sensor's IRI. An IRI that is neither is an ``UnknownRoad`` error, never ignored.
* Reachability is the closure of the node-to-node relation over the remaining segments from the
  start node (``scipy.sparse.csgraph.breadth_first_order``); unreachable gives ``None``.
* The route is a shortest path by length in metres (``scipy.sparse.csgraph.dijkstra``). Between
  two nodes joined by several remaining segments the shortest is used, ties broken by IRI. A
  route never uses the blocked segment or an avoided one, but may pass through any node.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from rdflib import Graph, Literal, URIRef
from rdflib.term import Node
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order, dijkstra

from rsp_jobs.errors import InputError, RspError
from rsp_jobs.namespaces import CT, ROADS

Road = str | URIRef


class UnknownRoad(RspError, LookupError):
    """An IRI that names neither a road segment nor the traffic sensor of one."""


@dataclass(frozen=True)
class RouteSegment:
    segment: URIRef
    sensor: URIRef | None
    start: URIRef
    end: URIRef
    length_m: float
    streets: tuple[str, ...]  # start street, then end street if different; empty ones left out

    def as_dict(self) -> dict:
        return {
            "segment": str(self.segment),
            "sensor": None if self.sensor is None else str(self.sensor),
            "start": str(self.start),
            "end": str(self.end),
            "length_m": self.length_m,
            "streets": list(self.streets),
        }


@dataclass(frozen=True)
class Route:
    blocked: URIRef  # the segment the route replaces
    avoided: tuple[URIRef, ...]  # every segment left out: the blocked one and those in avoid
    nodes: tuple[URIRef, ...]  # from the blocked segment's start node to its end node
    segments: tuple[RouteSegment, ...]
    length_m: float  # the sum of the segments' lengths

    @property
    def sensors(self) -> tuple[URIRef | None, ...]:
        return tuple(segment.sensor for segment in self.segments)

    def as_dict(self) -> dict:
        """JSON-ready: IRIs as strings."""
        return {
            "blocked": str(self.blocked),
            "avoided": [str(a) for a in self.avoided],
            "nodes": [str(n) for n in self.nodes],
            "segments": [s.as_dict() for s in self.segments],
            "length_m": self.length_m,
        }


def _one(graph: Graph, subject: URIRef, predicate: URIRef) -> Node:
    values = list(graph.objects(subject, predicate))
    if len(values) != 1:
        raise InputError(
            f"road graph: segment {subject} has {len(values)} "
            f"{graph.namespace_manager.normalizeUri(predicate)} values, expected 1"
        )
    return values[0]


def _iri(graph: Graph, node: Node, what: str) -> URIRef:
    """``node``, which a route names by IRI (a segment, node or sensor)."""
    if not isinstance(node, URIRef):
        raise InputError(f"road graph: {what} {node.n3(graph.namespace_manager)} is not an IRI")
    return node


class RoadNetwork:
    """The segments of a road graph, indexed for routing; build it once and route many times."""

    def __init__(self, graph: Graph):
        segments = []
        subjects = set(graph.subjects(CT.hasFirstNode, None))
        for segment in sorted(_iri(graph, s, "segment") for s in subjects):
            value = _one(graph, segment, ROADS.lengthInMetres)
            try:
                length = float(value.toPython()) if isinstance(value, Literal) else math.nan
            except (TypeError, ValueError):
                length = math.nan
            if not length > 0:
                raise InputError(
                    f"road graph: segment {segment} has length {value.n3()}, "
                    f"expected a positive number of metres"
                )
            sensors = sorted(
                _iri(graph, s, f"the sensor of {segment}")
                for s in graph.objects(segment, ROADS.sensor)
            )
            streets = []
            for prop in (ROADS.startStreet, ROADS.endStreet):
                for street in sorted(str(s) for s in graph.objects(segment, prop)):
                    if street not in streets:
                        streets.append(street)
            segments.append(
                RouteSegment(
                    segment,
                    sensors[0] if len(sensors) == 1 else None,
                    _iri(graph, _one(graph, segment, CT.hasFirstNode), f"the start of {segment}"),
                    _iri(graph, _one(graph, segment, CT.hasSecondNode), f"the end of {segment}"),
                    length,
                    tuple(streets),
                )
            )
        self.segments: dict[URIRef, RouteSegment] = {s.segment: s for s in segments}
        self.by_sensor: dict[URIRef, list[URIRef]] = {}
        for s in segments:
            for sensor in graph.objects(s.segment, ROADS.sensor):
                self.by_sensor.setdefault(_iri(graph, sensor, "sensor"), []).append(s.segment)
        self.nodes: list[URIRef] = sorted({s.start for s in segments} | {s.end for s in segments})
        self.index: dict[URIRef, int] = {node: i for i, node in enumerate(self.nodes)}

    def knows(self, road: Road) -> bool:
        """Whether ``segment`` would find the road (to filter ``avoid`` lists of mixed sensors)."""
        try:
            self.segment(road)
        except UnknownRoad:
            return False
        return True

    def segment(self, road: Road) -> RouteSegment:
        """The segment named by a segment IRI or by its traffic sensor's IRI."""
        iri = URIRef(str(road))
        if iri in self.segments:
            return self.segments[iri]
        found = self.by_sensor.get(iri, [])
        if len(found) == 1:
            return self.segments[found[0]]
        if found:
            raise UnknownRoad(
                f"{iri}: the sensor of {len(found)} segments "
                f"({', '.join(sorted(found))}); name the segment instead"
            )
        raise UnknownRoad(
            f"{iri}: neither a road segment nor the traffic sensor of one in the "
            f"road graph ({len(self.segments)} segments)"
        )

    def _edges(
        self, excluded: set[URIRef]
    ) -> tuple[csr_matrix, dict[tuple[int, int], RouteSegment]]:
        """The node-to-node matrix of the remaining segments, keeping the shortest of parallel
        segments (a sparse matrix would add them up)."""
        best: dict[tuple[int, int], RouteSegment] = {}
        for s in self.segments.values():  # sorted by IRI, so ties keep the smallest IRI
            if s.segment in excluded:
                continue
            key = (self.index[s.start], self.index[s.end])
            if key not in best or s.length_m < best[key].length_m:
                best[key] = s
        n = len(self.nodes)
        rows = np.fromiter((k[0] for k in best), dtype=np.int64, count=len(best))
        cols = np.fromiter((k[1] for k in best), dtype=np.int64, count=len(best))
        weights = np.fromiter((s.length_m for s in best.values()), dtype=float, count=len(best))
        return csr_matrix((weights, (rows, cols)), shape=(n, n)), best

    def alternative_route(self, road: Road, avoid: Iterable[Road] = ()) -> Route | None:
        blocked = self.segment(road)
        if isinstance(avoid, str):  # one IRI, not an iterable of characters
            avoid = (avoid,)
        excluded = {blocked.segment} | {self.segment(r).segment for r in avoid}
        matrix, edges = self._edges(excluded)
        start, end = self.index[blocked.start], self.index[blocked.end]
        reachable = breadth_first_order(matrix, start, directed=True, return_predecessors=False)
        if end not in set(reachable.tolist()):
            return None
        _, predecessors = dijkstra(matrix, directed=True, indices=start, return_predecessors=True)
        path = [end]
        while path[-1] != start:
            path.append(int(predecessors[path[-1]]))
        path.reverse()
        segments = tuple(edges[(a, b)] for a, b in itertools.pairwise(path))
        return Route(
            blocked.segment,
            tuple(sorted(excluded)),
            tuple(self.nodes[i] for i in path),
            segments,
            sum(s.length_m for s in segments),
        )


def alternative_route(
    graph: Graph | RoadNetwork, sensor_or_segment: Road, avoid: Iterable[Road] = ()
) -> Route | None:
    """The shortest route from the start to the end node of ``sensor_or_segment`` that uses
    neither it nor any segment in ``avoid``; None when no such route exists. ``graph`` is the
    road graph or a ``RoadNetwork`` built from it (to route many times)."""
    network = graph if isinstance(graph, RoadNetwork) else RoadNetwork(graph)
    return network.alternative_route(sensor_or_segment, avoid)
