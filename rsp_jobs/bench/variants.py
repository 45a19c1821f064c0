"""Many registered queries over the one merged traffic stream, for the multi-query bench:
generated variants of the traffic and CityBench queries (``queries/citybench``,
``queries/traffic``) with other windows, properties, aggregates, filters and road segments,
each a C-SPARQL query a user could register. The same ``count`` always gives the same queries."""

from __future__ import annotations

import itertools

from rsp_jobs.bench.workload import TRAFFIC

PREFIXES = """PREFIX ssn: <http://purl.oclc.org/NET/ssnx/ssn#>
PREFIX sao: <http://purl.oclc.org/NET/sao/>
PREFIX ct:  <http://www.insight-centre.org/citytraffic#>
PREFIX tr:  <urn:rsp:ns:traffic/>
"""
# (RANGE, STEP) of the windows the variants take turns with; every STEP divides a 15-minute batch
WINDOWS = (("1h", "5m"), ("15m", "15m"), ("30m", "5m"), ("2h", "15m"), ("1h", "15m"), ("5m", "5m"))
PROPERTIES = ("CongestionLevel", "AvgSpeed", "EstimatedTime", "MeasureTime")
AGGREGATES = ("AVG", "MAX", "MIN", "SUM", "COUNT")
THRESHOLDS = (0, 1, 2, 5, 10, 20, 50, 100)

OBSERVATION = """  ?property a ct:{prop} .
  ?obs ssn:observedProperty ?property ;
       ssn:observedBy ?sensor ;
       sao:hasValue ?level ."""


def _query(name: str, form: str, window: tuple[str, str], body: str, tail: str = "") -> str:
    range_, step = window
    return (
        f"REGISTER QUERY {name} AS\n{PREFIXES}{form}\n"
        f"FROM STREAM <{TRAFFIC}> [RANGE {range_} STEP {step}]\n"
        "FROM <http://www.insight-centre.org/dataset/SensorRepository.n3>\n"
        f"WHERE {{\n{body}\n}}\n{tail}"
    )


def _aggregates():
    for n, (prop, agg, turn) in enumerate(itertools.product(PROPERTIES, AGGREGATES, (0, 3))):
        window = WINDOWS[(n + turn) % len(WINDOWS)]
        yield _query(
            f"v_{agg.lower()}_{prop.lower()}_{n}",
            f"SELECT ?sensor ({agg}(?level) AS ?value) (COUNT(?obs) AS ?readings)",
            window,
            OBSERVATION.format(prop=prop),
            "GROUP BY ?sensor\n",
        )


def _filters():
    for n, (prop, threshold) in enumerate(itertools.product(PROPERTIES[:3], THRESHOLDS)):
        yield _query(
            f"v_above_{prop.lower()}_{threshold}_{n}",
            "SELECT ?sensor ?level",
            WINDOWS[(n + 1) % len(WINDOWS)],
            OBSERVATION.format(prop=prop) + f"\n  FILTER(?level > {threshold})",
        )


def _segments(sensors: list[str]):
    """A road segment's sensors (consecutive in the sorted list, five at a time), as VALUES."""
    for turn, n in itertools.product((0, 2), range(0, len(sensors), 5)):
        chosen = " ".join(f"<{s}>" for s in sensors[n : n + 5])
        yield _query(
            f"v_segment_{n // 5}_{turn}",
            "SELECT ?sensor (AVG(?level) AS ?congestion) (MAX(?level) AS ?peak)",
            WINDOWS[(n // 5 + turn) % len(WINDOWS)],
            f"  VALUES ?sensor {{ {chosen} }}\n" + OBSERVATION.format(prop="CongestionLevel"),
            "GROUP BY ?sensor\n",
        )


def _constructs():
    for n, (prop, threshold) in enumerate(itertools.product(PROPERTIES, THRESHOLDS[:5])):
        yield _query(
            f"v_readings_{prop.lower()}_{threshold}",
            f"CONSTRUCT {{ ?sensor tr:{prop[0].lower() + prop[1:]} ?level }}",
            WINDOWS[(n + 2) % len(WINDOWS)],
            OBSERVATION.format(prop=prop) + f"\n  FILTER(?level >= {threshold})",
        )


def _asks():
    for n, threshold in enumerate(THRESHOLDS):
        yield _query(
            f"v_any_above_{threshold}",
            "ASK",
            WINDOWS[(n + 3) % len(WINDOWS)],
            OBSERVATION.format(prop="CongestionLevel") + f"\n  FILTER(?level > {threshold})",
        )


def variants(count: int, sensors: list[str]) -> list[str]:
    """``count`` query texts, the families taking turns so that any prefix mixes them:
    aggregates per sensor, filtered readings, road segments (of ``sensors``), derived readings
    (CONSTRUCT) and alerts (ASK)."""
    families = [_aggregates(), _filters(), _segments(sorted(sensors)), _constructs(), _asks()]
    turns = itertools.chain.from_iterable(itertools.zip_longest(*families))
    out = list(itertools.islice((text for text in turns if text is not None), count))
    if len(out) < count:
        raise ValueError(f"only {len(out)} variants can be made, not {count}")
    return out
