"""Running a DOTR rule the paper prints, on Spark and on the brute-force evaluator.

A stream is written as ``{time: "turtle"}``: each time-annotated graph in Turtle with the
paper's prefixes (``:`` is ``EX``), times in ``UNIT`` after ``EPOCH`` (the paper's examples
count plain instants: ``@ 10``, ``@ 12``). Both evaluators see the same graphs; ``run`` returns
the engine's matches after asserting that the brute force gives the same (times, output
graphs, the facts each match used) and the same consumed facts.
"""
from __future__ import annotations

import re

from datetime import datetime, timedelta, timezone
from typing import Optional

from rdflib import Graph

from rsp_jobs.algebra.dotr import RulePlan as Rule
from rsp_jobs.compiler import compile
from rsp_jobs.spark.background import Background
from rsp_jobs.spark.dotr import evaluate_rule
from rsp_jobs.terms import to_nt
from tests.support.batches import as_a_batch
from rsp_jobs.spark.local import local_frame
from tests.conformance.dotr import brute_force as ref

EX = "http://ex.org/"
STREAM = EX + "stream"
# The paper leaves its prefixes out: what goes before a rule copied as printed.
PREFIXES = (f"PREFIX : <{EX}>\nPREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
            "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
            "PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n")
TURTLE = "".join(f"@prefix {line.split()[1]} {line.split()[2]} .\n" for line in PREFIXES.splitlines())
EPOCH = datetime(2018, 6, 3, tzinfo=timezone.utc)
EPOCH_US = int(EPOCH.timestamp() * 1_000_000)
MINUTE = 60_000_000
SECOND = 1_000_000


def rule(text: str, source: str = "rule.dotr") -> Rule:
    return compile(PREFIXES + text, source, "dotr")


def at(t: float, unit: int = MINUTE) -> int:
    return EPOCH_US + round(t * unit)


def triples(turtle: str) -> set[tuple[str, str, str]]:
    graph = Graph().parse(data=TURTLE + turtle, format="turtle")
    return {(to_nt(s), to_nt(p), to_nt(o)) for s, p, o in graph}


def instants(stream: dict[float, str], unit: int = MINUTE) -> dict[int, set]:
    return {at(t, unit): triples(text) for t, text in stream.items()}


def elements(spark, graphs: dict[int, set]):
    rows = [(STREAM, EPOCH + timedelta(microseconds=t - EPOCH_US), f"{EX}frame/{t}", s, p, o, None, None)
            for t, ts in sorted(graphs.items()) for s, p, o in sorted(ts)]
    return local_frame(spark, rows, "stream string, ts timestamp, frame string, s string, p string, o string, "
                                 "o_num double, o_time timestamp")


def background(turtle: str = "") -> tuple[Background, set]:
    graph = Graph().parse(data=TURTLE + turtle, format="turtle")
    return Background([graph] if len(graph) else []), {(to_nt(s), to_nt(p), to_nt(o)) for s, p, o in graph}


def run(spark, r: Rule, stream: dict[float, str], knowledge: str = "", unit: int = MINUTE,
        after: Optional[float] = None, until: Optional[float] = None, consumed: frozenset = frozenset(),
        entailment: str = "simple") -> tuple[list[dict], set[str]]:
    """The engine's matches and newly consumed facts, checked against the brute force. The
    engine reads what a batch over ``(after, until]`` reads from the lake (``engine.match``):
    the instants from ``after`` minus the rule's bound on; the brute force reads everything."""
    graphs = instants(stream, unit)
    bg, bg_triples = background(knowledge)
    lo = None if after is None else at(after, unit)
    hi = None if until is None else at(until, unit)
    read = {t: g for t, g in graphs.items() if (lo is None or t >= lo - r.bound_us) and (hi is None or t <= hi)}
    with as_a_batch(spark, sum(len(g) for g in read.values())):
        got, got_consumed = evaluate_rule(r, elements(spark, read), bg, lo, hi, consumed, entailment)
    got = [m.to_json() for m in got]
    expected, expected_consumed = ref.evaluate(r, graphs, bg_triples, lo, hi, consumed,
                                               regime=_strongest(r.entailment, entailment))
    assert ref.comparable(got) == ref.comparable(expected)
    assert got_consumed == expected_consumed
    return got, got_consumed


def _strongest(*regimes: str) -> str:
    order = ("simple", "rdfs", "rdfs++")
    return max(regimes, key=order.index)


def outputs(matches: list[dict], unit: int = MINUTE) -> list[tuple[float, list[str]]]:
    """Each match as (time in ``unit``, its output graph), in time order: fresh nodes written
    ``_:new/x``, ``EX`` names ``:x``, ``rdf:type`` and XSD datatypes by their prefixes."""
    def short(line: str) -> str:
        line = re.sub(rf"<{re.escape(EX)}([^>]*)>", r":\1", line)
        line = line.replace("<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", "rdf:type")
        return re.sub(r"<http://www.w3.org/2001/XMLSchema#([^>]*)>", r"xsd:\1", line)
    return [((time_us - EPOCH_US) / unit, [short(line) for line in lines])
            for time_us, lines, _ in ref.comparable(matches)]
