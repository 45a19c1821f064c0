"""What an alert adds to the solution that raised it, per application.

- ``tsunami``: the detecting station, and the gazetteer's coastal places (``ontology/gazetteer.ttl``)
  within ``radius_km`` great-circle distance of it, nearest first (the EP-SPARQL paper's GeoNames
  step); the evidence frames (the samples and the averages the prediction used, the prediction).
- ``congestion`` and ``silence``: an alternative route between the segment's end nodes over the
  road graph without the segments currently in alert (the paper's delivery scenario).
- ``plain``: nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from rdflib import Graph, Literal, Namespace, URIRef
from rdflib.term import Node

from rsp_jobs import settings
from rsp_jobs.alerts.build import Alert, AlertConfig
from rsp_jobs.errors import InputError, RspError
from rsp_jobs.times import iso_ms, ms_to_us, parse_datetime, parse_duration, to_us

GN = Namespace("http://www.geonames.org/ontology#")
GEO = Namespace("http://www.w3.org/2003/01/geo/wgs84_pos#")
EARTH_RADIUS_KM = 6371.0088  # mean Earth radius (IUGG)
GAZETTEER = settings.REPO_ROOT / "ontology" / "gazetteer.ttl"
ACTIVE_FOR = timedelta(minutes=30)  # a segment's alert counts as current this long


@dataclass
class Context:
    """What enrichments may read: the store engine and the alerts raised so far in the run."""

    engine: Any = None
    raised: list[Alert] = field(default_factory=list)


Enricher = Callable[[Alert, AlertConfig, Context], None]


def enrich_alerts(alerts: list[Alert], config: AlertConfig, context: Context) -> list[Alert]:
    """Enrich a run's alerts (``build.raise_alerts``) in place, as their kind says; returns them."""
    context.raised.extend(alerts)  # enrichments see the whole run (segments in alert)
    for alert in alerts:
        ENRICHERS[config.kind](alert, config, context)
    return alerts


def great_circle_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Haversine distance on the mean-radius sphere (error well under 1 % for this use)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


@functools.cache
def gazetteer(path: Path = GAZETTEER) -> list[dict]:
    graph = Graph()
    graph.parse(path, format="turtle")
    places = []
    for place in graph.subjects(GN.name, None):
        places.append(
            {
                "iri": str(place),
                "name": str(graph.value(place, GN.name)),
                "country": str(graph.value(place, GN.countryCode)),
                "lat": _degrees(graph, place, GEO.lat, path),
                "lon": _degrees(graph, place, GEO.long, path),
            }
        )
    return sorted(places, key=lambda p: p["iri"])


def _degrees(graph: Graph, place: Node, prop: URIRef, path: Path) -> float:
    value = graph.value(place, prop)
    if not isinstance(value, Literal):
        raise InputError(f"{path}: place <{place}> has no <{prop}> literal")
    return float(value)


def places_within(lat: float, lon: float, radius_km: float, path: Path = GAZETTEER) -> list[dict]:
    near = [
        {**p, "distance_km": round(great_circle_km(lat, lon, p["lat"], p["lon"]), 1)}
        for p in gazetteer(path)
    ]
    return sorted(
        (p for p in near if p["distance_km"] <= radius_km),
        key=lambda p: (p["distance_km"], p["iri"]),
    )


def tsunami(alert: Alert, config: AlertConfig, context: Context) -> None:
    from rsp_jobs.ingest import dart

    station = dart.station_of_sensor(alert.subject)
    info = dart.stations()[station]
    places = places_within(info.lat, info.lon, config.radius_km)
    alert.enrichment = {
        "station": station,
        "station_name": info.label,
        "lat": info.lat,
        "lon": info.lon,
        "radius_km": config.radius_km,
        "places": places,
    }
    alert.evidence = tsunami_evidence(alert, config, context)
    warned = (
        ", ".join(f"{p['name']} ({p['distance_km']:.0f} km)" for p in places[:6])
        or "no gazetteer place"
    )
    alert.message = (
        f"Tsunami detected by DART {station} at {alert.as_dict()['event_time']}: residual "
        f"{alert.solution.get('residual', float('nan')):+.3f} m; warn within {config.radius_km:g} km: {warned}"
    )


def tsunami_evidence(alert: Alert, config: AlertConfig, context: Context) -> list[str]:
    """The frames behind a detection, by IRI: the exceeding samples (the event time and the
    ``evidence_times`` variables), the ``averages_stream`` means that closed 15 s + 0..3 h
    before the sample (the four H_i of its prediction), and for each stream of
    ``evidence_batches`` (stream IRI -> STEP of its tumbling windows) the frame whose window
    held the sample (the prediction, the pair)."""
    from rsp_jobs.ingest import dart

    station = dart.station_of_sensor(alert.subject)
    times = [alert.event_time] + [
        parse_datetime(str(alert.solution[v]))
        for v in config.options.get("evidence_times", [])
        if v in alert.solution
    ]
    frames = [dart.frame_iri(station, t) for t in times]
    averages = config.options.get("averages_stream")
    if averages:
        frames += [
            f"{averages}/frame/{iso_ms(to_us(alert.event_time - timedelta(seconds=15, hours=i)))}"
            for i in range(4)
        ]
    for stream, step in config.options.get("evidence_batches", {}).items():
        step_us = ms_to_us(parse_duration(step))
        frames.append(
            f"{stream}/frame/{iso_ms((to_us(alert.event_time) // step_us + 1) * step_us)}"
        )
    return frames


@functools.cache
def _roads():
    """The road network, built once per process from the CityBench metadata."""
    from rsp_jobs.ingest.roads import road_graph
    from rsp_jobs.reasoning.routes import RoadNetwork

    return RoadNetwork(road_graph())


def route(alert: Alert, config: AlertConfig, context: Context) -> None:
    """An alternative route around the segment, avoiding every segment in alert recently."""
    try:
        network = _roads()
        blocked = sorted(
            {
                a.subject
                for a in context.raised + _recent(context, alert)
                if a.kind in ("congestion", "silence")
                and a.subject != alert.subject
                and abs(a.event_time - alert.event_time) <= ACTIVE_FOR
                and network.knows(a.subject)
            }
        )
        found = network.alternative_route(alert.subject, avoid=blocked)
    except RspError as exc:  # e.g. a sensor the road graph does not know: said in the alert
        alert.enrichment = {"route": None, "route_error": str(exc)}
        alert.message += "; no route (segment not in the road graph)"
        return
    alert.enrichment = {"avoided": blocked, "route": None if found is None else found.as_dict()}
    if found is None:
        alert.message += "; no alternative route"
    else:
        alert.message += (
            f"; alternative route {found.length_m:.0f} m via {len(found.segments)} segments"
        )


def _recent(context: Context, alert: Alert) -> list[Alert]:
    if context.engine is None:
        return []
    from rsp_jobs.alerts.store import alerts_between

    return alerts_between(
        context.engine, alert.event_time - ACTIVE_FOR, alert.event_time + ACTIVE_FOR
    )


def plain(alert: Alert, config: AlertConfig, context: Context) -> None:
    return None


ENRICHERS: dict[str, Enricher] = {
    "tsunami": tsunami,
    "congestion": route,
    "silence": route,
    "plain": plain,
}
