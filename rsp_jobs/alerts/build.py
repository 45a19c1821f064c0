"""Alerts from a registered query's results: one per solution (or constructed resource) of the
reported windows or matches, about a subject (a sensor), at an event time, enriched by the
application (places to warn, an alternative route), with the frames that justify it.

A query raises alerts when its ``<name>.toml`` has an ``[alert]`` table::

    [alert]
    kind = "tsunami"    # tsunami | congestion | silence | plain: which enrichment applies
    subject = "sensor"  # the variable (or constructed property) naming what the alert is about
    time = "time"       # the variable holding the event time (default: the result's end)
    radius_km = 1000    # tsunami: warn the gazetteer's places within this great-circle distance

Alert IRIs are derived from the query, subject and event time, so re-running an interval
re-derives the same alerts and the store notifies each one once.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rsp_jobs.errors import InputError
from rsp_jobs.results import WindowResult
from rsp_jobs.terms import nt_to_json
from rsp_jobs.times import datetime_lexical as _iso
from rsp_jobs.times import from_us, parse_datetime

KINDS = ("tsunami", "congestion", "silence", "plain")
ALERT_BASE = "urn:rsp:alert:"


@dataclass(frozen=True)
class AlertConfig:
    kind: str
    subject: str = "sensor"
    time: str | None = None
    radius_km: float = 1000.0
    options: dict = field(default_factory=dict)  # the rest of the table, for enrichments

    @classmethod
    def from_table(cls, table: dict, where: Path) -> AlertConfig:
        if not isinstance(table, dict):
            raise InputError(
                f"{where}: alert must be a table ([alert] with kind = ...), got {table!r}"
            )
        kind = table.get("kind")
        if kind not in KINDS:
            raise InputError(
                f"{where}: [alert] kind must be one of {', '.join(KINDS)}, got {kind!r}"
            )
        try:
            radius = float(table.get("radius_km", 1000.0))
        except (TypeError, ValueError):
            raise InputError(
                f"{where}: [alert] radius_km: not a number: {table['radius_km']!r}"
            ) from None
        if radius <= 0:
            raise InputError(f"{where}: [alert] radius_km must be positive, got {radius}")
        known = {"kind", "subject", "time", "radius_km"}
        return cls(
            kind,
            str(table.get("subject", "sensor")),
            table.get("time"),
            radius,
            {k: v for k, v in table.items() if k not in known},
        )


@dataclass
class Alert:
    iri: str
    kind: str
    query_iri: str
    subject: str
    event_time: datetime
    reported_at: datetime
    message: str
    solution: dict[str, Any]  # variable -> plain value (str, float, ISO time)
    source_frame: str | None = None  # the result frame that raised it
    evidence: list[str] = field(default_factory=list)  # further frames that justify it
    enrichment: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = asdict(self)
        out["event_time"] = _iso(self.event_time)
        out["reported_at"] = _iso(self.reported_at)
        return out


def _plain(term: dict) -> Any:
    """A SPARQL JSON term as a plain value: numbers as floats, the rest as its text."""
    value = term["value"]
    datatype = term.get("datatype", "")
    if term["type"] == "literal" and datatype.rsplit("#", 1)[-1] in (
        "double",
        "float",
        "decimal",
        "integer",
        "long",
        "int",
    ):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def solutions(result: WindowResult) -> list[dict[str, Any]]:
    """A reported result's solutions: SELECT bindings as they are; constructed triples grouped
    by subject, keyed by the predicate's local name (``ex:sensor`` -> ``sensor``)."""
    if result.form == "SELECT":
        return [{var: _plain(term) for var, term in row.items()} for row in result.bindings]
    grouped: dict[str, dict[str, Any]] = {}
    for line in result.triples:
        s, p, o = line.rstrip(" .").split(" ", 2)
        name = p.strip("<>").rstrip("/#").rsplit("/", 1)[-1].rsplit("#", 1)[-1]
        grouped.setdefault(s, {"resource": s.strip("<>")})[name] = _plain(nt_to_json(o))
    return list(grouped.values())


def alert_iri(query_iri: str, subject: str, event_time: datetime) -> str:
    digest = hashlib.sha256(f"{query_iri}|{subject}|{_iso(event_time)}".encode()).hexdigest()[:16]
    return f"{ALERT_BASE}{query_iri.rsplit(':', 1)[-1].rsplit('/', 1)[-1]}/{digest}"


def raise_alerts(
    query_iri: str, config: AlertConfig, results: list[WindowResult], frames: dict[int, str]
) -> list[Alert]:
    """The alerts of ``results`` (windows, or matches as stored per end time), not enriched
    yet (``enrich.enrich_alerts``); ``frames``: result frame IRI per close (µs). A solution
    without the subject variable is an error naming it: the query and its alert table disagree."""
    alerts: dict[str, Alert] = {}
    for result in results:
        reported = from_us(result.close_us)
        for solution in solutions(result):
            if config.subject not in solution:
                raise InputError(
                    f"<{query_iri}>: [alert] subject {config.subject!r} is not in its results "
                    f"(they have {', '.join(sorted(solution))})"
                )
            subject = str(solution[config.subject])
            when = (
                parse_datetime(str(solution[config.time]))
                if config.time and config.time in solution
                else reported
            )
            iri = alert_iri(query_iri, subject, when)
            alerts.setdefault(
                iri,
                Alert(
                    iri,
                    config.kind,
                    query_iri,
                    subject,
                    when,
                    reported,
                    _message(config.kind, subject, when),
                    solution,
                    frames.get(result.close_us),
                ),
            )
    return list(alerts.values())


def _message(kind: str, subject: str, when: datetime) -> str:
    """A one-line default; enrichments may say more."""
    name = subject.rsplit("#", 1)[-1].rsplit("/", 1)[-1] or subject
    what = {
        "tsunami": "tsunami detected by",
        "congestion": "congestion building up on",
        "silence": "no reading for 15 minutes from",
        "plain": "alert for",
    }[kind]
    return f"{what} {name} at {_iso(when)}"
