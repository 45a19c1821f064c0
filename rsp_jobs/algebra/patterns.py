"""What a micro-batch needs to know of a temporal pattern (an EP-SPARQL pattern query or a DOTR
rule), without Spark: its streams and how far back it reads (its bounded duration). Nothing
past a batch is needed: every part of a pattern, optional ones too, is decided by the time its
match ends (EP-SPARQL 3.2's timewise monotonicity). The DAG processor and the registry use these, so this module stays free of Spark imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rsp_jobs.algebra import plan as P
from rsp_jobs.algebra.plan import ContinuousQuery
from rsp_jobs.errors import QueryError, UnsupportedConstruct
from rsp_jobs.tree import walk


def pattern_streams(pattern) -> list[str]:
    """The streams a pattern reads. An EP-SPARQL query may name none, as the paper's examples
    do: evaluated on its own it reads whatever stream it is given, but a run over the lake
    needs its FROM STREAM clauses."""
    streams = sorted(
        {w.stream for w in pattern.windows}
        if isinstance(pattern, ContinuousQuery)
        else pattern.streams
    )
    if not streams:
        raise QueryError(
            f"{pattern.source}: the pattern names no stream to read from the lake; add "
            "FROM STREAM <iri> after its SELECT or CONSTRUCT clause"
        )
    return streams


def pattern_lookback_us(pattern, retention_us: int | None = None) -> int | None:
    """How far before a batch a pattern reads: its bounded duration, or the retention its
    ``.toml`` states for an unbounded one (matches longer than it are not reported), or None:
    an unbounded EP-SPARQL pattern, or one whose optional part may lie beyond its bound, keeps
    its partial matches in the store instead (EP-SPARQL §4; ``PartialMatches`` below)."""
    bound = None if _optional_part_reaches_back(pattern) else pattern.bound_us
    if retention_us is not None:
        bound = retention_us if bound is None else min(bound, retention_us)
    return bound


def _optional_part_reaches_back(pattern) -> bool:
    """Whether an optional part's absence depends on events at any distance before a match.
    EP-SPARQL 3.2: OPTIONALSEQ keeps a right-hand μ alone only if no compatible μ' of its left
    part ended before μ started, and OPTIONAL keeps μ alone only if no compatible μ' ended by
    its end: however long before. The duration bound filters the combined match; it does not
    make the older μ' absent, so a batch must know every earlier left part, which the kept
    partial matches hold (an EQUALSOPTIONAL's part spans its match: within the bound)."""
    return isinstance(pattern, ContinuousQuery) and any(
        isinstance(node, (P.SeqRightJoin, P.LeftJoin)) for node in walk(pattern.plan)
    )


def check_batchable(pattern) -> int | None:
    """A pattern registered for micro-batches: free of MINUS over the stream (its outcome
    depends on events at any distance, before or after). Optional parts need no lookahead:
    each is decided by the time its match ends (EP-SPARQL 3.2's timewise monotonicity), and an
    unbounded pattern keeps its partial matches between batches. Returns the bound (µs) or None."""
    bound = pattern.bound_us
    if isinstance(pattern, ContinuousQuery) and any(
        isinstance(node, P.Minus) for node in walk(pattern.plan)
    ):
        raise UnsupportedConstruct(
            pattern.source,
            "MINUS in a registered EP-SPARQL pattern (its "
            "outcome depends on events at any distance; use OPTIONALSEQ, "
            "EQUALSOPTIONAL or OPTIONAL with !BOUND)",
        )
    return bound


@dataclass
class PartialMatches:
    """An unbounded pattern's partial matches, kept between micro-batches as ETALIS keeps its
    goals (EP-SPARQL §4: binarization introduces "binary intermediate goals", and "The goals are
    crucial for computing complex events incrementally. Goals can persist over a period of
    time."): the solutions, ending at or before ``cut_us``, of every triple pattern and every
    binary combination of the query, keyed by the subexpression (``old``; equal subexpressions
    share them, as §4's "computation sharing of common subexpressions"), and those a batch adds
    (``produced``) for the caller to store. ETALIS may retract a consumed goal (footnote 7);
    here a part may combine with any later one, so nothing is retracted unless a retention says.

    Why this suffices: every operator of section 3.2 is timewise monotonic and a combination
    ends when its later part ends, so a solution ending after the cut combines either a part
    ending after the cut with any part, or an earlier part with one ending after it; a part
    that ended by the cut and has no new partner yields nothing new. A batch therefore reads
    only the events after the cut and the stored parts, and never recomputes old pairs.
    ``cut_us`` None: nothing is kept yet, every event up to the batch's end is read."""

    cut_us: int | None
    old: dict[str, list[dict]] = field(default_factory=dict)  # key -> [{ta, tw, ev, vals}]
    produced: dict[str, list[dict]] = field(default_factory=dict)
