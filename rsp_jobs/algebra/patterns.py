"""What a micro-batch needs to know of a temporal pattern (an EP-SPARQL pattern query or a DOTR
rule), without Spark: its streams, how far back it reads (its bounded duration) and how far
past the batch its inputs must be complete (an optional part's absence). The DAG processor and
the registry use these, so this module stays free of Spark imports.
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
    if isinstance(pattern, ContinuousQuery):
        return sorted({w.stream for w in pattern.windows})
    return sorted(pattern.streams)


def pattern_lookback_us(pattern) -> int:
    """How far before a batch a pattern reads: its bounded duration (the Q-closure of CONSTRUCT
    rules is evaluated within one query here, so one bound suffices)."""
    bound = pattern.bound_us
    if bound is None:
        raise QueryError(f"{pattern.source}: the pattern's duration is unbounded; bound it with "
                         "`within` (DOTR) or FILTER(getDURATION() < \"PT30S\"^^xsd:duration) (EP-SPARQL)")
    return bound


def pattern_lookahead_us(pattern) -> int:
    """How far past a batch a pattern must see: an OPTIONALSEQ / EQUALSOPTIONAL part that is
    absent is known absent only once the pattern's bound has passed after its left side (the
    bound limits what an optional part may be, so the wait is finite). Otherwise 0."""
    if not isinstance(pattern, ContinuousQuery) or not pattern.pattern:
        return 0

    def optional(node) -> bool:
        if isinstance(node, (P.SeqLeftJoin, P.EqLeftJoin)):
            return True
        return any(optional(getattr(node, f)) for f in ("input", "left", "right") if hasattr(node, f))

    return (pattern.bound_us or 0) if optional(pattern.plan) else 0


def check_batchable(pattern) -> int:
    """A pattern registered for micro-batches: bounded, and free of parts whose outcome depends
    on events at any distance (plain OPTIONAL and MINUS over the stream: use OPTIONALSEQ /
    EQUALSOPTIONAL, which the bound decides). Returns the bound (µs)."""
    bound = pattern_lookback_us(pattern)
    if isinstance(pattern, ContinuousQuery):
        def walk(node):
            if isinstance(node, (P.LeftJoin, P.Minus)):
                kind = "OPTIONAL" if isinstance(node, P.LeftJoin) else "MINUS"
                raise UnsupportedConstruct(pattern.source, f"{kind} in a registered EP-SPARQL pattern (its "
                                           "outcome depends on events at any distance; use OPTIONALSEQ or "
                                           "EQUALSOPTIONAL, which the pattern's bound decides)")
            for f in ("input", "left", "right"):
                if hasattr(node, f):
                    walk(getattr(node, f))
        walk(pattern.plan)
    return bound
