"""What the answers page shows of one registered query, read from the frame store with the
store's and the quality gate's own readers: its latest windows with their answers as a table,
the quality check of the run that reported each, the run's evaluation activity (whose lineage
``rsp provenance`` prints) and what the store quarantined of the query's input streams.

Plain values out, so that the page is a template over them and a test can compare them with
``rsp query``: a cell keeps the SPARQL 1.1 JSON term the evaluation wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy import Engine

from rsp_jobs.orchestrate.registry import RegisteredQuery
from rsp_jobs.results import WindowResult
from rsp_jobs.store.quarantine import Quarantined, quarantined
from rsp_jobs.terms import XSD, nt_to_json
from rsp_jobs.times import from_us

WINDOWS = 5  # the latest windows a query shows
QUARANTINED = 10  # rejected parts listed per query


@dataclass(frozen=True)
class Cell:
    """A term as a reader wants it: the value, and what kind of term it is (an IRI, a blank
    node, a literal with its datatype or language) in a short note."""

    term: dict | None  # the SPARQL 1.1 JSON term; None: unbound

    @property
    def text(self) -> str:
        if self.term is None:
            return ""
        if self.term["type"] == "bnode":
            return f"_:{self.term['value']}"
        return str(self.term["value"])

    @property
    def note(self) -> str:
        if self.term is None or self.term["type"] == "uri":
            return ""
        if self.term["type"] == "bnode":
            return "blank node"
        if "xml:lang" in self.term:
            return f"@{self.term['xml:lang']}"
        datatype = self.term.get("datatype") or ""
        return datatype.removeprefix(XSD) if datatype.startswith(XSD) else datatype

    @property
    def is_iri(self) -> bool:
        return self.term is not None and self.term["type"] == "uri"


@dataclass(frozen=True)
class Answers:
    """A window's answers as a table: a column per variable (SELECT), subject / predicate /
    object (CONSTRUCT, DESCRIBE), or one ``boolean`` cell (ASK)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]

    @classmethod
    def of(cls, result: WindowResult) -> Answers:
        if result.form == "ASK":
            verdict = {"type": "literal", "value": "true" if result.boolean else "false"}
            return cls(("boolean",), ((Cell({**verdict, "datatype": XSD + "boolean"}),),))
        if result.form in ("CONSTRUCT", "DESCRIBE"):
            rows = []
            for line in result.triples:
                s, p, rest = line.split(" ", 2)
                rows.append(tuple(Cell(nt_to_json(t)) for t in (s, p, rest.removesuffix(" ."))))
            return cls(("subject", "predicate", "object"), tuple(rows))
        columns = tuple(dict.fromkeys(var for binding in result.bindings for var in binding))
        return cls(
            columns,
            tuple(tuple(Cell(b.get(var)) for var in columns) for b in result.bindings),
        )


@dataclass(frozen=True)
class Quality:
    """The quality check of a window's run and its Data Docs page (relative to the site)."""

    suite: str
    success: bool
    passed: int
    total: int
    failed: tuple[str, ...]
    docs: str | None  # the page's path in the Data Docs site; None: not found (pruned)


@dataclass(frozen=True)
class Window:
    open: datetime
    close: datetime
    form: str
    answers: Answers
    frame: str | None  # the result frame: what the lineage page follows
    activity: str | None  # the evaluation that generated it
    quality: Quality | None


@dataclass(frozen=True)
class QueryAnswers:
    query: RegisteredQuery
    windows: list[Window]
    quarantined: list[Quarantined] = field(default_factory=list)
    quarantined_total: int = 0


def query_answers(
    engine: Engine,
    query: RegisteredQuery,
    docs_site: Path,
    windows: int = WINDOWS,
    parts: int = QUARANTINED,
) -> QueryAnswers:
    """The latest ``windows`` windows of ``query`` and the latest ``parts`` rejected parts of its
    input streams, with their totals."""
    from rsp_jobs.quality.gate import recorded_output_check
    from rsp_jobs.quality.validate import docs_page
    from rsp_jobs.store.results import recent_results

    checks: dict[str, Quality] = {}
    shown = []
    for stored in recent_results(engine, query.iri, windows):
        close = from_us(stored.result.close_us)
        check = recorded_output_check(engine, query.iri, close)
        quality = None
        if check is not None:
            if check.activity not in checks:
                page = docs_page(docs_site, check.suite, check.batch, check.started_at)
                checks[check.activity] = Quality(
                    check.suite,
                    check.success,
                    len(check.expectations) - len(check.failed),
                    len(check.expectations),
                    check.failed,
                    page.relative_to(docs_site).as_posix() if page else None,
                )
            quality = checks[check.activity]
        shown.append(
            Window(
                from_us(stored.result.open_us),
                close,
                stored.result.form,
                Answers.of(stored.result),
                stored.frame,
                stored.activity,
                quality,
            )
        )
    rejected: list[Quarantined] = []
    total = 0
    for stream in dict.fromkeys(query.streams):
        found, count = quarantined(engine, stream, limit=parts)
        rejected += found
        total += count
    rejected.sort(key=lambda part: (part.at, part.id), reverse=True)
    return QueryAnswers(query, shown, rejected[:parts], total)
