"""Logical plan nodes: SPARQL 1.1 algebra (W3C SPARQL 1.1 Query, section 18.2) evaluated per
window, plus the window operators of C-SPARQL (Barbieri et al., EDBT 2010, section 3) and the
event operators of EP-SPARQL (Anicic et al., WWW 2011, section 3.2).

In an EP-SPARQL pattern every solution carries an interval [ta, tw]: a stream triple is an
atomic event [t, t], Join takes [min ta, max tw], and the operators below relate intervals.

A ``ContinuousQuery`` is the root: the stream windows that feed the default and named graphs,
the background graphs, and the algebra expression evaluated at every window close.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from rsp_jobs.language import ast

Expr = ast.Expr


@dataclass(frozen=True)
class BGP:
    """A basic graph pattern matched in the default graph (``graph`` None) or in a named one."""

    triples: tuple[ast.TriplePattern, ...]
    graph: ast.IRI | ast.Var | None = None


@dataclass(frozen=True)
class Values:
    """Inline data, ``VALUES`` (SPARQL 1.1 section 18.2.2.8, ToMultiSet): solutions written in
    the query, None where a row leaves a variable unbound (UNDEF). They hold in every window."""

    vars: tuple[ast.Var, ...]
    rows: tuple[tuple[ast.IRI | ast.Literal | None, ...], ...]
    position: ast.Position | None = None


@dataclass(frozen=True)
class Outer:
    """The leaf of an EXISTS pattern's plan that stands for the solutions it is tested for:
    each distinct binding of the variables the pattern mentions, once per window."""


@dataclass(frozen=True)
class Exists:
    """``EXISTS`` or ``NOT EXISTS`` in an expression, its pattern translated (``plan``, which
    joins ``Outer`` before the pattern's filters). SPARQL 1.1 section 18.6: "exists(pattern)
    ... returns true if substitute(pattern, μ) has a match", evaluated here as whether some
    solution of the pattern is compatible with μ on the variables it mentions: the same, except
    where a variable is bound by μ inside a nested OPTIONAL, MINUS or subquery of the pattern
    (docs/decisions/c-sparql.md)."""

    plan: Node
    negated: bool = False
    position: ast.Position | None = None


@dataclass(frozen=True)
class Path:
    """Path(X, P, Y) of W3C SPARQL 1.1 Query section 18.2.2.4: a property path that is no triple
    pattern (an alternative, ``*``, ``+``, ``?`` or a negated property set, section 9), matched
    in the graph a BGP in its place would match (``graph``), evaluated as section 18.4 says
    (``spark/paths.py``). ``position``: where the query writes it."""

    subject: ast.Term
    path: ast.PathExpr
    object: ast.Term
    graph: ast.IRI | ast.Var | None = None
    position: ast.Position | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Join:
    left: Node
    right: Node


@dataclass(frozen=True)
class LeftJoin:
    left: Node
    right: Node
    expr: Expr | None = None


@dataclass(frozen=True)
class SeqJoin:
    """EP-SPARQL 3.2, SeqJoin(Ω1, Ω2): compatible μ1 ∪ μ2 where μ1 ends before μ2 starts
    (tw1 < ta2); the result spans [ta1, tw2]. Written ``P1 SEQ P2``."""

    left: Node
    right: Node


@dataclass(frozen=True)
class EqJoin:
    """EP-SPARQL 3.2, EqJoin(Ω1, Ω2): compatible μ1 ∪ μ2 over the same interval (ta1 = ta2 and
    tw1 = tw2). Written ``P1 EQUALS P2``."""

    left: Node
    right: Node


@dataclass(frozen=True)
class SeqRightJoin:
    """``P1 OPTIONALSEQ P2``, EP-SPARQL 3.2's SeqRightJoin(Ψ', Ψ, F): P1 (``left``) is the
    optional part and comes first, P2 (``right``) is mandatory. It gives Filter(F, SeqJoin(Ψ',
    Ψ)), and each μ of P2 for which no compatible μ' of P1 ended before μ started with F true.
    Whether μ stays alone is known when μ starts, so answers are never withdrawn (timewise
    monotonicity). ``expr`` is the filter written in P1's group, as OPTIONAL takes its group's."""

    left: Node
    right: Node
    expr: Expr | None = None


@dataclass(frozen=True)
class EqLeftJoin:
    """``P1 EQUALSOPTIONAL P2``, EP-SPARQL 3.2's EqLeftJoin(Ψ, Ψ', F): Filter(F, EqJoin(Ψ, Ψ'))
    and each μ of P1 for which no compatible μ' of P2 has the same interval with F true."""

    left: Node
    right: Node
    expr: Expr | None = None


@dataclass(frozen=True)
class Minus:
    left: Node
    right: Node


@dataclass(frozen=True)
class Union_:
    left: Node
    right: Node


@dataclass(frozen=True)
class Filter:
    """``bound``: the variables every solution past the filter binds (its top-level
    ``bound(?x)`` conjuncts; stated by ``optimize.bound_join_keys``)."""

    expr: Expr
    input: Node
    bound: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Extend:
    input: Node
    var: ast.Var
    expr: Expr


class TermsAt(NamedTuple):
    """The terms at ``position`` (``s`` or ``o``) of the triples whose predicate is
    ``predicate`` (N-Triples), in the windows and the background (``optimize.rank_extrema``).
    A named tuple, not a node: nothing below a plan walks into it."""

    position: str
    predicate: str


@dataclass(frozen=True)
class Group:
    """Group + Aggregation: ``keys`` are (expression, variable it binds); ``aggregates`` bind
    fresh variables that later Extend/Filter/OrderBy refer to. No keys means one implicit
    group per window, which exists even when the window has no solutions. ``ranked``, one
    entry per aggregate (or none at all): where a MIN or MAX argument's terms can come from,
    when that is known (``optimize.rank_extrema``); empty for the others."""

    input: Node
    keys: tuple[tuple[Expr, ast.Var], ...]
    aggregates: tuple[tuple[ast.Aggregate, ast.Var], ...]
    ranked: tuple[tuple[TermsAt, ...], ...] = ()


@dataclass(frozen=True)
class GroupExtend:
    """C-SPARQL's AGGREGATE clause (Barbieri et al. 2009, section 3.3): every solution extended
    with ``var``, ``aggregate`` over the solutions that agree with it on ``keys`` (unbound
    agreeing with unbound), in the same window. Unlike Group the solutions stay as they are."""

    input: Node
    keys: tuple[ast.Var, ...]
    aggregate: ast.Aggregate
    var: ast.Var


@dataclass(frozen=True)
class ToMultiset:
    """SPARQL 1.1 section 18.2.2.6: a subquery's solutions join the rest as a multiset, its
    ORDER BY having done its work through LIMIT/OFFSET."""

    input: Node


@dataclass(frozen=True)
class OrderBy:
    input: Node
    conditions: tuple[ast.OrderCondition, ...]


@dataclass(frozen=True)
class Project:
    input: Node
    vars: tuple[ast.Var, ...]


@dataclass(frozen=True)
class Distinct:
    input: Node


@dataclass(frozen=True)
class Slice:
    input: Node
    offset: int = 0
    limit: int | None = None


Node = (
    BGP
    | Values
    | Outer
    | Path
    | Join
    | LeftJoin
    | SeqJoin
    | EqJoin
    | SeqRightJoin
    | EqLeftJoin
    | Minus
    | Union_
    | Filter
    | Extend
    | Group
    | GroupExtend
    | ToMultiset
    | OrderBy
    | Project
    | Distinct
    | Slice
)


@dataclass(frozen=True)
class StreamWindow:
    """The window operator over one input stream (C-SPARQL's ``FROM STREAM ... [..]``); an
    EP-SPARQL pattern reads its streams whole (``window`` None)."""

    stream: str
    window: ast.Window | None
    graph: str | None = None  # None: the default graph; else the name GRAPH/WINDOW patterns use


@dataclass(frozen=True)
class ContinuousQuery:
    name: str
    form: str  # SELECT, CONSTRUCT, ASK, DESCRIBE
    r2s: str  # RSTREAM, ISTREAM, DSTREAM
    derives_stream: bool  # REGISTER STREAM: the CONSTRUCT output is a new stream
    windows: tuple[StreamWindow, ...]
    graphs: tuple[ast.GraphClause, ...]
    plan: Node
    variables: tuple[
        ast.Var, ...
    ]  # the projected variables of SELECT (DESCRIBE: the described ones), in order
    template: tuple[ast.TriplePattern, ...] = ()
    described: tuple[
        ast.IRI, ...
    ] = ()  # DESCRIBE: the constant resources described (the variables' are in variables)
    computed_every_ms: int | None = None
    source: str = "<query>"
    text: str = ""
    # EP-SPARQL: the query uses an event operator or an interval built-in, and the longest a match
    # may last (µs) from a top-level FILTER conjunct getDURATION() < d or <= d; None: unbounded.
    pattern: bool = False
    bound_us: int | None = None
    # the only predicates (N-Triples) the plan can match; None: any (``optimize.prune_predicates``)
    predicates: frozenset[str] | None = None
    # each BGP's solutions go to windows, not the triples first (``optimize.window_solutions``)
    window_solutions: bool = False


@dataclass(frozen=True)
class WindowQuery(ContinuousQuery):
    """A C-SPARQL query: the plan is evaluated over each window of its streams."""


@dataclass(frozen=True)
class PatternQuery(ContinuousQuery):
    """An EP-SPARQL pattern: the plan is evaluated over the streams' events, read whole."""


def var_name(term: ast.Term) -> str | None:
    """The variable a pattern position binds: a ?var, or a blank node (non-distinguished)."""
    if isinstance(term, ast.Var):
        return term.name
    if isinstance(term, ast.BNode):
        return "_bn_" + term.label
    return None


def pattern_vars(triple: ast.TriplePattern) -> set[str]:
    return {
        n for n in map(var_name, (triple.subject, triple.predicate, triple.object)) if n is not None
    }


def path_vars(node: Path) -> set[str]:
    """The variables a path pattern binds: its ends' and a GRAPH variable's."""
    graph = [node.graph] if isinstance(node.graph, ast.Var) else []
    return {n for n in map(var_name, (node.subject, node.object, *graph)) if n is not None}


def path_reads_all_terms(node: Path) -> bool:
    """Whether the path's zero-length part (section 18.4, ZeroLengthPath) may bind every term of
    the graph, from triples of any predicate: a ``*`` or ``?`` anywhere but at the top of a path
    with a constant end (there, or in an alternative there, it binds that constant alone: the
    evaluator's seed, ``spark/paths.py``); under GRAPH ?g any ``*`` or ``?``, whose constant is
    paired with itself in every named graph, which a triple of any predicate may name."""
    seeded = var_name(node.subject) is None or var_name(node.object) is None
    if isinstance(node.graph, ast.Var):
        seeded = False
    return _unseeded_zero(node.path, seeded)


def _unseeded_zero(path: ast.PathExpr, seeded: bool) -> bool:
    if seeded and isinstance(path, ast.PathAlternative):
        return any(_unseeded_zero(p, True) for p in path.alternatives)
    if seeded and isinstance(path, (ast.PathZeroOrMore, ast.PathZeroOrOne)):
        path = path.path
    return any(isinstance(n, (ast.PathZeroOrMore, ast.PathZeroOrOne)) for n in _walk_path(path))


def path_iris(path: ast.PathExpr) -> set[str] | None:
    """The predicates (N-Triples) a path's steps can match; None where a negated property set
    can match any other."""
    found = set()
    for n in _walk_path(path):
        if isinstance(n, ast.PathNegated):
            return None
        if isinstance(n, ast.IRI):
            found.add(f"<{n.value}>")
    return found


def _walk_path(path: ast.PathExpr):
    yield path
    if isinstance(path, ast.PathSequence):
        parts: tuple = path.steps
    elif isinstance(path, ast.PathAlternative):
        parts = path.alternatives
    elif isinstance(
        path, (ast.PathInverse, ast.PathZeroOrMore, ast.PathOneOrMore, ast.PathZeroOrOne)
    ):
        parts = (path.path,)
    else:
        parts = ()
    for part in parts:
        yield from _walk_path(part)
