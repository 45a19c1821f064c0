"""What a micro-batch needs to know of a temporal pattern (an EP-SPARQL pattern query or a DOTR
rule), without Spark: its streams and how far back it reads (its bounded duration). Nothing
past a batch is needed: every part of a pattern, optional ones too, is decided by the time its
match ends (EP-SPARQL 3.2's timewise monotonicity). The DAG processor and the registry use these, so this module stays free of Spark imports.
"""
from __future__ import annotations

from pathlib import Path

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.algebra.translate import translate
from rsp_jobs.errors import QueryError, UnsupportedConstruct
from rsp_jobs.language.parser import parse_query


def compile_file(path) -> object:
    """A ``.rsp`` query (C-SPARQL windows or an EP-SPARQL pattern) or a ``.dotr`` rule."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".dotr":
        from rsp_jobs.language.rules import parse_rule

        return parse_rule(text, str(path))
    return translate(parse_query(text, str(path)))


def is_pattern(compiled) -> bool:
    return not isinstance(compiled, ContinuousQuery) or compiled.pattern


def pattern_streams(pattern) -> list[str]:
    """The streams a pattern reads. An EP-SPARQL query may name none, as the paper's examples
    do: evaluated on its own it reads whatever stream it is given, but a run over the lake
    needs its FROM STREAM clauses."""
    streams = sorted({w.stream for w in pattern.windows} if isinstance(pattern, ContinuousQuery) else pattern.streams)
    if not streams:
        raise QueryError(f"{pattern.source}: the pattern names no stream to read from the lake; add "
                         "FROM STREAM <iri> after its SELECT or CONSTRUCT clause")
    return streams


def pattern_lookback_us(pattern) -> int:
    """How far before a batch a pattern reads: its bounded duration (the Q-closure of CONSTRUCT
    rules is evaluated within one query here, so one bound suffices)."""
    bound = pattern.bound_us
    if bound is None:
        raise QueryError(f"{pattern.source}: the pattern's duration is unbounded; bound it with "
                         "`within` (DOTR) or FILTER(getDURATION() < \"PT30S\"^^xsd:duration) (EP-SPARQL)")
    return bound


def check_batchable(pattern) -> int:
    """A pattern registered for micro-batches: bounded, and free of MINUS over the stream (its
    outcome depends on events at any distance, before or after). Optional parts need no
    lookahead: each is decided by the time its match ends (EP-SPARQL 3.2's timewise
    monotonicity). Returns the bound (µs)."""
    bound = pattern_lookback_us(pattern)
    if isinstance(pattern, ContinuousQuery):
        def walk(node):
            if isinstance(node, P.Minus):
                raise UnsupportedConstruct(pattern.source, "MINUS in a registered EP-SPARQL pattern (its "
                                           "outcome depends on events at any distance; use OPTIONALSEQ, "
                                           "EQUALSOPTIONAL or OPTIONAL with !BOUND)")
            for f in ("input", "left", "right"):
                if hasattr(node, f):
                    walk(getattr(node, f))
        walk(pattern.plan)
    return bound
