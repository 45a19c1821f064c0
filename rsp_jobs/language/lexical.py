"""The text of the tokens ``sparql_terminals.lark`` defines, as the C-SPARQL, DOTR and TA-SPARQL
builders read them: one reading of strings, escapes and prefixed names for all three."""

from __future__ import annotations

import re

from rsp_jobs.terms import unescape

__all__ = ["local_name", "string_body", "string_value", "unescape"]

_LOCAL_ESCAPE = re.compile(r"\\(.)")


def string_body(token: str) -> str:
    """A STRING token without its quotes (one or three of them)."""
    quotes = 3 if len(token) >= 6 and token[:3] in ("'''", '"""') else 1
    return token[quotes:-quotes]


def string_value(token: str) -> str:
    """A STRING token's value: unquoted, escapes undone."""
    return unescape(string_body(token))


def local_name(text: str) -> str:
    """The local part of a prefixed name with its ``\\``-escapes (``ex:a\\.b``) undone."""
    return _LOCAL_ESCAPE.sub(r"\1", text)
