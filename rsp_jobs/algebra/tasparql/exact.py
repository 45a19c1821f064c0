"""The exact value of an xsd:integer or xsd:decimal, as canonical text.

XSD 1.0 Part 2 §3.2.3: processors support decimals of at least 18 digits, and xsd:integer
(§3.3.13) has no bound; SPARQL 1.1 §17.3 promotes integer < decimal < float < double. So
TA-SPARQL computes an integer or a decimal exactly, from the term's lexical form, and writes the
result in its canonical form (§3.3.13.2, §3.2.3.2). The plan gives each numeric constant its
exact value here; the SQL dialects (``rsp_jobs/store/sql/``) read stored terms the same way.

    >>> term_exact('"007"^^<http://www.w3.org/2001/XMLSchema#integer>')
    '7'
    >>> numeral_exact(0.1, "0.100000000000000001"), numeral_exact(0.1, "1e-1")
    ('0.100000000000000001', '0.1')
"""

from __future__ import annotations

import decimal
import math
import re
from decimal import Decimal

from rsp_jobs.terms import INTEGER_TYPES, XSD

# a quotient keeps this many digits after the point, the last rounded half up (XPath F&O 3.1
# §4.2 leaves the digits of decimal division to the implementation; Spark keeps as many)
DECIMAL_DIGITS = 18
# every digit kept: no operation but a quotient's rounding to DECIMAL_DIGITS rounds
EXACT = decimal.Context(
    prec=decimal.MAX_PREC,
    Emax=decimal.MAX_EMAX,
    Emin=decimal.MIN_EMIN,
    traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
)

# a valid xsd:integer (or derived type) and xsd:decimal literal (XSD §3.3.13.1, §3.2.3.1): its
# N-Triples text split at the first XSD_TYPED is the quote and the lexical form, then the local
# name of the datatype and '>'. PostgreSQL reads terms by the same split and patterns: its regex
# engine is many times slower on one pattern of the whole term, and that is paid at every row.
XSD_TYPED = f'"^^<{XSD}'
INTEGER_LEXICAL = r"[+-]?[0-9]+"
DECIMAL_LEXICAL = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
INTEGER_DATATYPES = tuple(sorted(t[len(XSD) :] + ">" for t in INTEGER_TYPES))
_INTEGER_RE, _DECIMAL_RE = re.compile(INTEGER_LEXICAL), re.compile(DECIMAL_LEXICAL)


def term_exact(text: str | None) -> str | None:
    """The exact value of an integer or decimal term's N-Triples text, canonical; else None."""
    if text is None:
        return None
    parts = text.split(XSD_TYPED, 2)  # as PostgreSQL's split_part
    lexical, datatype = parts[0][1:], parts[1] if len(parts) > 1 else ""
    if datatype in INTEGER_DATATYPES and _INTEGER_RE.fullmatch(lexical):
        return exact_text(Decimal(lexical))
    if datatype == "decimal>" and _DECIMAL_RE.fullmatch(lexical):
        return exact_text(EXACT.add(Decimal(lexical), Decimal("0.0")))
    return None


def numeral_exact(value: float, text: str) -> str | None:
    """The exact value of a numeral of the query: as written (``0.100000000000000001``,
    ``1000000000000000000000000000001``). One with an exponent is read from its double as the
    shortest decimal that reads back as it (``1e-1`` is 0.1, not 0.1000000000000000055...); an
    integral one is an integer."""
    if not math.isfinite(value):
        return None
    if text and "e" not in text.lower():
        return exact_text(Decimal(text))
    exact = Decimal(repr(value))
    return exact_text(Decimal(int(exact)) if value.is_integer() else exact)


def exact_text(number: Decimal) -> str:
    """The canonical lexical form (XSD §3.3.13.2, §3.2.3.2): no exponent, sign only when
    negative, no leading zeros; a decimal has no trailing zeros but one digit after the point."""
    if number.is_zero():
        number = number.copy_abs()
    text = format(number, "f")
    exponent = number.as_tuple().exponent
    if not isinstance(exponent, int):  # NaN or an infinity: no integer, no decimal
        raise ValueError(f"{number} is not the value of an xsd:integer or xsd:decimal")
    if exponent >= 0:
        return text
    text = text.rstrip("0")
    return text + "0" if text.endswith(".") else text


def value_text(number: Decimal) -> str:
    """The canonical form of the value alone: 1 for 1.0 too (DISTINCT takes equal values once)."""
    text = exact_text(number)
    return text[:-2] if text.endswith(".0") else text
