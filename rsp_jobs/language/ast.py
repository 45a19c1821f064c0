"""The typed syntax tree of a registered continuous query.

The parser (``parser.py``) builds these nodes from query text; the algebra stage
(``rsp_jobs.algebra``) turns them into a logical plan. Nodes are small frozen dataclasses so
that stages can share and compare them without copying. Every IRI is already resolved against
the query's PREFIX and BASE declarations; literals carry their datatype IRI (or language tag).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import rdflib

from rsp_jobs import terms
from rsp_jobs.times import duration_text

XSD = terms.XSD
RDF_TYPE = terms.RDF_TYPE
# C-SPARQL's function namespace: `PREFIX f: <http://larkc.eu/csparql/sparql/jena/ext#>` then f:timestamp
CSPARQL_FUNCTIONS = "http://larkc.eu/csparql/sparql/jena/ext#"


@dataclass(frozen=True)
class Position:
    """Where a node starts in the query text (1-based), for error messages."""

    line: int
    column: int


# ---------------------------------------------------------------------------------------- terms


@dataclass(frozen=True)
class Var:
    name: str  # without the leading ? or $

    def __str__(self) -> str:
        return f"?{self.name}"


@dataclass(frozen=True)
class IRI:
    value: str

    def __str__(self) -> str:
        return f"<{self.value}>"


@dataclass(frozen=True)
class Literal:
    """An RDF literal as written: ``lexical`` is unescaped text, ``datatype`` a full IRI or None
    (a plain literal, i.e. xsd:string), ``lang`` a language tag or None. Numeric and boolean
    shorthands in the query (``80``, ``1.5``, ``1e3``, ``true``) arrive with their XSD datatype."""

    lexical: str
    datatype: str | None = None
    lang: str | None = None


@dataclass(frozen=True)
class BNode:
    """A blank node in a pattern (``_:b`` or ``[]``): a variable that is never projected.
    In a CONSTRUCT template it stands for a fresh blank node per solution."""

    label: str


Term = Var | IRI | Literal | BNode


def to_rdflib(term: Term) -> rdflib.term.Node:
    """A constant of the query as an rdflib term (normalised the way data terms are)."""
    if isinstance(term, IRI):
        return rdflib.URIRef(term.value)
    if isinstance(term, Literal):
        if term.lang:
            return rdflib.Literal(term.lexical, lang=term.lang)
        datatype = rdflib.URIRef(term.datatype) if term.datatype else None
        return rdflib.Literal(term.lexical, datatype=datatype)
    if isinstance(term, BNode):
        return rdflib.BNode(term.label)
    raise TypeError(f"not a constant: {term!r}")


def to_nt(term: Term) -> str:
    """A constant of the query as N-Triples text, exactly as the lake holds the same term.

    >>> to_nt(Literal("1", XSD + "integer"))
    '"1"^^<http://www.w3.org/2001/XMLSchema#integer>'
    """
    return terms.to_nt(to_rdflib(term))


# ---------------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class BinaryOp:
    op: str  # one of || && = != < > <= >= + - * /
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnaryOp:
    op: str  # one of ! - +
    operand: Expr


@dataclass(frozen=True)
class FunctionCall:
    """A built-in call (``name`` lower-case: 'bound', 'regex', 'str', 'lang', 'datatype',
    'isiri', 'isuri', 'isliteral', 'isblank', 'abs', 'ceil', 'floor', 'round', 'strlen',
    'ucase', 'lcase', 'contains', 'strstarts', 'strends', 'if', 'coalesce', 'sameterm', ...)
    or an extension function (``name`` is then the full IRI, e.g. an xsd: cast)."""

    name: str
    args: tuple[Expr, ...]
    # IRI() and URI(): the query's BASE, which SPARQL 1.1 §17.4.2.8 resolves their argument against
    base: str | None = None
    position: Position | None = field(default=None, compare=False)  # where it is written


@dataclass(frozen=True)
class In:
    expr: Expr
    options: tuple[Expr, ...]
    negated: bool = False


@dataclass(frozen=True)
class Aggregate:
    name: str  # 'count', 'sum', 'avg', 'min', 'max', 'sample', 'group_concat'
    arg: Expr | None  # None for COUNT(*)
    distinct: bool = False
    separator: str | None = None  # GROUP_CONCAT only; None means the default " "


@dataclass(frozen=True)
class Timestamp:
    """C-SPARQL ``timestamp(s, p, o)``: the time of the most recent window triple matching the
    pattern under the current solution; an error (unbound) when no such triple is in the
    window."""

    subject: Term
    predicate: Term
    object: Term


@dataclass(frozen=True)
class Exists:
    """``EXISTS { ... }`` and ``NOT EXISTS { ... }`` (SPARQL 1.1 section 17.4.1.4): whether the
    pattern, with the solution's bindings substituted, has a solution in the same window."""

    group: GroupPattern
    negated: bool = False
    position: Position | None = None


Expr = Var | IRI | Literal | BinaryOp | UnaryOp | FunctionCall | In | Aggregate | Timestamp | Exists


# ------------------------------------------------------------------------------------- patterns


@dataclass(frozen=True)
class TriplePattern:
    subject: Term
    predicate: Term
    object: Term


# Property paths (W3C SPARQL 1.1 Query, section 9), as section 18.2.2.3 translates them: an IRI
# is ``link(iri)``, the others are below. The parser applies section 18.2.2.4 at once, so a path
# that is an IRI, ``^iri`` or a sequence of those arrives as triple patterns, and ``PathPattern``
# holds only what needs the path operators of section 18.4.


@dataclass(frozen=True)
class PathInverse:
    """``^path``: inv(path). The parser pushes it down to an IRI (``inv(seq(P, Q))`` is
    ``seq(inv(Q), inv(P))``, and so on), so only ``^iri`` and ``^!()`` keep it."""

    path: PathExpr


@dataclass(frozen=True)
class PathSequence:
    """``p1 / p2 / ...``: seq, two or more steps."""

    steps: tuple[PathExpr, ...]


@dataclass(frozen=True)
class PathAlternative:
    """``p1 | p2 | ...``: alt, two or more alternatives."""

    alternatives: tuple[PathExpr, ...]


@dataclass(frozen=True)
class PathZeroOrMore:
    """``path*``: ZeroOrMorePath."""

    path: PathExpr


@dataclass(frozen=True)
class PathOneOrMore:
    """``path+``: OneOrMorePath."""

    path: PathExpr


@dataclass(frozen=True)
class PathZeroOrOne:
    """``path?``: ZeroOrOnePath."""

    path: PathExpr


@dataclass(frozen=True)
class PathNegated:
    """``!(iri1|...|^iri2|...)``, section 18.2.2.3: NPS(forward) when only forward IRIs are
    written, inv(NPS(inverse)) when only inverse ones, their alt when both; ``!()`` is NPS({}),
    every triple."""

    forward: tuple[IRI, ...]
    inverse: tuple[IRI, ...] = ()


PathExpr = (
    IRI
    | PathInverse
    | PathSequence
    | PathAlternative
    | PathZeroOrMore
    | PathOneOrMore
    | PathZeroOrOne
    | PathNegated
)


@dataclass(frozen=True)
class PathPattern:
    """``subject path object`` where the path is not a triple pattern (section 18.2.2.4's
    Path(X, P, Y)); ``position`` is where the path is written, for messages."""

    subject: Term
    path: PathExpr
    object: Term
    position: Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class TriplesBlock:
    triples: tuple[TriplePattern | PathPattern, ...]


@dataclass(frozen=True)
class Filter:
    expr: Expr


@dataclass(frozen=True)
class Bind:
    expr: Expr
    var: Var


@dataclass(frozen=True)
class OptionalPattern:
    group: GroupPattern


@dataclass(frozen=True)
class MinusPattern:
    group: GroupPattern


@dataclass(frozen=True)
class UnionPattern:
    alternatives: tuple[GroupPattern, ...]  # two or more


@dataclass(frozen=True)
class EventPattern:
    """EP-SPARQL's ``left op right`` (Anicic et al., WWW 2011, section 3.1), ``op`` one of
    SEQ (right happens strictly after left), EQUALS (both over the same interval), OPTIONALSEQ
    and EQUALSOPTIONAL (their OPTIONAL variants)."""

    op: str
    left: GroupPattern
    right: GroupPattern


@dataclass(frozen=True)
class GraphPattern:
    """``GRAPH g { ... }`` and RSP-QL's ``WINDOW w { ... }``: the group matched against the named
    graph (a FROM NAMED background graph, a FROM NAMED STREAM's window, or a named window)."""

    name: IRI | Var
    group: GroupPattern


@dataclass(frozen=True)
class GroupPattern:
    """``{ ... }``: its elements in the order written. Filters apply to the whole group,
    wherever they stand in it, as SPARQL 1.1 section 18.2.2 says."""

    elements: tuple[PatternElement, ...]


@dataclass(frozen=True)
class InlineData:
    """``VALUES (?x ?y) { (:a 1) (UNDEF 2) }`` (SPARQL 1.1 section 10.2): a table of solutions
    written in the query, one entry per variable in each row, None for UNDEF (unbound). In a
    group it joins the group like any pattern; after the WHERE clause, the whole query's
    solutions (section 18.2.4.3)."""

    vars: tuple[Var, ...]
    rows: tuple[tuple[IRI | Literal | None, ...], ...]
    position: Position | None = None


@dataclass(frozen=True)
class SubSelect:
    """``{ SELECT ... WHERE { ... } ... }`` inside a pattern (SPARQL 1.1 section 12): evaluated
    on its own, only its projected variables join the rest. ``query`` has form SELECT and no
    dataset of its own (it sees the window the query sees)."""

    query: Query


PatternElement = (
    TriplesBlock
    | Filter
    | Bind
    | OptionalPattern
    | MinusPattern
    | UnionPattern
    | EventPattern
    | GraphPattern
    | GroupPattern
    | SubSelect
    | InlineData
)


# ------------------------------------------------------------------------------- query clauses


@dataclass(frozen=True)
class TimeWindow:
    """``[RANGE r STEP s]``; ``[RANGE r TUMBLING]`` has ``step_ms == range_ms``."""

    range_ms: int
    step_ms: int

    def __str__(self) -> str:
        """As the query writes it, ``[RANGE 1h STEP 5m]`` (DAG docs, plans, messages)."""
        step = (
            "TUMBLING" if self.step_ms == self.range_ms else f"STEP {duration_text(self.step_ms)}"
        )
        return f"[RANGE {duration_text(self.range_ms)} {step}]"


@dataclass(frozen=True)
class CountWindow:
    """``[TRIPLES n]``: the last n triples of the stream at each evaluation."""

    triples: int

    def __str__(self) -> str:
        return f"[TRIPLES {self.triples}]"


Window = TimeWindow | CountWindow


@dataclass(frozen=True)
class StreamClause:
    """``FROM [NAMED] STREAM <iri> [window]`` or RSP-QL ``FROM NAMED WINDOW <w> ON <iri> [..]``.
    ``window`` is None for an EP-SPARQL pattern's stream, which no window bounds. ``graph`` is None when the window's triples join the default graph, otherwise the IRI that
    ``GRAPH``/``WINDOW`` patterns name it by (the stream IRI, or the window IRI)."""

    iri: str
    window: Window | None
    graph: str | None = None
    position: Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class GraphClause:
    """``FROM <iri>`` (merged into the default graph) or ``FROM NAMED <iri>``."""

    iri: str
    named: bool = False
    position: Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Registration:
    """``REGISTER QUERY|STREAM name [COMPUTED EVERY d] AS`` or RSP-QL's
    ``REGISTER RSTREAM|ISTREAM|DSTREAM <iri> AS``. ``kind`` is the keyword upper-cased;
    ``name`` the name or IRI as written (IRIs resolved)."""

    kind: str  # 'QUERY', 'STREAM', 'RSTREAM', 'ISTREAM', 'DSTREAM'
    name: str
    computed_every_ms: int | None = None
    position: Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AggregateClause:
    """C-SPARQL's ``AGGREGATE { (?var, FUNCTION, {?group, ...}) [FILTER (...)] }`` (Barbieri
    et al. 2009, section 3.3): every solution is extended with ``?var``, the aggregate over the
    solutions that agree with it on the group variables; the solutions are not collapsed, and
    several clauses aggregate independently. ``aggregate.arg`` is None for the paper's bare
    ``COUNT`` (the group's solutions); ``FUNCTION(?x)`` is our extension for an argument."""

    var: Var
    aggregate: Aggregate
    group: tuple[Var, ...]
    filter: Expr | None = None
    position: Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SelectItem:
    """A projected variable, or ``(expr AS ?var)`` when ``expr`` is set."""

    var: Var
    expr: Expr | None = None
    position: Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class GroupCondition:
    expr: Expr  # a Var, a call, or any bracketed expression
    var: Var | None = None  # GROUP BY (expr AS ?v)


@dataclass(frozen=True)
class OrderCondition:
    expr: Expr
    descending: bool = False


@dataclass(frozen=True)
class Query:
    form: str  # 'SELECT', 'CONSTRUCT', 'ASK', 'DESCRIBE'
    where: GroupPattern
    registration: Registration | None = None
    prefixes: tuple[tuple[str, str], ...] = ()
    base: str | None = None
    projection: tuple[SelectItem, ...] | None = None  # None means SELECT *
    distinct: bool = False  # DISTINCT, or REDUCED (evaluated as DISTINCT)
    template: tuple[TriplePattern, ...] = ()  # CONSTRUCT only
    described: tuple[Var | IRI, ...] | None = None  # DESCRIBE only; None means DESCRIBE *
    aggregates: tuple[AggregateClause, ...] = ()  # C-SPARQL's AGGREGATE clauses
    streams: tuple[StreamClause, ...] = ()
    graphs: tuple[GraphClause, ...] = ()
    group_by: tuple[GroupCondition, ...] = ()
    having: tuple[Expr, ...] = ()
    order_by: tuple[OrderCondition, ...] = ()
    limit: int | None = None
    offset: int | None = None
    values: InlineData | None = None  # a trailing VALUES clause (SPARQL 1.1 section 10.2.2)
    text: str = field(default="", compare=False, repr=False)
    source: str = field(default="<query>", compare=False)  # file name, for messages
