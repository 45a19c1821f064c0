"""What the engine answers, typed: a window's result (C-SPARQL) and a pattern's match (EP-SPARQL,
DOTR). The store, alerts, quality suites, CLI and benchmarks read these fields; ``to_json()`` is
the stable JSON that ``rsp evaluate``/``rsp match`` print and the store keeps as a payload.

A leaf: times only, so every layer may use it.

    >>> w = WindowResult(open_us=0, close_us=60_000_000, form="SELECT",
    ...                  bindings=({"x": {"type": "uri", "value": "urn:a"}},))
    >>> w.window_close, w.rows
    ('1970-01-01T00:01:00Z', 1)
    >>> WindowResult.from_json(w.to_json(), "SELECT") == w
    True
    >>> m = Match(start_us=0, end_us=1_000, events=("urn:f1",), triples=("<urn:a> <urn:p> <urn:b> .",))
    >>> [(r.window_open, r.window_close, r.derived) for r in WindowResult.of_matches([m])]
    [('1970-01-01T00:00:00Z', '1970-01-01T00:00:00.001Z', (('1970-01-01T00:00:00Z', '<urn:a> <urn:p> <urn:b> .'),))]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from rsp_jobs.times import iso_ms, parse_us


@dataclass(frozen=True)
class WindowResult:
    """One reported window: ``bindings`` (SELECT, in the query's order), ``triples`` (CONSTRUCT,
    DESCRIBE, sorted N-Triples lines) or ``boolean`` (ASK). ``derived``: for pattern matches kept
    as windows, each constructed triple with the start of the interval it holds over (ISO), when
    that start is not the close."""

    open_us: int
    close_us: int
    form: str
    bindings: tuple[dict, ...] = ()
    triples: tuple[str, ...] = ()
    boolean: bool | None = None
    derived: tuple[tuple[str, str], ...] = ()
    # matches kept as a window: the frames of their events (its exact lineage; not in the JSON)
    events: tuple[str, ...] = ()

    @property
    def window_open(self) -> str:
        return iso_ms(self.open_us)

    @property
    def window_close(self) -> str:
        return iso_ms(self.close_us)

    @property
    def rows(self) -> int:
        """Solutions or triples reported (an ASK reports none)."""
        return len(self.bindings) + len(self.triples)

    def to_json(self) -> dict:
        out: dict = {"window_open": self.window_open, "window_close": self.window_close}
        if self.form == "ASK":
            out["boolean"] = bool(self.boolean)
        elif self.form in ("CONSTRUCT", "DESCRIBE"):
            out["triples"] = list(self.triples)
            if self.derived:
                out["derived"] = [list(d) for d in self.derived]
        else:
            out["bindings"] = list(self.bindings)
        return out

    @classmethod
    def from_json(cls, obj: dict, form: str) -> WindowResult:
        """The inverse of ``to_json`` (a stored payload back as a result)."""
        return cls(
            open_us=parse_us(obj["window_open"]),
            close_us=parse_us(obj["window_close"]),
            form=form,
            bindings=tuple(obj.get("bindings", ())),
            triples=tuple(obj.get("triples", ())),
            boolean=obj.get("boolean"),
            derived=tuple(tuple(d) for d in obj.get("derived", ())),
        )

    @classmethod
    def of_matches(cls, matches: Iterable[Match]) -> list[WindowResult]:
        """Matches as the results the store keeps per close: one per end time, opening at the
        earliest start of the matches ending then; constructed triples keep their interval."""
        by_end: dict[int, list[Match]] = {}
        for m in matches:
            by_end.setdefault(m.end_us, []).append(m)
        results = []
        for end, group in sorted(by_end.items()):
            start = min(m.start_us for m in group)
            events = tuple(sorted({e for m in group for e in m.events}))
            bindings = tuple(m.bindings for m in group if m.bindings is not None)
            constructed = [(m, m.triples) for m in group if m.triples is not None]
            if len(bindings) + len(constructed) != len(group) or (bindings and constructed):
                raise ValueError(
                    f"the matches ending at {iso_ms(end)} are not all SELECT (bindings) "
                    "or all CONSTRUCT (triples)"
                )
            if bindings:
                results.append(cls(start, end, "SELECT", bindings=bindings, events=events))
                continue
            triples = tuple(sorted({t for _, lines in constructed for t in lines}))
            derived: tuple[tuple[str, str], ...] = ()
            if any(m.start_us != end for m in group):
                derived = tuple(
                    sorted({(iso_ms(m.start_us), t) for m, lines in constructed for t in lines})
                )
            results.append(
                cls(start, end, "CONSTRUCT", triples=triples, derived=derived, events=events)
            )
        return results


@dataclass(frozen=True)
class Match:
    """One EP-SPARQL match over ``[start_us, end_us]``: its ``bindings`` (SELECT) or the
    ``triples`` its CONSTRUCT template gives, and the frames (``events``) it was made of."""

    start_us: int
    end_us: int
    events: tuple[str, ...]
    bindings: dict | None = None
    triples: tuple[str, ...] | None = None

    @property
    def start(self) -> str:
        return iso_ms(self.start_us)

    @property
    def end(self) -> str:
        return iso_ms(self.end_us)

    def to_json(self) -> dict:
        out = {
            "start": self.start,
            "end": self.end,
            "start_us": self.start_us,
            "end_us": self.end_us,
            "events": list(self.events),
        }
        if self.triples is not None:
            out["triples"] = list(self.triples)
        else:
            out["bindings"] = dict(self.bindings or {})
        return out


@dataclass(frozen=True)
class RuleMatch(Match):
    """One DOTR detection at an instant (``start_us == end_us == time_us``): the triples its
    template gives, the frames it used and the fact each labelled pattern matched (``facts``:
    label → fact key; what ``consuming`` uses up)."""

    facts: dict = field(default_factory=dict)

    @property
    def time_us(self) -> int:
        return self.end_us

    @property
    def time(self) -> str:
        return iso_ms(self.end_us)

    def to_json(self) -> dict:
        return {
            "time": self.time,
            "time_us": self.time_us,
            "triples": list(self.triples or ()),
            "events": list(self.events),
            "facts": dict(self.facts),
        }
