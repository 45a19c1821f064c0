"""Logical plan nodes: SPARQL 1.1 algebra (W3C SPARQL 1.1 Query, section 18.2) evaluated per
window, plus the window operators of C-SPARQL (Barbieri et al., EDBT 2010, section 3).

A ``ContinuousQuery`` is the root: the stream windows that feed the default and named graphs,
the background graphs, and the algebra expression evaluated at every window close.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from rsp_jobs.language import ast

Expr = ast.Expr


@dataclass(frozen=True)
class BGP:
    """A basic graph pattern matched in the default graph (``graph`` None) or in a named one."""

    triples: tuple[ast.TriplePattern, ...]
    graph: Optional[Union[ast.IRI, ast.Var]] = None


@dataclass(frozen=True)
class Join:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class LeftJoin:
    left: "Node"
    right: "Node"
    expr: Optional[Expr] = None


@dataclass(frozen=True)
class Minus:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Union_:
    left: "Node"
    right: "Node"


@dataclass(frozen=True)
class Filter:
    expr: Expr
    input: "Node"


@dataclass(frozen=True)
class Extend:
    input: "Node"
    var: ast.Var
    expr: Expr


@dataclass(frozen=True)
class Group:
    """Group + Aggregation: ``keys`` are (expression, variable it binds); ``aggregates`` bind
    fresh variables that later Extend/Filter/OrderBy refer to. No keys means one implicit
    group per window, which exists even when the window has no solutions."""

    input: "Node"
    keys: tuple[tuple[Expr, ast.Var], ...]
    aggregates: tuple[tuple[ast.Aggregate, ast.Var], ...]


@dataclass(frozen=True)
class OrderBy:
    input: "Node"
    conditions: tuple[ast.OrderCondition, ...]


@dataclass(frozen=True)
class Project:
    input: "Node"
    vars: tuple[ast.Var, ...]


@dataclass(frozen=True)
class Distinct:
    input: "Node"


@dataclass(frozen=True)
class Slice:
    input: "Node"
    offset: int = 0
    limit: Optional[int] = None


Node = Union[BGP, Join, LeftJoin, Minus, Union_, Filter, Extend, Group, OrderBy, Project, Distinct, Slice]


@dataclass(frozen=True)
class StreamWindow:
    """The window operator over one input stream (C-SPARQL's ``FROM STREAM ... [..]``)."""

    stream: str
    window: ast.Window
    graph: Optional[str] = None  # None: the default graph; else the name GRAPH/WINDOW patterns use


@dataclass(frozen=True)
class ContinuousQuery:
    name: str
    form: str  # SELECT, CONSTRUCT, ASK
    r2s: str  # RSTREAM, ISTREAM, DSTREAM
    derives_stream: bool  # REGISTER STREAM: the CONSTRUCT output is a new stream
    windows: tuple[StreamWindow, ...]
    graphs: tuple[ast.GraphClause, ...]
    plan: Node
    variables: tuple[ast.Var, ...]  # the projected variables of SELECT, in order
    template: tuple[ast.TriplePattern, ...] = ()
    computed_every_ms: Optional[int] = None
    source: str = "<query>"
    text: str = ""
