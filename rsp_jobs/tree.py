"""One traversal for every tree the compiler builds: the C-SPARQL/EP-SPARQL and DOTR syntax
trees (``language.ast``, ``language.dotr``), the TA-SPARQL one (``language.tasparql``) and the
logical plan (``algebra.plan``). They are all frozen dataclasses, so a node's children are the
dataclasses in its fields, directly or inside tuples (``Group.keys`` holds pairs): one generic
walk replaces a walker per node family, and a rewrite rebuilds only what changed.

    >>> from rsp_jobs.language import ast
    >>> expr = ast.BinaryOp("+", ast.Var("a"), ast.Var("b"))
    >>> [v.name for v in walk(expr) if isinstance(v, ast.Var)]
    ['a', 'b']
    >>> transform(expr, lambda n: ast.Var("c") if n == ast.Var("a") else n).left
    Var(name='c')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

# fields that hold where a node came from, never a child
_METADATA = frozenset({"source", "text", "position"})


def is_node(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def _fields(node):
    return [f for f in dataclasses.fields(node) if f.name not in _METADATA]


def _nodes_in(value: Any) -> Iterator[Any]:
    if is_node(value):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _nodes_in(item)


def children(node: Any) -> Iterator[Any]:
    """The nodes directly below ``node``, in field order."""
    for f in _fields(node):
        yield from _nodes_in(getattr(node, f.name))


def walk(node: Any, prune: Callable[[Any], bool] = lambda n: False) -> Iterator[Any]:
    """``node`` and every node below it, parents first; below a node for which ``prune`` is
    true nothing is visited (an aggregate's argument, say)."""
    yield node
    if not prune(node):
        for child in children(node):
            yield from walk(child, prune)


def transform(node: Any, fn: Callable[[Any], Any], descend=None) -> Any:
    """``node`` rebuilt bottom-up: each node's children are transformed first, then ``fn`` is
    given the node (rebuilt only if a child changed) and returns its replacement."""
    if not is_node(node):
        return node
    changes = {}
    for f in _fields(node):
        if not f.init:
            continue
        old = getattr(node, f.name)
        new = _transform_value(old, fn, descend)
        if new is not old:
            changes[f.name] = new
    return fn(dataclasses.replace(node, **changes) if changes else node)


def substitute(node: Any, fn: Callable[[Any], Any]) -> Any:
    """``node`` rebuilt top-down: where ``fn`` returns a replacement (not None) it is used and
    nothing below is looked at; elsewhere the children are substituted, left to right."""
    if not is_node(node):
        return node
    replacement = fn(node)
    if replacement is not None:
        return replacement
    return transform(node, lambda n: n, descend=lambda child: substitute(child, fn))


def _transform_value(value: Any, fn, descend=None):
    if is_node(value):
        return descend(value) if descend else transform(value, fn)
    if isinstance(value, (tuple, list)):
        items = [_transform_value(item, fn, descend) for item in value]
        if any(a is not b for a, b in zip(items, value)):
            return type(value)(items)
    return value
