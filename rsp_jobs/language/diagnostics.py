"""lark's parse errors as ``QuerySyntaxError``s that say where, what was found and what could
come there; shared by the C-SPARQL/RSP-QL parser and the TA-SPARQL parser."""

from __future__ import annotations

import re

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from lark.lexer import PatternStr

from rsp_jobs.errors import QuerySyntaxError

_KEYWORD = re.compile(r"[A-Za-z_]{2,}")


def terminal_display(parser: Lark, names: dict[str, str]) -> dict[str, str]:
    """Terminal name → how "expected one of" shows it: keywords upper-cased, punctuation quoted,
    pattern terminals by the readable name in ``names``."""
    shown = {}
    for terminal in parser.terminals:
        if isinstance(terminal.pattern, PatternStr):
            value = terminal.pattern.value
            shown[terminal.name] = value.upper() if _KEYWORD.fullmatch(value) else f"'{value}'"
        else:
            shown[terminal.name] = names.get(terminal.name, terminal.name)
    shown["$END"] = "end of input"
    return shown


def syntax_error(
    err: UnexpectedToken | UnexpectedCharacters, text: str, source: str, display: dict[str, str]
) -> QuerySyntaxError:
    if isinstance(err, UnexpectedToken):
        expected = err.accepts or err.expected
        if err.token.type == "$END":
            lines = text.split("\n")
            line, column, found = len(lines), len(lines[-1]) + 1, "end of input"
        else:
            line, column, found = err.line, err.column, excerpt(str(err.token))
    else:
        expected = err.allowed or set()
        line, column = err.line, err.column
        rest = text[err.pos_in_stream :]
        # A character the grammar does not take as a separator but Python's \s matches (a
        # no-break space) starts no \S+ run: it is shown alone.
        word = re.match(r"\S+", rest)
        found = excerpt(word[0] if word else rest[:1])
    return QuerySyntaxError(
        source,
        line,
        column,
        f"unexpected {found}",
        expected=(display.get(name, name) for name in expected),
    )


# How deep a parse tree may be (docs/operations/limits.md): each nested group is about two levels, each
# `&&` or `||` of a chain one. Deeper trees would overflow Python's stack in the recursive
# passes after parsing, so they are refused here, where line and column are known.
MAX_DEPTH = 200


def check_depth(tree: Tree, source: str, limit: int = MAX_DEPTH) -> Tree:
    """``tree`` if it is at most ``limit`` levels deep, else a QuerySyntaxError at the first
    node past the limit (walked without recursion, so any depth is measured)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            meta = node.meta
            line, column = (meta.line, meta.column) if not meta.empty else (1, 1)
            raise QuerySyntaxError(
                source,
                line,
                column,
                f"the query nests deeper than the limit of {limit} "
                "levels here (nested groups, chains of && or ||); "
                "flatten the groups or split the expression",
            )
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))
    return tree


# \uXXXX or \UXXXXXXXX naming a UTF-16 surrogate, half of a pair: no character (SPARQL 1.1
# section 19.2 reads the escapes as code points, and U+D800-U+DFFF are none)
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")


def check_literals(tree: Tree, source: str) -> Tree:
    """``tree`` if no string in it is longer than ``RSP_MAX_LITERAL_BYTES`` or escapes half of
    a surrogate pair, else a QuerySyntaxError where the first such string starts."""
    from rsp_jobs import settings

    for token in tree.scan_values(
        lambda v: isinstance(v, Token) and v.type in ("STRING", "IRIREF") and "\\" in v
    ):
        escape = _SURROGATE_ESCAPE.search(token)
        if escape:
            raise QuerySyntaxError(
                source,
                token.line,
                token.column,
                f"{escape.group()} names half of a UTF-16 surrogate pair, which is no character",
            )
    limit = settings.max_literal_bytes()
    for token in tree.scan_values(
        lambda v: isinstance(v, Token) and v.type == "STRING" and len(v) > limit // 4
    ):
        size = len(token.encode("utf-8")) - 2
        if size > limit:
            raise QuerySyntaxError(
                source,
                token.line,
                token.column,
                f"a string of {size} bytes is longer than RSP_MAX_LITERAL_BYTES ({limit})",
            )
    return tree


def excerpt(text: str) -> str:
    """The offending text, quoted, and cut short if it is long (say, a whole string literal)."""
    return repr(text[:30] + "..." if len(text) > 30 else str(text))
