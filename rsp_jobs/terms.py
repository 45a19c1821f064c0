"""RDF terms as N-Triples text, the engine's one encoding of a term.

Joins compare this text, so it is exactly SPARQL's term equality (``"1"^^xsd:integer`` and
``"01"^^xsd:integer`` are different terms, as in rdflib). Every term, from data or from a
query, passes through rdflib's ``Literal``/``URIRef`` first so that both sides are written the
same way. Decoding to the SPARQL 1.1 JSON results encoding happens only for results.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from rdflib import BNode, Literal, URIRef
from rdflib.term import Node

from rsp_jobs import times

XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_STRING = XSD + "string"
XSD_BOOLEAN = XSD + "boolean"
XSD_INTEGER = XSD + "integer"
XSD_DECIMAL = XSD + "decimal"
XSD_FLOAT = XSD + "float"
XSD_DOUBLE = XSD + "double"
XSD_DATETIME = XSD + "dateTime"
XSD_DATE = XSD + "date"
# TA-RDF's data stream vocabulary (§4): dsv:belongsTo, dsv:hasTimestamp, dsv:Nil
DSV = "http://purl.org/dsv#"
RDF_LANGSTRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDF_TYPE_NT = f"<{RDF_TYPE}>"  # rdf:type as the lake, facts and alerts hold it

INTEGER_TYPES = frozenset(
    XSD + t
    for t in (
        "integer",
        "int",
        "long",
        "short",
        "byte",
        "nonNegativeInteger",
        "positiveInteger",
        "nonPositiveInteger",
        "negativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
)
# Rank of each numeric type in SPARQL's type promotion (integer < decimal < float < double).
NUMERIC_RANK = {**{t: 0 for t in INTEGER_TYPES}, XSD_DECIMAL: 1, XSD_FLOAT: 2, XSD_DOUBLE: 3}


def to_nt(term: Node) -> str:
    """An rdflib term as N-Triples text (no prefixes), its lexical form as written. A language
    tag is written in lower case, the one change RDF 1.1 §3.3 allows ("Lexical representations
    of language tags MAY be converted to lower case"): tags compare case-insensitively, so
    ``"a"@EN`` and ``"a"@en`` are one term, and one text, which joins compare."""
    if isinstance(term, Literal):
        lexical = _special_float(term) or str(term)
        lexical = lexical.replace("\\", "\\\\").replace('"', '\\"')
        lexical = lexical.replace("\n", "\\n").replace("\r", "\\r")
        if term.language:
            return f'"{lexical}"@{term.language.lower()}'
        if term.datatype is not None and str(term.datatype) != XSD_STRING:
            return f'"{lexical}"^^<{term.datatype}>'
        return f'"{lexical}"'
    if isinstance(term, URIRef):
        return f"<{term}>"
    if isinstance(term, BNode):
        return f"_:{term}"
    raise TypeError(f"not an RDF term: {term!r}")


_FLOAT_TYPES = (XSD_DOUBLE, XSD_FLOAT)
_SPECIAL_FLOATS = {"nan": "NaN", "inf": "INF", "-inf": "-INF", "+inf": "INF"}


def _special_float(term: Literal):
    """XSD's lexical forms of a double's NaN and infinities (rdflib normalises "NaN" to "nan"
    and "1e400" to "inf", which no XSD processor reads back)."""
    if term.datatype is not None and str(term.datatype) in _FLOAT_TYPES:
        return _SPECIAL_FLOATS.get(str(term).lower())
    return None


def numeric_value(term: Node) -> float | None:
    """The value of a numeric literal as a double, else None (the lake's ``o_num``)."""
    if (
        isinstance(term, Literal)
        and term.datatype is not None
        and str(term.datatype) in NUMERIC_RANK
    ):
        try:
            return float(term.toPython())
        except (TypeError, ValueError):
            return None
    return None


def time_value(term: Node) -> datetime | None:
    """The value of an xsd:dateTime literal in UTC, else None (the lake's ``o_time``)."""
    if (
        isinstance(term, Literal)
        and term.datatype is not None
        and str(term.datatype) == XSD_DATETIME
    ):
        value = term.toPython()
        if isinstance(value, datetime):
            return times.as_utc(value)
    return None


_LITERAL = re.compile(r'^"(.*)"(?:\^\^<([^>]*)>|@([A-Za-z0-9-]+))?$', re.DOTALL)
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)")


def unescape(text: str) -> str:
    if "\\" not in text:  # most lexical forms: no substitution to look for
        return text

    def one(match: re.Match) -> str:
        code = match.group(1)
        if code[0] in "uU" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


def nt_to_json(text: str) -> dict:
    """N-Triples text → SPARQL 1.1 JSON results term (``type``, ``value``, ``datatype``, ``xml:lang``)."""
    if text.startswith("<"):
        return {"type": "uri", "value": text[1:-1]}
    if text.startswith("_:"):
        return {"type": "bnode", "value": text[2:]}
    match = _LITERAL.match(text)
    if not match:
        raise ValueError(f"not an N-Triples term: {text!r}")
    term: dict = {"type": "literal", "value": unescape(match.group(1))}
    if match.group(2) and match.group(2) != XSD_STRING:
        term["datatype"] = match.group(2)
    if match.group(3):
        term["xml:lang"] = match.group(3)
    return term


def nt_to_rdflib(text: str) -> Node:
    """N-Triples text → rdflib term (results and tests)."""
    term = nt_to_json(text)
    if term["type"] == "uri":
        return URIRef(term["value"])
    if term["type"] == "bnode":
        return BNode(term["value"])
    datatype = term.get("datatype")
    return Literal(
        term["value"], lang=term.get("xml:lang"), datatype=URIRef(datatype) if datatype else None
    )


def template_lines(template, term_of) -> list[str]:
    """A CONSTRUCT-style template instantiated once (SPARQL 16.2): ``term_of`` gives each
    position's N-Triples text or None; triples with an unbound position, a literal subject or a
    non-IRI predicate are left out."""
    lines = set()
    for t in template:
        s, p, o = term_of(t.subject), term_of(t.predicate), term_of(t.object)
        if s is None or p is None or o is None or s.startswith('"') or not p.startswith("<"):
            continue
        lines.add(f"{s} {p} {o} .")
    return sorted(lines)


# An xsd:date or xsd:dateTime with an optional offset. The TA-RDF paper (§6) prints times as
# "2009-01-01Z-06:00" and "2008-07-20T05:34:00Z-06:00": a 'Z' followed by an offset, which no
# XSD form allows. Read as the paper means them (Chicago local time, UTC-6), 'Z-06:00' is the
# offset -06:00; a lone 'Z' is UTC and no offset is UTC too, as the store reads data literals.
_PAPER_TIME = re.compile(
    r"(?P<date>-?\d{4,}-\d\d-\d\d)(?:T(?P<time>\d\d:\d\d(?::\d\d(?:\.\d+)?)?))?"
    r"(?P<zone>Z|Z?[+-]\d\d:?\d\d)?"
)


def time_interval(lexical: str, date: bool = False) -> tuple[datetime, datetime] | None:
    """The UTC interval an xsd:dateTime (one instant: start == end) or, with ``date``, an
    xsd:date (the whole day, end exclusive) denotes, or None when ``lexical`` is neither.
    Accepts the paper's 'Z-06:00' offsets (see ``_PAPER_TIME``)."""
    match = _PAPER_TIME.fullmatch(lexical.strip())
    if match is None or (date and match["time"]) or (not date and not match["time"]):
        return None
    zone = (match["zone"] or "Z").lstrip("Z") or "+00:00"
    if len(zone) == 5:  # +hhmm
        zone = zone[:3] + ":" + zone[3:]
    try:
        start = times.as_utc(
            datetime.fromisoformat(f"{match['date']}T{match['time'] or '00:00:00'}{zone}")
        )
    except ValueError:
        return None
    return (start, start + timedelta(days=1)) if date else (start, start)
