"""Alternative routes on the real Aarhus road graph, checked against a plain-Python BFS and
Dijkstra written here over the CSV rows (not over the RDF graph the code reads)."""
from __future__ import annotations

import csv
import heapq
import json
from collections import defaultdict

import pytest
from rdflib import URIRef

from rsp_jobs.ingest.roads import road_graph
from rsp_jobs.reasoning.routes import RoadNetwork, UnknownRoad, alternative_route

SES = "http://www.insight-centre.org/dataset/SampleEventService#"
BENCHMARK = ("158505", "182955", "186979", "192707")


def sensor(report_id: str) -> URIRef:
    return URIRef(f"{SES}AarhusTrafficData{report_id}")


def node(node_id: str) -> URIRef:
    return URIRef(f"urn:rsp:roads:node/{node_id}")


@pytest.fixture(scope="module")
def rows(data_dir) -> dict[str, dict[str, str]]:
    path = data_dir / "citybench" / "background" / "trafficMetaData.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        return {row["REPORT_ID"]: row for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def graph(data_dir):
    background = data_dir / "citybench" / "background"
    return road_graph(background / "trafficMetaData.csv", background / "SensorRepository.n3")


@pytest.fixture(scope="module")
def network(graph):
    return RoadNetwork(graph)


def out_edges(rows) -> dict[str, list[dict[str, str]]]:
    edges = defaultdict(list)
    for row in rows.values():
        edges[row["POINT_1_NAME"]].append(row)
    return edges


def reachable(rows, start: str, banned: set[str]) -> set[str]:
    """Nodes reachable from start over the rows whose REPORT_ID is not banned (BFS)."""
    edges, seen, frontier = out_edges(rows), {start}, [start]
    while frontier:
        following = []
        for u in frontier:
            for row in edges[u]:
                if row["REPORT_ID"] not in banned and row["POINT_2_NAME"] not in seen:
                    seen.add(row["POINT_2_NAME"])
                    following.append(row["POINT_2_NAME"])
        frontier = following
    return seen


def shortest(rows, start: str, end: str, banned: set[str]):
    """(length, number of shortest segment paths, one of them as REPORT_IDs) by Dijkstra over
    the CSV rows; None when end is unreachable."""
    edges = out_edges(rows)
    dist, count, via = {start: 0.0}, {start: 1}, {start: None}
    queue, done = [(0.0, start)], set()
    while queue:
        d, u = heapq.heappop(queue)
        if u in done:
            continue
        done.add(u)
        for row in edges[u]:
            if row["REPORT_ID"] in banned:
                continue
            v, nd = row["POINT_2_NAME"], d + float(row["DISTANCE_IN_METERS"])
            if v not in dist or nd < dist[v]:
                dist[v], count[v], via[v] = nd, count[u], row
                heapq.heappush(queue, (nd, v))
            elif nd == dist[v]:
                count[v] += count[u]
    if end not in dist:
        return None
    path, at = [], end
    while via[at] is not None:
        path.append(via[at]["REPORT_ID"])
        at = via[at]["POINT_1_NAME"]
    return dist[end], count[end], path[::-1]


def check_route(route, rows, blocked: str, banned: set[str]):
    """What holds for every route: it joins the blocked segment's ends, chains, avoids the
    banned segments, and its length is the sum of the CSV lengths of its segments."""
    ids = [str(s.sensor)[len(SES + "AarhusTrafficData"):] for s in route.segments]
    assert [s.sensor for s in route.segments] == [sensor(i) for i in ids]
    assert not banned & set(ids)
    expected_nodes = [rows[blocked]["POINT_1_NAME"]] + [rows[i]["POINT_2_NAME"] for i in ids]
    assert route.nodes == tuple(node(n) for n in expected_nodes)
    assert expected_nodes[-1] == rows[blocked]["POINT_2_NAME"]
    assert all(rows[a]["POINT_2_NAME"] == rows[b]["POINT_1_NAME"] for a, b in zip(ids, ids[1:]))
    assert route.length_m == sum(float(rows[i]["DISTANCE_IN_METERS"]) for i in ids)
    for s, i in zip(route.segments, ids):
        assert set(s.streets) == {rows[i][c] for c in ("POINT_1_STREET", "POINT_2_STREET")} - {""}
    return ids


def test_reachability_and_shortest_routes_for_every_segment(rows, network):
    """The README's figures (136 nodes, strongly connected, 420 of 449 segments with another
    way round), and for each segment: a route exactly when the BFS finds one, as long as the
    reference's shortest, and the same path wherever the shortest path is unique."""
    nodes = {r["POINT_1_NAME"] for r in rows.values()} | {r["POINT_2_NAME"] for r in rows.values()}
    reversed_rows = {i: {**r, "POINT_1_NAME": r["POINT_2_NAME"], "POINT_2_NAME": r["POINT_1_NAME"]}
                     for i, r in rows.items()}
    some = next(iter(nodes))
    assert len(nodes) == 136 and reachable(rows, some, set()) == nodes == \
        reachable(reversed_rows, some, set())
    with_alternative, unique = 0, 0
    for report_id, row in rows.items():
        has_way = row["POINT_2_NAME"] in reachable(rows, row["POINT_1_NAME"], {report_id})
        route = network.alternative_route(sensor(report_id))
        assert (route is not None) == has_way, report_id
        if route is None:
            continue
        with_alternative += 1
        ids = check_route(route, rows, report_id, {report_id})
        length, count, path = shortest(rows, row["POINT_1_NAME"], row["POINT_2_NAME"], {report_id})
        assert route.length_m == length, report_id
        if count == 1:
            unique += 1
            assert ids == path, report_id
    assert (len(rows), with_alternative) == (449, 420)
    assert unique > 400  # the path comparison is not vacuous


def test_benchmark_segment_round_congestion(rows, graph):
    """158505 (the first benchmark segment) blocked; then also avoiding the first segment of
    that route (by its segment IRI); then also the first of the next route (by its sensor)."""
    blocked = BENCHMARK[0]
    start, end = rows[blocked]["POINT_1_NAME"], rows[blocked]["POINT_2_NAME"]
    segment_of = {str(s): o for o, s in graph.subject_objects(URIRef("urn:rsp:ns:roads/sensor"))}
    banned, avoid, routes = {blocked}, [], []
    for _ in range(3):
        route = alternative_route(graph, sensor(blocked), avoid=avoid)
        reference = shortest(rows, start, end, banned)
        if reference is None:
            assert route is None
            break
        assert reference[1] == 1, "needs a unique shortest path to compare paths"
        assert check_route(route, rows, blocked, banned) == reference[2]
        assert route.length_m == reference[0]
        assert route.blocked == segment_of[str(sensor(blocked))]
        assert set(route.avoided) == {segment_of[str(sensor(i))] for i in banned}
        assert json.loads(json.dumps(route.as_dict())) == {
            "blocked": str(route.blocked), "avoided": [str(a) for a in route.avoided],
            "nodes": [str(n) for n in route.nodes], "length_m": route.length_m,
            "segments": [{"segment": str(s.segment), "sensor": str(s.sensor), "start": str(s.start),
                          "end": str(s.end), "length_m": s.length_m, "streets": list(s.streets)}
                         for s in route.segments]}
        routes.append(route)
        detour = reference[2][0]
        banned.add(detour)
        avoid.append(route.segments[0].segment if len(avoid) == 0 else sensor(detour))
    assert len(routes) >= 2 and routes[0].segments != routes[1].segments
    # avoiding every other segment out of the start node leaves no way round
    others = [i for i, r in rows.items() if r["POINT_1_NAME"] == start and i != blocked]
    assert alternative_route(graph, sensor(blocked), avoid=[sensor(i) for i in others]) is None


def test_a_bridge_has_no_alternative(rows, graph):
    bridge = next(i for i, r in rows.items()
                  if r["POINT_2_NAME"] not in reachable(rows, r["POINT_1_NAME"], {i}))
    assert alternative_route(graph, sensor(bridge)) is None
    segment = next(graph.subjects(URIRef("urn:rsp:ns:roads/sensor"), sensor(bridge)))
    assert alternative_route(graph, segment) is None  # named by its segment IRI


def test_unknown_sensor_or_segment_is_an_error(graph, network):
    assert network.knows(sensor(BENCHMARK[0])) and not network.knows(sensor("1"))
    with pytest.raises(UnknownRoad, match="AarhusTrafficData1: neither a road segment"):
        alternative_route(graph, sensor("1"))
    with pytest.raises(UnknownRoad, match="urn:nowhere"):
        alternative_route(graph, sensor(BENCHMARK[0]), avoid=["urn:nowhere"])


def test_a_segment_whose_end_is_not_an_iri_is_an_error():
    from rdflib import Graph, Literal

    from rsp_jobs.errors import InputError
    from rsp_jobs.namespaces import CT, ROADS

    segment = URIRef("urn:rsp:roads:segment/1")
    graph = Graph()
    graph.add((segment, CT.hasFirstNode, node("1")))
    graph.add((segment, CT.hasSecondNode, Literal("2")))
    graph.add((segment, ROADS.lengthInMetres, Literal(10.0)))
    with pytest.raises(InputError, match=r'the end of urn:rsp:roads:segment/1 "2" is not an IRI'):
        RoadNetwork(graph)
