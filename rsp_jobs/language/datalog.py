"""The Datalog rules of a DOTR rule file: the ontological part, read from ``dotr.lark``'s tree.

DOTR §3: "DOTR couples the temporal knowledge in input streams with atemporal background
knowledge encoded as an ontology consisting of an RDF graph and a set of Datalog rules", and
its worked example prints one rule:

    :is_in_room(?A,?B) :- :is_at_location(?A,?C), :is_in_room(?C,?B).

The paper does not say how a predicate names a triple. Decision (the RDFox convention DOTR's
prototype runs on, and the only reading under which the example's rule derives the triple
``:s1 :is_in_room :roomA.`` the paper says it derives): a binary atom ``p(s, o)`` is the triple
``(s p o)``; a unary atom ``C(x)`` is ``(x rdf:type C)``. Predicates are IRIs (``:p``,
``ex:p``, ``<iri>``); arguments are ``?variables``, IRIs and literals. A rule has one head atom
and a body of one or more atoms; every variable of the head must occur in the body (a safe
rule: a fact derived must be ground).

Decision (where the rules live): in the ``.dotr`` file, between the ``PREFIX``/``FROM`` header
and ``define``, as printed; they are the rule's ontology together with its ``FROM`` graphs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lark import Token, Tree

from rsp_jobs.language import ast
from rsp_jobs.language.lexical import string_value

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@dataclass(frozen=True)
class DatalogRule:
    """``head :- body``: each atom a triple pattern (variables, IRIs, literals)."""

    head: ast.TriplePattern
    body: tuple[ast.TriplePattern, ...]
    position: ast.Position
    text: str


def read_rule(
    tree: Tree,
    text: str,
    iri: Callable[[Tree], str],
    error: Callable[[int, str], Exception],
    position: Callable[[int], ast.Position],
) -> DatalogRule:
    """One ``datalog_rule`` subtree; ``iri`` expands an ``iri`` subtree, ``error(offset, msg)``
    builds the error naming the file, line and column."""
    head, *body = [_atom(a, iri, error) for a in tree.children]
    bound = {
        t.name
        for atom in body
        for t in (atom.subject, atom.predicate, atom.object)
        if isinstance(t, ast.Var)
    }
    for term, offset in zip((head.subject, head.object), _argument_offsets(tree.children[0])):
        if isinstance(term, ast.Var) and term.name not in bound:
            raise error(
                offset,
                f"?{term.name} of the head occurs in no body atom: a Datalog rule "
                f"must be safe (each derived fact ground)",
            )
    start, end = tree.meta.start_pos, tree.meta.end_pos
    return DatalogRule(head, tuple(body), position(start), text[start:end])


def _atom(tree: Tree, iri: Callable[[Tree], str], error) -> ast.TriplePattern:
    predicate, *args = tree.children
    name = ast.IRI(iri(predicate))
    terms = [_term(a, iri) for a in args]
    if isinstance(terms[0], ast.Literal):
        raise error(
            _argument_offsets(tree)[0],
            "a literal cannot be the subject of a triple "
            "(p(s, o) is the triple s p o; C(x) is x rdf:type C)",
        )
    if len(terms) == 1:
        return ast.TriplePattern(terms[0], ast.IRI(RDF_TYPE), name)
    return ast.TriplePattern(terms[0], name, terms[1])


def _argument_offsets(atom: Tree) -> list[int]:
    """Where each argument of an atom starts in the text (for error positions)."""
    out = []
    for arg in atom.children[1:]:
        node = arg
        while isinstance(node, Tree):
            node = node.children[0]
        if not isinstance(node, Token) or node.start_pos is None:
            raise ValueError(f"argument {node!r} of a Datalog atom carries no position")
        out.append(node.start_pos)
    return out


def _term(tree, iri: Callable[[Tree], str]) -> ast.Term:
    if tree.data == "dvar":
        return ast.Var(str(tree.children[0])[1:])
    if tree.data == "iri":
        return ast.IRI(iri(tree))
    if tree.data == "dstring":
        # as the SPARQL parser keeps it
        lang = str(tree.children[1])[1:] if len(tree.children) > 1 else None
        return ast.Literal(string_value(str(tree.children[0])), None, lang)
    if tree.data == "dtyped":
        datatype = iri(tree.children[1])
        return ast.Literal(
            string_value(str(tree.children[0])),
            None if datatype == ast.XSD + "string" else datatype,
        )
    if tree.data == "dboolean":
        return ast.Literal(str(tree.children[0]), ast.XSD + "boolean")
    number = str(tree.children[0])
    return ast.Literal(number, ast.XSD + ("decimal" if "." in number else "integer"))
