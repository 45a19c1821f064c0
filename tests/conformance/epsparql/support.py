"""Running an EP-SPARQL query the paper prints, on Spark and on the brute-force evaluator.

Times are days after ``EPOCH`` (the paper's examples count in days); a stream is written as
rows ``(day, subject, predicate, object)`` with Turtle-ish terms: ``:x`` names in ``EX``,
``"…"`` / numbers literals. Both evaluators see the same events, and ``run`` returns the
engine's matches after asserting the brute force gives the same.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from rdflib import Literal

from rsp_jobs import compiler
from rsp_jobs.spark.background import Background
from rsp_jobs.terms import to_nt
from rsp_jobs.spark.local import local_frame
from tests.conformance.epsparql import brute_force as ref
from tests.support.batches import as_a_batch

EX = "http://ex.org/"
STREAM = EX + "stream"
PREFIXES = f"PREFIX : <{EX}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n"
EPOCH = datetime(2011, 3, 28, tzinfo=timezone.utc)
EPOCH_US = int(EPOCH.timestamp() * 1_000_000)
DAY = 86_400_000_000


def term(value) -> str:
    if isinstance(value, str) and value.startswith(":"):
        return f"<{EX}{value[1:]}>"
    return to_nt(Literal(value))


def stream(*rows) -> list[ref.Event]:
    """Events from ``(day, s, p, o)``; the rows of one day share one frame (one graph)."""
    return [ref.Event(term(s), term(p), term(o), EPOCH_US + round(day * DAY), f"{EX}frame/{day}")
            for day, s, p, o in rows]


def at(day: float) -> int:
    return EPOCH_US + round(day * DAY)


def elements(spark, events: list[ref.Event]):
    rows = [(STREAM, EPOCH + timedelta(microseconds=e.t - EPOCH_US), e.frame, e.s, e.p, e.o, None, None)
            for e in events]
    return local_frame(spark, rows, "stream string, ts timestamp, frame string, s string, p string, o string, "
                                 "o_num double, o_time timestamp")


def run(spark, text: str, events: list[ref.Event], rules: tuple[str, ...] = (), prefixes: str = PREFIXES,
        **interval) -> list[dict]:
    """The engine's matches of ``text`` (``prefixes`` put before it), checked against the brute
    force; without the ISO ``start``/``end`` strings the brute force does not compute."""
    from rsp_jobs.spark.events import evaluate_events

    query = compiler.compile(prefixes + text, "q.rsp")
    compiled_rules = tuple(compiler.compile(prefixes + r, f"rule{i}.rsp") for i, r in enumerate(rules))
    with as_a_batch(spark, len(events)):
        got = evaluate_events(query, elements(spark, events), Background(), rules=compiled_rules, **interval)
    got = [{k: v for k, v in m.to_json().items() if k not in ("start", "end")} for m in got]
    expected = ref.evaluate(query, events, rules=compiled_rules, **interval)
    assert got == expected
    return got


def rows(matches: list[dict], *names: str) -> list[tuple]:
    """Each match as (start day, end day, value of each name or None), in report order."""
    def value(m, n):
        b = m["bindings"].get(n)
        return None if b is None else b["value"]
    return [((m["start_us"] - EPOCH_US) / DAY, (m["end_us"] - EPOCH_US) / DAY, *[value(m, n) for n in names])
            for m in matches]
