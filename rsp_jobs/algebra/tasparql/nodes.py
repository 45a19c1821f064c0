"""The logical plan of a TA-SPARQL query (Rodriguez, McGrath, Liu, Myers, SSN 2009, §6).

TA-RDF annotates resources with time: a stream is a sequence of frames r[t] (§4), and a
TA-SPARQL selector picks frames of a stream by time. The plan has one operator per construct:

* ``FrameScan``: a frame variable over the frames of a stream, narrowed by its selector (``At``,
  ``Between``, ``First``, ``Last``, ``Every``), with the triple patterns matched in each frame;
* ``Frames``: the scans of a group that no OPTIONAL or UNION separates, joined, with the
  time-invariant statements they use (``StreamLink``, ``Invariant``; restriction 1, §5);
* ``Join``, ``LeftJoin``, ``Union``, ``Filter``, ``Unit``: SPARQL 1.1 §18.2's algebra over them;
* ``OneTimeQuery``: the root, with the projection, ``Group``, ordering and slice.

Every variable of a pattern is resolved here (``Binds``: its first occurrence, ``Equals``: a
later one, SPARQL term equality), and every expression is typed (``expressions``), so that the
SQL generator (``rsp_jobs/store/sql/``) only writes what the plan says.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from rsp_jobs.algebra.tasparql.expressions import Scope, Time, Typed

# --------------------------------------------------------------------------------- selectors


@dataclass(frozen=True)
class Every:
    """``?x[*]``, or a frame variable with no selector: every frame of the stream."""


@dataclass(frozen=True)
class At:
    """``?x[t]``: the frame at the instant t, or in the day of an xsd:date (§6, Q1's dates):
    ``start <= ts`` and ``ts <= end`` (``end_included``) or ``ts < end``."""

    start: datetime
    end: datetime
    end_included: bool


@dataclass(frozen=True)
class Between:
    """``?x[t1 .. t2]``: the frames from t1's start to t2's end (§6)."""

    start: datetime
    end: datetime
    end_included: bool


@dataclass(frozen=True)
class First:
    """``?x[FIRST]``: the first frame of each stream (of the named ones, when named)."""


@dataclass(frozen=True)
class Last:
    """``?x[LAST]``: the most recent frame of each stream (Table 2: no later frame exists)."""


Selector = Every | At | Between | First | Last

# ------------------------------------------------------------------------- pattern positions


@dataclass(frozen=True)
class Constant:
    """A position that holds this term (N-Triples text)."""

    nt: str


@dataclass(frozen=True)
class Binds:
    """The first occurrence of a variable in a pattern group: it binds the variable.
    ``values``: this position also gives the variable its number and time (an object)."""

    var: str
    values: bool = False


@dataclass(frozen=True)
class Equals:
    """A later occurrence: the same term as the binding one (SPARQL term equality).
    ``values``: the first object position of a variable bound elsewhere gives its values."""

    var: str
    values: bool = False


Slot = Constant | Binds | Equals

# ------------------------------------------------------------------------------ frame scans


@dataclass(frozen=True)
class FramePattern:
    """A triple pattern matched in a frame. ``subject`` None: TA-SPARQL's ``r[t] p o``, any
    subject, and the time-invariant statements about the frame's stream too (restriction 1);
    else a pattern of ``GRAPH ?x[sel] { ... }``, with its own subject, in the frame alone."""

    subject: Slot | None
    predicate: Slot
    object: Slot


@dataclass(frozen=True)
class FrameScan:
    """A frame variable over the stored frames: narrowed by its selector, to the streams
    ``dsv:belongsTo`` names (IRIs or a stream variable; none: every stream), with the triple
    patterns each frame must match and ``dsv:hasTimestamp`` (Table 2), whose slot is the
    frame's time, a time variable or a constant."""

    frame: str
    selector: Selector
    streams: tuple[Slot, ...]
    patterns: tuple[FramePattern, ...]
    stamps: tuple[Binds | Equals | Time, ...]

    @property
    def hidden(self) -> bool:
        """A frame of ``<stream>[sel]``, named by the parser, not by the query."""
        return self.frame.startswith("<")


@dataclass(frozen=True)
class StreamLink:
    """``s p ?x[sel]``: a time-invariant statement whose object is the stream of the frames ?x
    (restriction 1 in the object form: <s p S> and <r belongsTo S> give <s p r>)."""

    frame: str
    subject: Slot
    predicate: Slot


@dataclass(frozen=True)
class Invariant:
    """A triple pattern about no frame: it matches the time-invariant statements (r[Nil])."""

    subject: Slot
    predicate: Slot
    object: Slot


# ---------------------------------------------------------------------------- pattern nodes

Schema = tuple[tuple[str, str], ...]  # (variable, kind: frame, time or term), in column order


@dataclass(frozen=True)
class Frames:
    """The frame scans of a group with no OPTIONAL or UNION, joined with no condition of their
    own (FILTERs and shared variables relate them), the most selective first; then the links
    and time-invariant patterns. ``scope``: what each variable is here."""

    scans: tuple[FrameScan, ...]
    links: tuple[StreamLink, ...]
    invariants: tuple[Invariant, ...]
    scope: Scope

    @property
    def schema(self) -> Schema:
        return self.scope.schema()

    maybe: ClassVar[frozenset[str]] = frozenset()


@dataclass(frozen=True)
class Unit:
    """One solution that binds nothing: the group before an OPTIONAL written first, an empty
    group (SPARQL 1.1 §18.2.2.6's Z)."""

    schema = ()
    maybe: ClassVar[frozenset[str]] = frozenset()


@dataclass(frozen=True)
class Join:
    """SPARQL 1.1 §18.5, Join: compatible solutions merged. ``maybe``: the variables some
    solutions leave unbound (compatibility holds for them when either side is unbound)."""

    left: Pattern
    right: Pattern
    schema: Schema
    maybe: frozenset


@dataclass(frozen=True)
class LeftJoin:
    """``OPTIONAL { P FILTER(F) }``: LeftJoin(what comes before, P, F) (SPARQL 1.1 §18.2.2.6,
    §18.5); ``filters`` are F, tested on the merged solutions."""

    left: Pattern
    right: Pattern
    filters: tuple[Typed, ...]
    schema: Schema
    maybe: frozenset


@dataclass(frozen=True)
class Union_:
    """``{ P1 } UNION { P2 } ...``: the solutions of each branch, a variable a branch does not
    bind left unbound (SPARQL 1.1 §18.2.2.6, §18.5)."""

    branches: tuple[Pattern, ...]
    schema: Schema
    maybe: frozenset


@dataclass(frozen=True)
class Filter:
    """A group's FILTERs (SPARQL 1.1 §18.2.2.7): over ``Frames``, tested on its own rows."""

    conditions: tuple[Typed, ...]
    input: Pattern

    @property
    def schema(self) -> Schema:
        return self.input.schema

    @property
    def maybe(self) -> frozenset:
        return self.input.maybe


Pattern = Frames | Unit | Join | LeftJoin | Union_ | Filter

# -------------------------------------------------------------------------------- the query


@dataclass(frozen=True)
class Group:
    """GROUP BY's keys or, in TA-SPARQL, the projected variables beside the aggregates (§6:
    ``SELECT ?x ?y SUM(?z)``), and HAVING (SPARQL 1.1 §18.2.4.1)."""

    keys: tuple[Typed, ...]
    having: Typed | None


@dataclass(frozen=True)
class Projection:
    name: str
    expr: Typed


@dataclass(frozen=True)
class OrderKey:
    """ORDER BY a value, or (``item``) by the projected expression of that index."""

    expr: Typed | None
    item: int | None
    descending: bool


@dataclass(frozen=True)
class OneTimeQuery:
    """A one-time TA-SPARQL SELECT over the frame store: ``where``'s solutions, the FILTERs of
    its outermost group, grouped, projected, made distinct, ordered and sliced (SPARQL 1.1
    §18.2.4-5)."""

    where: Pattern
    filters: tuple[Typed, ...]
    group: Group | None
    items: tuple[Projection, ...]
    distinct: bool
    order: tuple[OrderKey, ...]
    limit: int | None
    offset: int | None
    source: str = "<query>"  # the file or argument it came from, for messages
